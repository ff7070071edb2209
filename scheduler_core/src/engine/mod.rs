//! The scheduling engine shared by `predict` and `simulate`: one scheduling
//! pass (priority order, limits, quotas with cohort borrowing, whole-job
//! placement, preemption, EASY or conservative backfill) and the event loop
//! that runs passes forward in time. docs/core.md gives the source of each rule.

// The imports shared by the engine's modules, which read them through `use super::*`.
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use crate::bestfit::{from_ord_bits, ord_bits, BestFit, Step};
use crate::cluster::{dim_name, fits, id_cmp, queue_cmp, Cluster, JobState, INF};
use crate::fairtree::FairDrift;
use crate::freeindex::FreeIndex;
use crate::fxhash::{FxMap, FxSet};
use crate::limits::{LimitBlock, NO_PROFILE};
use crate::policy::{Backfill, FairShareMode, Passes, Placement, Policy, PreemptMode, QuotaMode};
use crate::wire::{CPU, GPU, MEM, V3};

mod admission;
mod backfill;
mod explain;
mod lifecycle;
mod pass;
mod placement;
mod plan;
mod preemption;
mod priority;
mod quota;

pub use crate::amounts::fmt_amount;
pub use explain::{fmt_clock, human_duration};
use pass::{Classes, ShapeSet};
use plan::Plan;

#[derive(Debug, Clone)]
pub enum Ev {
    Submit(usize),
    Start {
        job: usize,
        nodes: Vec<usize>,
        backfill: bool,
    },
    Finish(usize),
    Preempt {
        job: usize,
        by: usize,
        mode: PreemptMode,
    },
    Reject {
        job: usize,
        reason: String,
    },
}

/// Why a job did not start in a pass; worded for people by `Engine::words`.
#[derive(Debug, Clone)]
pub enum Block {
    Max {
        dim: usize,
        max: f64,
        used: f64,
    },
    Cohort {
        dim: usize,
        guarantee: f64,
        avail: f64,
    },
    Nodes,
    Reservation {
        holder: usize,
        at: f64,
    },
    Behind {
        head: usize,
    },
    Fifo {
        head: usize,
    },
    Gang,
    /// Not eligible to start before `at` (its begin time, or its reservation's start).
    Begin {
        at: f64,
    },
    /// It would fit now on nodes that advanced reservation `resv` holds (from `from` to `to`).
    AdvResv {
        resv: u32,
        from: f64,
        to: f64,
    },
    /// A limit of the snapshot's QoS or team fields: the reason and the binding in short words.
    Hold(String, String),
    /// A scoped limit of the snapshot's limit list.
    Limit(LimitBlock),
}

