//! `predict` and `simulate`: msgpack in, msgpack out (arrays, decoded by
//! msgspec Structs with array_like=True in scheduler_core/types.py).

use crate::cluster::{id_cmp, queue_cmp, Cluster, JobState, INF};
use crate::engine::{fmt_clock, human_duration, Block, Engine, Ev};
use crate::fairtree::{FairDrift, FairTree, ShareAssoc};
use crate::fxhash::FxMap;
use crate::policy::{FairShareMode, Policy, PriorityMode, Runtimes};
use crate::wire::{decode_sim_input, decode_snapshot, WSnapshot, CPU};
use std::fmt::Write as _;

type Factors = [f64; 5];
/// (id, state, start, end, nodes, reason, preempts [(id, mode)], priority, factors,
///  binding, runtime, runtime_basis); new fields go at the end, so old decoders still read a row.
type PredRow<'a> = (
    &'a str,
    &'static str,
    Option<f64>,
    Option<f64>,
    Vec<&'a str>,
    &'a str,
    Vec<(&'a str, &'static str)>,
    f64,
    Factors,
    &'a str,
    Option<f64>,
    &'a str,
);

fn pending_in_submit_order(e: &Engine) -> Vec<usize> {
    let jobs = &e.cluster.jobs;
    let mut v: Vec<usize> = (0..jobs.len())
        .filter(|&j| jobs[j].state == JobState::Pending)
        .collect();
    v.sort_by(|&a, &b| {
        jobs[a]
            .submit
            .total_cmp(&jobs[b].submit)
            .then_with(|| id_cmp(jobs[a].id, jobs[b].id))
    });
    v
}

/// Where `predict_with` puts its rows as it makes them.
trait RowSink {
    fn count(&mut self, n: usize);
    fn row(&mut self, row: &PredRow) -> Result<(), String>;
}

/// One msgpack array of rows.
/// Bytes reserved per row: ~160 are written for a pending job with one node and
/// no preemption. Reserving more than is written costs address space, not pages;
/// reserving less made the buffer double and copy 6 MB at 50k jobs.
const ROW_BYTES: usize = 256;

struct Whole(Vec<u8>);

impl RowSink for Whole {
    fn count(&mut self, n: usize) {
        self.0.reserve(n * ROW_BYTES);
        // Writing into a Vec cannot fail.
        let _ = rmp::encode::write_array_len(&mut self.0, n as u32);
    }
    fn row(&mut self, row: &PredRow) -> Result<(), String> {
        rmp_serde::encode::write(&mut self.0, row)
            .map_err(|e| format!("cannot encode predictions: {e}"))
    }
}

/// Concatenated rows and where each starts.
struct Rows(Vec<u8>, Vec<u64>);

impl RowSink for Rows {
    fn count(&mut self, n: usize) {
        self.0.reserve(n * ROW_BYTES);
        self.1.reserve(n + 1);
    }
    fn row(&mut self, row: &PredRow) -> Result<(), String> {
        self.1.push(self.0.len() as u64);
        rmp_serde::encode::write(&mut self.0, row)
            .map_err(|e| format!("cannot encode predictions: {e}"))
    }
}

pub fn predict(snapshot: &[u8], policy: &Policy, horizon: f64) -> Result<Vec<u8>, String> {
    let mut out = Whole(Vec::new());
    predict_with(snapshot, policy, horizon, &mut out)?;
    Ok(out.0)
}

/// One team's fair-share: (name, raw shares, raw usage, shares over its siblings',
/// usage over its siblings', level fair-share, factor 0..1).
type FairRow<'a> = (&'a str, f64, f64, f64, f64, f64, f64);

/// The fair-share state of every team at the snapshot, as this policy computes it
/// (what `sshare -l` shows for a live Slurm), msgpack rows in team order: the
/// factor each team's jobs get, and the shares and usage it is made of.
pub fn fairshare(snapshot: &[u8], policy: &Policy) -> Result<Vec<u8>, String> {
    let snap = decode_snapshot(snapshot)?;
    let now = snap.taken_at;
    let c = Cluster::build(
        &snap,
        &[],
        now,
        now,
        true,
        policy.runtimes == Runtimes::Estimate,
    )?;
    drop(snap);
    let e = Engine::new(c, policy, now);
    let factors = e.fairshare_factors();
    let levels = e.fairshare_levels();
    let rows: Vec<FairRow> = e
        .cluster
        .teams
        .iter()
        .enumerate()
        .map(|(t, team)| {
            let (s, u, lf) = levels[t];
            (team.name, team.shares, e.fs_usage[t], s, u, lf, factors[t])
        })
        .collect();
    rmp_serde::to_vec(&rows).map_err(|e| format!("cannot encode fair-share: {e}"))
}

