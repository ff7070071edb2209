//! Start windows: which of two jobs ends first nobody can know, so instead of one
//! start instant the prediction is made again many times with every job's run time
//! drawn from what its source knows of it, and each pending job gets the 10th, 50th
//! and 90th percentile of its start over those plans.
//!
//! What a job's run time is drawn from (docs/predict.md, "Start windows"):
//! - its history (`runtime_history`, the past runs its estimate was made from): one of
//!   those runs at random, times a log-normal factor: a kernel density whose bandwidth
//!   is Silverman's from the runs' spread in log (at least `SIGMA_MIN`; `SIGMA_ONE` for
//!   a single run), plus up to a second either way for the whole seconds it is kept in;
//! - runs of other work (the source's `runtime_history_weak`: Slurm's runs of the same
//!   shape or account, not of the same request): half the draws as from history, half
//!   from the prior, since another script of the same user says less of how long this
//!   one runs (on the fidelity workloads such runs were 20-55 % off, where runs of the
//!   same request were within 15 %);
//! - an estimate with no runs behind it: the estimate, with `SIGMA_ONE`;
//! - nothing: the stated prior, uniform between `PRIOR_LO` of the time limit and the
//!   limit (a job with no limit runs past the horizon);
//!
//! always capped at the time limit. A running job's draw is conditioned on what it has
//! run already: a draw it has outlived is drawn again, and after `REDRAWS` such draws
//! it ends within a tenth of its estimate (at least 5 s), as the point prediction has
//! it. The plans are the point prediction's own (`api::plan`), one per sample, with
//! the same policy but for when each pass answers its event: a scheduler answers an
//! end after `pass_delay` on average, so each sample draws every pass's delay from an
//! exponential of that mean (`Policy::pass_jitter_seed`), and two ends a moment apart
//! are answered in either order, as they are.

use crate::api::{plan, share_rows};
use crate::cluster::{Cluster, JobState, INF};
use crate::fxhash::FxMap;
use crate::policy::{Policy, Runtimes};
use crate::wire::{decode_snapshot, WJob};

/// Spread (standard deviation of the log run time) never assumed smaller than this:
/// two runs alike say little about the third.
pub const SIGMA_MIN: f64 = 0.05;
/// Spread for a job with one run, or an estimate alone, behind it.
pub const SIGMA_ONE: f64 = 0.15;
/// The prior for a job with no history: run time uniform in [PRIOR_LO, 1] x its limit.
pub const PRIOR_LO: f64 = 0.05;
/// The share of draws a weak history (runs of other work) decides; the rest are the
/// prior's.
pub const WEAK_SHARE: f64 = 0.5;
/// How often a running job's draw below what it has run is drawn again.
const REDRAWS: usize = 8;
/// Seconds either way that a run time kept in whole seconds may be off.
const WHOLE_SECONDS: f64 = 1.0;

/// splitmix64: small, fast and good enough to draw run times; seeded per sample so
/// that the same snapshot gives the same windows.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    fn below(&mut self, n: usize) -> usize {
        (self.unit() * n as f64) as usize % n.max(1)
    }
    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u = 1.0 - self.unit(); // (0, 1]: ln(u) is finite
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// What one job's run time is drawn from.
#[derive(Clone, Debug, PartialEq)]
pub enum RunDist {
    /// Past runs (seconds) and their spread in log.
    History(Vec<f64>, f64),
    /// An estimate with no runs behind it.
    Estimate(f64),
    /// Nothing known: the prior up to the limit.
    Prior,
    /// Runs of other work of the same user: `WEAK_SHARE` of the draws from them, the
    /// rest from the prior.
    Weak(Box<RunDist>),
}

impl RunDist {
    /// `weak`: the history is of other work (the source's `runtime_history_weak`).
    pub fn of(history: &[f64], estimate: Option<f64>, weak: bool) -> RunDist {
        let strong = RunDist::of_runs(history, estimate);
        match strong {
            RunDist::History(..) if weak => RunDist::Weak(Box::new(strong)),
            d => d,
        }
    }