pub struct Engine<'a, 'p> {
    pub cluster: Cluster<'a>,
    pub policy: &'p Policy,
    pub now: f64,
    pub t0: f64,
    /// Per team and quota dimension (cpu, memory, gpu, typed GPU keys).
    pub usage: Vec<Vec<f64>>,
    pub fs_usage: Vec<f64>,
    pub user_qos: BTreeMap<(usize, &'a str), (V3, i64)>,
    pub user_team: BTreeMap<(usize, &'a str), V3>,
    pub submitted_user_qos: BTreeMap<(usize, &'a str), i64>,
    pub submitted_team: Vec<i64>,
    pub events: Vec<(f64, Ev)>,
    pub ends: BTreeSet<(u64, usize, u64)>,
    pub seq: u64,
    /// Per job: what blocked it in the first pass (predict's reason).
    pub first_block: Vec<Option<Block>>,
    pub reject_reason: BTreeMap<usize, String>,
    /// The binding limit or constraint of each rejected (or never runnable) job, in short words.
    pub reject_binding: BTreeMap<usize, String>,
    /// Admitting a job that arrives now (not one the snapshot already holds).
    pub arriving: bool,
    /// predict with the source's priorities: per job, the priority at the
    /// snapshot; each pass adds the age it gains since (`Policy::priority`).
    pub age_drift: Option<Vec<f64>>,
    /// Fair Tree recalculated over the horizon as simulated jobs add usage.
    pub fair: Option<FairDrift>,
    /// Times a pass must run though no job ends or arrives: when a running job
    /// outgrows its QoS's preemption exempt time and may become a victim, or a
    /// pending job becomes eligible.
    pub wake: BTreeSet<u64>,
    /// Set by `find_victims`: the earliest time an exempt candidate stops being exempt.
    exempt_until: std::cell::Cell<f64>,
    pub preempted_by: BTreeMap<usize, Vec<(usize, PreemptMode)>>,
    /// Per job, at its first start: the job whose end freed its nodes, and its team's last finished job.
    pub start_trigger: Vec<Option<(Option<usize>, Option<usize>)>>,
    pub team_last_end: Vec<Option<usize>>,
    pub static_priority: bool,
    pub record_first: bool,
    /// predict reads no event stream: it is not kept there.
    pub keep_events: bool,
    pub resource_blocked: bool,
    /// Bumped whenever a team's usage changes, so per-step observers can skip
    /// comparing usage that cannot have moved.
    pub usage_version: u64,
    /// Under static priorities the queue order never changes: sorted once.
    order_cache: Option<Vec<usize>>,
    classes: Option<Classes>,
    free_ix: FreeIndex,
    best: BestFit,
    /// GPU-type groups of `best`: a typed request searches its type's group only.
    gpu_groups: Vec<Option<&'a str>>,
    all_groups: Vec<usize>,
    /// Per (per-node need, GPU type, partition, constraint, advanced reservation):
    /// nodes that could ever hold it.
    eligible_count: BTreeMap<
        (
            (u64, u64, u64),
            Option<&'a str>,
            Option<&'a str>,
            Option<u32>,
            Option<u32>,
        ),
        usize,
    >,
    /// Victims requeued in the current pass: not pending when it began.
    requeued_now: Vec<usize>,
    /// Jobs that are or were pending since the last compaction (a superset of
    /// the queue), so a pass costs the queue and not every job of a trace.
    pending: Vec<usize>,
    in_pending: Vec<bool>,
    /// Shapes that found no room in this pass (free capacity only shrinks and
    /// reservations only grow until a preemption), and those that found none
    /// even ignoring reservations.
    failed_shapes: ShapeSet,
    unfit_shapes: ShapeSet,
    /// Running jobs that preemption may ever pick, by (QoS, team, QoS class) and
    /// then start time: a preemptor reads only the groups it may take from,
    /// instead of scanning every job of the snapshot.
    victims: BTreeMap<(usize, usize, i32), BTreeSet<(u64, usize)>>,
    /// Per node, bumped whenever a job starts or stops on it: a `Profile` made
    /// before is stale.
    node_stamp: Vec<u64>,
    /// Bumped with every `node_stamp`: no node changed while it holds.
    node_epoch: u64,
    /// The last pass's plan under conservative backfill, for the next to reuse
    /// its buffers (`Plan::reset`).
    spare_plan: Option<Plan>,
    /// The state of the pass-delay draws (`Policy::pass_jitter_seed`; 0: none).
    jitter: u64,
}

fn bits(t: f64) -> u64 {
    // Times are >= 0 here, where the IEEE bit order is the numeric order.
    t.max(0.0).to_bits()
}

/// A request's amount in quota dimension `d`: a typed dimension holds its GPUs.
fn need_in(total: &V3, d: usize) -> f64 {
    total[d.min(GPU)]
}

impl<'a, 'p> Engine<'a, 'p> {
    pub fn new(c: Cluster<'a>, p: &'p Policy, now: f64) -> Engine<'a, 'p> {
        let nt = c.teams.len();
        let nd = 3 + c.quota_gpu_types.len();
        let mut e = Engine {
            cluster: c,
            policy: p,
            now,
            t0: now,
            usage: vec![vec![0.0; nd]; nt],
            fs_usage: vec![0.0; nt],
            user_qos: BTreeMap::new(),
            user_team: BTreeMap::new(),
            submitted_user_qos: BTreeMap::new(),
            submitted_team: vec![0; nt],
            events: Vec::new(),
            ends: BTreeSet::new(),
            seq: 0,
            first_block: Vec::new(),
            reject_reason: BTreeMap::new(),
            reject_binding: BTreeMap::new(),
            arriving: false,
            age_drift: None,
            fair: None,
            wake: BTreeSet::new(),
            exempt_until: std::cell::Cell::new(INF),
            preempted_by: BTreeMap::new(),
            start_trigger: Vec::new(),
            team_last_end: vec![None; nt],
            static_priority: false,
            record_first: false,
            keep_events: true,
            resource_blocked: false,
            usage_version: 0,
            order_cache: None,
            classes: None,
            free_ix: FreeIndex::new(std::iter::empty()),
            best: BestFit::new(&[], Vec::new(), 0, false),
            gpu_groups: Vec::new(),
            all_groups: Vec::new(),
            eligible_count: BTreeMap::new(),
            requeued_now: Vec::new(),
            pending: Vec::new(),
            in_pending: Vec::new(),
            failed_shapes: ShapeSet::new(0),
            unfit_shapes: ShapeSet::new(0),
            victims: BTreeMap::new(),
            node_stamp: Vec::new(),
            node_epoch: 0,
            spare_plan: None,
            jitter: p.pass_jitter_seed,
        };
        e.node_stamp = vec![0; e.cluster.nodes.len()];
        e.in_pending = vec![false; e.cluster.jobs.len()];
        e.first_block = vec![None; e.cluster.jobs.len()];
        e.start_trigger = vec![None; e.cluster.jobs.len()];
        e.failed_shapes = ShapeSet::new(e.cluster.n_shapes);
        e.unfit_shapes = ShapeSet::new(e.cluster.n_shapes);
        for j in 0..e.cluster.jobs.len() {
            if e.cluster.jobs[j].state == JobState::Pending {
                e.mark_pending(j);
                // A job not yet eligible (a begin time, a requeued job's wait) is
                // passed over until then; a pass must run when it becomes eligible.
                let el = e.cluster.jobs[j].eligible;
                if el > now && el.is_finite() {
                    e.wake.insert(bits(el));
                }
            }
        }
        for r in &e.cluster.resvs {
            // Nodes an advanced reservation held open to other jobs when it ends.
            if r.end > now && r.end.is_finite() {
                e.wake.insert(bits(r.end));
            }
        }
        for j in 0..e.cluster.jobs.len() {
            if e.cluster.jobs[j].state == JobState::Running {
                e.account(j, 1.0);
                e.index_victim(j, true);
                e.count_submitted(j, 1);
                e.seq += 1;
                e.cluster.jobs[j].run_seq = e.seq;
                let end = now + e.cluster.jobs[j].remaining;
                if end.is_finite() {
                    e.ends.insert((bits(end), j, e.seq));
                }
            }
        }
        e.free_ix = FreeIndex::new(e.cluster.nodes.iter().map(|n| n.free));
        let mut group_of = Vec::with_capacity(e.cluster.nodes.len());
        for n in &e.cluster.nodes {
            let g = match e.gpu_groups.iter().position(|t| *t == n.gpu_type) {
                Some(g) => g,
                None => {
                    e.gpu_groups.push(n.gpu_type);
                    e.gpu_groups.len() - 1
                }
            };
            group_of.push(g);
        }
        e.all_groups = (0..e.gpu_groups.len()).collect();
        let free: Vec<V3> = e.cluster.nodes.iter().map(|n| n.free).collect();
        e.best = BestFit::new(
            &free,
            group_of,
            e.gpu_groups.len(),
            p.placement == Placement::Consecutive,
        );
        for t in 0..nt {
            // What the source counts against the team beyond the jobs it shows: the
            // prediction starts from the scheduler's own usage, not a recount.
            for (u, x) in e.usage[t].iter_mut().zip(&e.cluster.teams[t].unseen) {
                *u += x;
            }
            e.fs_usage[t] = e.cluster.teams[t]
                .raw_usage
                .unwrap_or(e.usage[t][e.cluster.unit]);
        }
        e
    }

    /// Seconds from an event to the pass that answers it: `pass_delay`, or under
    /// `pass_jitter_seed` a draw of mean `pass_delay` (splitmix64).
    fn next_pass_delay(&mut self) -> f64 {
        if self.jitter == 0 {
            return self.policy.pass_delay;
        }
        self.jitter = self.jitter.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.jitter;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let unit = (z >> 11) as f64 / (1u64 << 53) as f64;
        // Exponential with mean `pass_delay`, cut at ten means: most answers come
        // at once, a few wait for the next backfill cycle (the measured p10/p90 of
        // 0.07/1.56 s beside a 0.6 s mean is that shape; a uniform draw has no tail).
        (-self.policy.pass_delay * (1.0 - unit).ln()).min(10.0 * self.policy.pass_delay)
    }

    fn mark_pending(&mut self, j: usize) {
        if !self.in_pending[j] {
            self.in_pending[j] = true;
            self.pending.push(j);
        }
    }

    /// The pending jobs, in no particular order; drops those that left the queue.
    fn compact_pending(&mut self) -> &[usize] {
        let (jobs, flags) = (&self.cluster.jobs, &mut self.in_pending);
        self.pending.retain(|&j| {
            let keep = jobs[j].state == JobState::Pending;
            flags[j] = keep;
            keep
        });
        &self.pending
    }

    fn event(&mut self, t: f64, ev: Ev) {
        if self.keep_events {
            self.events.push((t, ev));
        }
    }

    /// Runs passes forward from `t0` until nothing is left to happen or `until`.
    /// `arrivals` are job indices in (submit, id) order.
    pub fn run(
        &mut self,
        arrivals: &[usize],
        until: f64,
        mut on_step: impl FnMut(&mut Self, f64, f64),
    ) {
        let t0 = self.t0;
        let step = self.policy.bf_resolution;
        let mut ai = 0;
        let mut last = t0;
        let mut first = true;
        loop {
            let next_arr = arrivals
                .get(ai)
                .map(|&j| self.cluster.jobs[j].submit.max(t0));
            let next_end = self.ends.first().map(|e| f64::from_bits(e.0));
            let next_wake = self.wake.first().map(|&w| f64::from_bits(w));
            let te = if first {
                t0
            } else {
                match (next_arr, next_end, next_wake) {
                    (None, None, None) => break,
                    (a, e, w) => a.unwrap_or(INF).min(e.unwrap_or(INF)).min(w.unwrap_or(INF)),
                }
            };
            let tp = if first || self.policy.passes == Passes::Events {
                if first {
                    t0
                } else {
                    te + self.next_pass_delay()
                }
            } else {
                (t0 + ((te - t0) / step).ceil() * step).max(te)
            };
            if tp > until {
                break;
            }
            while self.wake.first().is_some_and(|&w| f64::from_bits(w) <= tp) {
                self.wake.pop_first();
            }
            // Ends and arrivals up to the pass time, each at its own time.
            loop {
                let e = self.ends.first().copied();
                let a = arrivals.get(ai).copied();
                let et = e.map(|x| f64::from_bits(x.0)).filter(|&x| x <= tp);
                let at = a
                    .map(|j| self.cluster.jobs[j].submit.max(t0))
                    .filter(|&x| x <= tp);
                match (et, at) {
                    (None, None) => break,
                    (Some(x), at) if at.is_none_or(|y| x <= y) => {
                        on_step(self, last, x);
                        last = x;
                        let (_, j, _) = self.ends.pop_first().expect("peeked");
                        self.finish(j, x);
                    }
                    (_, Some(y)) => {
                        on_step(self, last, y);
                        last = y;
                        let j = a.expect("peeked");
                        self.cluster.jobs[j].state = JobState::Pending;
                        self.mark_pending(j);
                        self.event(y, Ev::Submit(j));
                        self.arriving = true;
                        self.admit_submit(j, y);
                        self.arriving = false;
                        ai += 1;
                    }
                    _ => unreachable!(),
                }
            }
            on_step(self, last, tp);
            last = tp;
            self.pass(tp);
            self.record_first = false;
            first = false;
        }
        on_step(self, last, last);
    }
}