/// The predictions as one buffer of concatenated msgpack rows and the offset
/// where each row starts (plus the end), so Python decodes a row only when it is read.
pub fn predict_rows(
    snapshot: &[u8],
    policy: &Policy,
    horizon: f64,
) -> Result<(Vec<u8>, Vec<u64>), String> {
    let mut out = Rows(Vec::new(), Vec::new());
    predict_with(snapshot, policy, horizon, &mut out)?;
    out.1.push(out.0.len() as u64);
    Ok((out.0, out.1))
}

/// The snapshot's fair-share tree as `fair_drift` reads it.
pub(crate) type ShareRow<'a> = (&'a str, Option<&'a str>, Option<&'a str>, f64, f64);

pub(crate) fn share_rows<'a>(snap: &WSnapshot<'a>) -> Vec<ShareRow<'a>> {
    snap.shares
        .iter()
        .map(|s| (s.account, s.user, s.parent, s.raw_shares, s.raw_usage))
        .collect()
}

/// The cluster planned through the horizon: the engine after its run (each pending
/// job's `first_start` and `first_nodes` set) and the pending jobs in queue order.
/// `predict` makes its rows from it; the start windows make it once per sample.
pub(crate) fn plan<'a, 'p>(
    c: Cluster<'a>,
    shares: &[ShareRow<'a>],
    policy: &'p Policy,
    now: f64,
    horizon: f64,
) -> (Engine<'a, 'p>, Vec<usize>) {
    let mut e = Engine::new(c, policy, now);
    e.static_priority = true;
    e.keep_events = false;
    e.prioritise_snapshot(now);
    if policy.priority == PriorityMode::Source {
        // The order the source reports at the snapshot; from there, only age moves it.
        for job in e
            .cluster
            .jobs
            .iter_mut()
            .filter(|j| j.state == JobState::Pending)
        {
            if let Some(p) = job.source_priority {
                job.priority = p;
            }
            if let Some(f) = job.source_factors {
                job.factors = f;
            }
        }
        if policy.fairshare_period > 0.0
            && policy.fairshare == FairShareMode::FairTree
            && policy.w.fairshare > 0.0
            && !shares.is_empty()
        {
            e.fair = fair_drift(&e, shares, policy, now);
        }
        if policy.w.age > 0.0 || e.fair.is_some() {
            e.age_drift = Some(e.cluster.jobs.iter().map(|j| j.priority).collect());
        }
    }
    let mut queue: Vec<usize> = (0..e.cluster.jobs.len())
        .filter(|&j| e.cluster.jobs[j].state == JobState::Pending)
        .collect();
    {
        let jobs = &e.cluster.jobs;
        queue.sort_by(|&a, &b| queue_cmp(&jobs[a], &jobs[b]));
    }
    for j in pending_in_submit_order(&e) {
        e.admit_submit(j, now);
    }
    e.record_first = true;
    e.run(&[], now + horizon, |_, _, _| {});
    (e, queue)
}

/// Runs the prediction and hands each row to `out` as it is made (after their
/// number): a 100k-job answer is never held twice, as rows and as msgpack.
fn predict_with(
    snapshot: &[u8],
    policy: &Policy,
    horizon: f64,
    out: &mut impl RowSink,
) -> Result<(), String> {
    if !horizon.is_finite() || horizon < 0.0 {
        return Err(format!(
            "horizon {horizon} must be a finite number of seconds >= 0"
        ));
    }
    let snap = decode_snapshot(snapshot)?;
    let now = snap.taken_at;
    let c = Cluster::build(
        &snap,
        &[],
        now,
        now + horizon,
        true,
        policy.runtimes == Runtimes::Estimate,
    )?;
    let shares = share_rows(&snap);
    // The cluster borrows names from the buffer, not from the decoded snapshot.
    drop(snap);
    let (e, queue) = plan(c, &shares, policy, now, horizon);
    out.count(queue.len());
    // Tens of thousands of rows share a few start times and a few blocks worded
    // the same way per shape: each text is formatted once, and each row's reason is
    // composed in one reused buffer (a String per row was ~4% of predict).
    let mut clocks: FxMap<u64, String> = FxMap::default();
    let mut worded: FxMap<(usize, usize, u64), String> = FxMap::default();
    let mut reason = String::with_capacity(256);
    let beyond = format!("; no start within the {} horizon", human_duration(horizon));
    let mut binding = String::with_capacity(64);
    let mut basis = String::with_capacity(64);
    let mut bindings: FxMap<(usize, usize, u64), String> = FxMap::default();
    for j in queue {
        let job = &e.cluster.jobs[j];
        let preempts: Vec<(&str, &'static str)> = e
            .preempted_by
            .get(&j)
            .map(|v| {
                v.iter()
                    .map(|&(v, m)| (e.cluster.jobs[v].id, m.name()))
                    .collect()
            })
            .unwrap_or_default();
        let start = job.first_start.filter(|&s| s <= now + horizon);
        reason.clear();
        binding.clear();
        let state = if let Some(r) = e.reject_reason.get(&j) {
            reason.push_str(r);
            if let Some(b) = e.reject_binding.get(&j) {
                binding.push_str(b);
            }
            // A job that can never start for a limit it cannot change (its time limit
            // over a MaxWall) is held, as the scheduler keeps it queued; others are rejected.
            if r.starts_with("held") {
                "held"
            } else {
                "rejected"
            }
        } else if let Some(s) = start {
            if s != now {
                push_binding(&mut binding, &e, j, &mut bindings);
            }
            if s == now {
                reason.push_str("starts now");
            } else {
                push_why(&mut reason, &e, j, &mut worded);
                let (by_node, by_team) = e.start_trigger[j].unwrap_or((None, None));
                let quota_bound = matches!(
                    e.first_block[j],
                    Some(Block::Max { .. }) | Some(Block::Cohort { .. })
                );
                let at = clocks
                    .entry(s.to_bits())
                    .or_insert_with(|| fmt_clock(s, now));
                reason.push_str("; earliest at ");
                reason.push_str(at);
                if let Some(t) = if quota_bound {
                    by_team.or(by_node)
                } else {
                    by_node
                } {
                    reason.push_str(" when job ");
                    reason.push_str(e.cluster.jobs[t].id);
                    reason.push_str(" ends");
                }
            }
            if !preempts.is_empty() {
                let _ = write!(
                    reason,
                    " by preempting {} job{} (",
                    preempts.len(),
                    if preempts.len() == 1 { "" } else { "s" }
                );
                for (i, p) in preempts.iter().enumerate() {
                    if i > 0 {
                        reason.push_str(", ");
                    }
                    reason.push_str(p.0);
                }
                reason.push(')');
            }
            if s == now {
                "starts_now"
            } else {
                "planned"
            }
        } else {
            push_why(&mut reason, &e, j, &mut worded);
            push_binding(&mut binding, &e, j, &mut bindings);
            let held = reason.starts_with("held");
            reason.push_str(&beyond);
            if held {
                "held"
            } else {
                "waiting"
            }
        };
        let run = if job.first_start.is_some() {
            job.first_run
        } else {
            job.remaining
        };
        let runtime = Some(run).filter(|x| x.is_finite());
        let end = start.map(|s| s + run).filter(|x| x.is_finite());
        basis.clear();
        if job.estimated {
            basis.push_str("estimate");
            if let Some(b) = job.basis.filter(|b| !b.is_empty()) {
                basis.push_str(": ");
                basis.push_str(b);
            }
        } else if job.limit.is_some() {
            basis.push_str("time limit");
        } else {
            basis.push_str("no time limit");
        }
        let nodes: Vec<&str> = if start.is_some() {
            job.first_nodes
                .iter()
                .map(|&n| e.cluster.nodes[n].name)
                .collect()
        } else {
            Vec::new()
        };
        // The priority at the snapshot (with the source's priorities, `priority` has aged since).
        let prio = e.age_drift.as_ref().map_or(job.priority, |base| base[j]);
        out.row(&(
            job.id,
            state,
            start,
            end,
            nodes,
            reason.as_str(),
            preempts,
            prio,
            job.factors,
            binding.as_str(),
            runtime,
            basis.as_str(),
        ))?;
    }
    Ok(())
}

type EvRow<'a> = (
    f64,
    &'static str,
    &'a str,
    Vec<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
);
type JobRow<'a> = (
    &'a str,
    &'a str,
    f64,
    Option<f64>,
    Option<f64>,
    &'static str,
);
/// (submitted, started, finished, rejected, preemptions, mean_wait, median_wait,
///  mean_bounded_slowdown, utilization, jain_fairness, stranded_gpu_fraction, start, end)
type Metrics = (
    u64,
    u64,
    u64,
    u64,
    u64,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    f64,
    f64,
    f64,
    f64,
    f64,
);