    fn of_runs(history: &[f64], estimate: Option<f64>) -> RunDist {
        let runs: Vec<f64> = history
            .iter()
            .copied()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .collect();
        match runs.len() {
            0 => match estimate.filter(|x| x.is_finite() && *x >= 0.0) {
                Some(e) => RunDist::Estimate(e),
                None => RunDist::Prior,
            },
            1 => RunDist::History(runs, SIGMA_ONE),
            n => {
                // A kernel density over the runs, in log: Silverman's bandwidth
                // (0.9 sigma n^-1/5), so that the runs' own spread is not counted twice
                // (once by drawing a run, again by the factor around it).
                let logs: Vec<f64> = runs.iter().map(|x| x.max(1.0).ln()).collect();
                let mean = logs.iter().sum::<f64>() / n as f64;
                let var =
                    logs.iter().map(|l| (l - mean) * (l - mean)).sum::<f64>() / (n - 1) as f64;
                let h = 0.9 * var.sqrt() * (n as f64).powf(-0.2);
                RunDist::History(runs, h.max(SIGMA_MIN))
            }
        }
    }

    /// The typical run time (for a running job that outlived its draws).
    fn centre(&self, limit: Option<f64>) -> f64 {
        match self {
            RunDist::History(runs, _) => runs.iter().sum::<f64>() / runs.len() as f64,
            RunDist::Estimate(e) => *e,
            RunDist::Prior => limit.unwrap_or(INF),
            RunDist::Weak(d) => d.centre(limit),
        }
    }

    fn draw(&self, rng: &mut Rng, limit: Option<f64>) -> f64 {
        let cap = limit.unwrap_or(INF);
        let x = match self {
            RunDist::History(runs, sigma) => {
                let base = runs[rng.below(runs.len())];
                base * (sigma * rng.normal()).exp() + rng.uniform(-WHOLE_SECONDS, WHOLE_SECONDS)
            }
            RunDist::Estimate(e) => {
                e * (SIGMA_ONE * rng.normal()).exp() + rng.uniform(-WHOLE_SECONDS, WHOLE_SECONDS)
            }
            RunDist::Prior => match limit {
                Some(l) => l * rng.uniform(PRIOR_LO, 1.0),
                None => INF,
            },
            RunDist::Weak(d) if rng.unit() < WEAK_SHARE => d.draw(rng, limit),
            RunDist::Weak(_) => RunDist::Prior.draw(rng, limit),
        };
        x.max(0.0).min(cap)
    }

    /// A run time for a job that has run `ran` seconds already, in all.
    fn draw_after(&self, rng: &mut Rng, limit: Option<f64>, ran: f64) -> f64 {
        for _ in 0..REDRAWS {
            let x = self.draw(rng, limit);
            if x > ran {
                return x;
            }
        }
        let c = self.centre(limit);
        (ran + rng.uniform(0.0, (0.1 * c).max(5.0))).min(limit.unwrap_or(INF).max(ran))
    }
}

/// Every job of the cluster given a run time drawn from its distribution.
fn resample(
    c: &mut Cluster<'_>,
    dist: &FxMap<&str, (RunDist, Option<f64>)>,
    now: f64,
    rng: &mut Rng,
) {
    for job in c.jobs.iter_mut() {
        let Some((d, limit)) = dist.get(job.id) else {
            continue;
        };
        match job.state {
            JobState::Running => {
                let ran = (now - job.start).max(0.0);
                let total = d.draw_after(rng, *limit, ran);
                // Never past the end the point prediction already holds it to (its
                // limit, or its reservation's end).
                job.remaining = (total - ran).max(0.0).min(job.planned_end - now);
            }
            JobState::Pending => job.remaining = d.draw(rng, *limit),
            _ => {}
        }
    }
}

/// Quantile `q` of sorted values, linear between ranks at rank q(n+1) (Hyndman and
/// Fan's type 6): the expected share of the distribution between its p10 and p90 is
/// 80 % for any n, where rank q(n-1) gives 12/17 = 71 % at 16 samples. INF stays INF.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return INF;
    }
    let n = sorted.len() as f64;
    let k = (q * (n + 1.0) - 1.0).clamp(0.0, n - 1.0);
    let (lo, hi) = (k.floor() as usize, k.ceil() as usize);
    let (a, b) = (sorted[lo], sorted[hi]);
    if !a.is_finite() || !b.is_finite() {
        return if k - lo as f64 > 0.5 { b } else { a };
    }
    a + (b - a) * (k - lo as f64)
}