/// Why job `j` waits, appended to `out`; a block worded alike for many jobs (a
/// node shape, a reservation) is worded once.
fn push_why(
    out: &mut String,
    e: &Engine,
    j: usize,
    worded: &mut FxMap<(usize, usize, u64), String>,
) {
    let Some(b) = e.first_block[j].as_ref() else {
        out.push_str("waits");
        return;
    };
    let key = match b {
        Block::Nodes => Some((0, e.cluster.jobs[j].shape, 0)),
        Block::Reservation { holder, at } => Some((1, *holder, at.to_bits())),
        _ => None,
    };
    match key {
        Some(k) => out.push_str(worded.entry(k).or_insert_with(|| e.words(b, j))),
        None => out.push_str(&e.words(b, j)),
    }
}

/// The binding limit or resource of job `j` in short words, appended to `out`.
fn push_binding(
    out: &mut String,
    e: &Engine,
    j: usize,
    worded: &mut FxMap<(usize, usize, u64), String>,
) {
    let Some(b) = e.first_block[j].as_ref() else {
        return;
    };
    let key = match b {
        Block::Nodes => Some((0, 0, 0)),
        Block::Reservation { holder, .. } => Some((1, *holder, 0)),
        _ => None,
    };
    match key {
        Some(k) => out.push_str(worded.entry(k).or_insert_with(|| e.binding(b, j))),
        None => out.push_str(&e.binding(b, j)),
    }
}

pub const TAU: f64 = 10.0;

/// `ran` seconds of `held` usage added to each team's and the cluster's total.
fn integrate(held: &[f64], ran: f64, team_secs: &mut [f64], used_secs: &mut f64) {
    for (secs, &u) in team_secs.iter_mut().zip(held) {
        *secs += u * ran;
        *used_secs += u * ran;
    }
}

/// The usage timeline as it crosses to Python: per sample, its time and only the teams
/// whose usage differs from the sample before (the first: from zero), as (team, usage).
/// Sent whole, a 100k-job trace of 20 teams made 33 MB of mostly repeated numbers;
/// `SimResult.usage` rebuilds the whole vectors when it is read.
struct UsageSeries {
    changes: Vec<(f64, Vec<(u32, f64)>)>,
    before_last: Vec<f64>, // each team's usage as of the sample before the last
    last: Vec<f64>,        // and as of the last sample
}

impl UsageSeries {
    fn new(teams: usize) -> Self {
        UsageSeries {
            changes: Vec::new(),
            before_last: vec![0.0; teams],
            last: vec![0.0; teams],
        }
    }

    /// A sample at `time`; one at the last sample's time replaces it, and one equal
    /// to the last sample adds nothing. A replacement equal to the sample before (a job
    /// of no run time started and ended at one moment) removes the last sample.
    fn sample(&mut self, time: f64, now: &[f64]) {
        match self.changes.last() {
            Some(&(t, _)) if t == time => {
                if self.changes.len() > 1 && self.before_last.as_slice() == now {
                    self.changes.pop();
                    self.last.copy_from_slice(now);
                    return;
                }
            }
            Some(_) if self.last.as_slice() == now => return,
            _ => {
                std::mem::swap(&mut self.before_last, &mut self.last);
                self.changes.push((time, Vec::new()));
            }
        }
        self.last.copy_from_slice(now);
        let delta = &mut self.changes.last_mut().expect("pushed above").1;
        delta.clear();
        for (k, (&was, &is)) in self.before_last.iter().zip(now).enumerate() {
            if was != is {
                delta.push((k as u32, is));
            }
        }
    }
}