/// One sample's plan: the queue (job indices; kept from the first sample only), its
/// job ids, and every job's start by index (INF: beyond the horizon).
type Sample<'a> = (Vec<usize>, Vec<&'a str>, Vec<f64>);

/// (job id, p10, p50, p90): None where that share of the plans starts it beyond the horizon.
pub type WindowRow<'a> = (&'a str, Option<f64>, Option<f64>, Option<f64>);

/// The start windows of every pending job (msgpack rows, queue order), over `samples`
/// plans with run times drawn as the module says. With `runtimes = limit` every job
/// runs to its limit and there is nothing to draw: each window is the one instant.
pub fn predict_windows(
    snapshot: &[u8],
    policy: &Policy,
    horizon: f64,
    samples: u32,
    seed: u64,
) -> Result<Vec<u8>, String> {
    let rows = windows(snapshot, policy, horizon, samples, seed)?;
    rmp_serde::to_vec(&rows).map_err(|e| format!("cannot encode start windows: {e}"))
}

pub fn windows<'a>(
    snapshot: &'a [u8],
    policy: &Policy,
    horizon: f64,
    samples: u32,
    seed: u64,
) -> Result<Vec<WindowRow<'a>>, String> {
    if !horizon.is_finite() || horizon < 0.0 {
        return Err(format!(
            "horizon {horizon} must be a finite number of seconds >= 0"
        ));
    }
    if samples == 0 {
        return Err("samples must be at least 1".into());
    }
    let snap = decode_snapshot(snapshot)?;
    let now = snap.taken_at;
    let estimates = policy.runtimes == Runtimes::Estimate;
    let dist: FxMap<&str, (RunDist, Option<f64>)> = snap
        .jobs
        .iter()
        .map(|w: &WJob| {
            (
                w.id,
                (
                    RunDist::of(
                        &w.runtime_history,
                        w.runtime_estimate,
                        w.runtime_history_weak,
                    ),
                    w.time_limit,
                ),
            )
        })
        .collect();
    let shares = share_rows(&snap);
    let draws = if estimates { samples } else { 1 };
    // One plan per sample, each on its own Cluster: the samples share nothing but the
    // snapshot, so they are spread over the cores there are (a login node's two make a
    // 5k-job queue's windows twice as fast). Each sample keeps its own seed, so the
    // windows are the same however many threads made them.
    let one = |s: u32| -> Result<Sample<'a>, String> {
        let mut c = Cluster::build(&snap, &[], now, now + horizon, true, estimates)?;
        let mut pol = policy.clone();
        if estimates {
            let mut rng = Rng(seed ^ (u64::from(s) + 1).wrapping_mul(0xd1b5_4a32_d192_ed03));
            resample(&mut c, &dist, now, &mut rng);
            // When the scheduler answers each end is drawn too: two jobs whose ends
            // fall a second apart may be answered in either order (never 0: none).
            pol.pass_jitter_seed = rng.next() | 1;
        }
        let (e, queue) = plan(c, &shares, &pol, now, horizon);
        // Starts by job index (every sample's Cluster is built from the same snapshot,
        // so index j is the same job in all), in the first sample's queue order.
        let order: Vec<usize> = if s == 0 { queue.clone() } else { Vec::new() };
        let mut starts = vec![INF; e.cluster.jobs.len()];
        for &j in &queue {
            starts[j] = e.cluster.jobs[j]
                .first_start
                .filter(|&t| t <= now + horizon)
                .unwrap_or(INF);
        }
        let ids = order.iter().map(|&j| e.cluster.jobs[j].id).collect();
        Ok((order, ids, starts))
    };
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(draws as usize)
        .max(1);
    let mut results: Vec<Result<Sample<'a>, String>> = Vec::new();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let one = &one;
                scope.spawn(move || {
                    (0..draws)
                        .filter(|s| *s as usize % threads == t)
                        .map(|s| (s, one(s)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<(u32, Result<Sample<'a>, String>)> = Vec::new();
        for h in handles {
            match h.join() {
                Ok(v) => all.extend(v),
                Err(_) => all.push((0, Err("a start-window plan panicked".into()))),
            }
        }
        all.sort_by_key(|(s, _)| *s);
        results = all.into_iter().map(|(_, r)| r).collect();
    });
    let mut ids: Vec<&'a str> = Vec::new();
    let mut order: Vec<usize> = Vec::new();
    let mut starts: Vec<Vec<f64>> = Vec::new();
    for (s, r) in results.into_iter().enumerate() {
        let (first_order, first_ids, row) = r?;
        if s == 0 {
            order = first_order;
            ids = first_ids;
            starts = vec![Vec::with_capacity(draws as usize); order.len()];
        }
        for (k, &j) in order.iter().enumerate() {
            starts[k].push(row.get(j).copied().unwrap_or(INF));
        }
    }
    let finite = |x: f64| Some(x).filter(|v| v.is_finite());
    Ok(ids
        .into_iter()
        .zip(starts.iter_mut())
        .map(|(id, v)| {
            v.sort_by(f64::total_cmp);
            (
                id,
                finite(quantile(v, 0.1)),
                finite(quantile(v, 0.5)),
                finite(quantile(v, 0.9)),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_is_the_runs_own_with_a_floor() {
        match RunDist::of(&[100.0, 200.0], None, false) {
            RunDist::History(_, s) => {
                let sigma = 2f64.ln() / 2f64.sqrt();
                assert!((s - 0.9 * sigma * 2f64.powf(-0.2)).abs() < 1e-9)
            }
            d => panic!("{d:?}"),
        }
        assert_eq!(
            RunDist::of(&[60.0, 60.0, 60.0], None, false),
            RunDist::History(vec![60.0; 3], SIGMA_MIN)
        );
        assert_eq!(
            RunDist::of(&[60.0], None, false),
            RunDist::History(vec![60.0], SIGMA_ONE)
        );
        assert_eq!(RunDist::of(&[], Some(30.0), false), RunDist::Estimate(30.0));
        assert_eq!(RunDist::of(&[f64::NAN, -1.0], None, false), RunDist::Prior);
    }

    #[test]
    fn draws_stay_within_the_limit_and_past_what_ran() {
        let mut rng = Rng(7);
        let d = RunDist::of(&[50.0, 55.0], None, false);
        for _ in 0..1000 {
            let x = d.draw(&mut rng, Some(52.0));
            assert!((0.0..=52.0).contains(&x), "{x}");
            let y = d.draw_after(&mut rng, Some(120.0), 70.0);
            assert!(y > 70.0 && y <= 120.0, "{y}");
        }
        for _ in 0..1000 {
            let x = RunDist::Prior.draw(&mut rng, Some(100.0));
            assert!((5.0..=100.0).contains(&x), "{x}");
        }
        assert_eq!(RunDist::Prior.draw(&mut rng, None), INF);
    }

    #[test]
    fn a_weak_history_draws_half_from_the_prior() {
        // Runs of other work say less: no draw from a history of 60 s runs falls to half
        // of them (4.6 sigma), but a weak one's do, from the prior (uniform 6-120 s).
        assert_eq!(
            RunDist::of(&[60.0], Some(60.0), true),
            RunDist::Weak(Box::new(RunDist::History(vec![60.0], SIGMA_ONE)))
        );
        // Weak without runs is the estimate or the prior as before.
        assert_eq!(RunDist::of(&[], Some(30.0), true), RunDist::Estimate(30.0));
        let mut rng = Rng(11);
        let below = |d: &RunDist, rng: &mut Rng| {
            (0..4000)
                .filter(|_| d.draw(rng, Some(120.0)) < 30.0)
                .count()
        };
        assert_eq!(below(&RunDist::of(&[60.0], None, false), &mut rng), 0);
        let weak = below(&RunDist::of(&[60.0], None, true), &mut rng);
        // Prior mass below 30 s: (30 - 6) / (120 - 6) = 0.21; half of the draws: 421.
        assert!((340..500).contains(&weak), "{weak}");
    }

    #[test]
    fn quantiles_interpolate_and_keep_infinity() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), 3.0);
        // Rank q(n+1) = 0.6 is below the first: the smallest.
        assert_eq!(quantile(&v, 0.1), 1.0);
        // 16 values 1..16: ranks 1.7 and 15.3, so the window spans 13.6/17 = 80 %.
        let w: Vec<f64> = (1..=16).map(f64::from).collect();
        assert!((quantile(&w, 0.1) - 1.7).abs() < 1e-12);
        assert!((quantile(&w, 0.9) - 15.3).abs() < 1e-12);
        assert_eq!(quantile(&[1.0, INF, INF], 0.9), INF);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, INF], 0.5), 2.5);
    }
}