pub fn simulate(input: &[u8], policy: &Policy) -> Result<Vec<u8>, String> {
    let inp = decode_sim_input(input)?;
    let min_submit = inp.jobs.iter().map(|j| j.submit_time).fold(INF, f64::min);
    let t0 = inp
        .start
        .unwrap_or(if !inp.cluster.jobs.is_empty() || !min_submit.is_finite() {
            inp.cluster.taken_at
        } else {
            min_submit
        });
    let until = inp.until.unwrap_or(INF);
    let c = Cluster::build(&inp.cluster, &inp.jobs, t0, until, false, false)?;
    let mut e = Engine::new(c, policy, t0);
    for j in pending_in_submit_order(&e) {
        e.admit_submit(j, t0);
    }
    let mut arrivals: Vec<usize> = (0..e.cluster.jobs.len())
        .filter(|&j| e.cluster.jobs[j].state == JobState::Future)
        .collect();
    {
        let jobs = &e.cluster.jobs;
        arrivals.sort_by(|&a, &b| {
            jobs[a]
                .submit
                .total_cmp(&jobs[b].submit)
                .then_with(|| id_cmp(jobs[a].id, jobs[b].id))
        });
    }
    let nt = e.cluster.teams.len();
    let unit = e.cluster.unit;
    let total = e.cluster.total[unit];
    let mut team_secs = vec![0.0; nt];
    let mut used_secs = 0.0;
    let mut stranded_secs = 0.0;
    let mut usage = UsageSeries::new(nt);
    // The usage in effect since `held_since`. It changes only when the engine's usage
    // version does, so the integrals are taken once per change rather than once per
    // step over every team: on a 100k-job trace that per-step loop was a tenth of the
    // run.
    let mut held = vec![0.0; nt];
    let mut held_since = t0;
    let half_life = policy.half_life;
    let mut end_time = t0;
    // Decayed usage feeds only the fair-share factor: without its weight, not kept.
    let decays = policy.w.fairshare != 0.0;
    let mut seen_version = u64::MAX;
    e.run(&arrivals, until, |e, from, to| {
        if e.usage_version != seen_version {
            seen_version = e.usage_version;
            let ran = from - held_since;
            if ran > 0.0 {
                integrate(&held, ran, &mut team_secs, &mut used_secs);
            }
            held_since = from;
            held.iter_mut()
                .enumerate()
                .for_each(|(k, x)| *x = e.usage[k][unit]);
            usage.sample(from, &held);
        }
        let dt = to - from;
        if dt > 0.0 {
            if decays {
                let decay = (2.0f64).powf(-dt / half_life);
                for t in 0..nt {
                    e.fs_usage[t] = e.fs_usage[t] * decay + e.usage[t][unit] * dt;
                }
            }
            if e.resource_blocked {
                let idle: f64 = e
                    .cluster
                    .nodes
                    .iter()
                    .filter(|n| n.usable)
                    .map(|n| n.free[unit])
                    .sum();
                stranded_secs += idle * dt;
            }
            end_time = to;
        }
    });
    if end_time > held_since {
        integrate(&held, end_time - held_since, &mut team_secs, &mut used_secs);
    }
    for (t, _) in &e.events {
        end_time = end_time.max(*t);
    }
    let span = end_time - t0;
    let mut evs: Vec<EvRow> = Vec::with_capacity(e.events.len());
    let mut preemptions = 0;
    for (t, ev) in &e.events {
        let jobs = &e.cluster.jobs;
        let nodes = &e.cluster.nodes;
        evs.push(match ev {
            Ev::Submit(j) => (*t, "submit", jobs[*j].id, vec![], None, None),
            Ev::Start {
                job,
                nodes: ns,
                backfill,
            } => (
                *t,
                "start",
                jobs[*job].id,
                ns.iter().map(|&n| nodes[n].name).collect(),
                None,
                backfill.then_some("backfill"),
            ),
            Ev::Finish(j) => (*t, "finish", jobs[*j].id, vec![], None, None),
            Ev::Preempt { job, by, mode } => {
                preemptions += 1;
                (
                    *t,
                    "preempt",
                    jobs[*job].id,
                    vec![],
                    Some(jobs[*by].id),
                    Some(mode.name()),
                )
            }
            Ev::Reject { job, reason } => (
                *t,
                "reject",
                jobs[*job].id,
                vec![],
                None,
                Some(reason.as_str()),
            ),
        });
    }
    let mut waits = Vec::new();
    let mut bsld = Vec::new();
    let (mut submitted, mut started, mut finished, mut rejected) = (0u64, 0u64, 0u64, 0u64);
    let mut job_rows: Vec<JobRow> = Vec::new();
    let mut team_active = vec![false; nt];
    for job in &e.cluster.jobs {
        if job.from_snapshot_running {
            team_active[job.team] = true;
            continue;
        }
        submitted += 1;
        team_active[job.team] = true;
        if let Some(s) = job.first_start {
            started += 1;
            waits.push(s - job.submit);
        }
        let end = (job.state == JobState::Done).then_some(job.planned_end);
        if let Some(end) = end {
            finished += 1;
            let run = end - job.start;
            bsld.push(((end - job.submit) / run.max(TAU)).max(1.0));
        }
        if job.state == JobState::Rejected {
            rejected += 1;
        }
        let state = match job.state {
            JobState::Future | JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Done => "finished",
            JobState::Rejected => "rejected",
            JobState::Cancelled => "cancelled",
        };
        job_rows.push((
            job.id,
            e.cluster.teams[job.team].name,
            job.submit,
            job.first_start,
            end,
            state,
        ));
    }
    let mean = |v: &[f64]| {
        if v.is_empty() {
            None
        } else {
            Some(v.iter().sum::<f64>() / v.len() as f64)
        }
    };
    let mut sorted = waits.clone();
    sorted.sort_by(f64::total_cmp);
    let median = if sorted.is_empty() {
        None
    } else if sorted.len() % 2 == 1 {
        Some(sorted[sorted.len() / 2])
    } else {
        Some((sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0)
    };
    let denom = total * span;
    let util = if denom > 0.0 { used_secs / denom } else { 0.0 };
    let stranded = if denom > 0.0 {
        stranded_secs / denom
    } else {
        0.0
    };
    // Jain's index over teams that ran or submitted work, on usage per unit of weight.
    let xs: Vec<f64> = (0..nt)
        .filter(|&t| team_active[t])
        .map(|t| {
            let w = e.cluster.teams[t].shares;
            if w > 0.0 {
                team_secs[t] / w
            } else {
                team_secs[t]
            }
        })
        .collect();
    let s1: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    let jain = if s2 > 0.0 {
        s1 * s1 / (xs.len() as f64 * s2)
    } else {
        1.0
    };
    let metrics: Metrics = (
        submitted,
        started,
        finished,
        rejected,
        preemptions,
        mean(&waits),
        median,
        mean(&bsld),
        util,
        jain,
        stranded,
        t0,
        end_time,
    );
    let teams: Vec<&str> = e.cluster.teams.iter().map(|t| t.name).collect();
    let unit_name = if unit == CPU { "cpu" } else { "gpu" };
    let out = (teams, unit_name, evs, usage.changes, metrics, job_rows);
    rmp_serde::to_vec(&out).map_err(|e| format!("cannot encode the simulation result: {e}"))
}

/// The snapshot's fair-share tree, each job's user association in it and the usage
/// its run adds per second (one per CPU: the scheduler's default billing).
fn fair_drift(
    e: &Engine<'_, '_>,
    shares: &[(&str, Option<&str>, Option<&str>, f64, f64)],
    policy: &Policy,
    now: f64,
) -> Option<FairDrift> {
    let mut account_ix: FxMap<&str, usize> = FxMap::default();
    for (i, s) in shares.iter().enumerate() {
        if s.1.is_none() {
            account_ix.entry(s.0).or_insert(i);
        }
    }
    let mut user_ix: FxMap<(&str, &str), usize> = FxMap::default();
    let assocs: Vec<ShareAssoc> = shares
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let parent = match s.1 {
                Some(u) => {
                    user_ix.insert((s.0, u), i);
                    account_ix.get(s.0).copied()
                }
                None => s.2.and_then(|p| account_ix.get(p).copied()),
            };
            ShareAssoc {
                parent,
                shares: if s.3.is_finite() { s.3.max(0.0) } else { 0.0 },
                usage: if s.4.is_finite() { s.4.max(0.0) } else { 0.0 },
                user: s.1.is_some(),
            }
        })
        .collect();
    let tree = FairTree::new(assocs);
    if tree.is_empty() {
        return None;
    }
    let jobs = &e.cluster.jobs;
    let assoc = jobs
        .iter()
        .map(|j| {
            user_ix
                .get(&(e.cluster.teams[j.team].name, j.user))
                .copied()
        })
        .collect();
    let rate = jobs.iter().map(|j| j.total[CPU].max(0.0)).collect();
    Some(FairDrift::new(
        tree,
        assoc,
        rate,
        now,
        policy.fairshare_period,
        policy.half_life,
        policy.w.fairshare,
    ))
}
