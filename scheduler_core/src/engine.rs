//! The scheduling engine shared by `predict` and `simulate`: one scheduling
//! pass (priority order, limits, quotas with cohort borrowing, whole-job
//! placement, preemption, EASY or conservative backfill) and the event loop
//! that runs passes forward in time. docs/core.md gives the source of each rule.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use crate::bestfit::{from_ord_bits, ord_bits, BestFit, Step};
use crate::cluster::{dim_name, fits, id_cmp, queue_cmp, Cluster, St, INF};
use crate::fairtree::FairDrift;
use crate::freeindex::FreeIndex;
use crate::fxhash::{FxMap, FxSet};
use crate::limits::{LimitBlock, NO_PROFILE};
use crate::policy::{Backfill, FairShareMode, Passes, Placement, Policy, PreemptMode, QuotaMode};
use crate::wire::{CPU, GPU, MEM, V3};

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
    /// A limit of the snapshot's QoS or team fields: the reason and the binding in short words.
    Hold(String, String),
    /// A scoped limit of the snapshot's limit list.
    Limit(LimitBlock),
}

/// What a job's turn in a pass means for the peers of its class.
enum Outcome {
    /// Go on with the next job of the class.
    Next,
    /// Every peer would fail the same way in this pass.
    Drop,
    /// Room was freed by preemption: dropped classes may start again.
    Preempted,
    /// Backfill is off and the head is blocked: nothing below it starts.
    Stop,
}

/// A set of job shapes (`Job::shape`) emptied in O(1): a pass clears it often.
struct ShapeSet {
    stamp: Vec<u32>,
    gen: u32,
}

impl ShapeSet {
    fn new(n: usize) -> ShapeSet {
        ShapeSet {
            stamp: vec![0; n],
            gen: 1,
        }
    }
    fn contains(&self, s: usize) -> bool {
        self.stamp[s] == self.gen
    }
    fn insert(&mut self, s: usize) {
        self.stamp[s] = self.gen;
    }
    fn clear(&mut self) {
        self.gen += 1;
    }
}

struct PassCtx {
    plan: Plan,
    /// The job (or a gang's first member) holding each reservation; a gang's
    /// members share one, so this, not `res`, counts reservations.
    res_holder: Vec<usize>,
    stopped_by: Option<usize>,
    fifo_blocked: BTreeMap<usize, usize>,
    gang_tried: BTreeSet<usize>,
    max_res: usize,
    /// Reservations are made only when something reads them (issue #17). A pass's
    /// reservations live only for the pass and only decide whether a later job may
    /// start now; when no later job fits the free nodes even ignoring them, none of
    /// them changes the outcome. So under `lazy`, a blocked job's reservation
    /// attempt is queued here, in queue order, and made (`reserve_deferred`) just
    /// before it could matter: a placement that fits ignoring reservations, a
    /// preemption, a gang. No job starts or ends while attempts wait, so each is
    /// made against the very cluster state and earlier reservations it would have
    /// met in its turn, and the schedule is unchanged. Only under conservative
    /// backfill: EASY's one reservation gains nothing from waiting.
    lazy: bool,
    deferred: std::collections::VecDeque<usize>,
}

/// The static queue split into classes of jobs that every check treats alike:
/// same per-node shape, node count, typed GPU, partition, limit, team, QoS,
/// QoS class, and user where a per-user limit applies. A gang member is a class
/// of its own. Members are in queue order.
struct Classes {
    members: Vec<Vec<usize>>,
    rank: Vec<usize>,
    class_of: Vec<usize>,
    pos: Vec<usize>,
    lo: Vec<usize>,
    cursor: Vec<usize>,
}

impl Classes {
    fn build(c: &Cluster, order: &[usize]) -> Classes {
        let n = c.jobs.len();
        let (mut rank, mut class_of, mut pos) = (vec![usize::MAX; n], vec![0; n], vec![0; n]);
        let mut keys: FxMap<
            (
                (u64, u64, u64),
                (u64, u64, u64),
                usize,
                Option<&str>,
                Option<&str>,
                u64,
                (usize, usize, i32),
                Option<&str>,
                usize,
                (u32, Option<u32>),
            ),
            usize,
        > = FxMap::default();
        let mut members: Vec<Vec<usize>> = Vec::new();
        for (r, &j) in order.iter().enumerate() {
            let job = &c.jobs[j];
            rank[j] = r;
            let q = &c.qos[job.qos];
            let t = &c.teams[job.team];
            let per_user =
                q.max_tres_user.is_some() || q.max_jobs_user.is_some() || t.per_user.is_some();
            let b = |x: f64| x.to_bits();
            let key = (
                (
                    b(job.per_node[CPU]),
                    b(job.per_node[MEM]),
                    b(job.per_node[GPU]),
                ),
                (b(job.total[CPU]), b(job.total[MEM]), b(job.total[GPU])),
                job.nn,
                job.gtype,
                job.part,
                b(job.limit.unwrap_or(INF)),
                (job.team, job.qos, job.class_rank),
                if per_user { Some(job.user) } else { None },
                if job.gang.is_some() { j } else { usize::MAX },
                (job.lprof, job.cons),
            );
            let k = *keys.entry(key).or_insert_with(|| {
                members.push(Vec::new());
                members.len() - 1
            });
            class_of[j] = k;
            pos[j] = members[k].len();
            members[k].push(j);
        }
        let nc = members.len();
        Classes {
            members,
            rank,
            class_of,
            pos,
            lo: vec![0; nc],
            cursor: vec![0; nc],
        }
    }
}

struct Reservation {
    start: f64,
    end: f64,
    nodes: Vec<usize>,
    need: V3,
}

/// A pass's reservations, with each node's listed in the order they were made.
/// `free_at` and `clear_of` read only the node's own reservations, instead of
/// scanning every reservation's node list (conservative backfill keeps up to
/// `bf_max_job_test` of them, and each `earliest` asks every node at every grid
/// time: issue #17). The same reservations in the same order are summed, so the
/// floating-point results are those of the full scan.
///
/// Only conservative backfill (`indexed`) keeps the per-node lists and profiles:
/// EASY holds at most one reservation, where they would cost `predict` their
/// upkeep every pass and save nothing, so there `on` scans the reservations as
/// before.
#[derive(Default)]
struct Plan {
    res: Vec<Reservation>,
    indexed: bool,
    /// Per node, indices into `res` of the reservations holding it, ascending.
    on_node: Vec<Vec<usize>>,
    /// Per node, its `Profile` under these reservations, made by `earliest` when
    /// first needed (`live`) and brought up to date as reservations are added.
    /// A pass's plan is `reset` for the next, its buffers kept: growing them anew
    /// each pass was most of conservative backfill's allocation cost (issue #17).
    profiles: std::cell::RefCell<Vec<Profile>>,
    /// `earliest_profiled`'s buffers, kept from one search to the next.
    scratch: std::cell::RefCell<Scratch>,
}

/// A search's eligible nodes and the times its grid is made from; per eligible
/// node, its profile cursors and the grid times it is blocked until; the
/// candidates at a grid time; the grid times still to visit.
#[derive(Default)]
struct Scratch {
    eligible: Vec<usize>,
    times: Vec<f64>,
    cur: Vec<(usize, usize)>,
    skip: Vec<(f64, f64)>,
    cands: Vec<Scored>,
    grid: Vec<Reverse<u64>>,
}

/// A node's free capacity over time under a plan, as a step function: `free[i]`
/// is `free_at(n, t)` for `at[i] <= t < at[i + 1]` (before `at[0]`, the node's
/// free capacity now). Its breakpoints are every time a condition of `free_at`
/// can change (its running jobs' planned ends, its reservations' starts and
/// ends), so between two the very same sums are made, and each value is
/// computed by `free_at` itself, when first read: a lookup gives `free_at`'s
/// result bit for bit. `earliest` reads it at every grid time, and `clear_of`'s
/// checks at reservation starts, instead of summing again per node and time.
#[derive(Default)]
struct Profile {
    /// Made under the current plan (else to be made when read).
    live: bool,
    /// `Engine::node_stamp` of the node when made: a start or end on it since
    /// makes the profile stale.
    stamp: u64,
    at: Vec<f64>,
    free: Vec<Option<V3>>,
    /// A reservation on the node starts at `at[i]` (what `clear_of` checks).
    start: Vec<bool>,
}

impl Profile {
    /// A reservation over [start, end) was added on the node (last in its
    /// order). `free_at` elsewhere makes the same sums as before (the condition
    /// of the new reservation is false there), so only the values in
    /// [start, end) are forgotten, to be computed again when read.
    fn add(&mut self, start: f64, end: f64) {
        let i = self.point(start);
        let k = self.point(end);
        // `end` went in after `start`, leaving its place, unless it is earlier.
        let i = if end >= start {
            i
        } else {
            self.at.partition_point(|&y| y < start)
        };
        self.start[i] = true;
        for v in self.free.iter_mut().take(k).skip(i) {
            *v = None;
        }
    }

    /// Makes `x` a breakpoint (value unknown yet) if it is not one; its index.
    fn point(&mut self, x: f64) -> usize {
        let i = self.at.partition_point(|&y| y < x);
        if self.at.get(i) != Some(&x) {
            self.at.insert(i, x);
            self.free.insert(i, None);
            self.start.insert(i, false);
        }
        i
    }
}

impl Plan {
    fn new(indexed: bool) -> Self {
        Plan {
            indexed,
            ..Plan::default()
        }
    }

    fn push(&mut self, r: Reservation) {
        if !self.indexed {
            self.res.push(r);
            return;
        }
        let k = self.res.len();
        for &n in &r.nodes {
            if self.on_node.len() <= n {
                self.on_node.resize_with(n + 1, Vec::new);
            }
            // `nodes.contains(n)` counted a node once, however often listed.
            if self.on_node[n].last() != Some(&k) {
                self.on_node[n].push(k);
            }
            if let Some(p) = self.profiles.get_mut().get_mut(n).filter(|p| p.live) {
                p.add(r.start, r.end);
            }
        }
        self.res.push(r);
    }

    /// The reservations holding node `n`, in the order they were made: from its
    /// list when `indexed`, else by scanning them all.
    fn on(&self, n: usize) -> impl Iterator<Item = &Reservation> + '_ {
        let (listed, scanned) = if self.indexed {
            (self.on_node.get(n).map_or(&[][..], |v| &v[..]), &[][..])
        } else {
            (&[][..], &self.res[..])
        };
        listed
            .iter()
            .map(move |&k| &self.res[k])
            .chain(scanned.iter().filter(move |rv| rv.nodes.contains(&n)))
    }

    fn is_empty(&self) -> bool {
        self.res.is_empty()
    }

    /// No reservations, as `Plan::new(self.indexed)`, keeping the buffers.
    fn reset(&mut self) {
        self.res.clear();
        self.on_node.iter_mut().for_each(Vec::clear);
        self.profiles
            .get_mut()
            .iter_mut()
            .for_each(|p| p.live = false);
    }
}

pub struct Engine<'a, 'p> {
    pub c: Cluster<'a>,
    pub p: &'p Policy,
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
    /// outgrows its QoS's preemption exempt time and may become a victim.
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
    /// Per (per-node need, GPU type, partition): nodes that could ever hold it.
    eligible_count: BTreeMap<
        (
            (u64, u64, u64),
            Option<&'a str>,
            Option<&'a str>,
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
    /// The last pass's plan under conservative backfill, for the next to reuse
    /// its buffers (`Plan::reset`).
    spare_plan: Option<Plan>,
}

/// A preemption candidate; the heap pops borrowing teams first, then lowest
/// priority, then most recently started, then the highest job id.
struct Cand<'a> {
    borrowing: bool,
    prio: f64,
    start: f64,
    id: &'a str,
    v: usize,
}

impl Ord for Cand<'_> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.borrowing
            .cmp(&o.borrowing)
            .then(o.prio.total_cmp(&self.prio))
            .then(self.start.total_cmp(&o.start))
            .then_with(|| id_cmp(self.id, o.id))
    }
}

impl PartialOrd for Cand<'_> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl PartialEq for Cand<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o).is_eq()
    }
}

impl Eq for Cand<'_> {}

type Scored = ((f64, f64, f64), usize);

fn score_cmp(a: &Scored, b: &Scored) -> std::cmp::Ordering {
    a.0 .0
        .total_cmp(&b.0 .0)
        .then(a.0 .1.total_cmp(&b.0 .1))
        .then(a.0 .2.total_cmp(&b.0 .2))
        .then(a.1.cmp(&b.1))
}

/// The `nn` best-scored candidates, in node order; None if too few.
fn pick(mut cands: Vec<Scored>, nn: usize) -> Option<Vec<usize>> {
    if cands.len() < nn {
        return None;
    }
    if nn == 1 {
        return cands
            .iter()
            .min_by(|a, b| score_cmp(a, b))
            .map(|c| vec![c.1]);
    }
    if nn < cands.len() {
        cands.select_nth_unstable_by(nn - 1, score_cmp);
    }
    let mut v: Vec<usize> = cands[..nn].iter().map(|c| c.1).collect();
    v.sort_unstable();
    Some(v)
}

/// Slurm's default node choice (select/cons_tres `_eval_nodes`, no topology,
/// equal node weights): split the candidates (scored by free CPUs, in
/// `score`) into runs of consecutive node indices; take the first run that
/// holds the rest of the job with the fewest free CPUs, or, while none does,
/// the one with the most; from it, one node: the fewest free CPUs (first on
/// ties); more: in index order. Repeat until the job has its nodes.
fn consecutive_pick(mut cands: Vec<Scored>, nn: usize) -> Option<Vec<usize>> {
    if cands.len() < nn {
        return None;
    }
    cands.sort_unstable_by_key(|c| c.1);
    // (first, past-the-end) index into `cands`, and the run's free CPUs.
    let mut runs: Vec<(usize, usize, f64)> = Vec::new();
    for (i, c) in cands.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if cands[r.1 - 1].1 + 1 == c.1 => {
                r.1 = i + 1;
                r.2 += c.0 .0;
            }
            _ => runs.push((i, i + 1, c.0 .0)),
        }
    }
    let mut out = Vec::with_capacity(nn);
    let mut used = vec![false; runs.len()];
    while out.len() < nn {
        let rem = nn - out.len();
        // (run, sufficient, cpus) of the best so far; the comparisons are Slurm's.
        let mut best: Option<(usize, bool, f64)> = None;
        for (k, r) in runs.iter().enumerate() {
            if used[k] {
                continue;
            }
            let ok = r.1 - r.0 >= rem;
            let better = match best {
                None => true,
                // A run that holds the job beats one that does not, then the
                // fewest CPUs; while none holds it, the most.
                Some((_, bok, bcpu)) if ok => !bok || r.2 < bcpu,
                Some((_, _, bcpu)) => r.2 > bcpu,
            };
            if better {
                best = Some((k, ok, r.2));
            }
        }
        let (k, _, _) = best?;
        used[k] = true;
        let run = &cands[runs[k].0..runs[k].1];
        if rem == 1 {
            let c = run
                .iter()
                .min_by(|a, b| a.0 .0.total_cmp(&b.0 .0).then(a.1.cmp(&b.1)))?;
            out.push(c.1);
        } else {
            out.extend(run.iter().take(rem).map(|c| c.1));
        }
    }
    out.sort_unstable();
    Some(out)
}

/// `consecutive_pick` for a one-node job, fed in node order without a list:
/// every run holds one node, so the best run is the one with the fewest free
/// CPUs (the first on ties), and in it the node with the fewest (the first on
/// ties). Most jobs ask for one node, and their placement walks every fitting
/// node, so this is the hot path of a cons_tres site's prediction.
#[derive(Default)]
struct OneNodeRuns {
    /// The open run: (last node, run's free CPUs, its tightest node, that node's CPUs).
    open: Option<(usize, f64, usize, f64)>,
    /// The best closed run: (run's free CPUs, its tightest node).
    best: Option<(f64, usize)>,
}

impl OneNodeRuns {
    fn push(&mut self, n: usize, cpus: f64) {
        match &mut self.open {
            Some(r) if r.0 + 1 == n => {
                r.0 = n;
                r.1 += cpus;
                if cpus < r.3 {
                    r.2 = n;
                    r.3 = cpus;
                }
            }
            _ => {
                self.close();
                self.open = Some((n, cpus, n, cpus));
            }
        }
    }

    fn close(&mut self) {
        if let Some((_, sum, node, _)) = self.open.take() {
            if self.best.is_none_or(|(b, _)| sum < b) {
                self.best = Some((sum, node));
            }
        }
    }

    fn pick(mut self) -> Option<usize> {
        self.close();
        self.best.map(|(_, n)| n)
    }
}

fn bits(t: f64) -> u64 {
    // Times are >= 0 here, where the IEEE bit order is the numeric order.
    t.max(0.0).to_bits()
}

/// A request's amount in quota dimension `d`: a typed dimension holds its GPUs.
fn need_in(total: &V3, d: usize) -> f64 {
    total[d.min(GPU)]
}

pub fn fmt_amount(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:.2}")
    }
}

pub fn fmt_clock(t: f64, now: f64) -> String {
    let s = t.floor() as i64;
    let (h, m) = ((s.rem_euclid(86400)) / 3600, (s.rem_euclid(3600)) / 60);
    let d = (t - now).max(0.0) as i64;
    let rel = if d >= 86400 {
        format!("{}d{}h", d / 86400, (d % 86400) / 3600)
    } else if d >= 3600 {
        format!("{}h{:02}m", d / 3600, (d % 3600) / 60)
    } else {
        format!("{}m", d / 60)
    };
    format!("{h:02}:{m:02} UTC (in {rel})")
}

impl<'a, 'p> Engine<'a, 'p> {
    pub fn new(c: Cluster<'a>, p: &'p Policy, now: f64) -> Engine<'a, 'p> {
        let nt = c.teams.len();
        let nd = 3 + c.qtypes.len();
        let mut e = Engine {
            c,
            p,
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
            spare_plan: None,
        };
        e.node_stamp = vec![0; e.c.nodes.len()];
        e.in_pending = vec![false; e.c.jobs.len()];
        e.first_block = vec![None; e.c.jobs.len()];
        e.start_trigger = vec![None; e.c.jobs.len()];
        e.failed_shapes = ShapeSet::new(e.c.n_shapes);
        e.unfit_shapes = ShapeSet::new(e.c.n_shapes);
        for j in 0..e.c.jobs.len() {
            if e.c.jobs[j].st == St::Pending {
                e.mark_pending(j);
            }
        }
        for j in 0..e.c.jobs.len() {
            if e.c.jobs[j].st == St::Running {
                e.account(j, 1.0);
                e.index_victim(j, true);
                e.count_submitted(j, 1);
                e.seq += 1;
                e.c.jobs[j].run_seq = e.seq;
                let end = now + e.c.jobs[j].remaining;
                if end.is_finite() {
                    e.ends.insert((bits(end), j, e.seq));
                }
            }
        }
        e.free_ix = FreeIndex::new(e.c.nodes.iter().map(|n| n.free));
        let mut group_of = Vec::with_capacity(e.c.nodes.len());
        for n in &e.c.nodes {
            let g = match e.gpu_groups.iter().position(|t| *t == n.gtype) {
                Some(g) => g,
                None => {
                    e.gpu_groups.push(n.gtype);
                    e.gpu_groups.len() - 1
                }
            };
            group_of.push(g);
        }
        e.all_groups = (0..e.gpu_groups.len()).collect();
        let free: Vec<V3> = e.c.nodes.iter().map(|n| n.free).collect();
        e.best = BestFit::new(
            &free,
            group_of,
            e.gpu_groups.len(),
            p.placement == Placement::Consecutive,
        );
        for t in 0..nt {
            // What the source counts against the team beyond the jobs it shows: the
            // prediction starts from the scheduler's own usage, not a recount.
            for (u, x) in e.usage[t].iter_mut().zip(&e.c.teams[t].unseen) {
                *u += x;
            }
            e.fs_usage[t] = e.c.teams[t].raw_usage.unwrap_or(e.usage[t][e.c.unit]);
        }
        e
    }

    /// Adds or removes a running job in the preemption index, if it could ever be a victim.
    fn index_victim(&mut self, j: usize, add: bool) {
        let job = &self.c.jobs[j];
        if !self.p.preemption
            || !self.c.teams[job.team].preemptible
            || self.c.qos[job.qos].exempt
            || job.nodes.is_empty()
        {
            return;
        }
        let key = (job.qos, job.team, job.class_rank);
        let entry = (ord_bits(job.start), j);
        if add {
            self.victims.entry(key).or_default().insert(entry);
        } else if let Some(set) = self.victims.get_mut(&key) {
            set.remove(&entry);
        }
    }

    fn mark_pending(&mut self, j: usize) {
        if !self.in_pending[j] {
            self.in_pending[j] = true;
            self.pending.push(j);
        }
    }

    /// The pending jobs, in no particular order; drops those that left the queue.
    fn compact_pending(&mut self) -> &[usize] {
        let (jobs, flags) = (&self.c.jobs, &mut self.in_pending);
        self.pending.retain(|&j| {
            let keep = jobs[j].st == St::Pending;
            flags[j] = keep;
            keep
        });
        &self.pending
    }

    fn account(&mut self, j: usize, sign: f64) {
        self.usage_version += 1;
        let job = &self.c.jobs[j];
        let (t, q, u, tot) = (job.team, job.qos, job.user, job.total);
        if job.lprof != NO_PROFILE {
            self.c.lim.account(job.lprof, &tot, job.ltype, sign);
        }
        for (d, x) in tot.iter().enumerate() {
            self.usage[t][d] += sign * x;
        }
        if let Some(k) = job.qdim {
            self.usage[t][k] += sign * tot[GPU];
        }
        // Per-user totals are kept only where a per-user limit reads them.
        let qq = &self.c.qos[q];
        if qq.max_tres_user.is_some() || qq.max_jobs_user.is_some() {
            let e = self.user_qos.entry((q, u)).or_insert(([0.0; 3], 0));
            for (d, x) in tot.iter().enumerate() {
                e.0[d] += sign * x;
            }
            e.1 += sign as i64;
        }
        if self.c.teams[t].per_user.is_some() {
            let e = self.user_team.entry((t, u)).or_insert([0.0; 3]);
            for (d, x) in tot.iter().enumerate() {
                e[d] += sign * x;
            }
        }
    }

    fn event(&mut self, t: f64, ev: Ev) {
        if self.keep_events {
            self.events.push((t, ev));
        }
    }

    // ---------------------------------------------------------------- priority

    /// Per team, what its fair-share factor is made of: (its shares over its
    /// siblings', its usage over its siblings', level fair-share S/U). Siblings are
    /// the children of one parent under Fair Tree, every team under classic; the
    /// usage of an account is its subtree's. No usage: an infinite level.
    pub fn fairshare_levels(&self) -> Vec<(f64, f64, f64)> {
        let teams = &self.c.teams;
        let n = teams.len();
        let tree = self.p.fairshare == FairShareMode::FairTree;
        let mut sub = self.fs_usage.clone();
        if tree {
            for t in 0..n {
                let mut cur = teams[t].parent;
                let mut depth = 0;
                // A cycle in a malformed tree must not loop forever.
                while let Some(c) = cur.filter(|_| depth < 64) {
                    sub[c] += self.fs_usage[t];
                    cur = teams[c].parent;
                    depth += 1;
                }
            }
        }
        let group = |t: usize| {
            if tree {
                teams[t].parent.unwrap_or(n)
            } else {
                n
            }
        };
        let mut ss = vec![0.0; n + 1];
        let mut us = vec![0.0; n + 1];
        for t in 0..n {
            ss[group(t)] += teams[t].shares.max(0.0);
            us[group(t)] += sub[t];
        }
        (0..n)
            .map(|t| {
                let g = group(t);
                let s = if ss[g] > 0.0 {
                    teams[t].shares.max(0.0) / ss[g]
                } else {
                    0.0
                };
                let u = if us[g] > 0.0 { sub[t] / us[g] } else { 0.0 };
                let lf = if s <= 0.0 {
                    0.0
                } else if u <= 0.0 {
                    INF
                } else {
                    s / u
                };
                (s, u, lf)
            })
            .collect()
    }

    /// Fair-share factor per team, classic 2^(-U/S) or Fair Tree rank.
    pub fn fairshare_factors(&self) -> Vec<f64> {
        let teams = &self.c.teams;
        let n = teams.len();
        match self.p.fairshare {
            FairShareMode::Classic => {
                let ss: f64 = teams.iter().map(|t| t.shares).sum();
                let us: f64 = self.fs_usage.iter().sum();
                (0..n)
                    .map(|t| {
                        let s = if ss > 0.0 { teams[t].shares / ss } else { 0.0 };
                        let u = if us > 0.0 { self.fs_usage[t] / us } else { 0.0 };
                        if s <= 0.0 {
                            0.0
                        } else {
                            (2.0f64).powf(-u / s)
                        }
                    })
                    .collect()
            }
            FairShareMode::FairTree => {
                let mut children: Vec<Vec<usize>> = vec![Vec::new(); n + 1];
                for (t, team) in teams.iter().enumerate() {
                    children[team.parent.unwrap_or(n)].push(t);
                }
                let mut sub = self.fs_usage.clone();
                // Subtree usage: add each team's usage to all its ancestors.
                for t in 0..n {
                    let mut cur = teams[t].parent;
                    while let Some(c) = cur {
                        sub[c] += self.fs_usage[t];
                        cur = teams[c].parent;
                    }
                }
                let mut order = Vec::with_capacity(n);
                let mut stack = vec![n];
                while let Some(node) = stack.pop() {
                    if node < n {
                        order.push(node);
                    }
                    let kids = &children[node];
                    let ss: f64 = kids.iter().map(|&k| teams[k].shares).sum();
                    let us: f64 = kids.iter().map(|&k| sub[k]).sum();
                    let mut lf: Vec<(f64, usize)> = kids
                        .iter()
                        .map(|&k| {
                            let s = if ss > 0.0 { teams[k].shares / ss } else { 0.0 };
                            let u = if us > 0.0 { sub[k] / us } else { 0.0 };
                            let v = if s <= 0.0 {
                                0.0
                            } else if u <= 0.0 {
                                INF
                            } else {
                                s / u
                            };
                            (v, k)
                        })
                        .collect();
                    lf.sort_by(|a, b| {
                        b.0.total_cmp(&a.0)
                            .then(teams[a.1].name.cmp(teams[b.1].name))
                    });
                    for &(_, k) in lf.iter().rev() {
                        stack.push(k);
                    }
                }
                let mut f = vec![0.0; n];
                for (rank, &t) in order.iter().enumerate() {
                    f[t] = (n - rank) as f64 / n as f64;
                }
                f
            }
        }
    }

    pub fn compute_priorities(&mut self, t: f64) {
        let fs = self.priority_fairshare();
        self.prioritise_pending(t, &fs);
    }

    /// At the snapshot's moment: the pending jobs as `compute_priorities` does, and the
    /// snapshot's running jobs the priority the source states (squeue shows a running
    /// job's), else the one its factors give now. Preemption takes the lowest first, so
    /// a running job left at 0 would be taken before any that has one.
    pub fn prioritise_snapshot(&mut self, t: f64) {
        let fs = self.priority_fairshare();
        self.prioritise_pending(t, &fs);
        let running: Vec<usize> = (0..self.c.jobs.len())
            .filter(|&j| self.c.jobs[j].from_snapshot_running)
            .collect();
        self.set_priorities(&running, t, &fs);
        for &j in &running {
            let job = &mut self.c.jobs[j];
            if let Some(p) = job.src_prio {
                job.prio = p;
            }
        }
    }

    /// Each team's fair-share factor as priorities read it.
    fn priority_fairshare(&self) -> Vec<f64> {
        // With no fair-share weight (FCFS trace replays) the factors would be multiplied away.
        if self.p.w.fairshare == 0.0 {
            vec![0.0; self.c.teams.len()]
        } else {
            self.fairshare_factors()
        }
    }

    fn prioritise_pending(&mut self, t: f64, fs: &[f64]) {
        self.compact_pending();
        let pending = std::mem::take(&mut self.pending);
        self.set_priorities(&pending, t, fs);
        self.pending = pending;
    }

    /// Each job's factors and priority at `t`, with fair-share factors `fs` per team.
    fn set_priorities(&mut self, jobs: &[usize], t: f64, fs: &[f64]) {
        let w = &self.p.w;
        let tot = self.c.total;
        let unit = self.c.unit;
        for &j in jobs {
            let job = &mut self.c.jobs[j];
            let age = ((t - job.eligible).max(0.0).min(self.p.max_age)) / self.p.max_age;
            let mut size = if tot[unit] > 0.0 {
                (job.total[unit] / tot[unit]).min(1.0)
            } else {
                0.0
            };
            if self.p.favor_small {
                size = 1.0 - size;
            }
            let part = job
                .part
                .and_then(|p| self.c.part_factor.get(p).copied())
                .unwrap_or(0.0);
            let f = [
                w.age * age,
                w.fairshare * fs[job.team],
                w.qos * self.c.qos[job.qos].prio,
                w.job_size * size,
                w.partition * part,
            ];
            job.factors = f;
            job.prio = f[0] + f[1] + f[2] + f[3] + f[4];
        }
    }

    fn queue_order(&mut self) -> Vec<usize> {
        if self.static_priority {
            if self.order_cache.is_none() {
                // Every job that is or may become pending (a requeued victim) once.
                let all: Vec<usize> = (0..self.c.jobs.len()).collect();
                self.order_cache = Some(self.sorted(all));
            }
            let jobs = &self.c.jobs;
            return self
                .order_cache
                .as_ref()
                .expect("set")
                .iter()
                .copied()
                .filter(|&j| jobs[j].st == St::Pending)
                .collect();
        }
        let v = self.compact_pending().to_vec();
        self.sorted(v)
    }

    fn sorted(&self, mut v: Vec<usize>) -> Vec<usize> {
        let jobs = &self.c.jobs;
        if self.p.strict_team_fifo {
            v.sort_by(|&a, &b| {
                jobs[a]
                    .submit
                    .total_cmp(&jobs[b].submit)
                    .then_with(|| id_cmp(jobs[a].id, jobs[b].id))
            });
        } else {
            v.sort_by(|&a, &b| queue_cmp(&jobs[a], &jobs[b]));
        }
        v
    }

    // ------------------------------------------------------------------ limits

    /// A reason the job can never run (rejected at submission), if any.
    /// A reason the job can never run, and the binding limit in short words.
    pub fn reject_check(&mut self, j: usize) -> Option<(String, String)> {
        if self.c.lim.active {
            return self.reject_check_limits(j);
        }
        self.reject_check_fields(j)
            .or_else(|| self.reject_check_shape(j))
            .or_else(|| self.reject_check_submit(j))
    }

    /// With a limit list, it is the authority: per-job limits, the wall
    /// limit (the job is held for good) and, for a job that arrives, the
    /// queued + running counts. A job the snapshot already holds is never
    /// dropped for a submit limit: it exists.
    fn reject_check_limits(&mut self, j: usize) -> Option<(String, String)> {
        let job = &self.c.jobs[j];
        let lim = &self.c.lim;
        if let Some((b, _)) = lim.never(job.lprof, &job.total, job.ltype, job.limit) {
            return Some((
                lim.words(&b, job.user, self.c.teams[job.team].name),
                lim.binding(&b),
            ));
        }
        if self.arriving {
            if let Some(b) = lim.over_submit(job.lprof) {
                return Some((
                    lim.words(&b, job.user, self.c.teams[job.team].name),
                    lim.binding(&b),
                ));
            }
        }
        self.reject_over_team_max(j)
            .or_else(|| self.reject_check_shape(j))
    }

    /// A request over its team's max (a quota it can never get inside), unless quotas are off.
    fn reject_over_team_max(&self, j: usize) -> Option<(String, String)> {
        if self.p.quota == QuotaMode::Off {
            return None;
        }
        let job = &self.c.jobs[j];
        let team = &self.c.teams[job.team];
        for d in (0..3).chain(job.qdim) {
            let ask = need_in(&job.total, d);
            if ask > team.m[d] {
                return Some((
                    format!(
                        "rejected: asks {} {}, more than team {}'s max of {}",
                        fmt_amount(ask),
                        self.dim_label(d),
                        team.name,
                        fmt_amount(team.m[d])
                    ),
                    format!("team {} max {}", team.name, self.dim_key(d)),
                ));
            }
        }
        None
    }

    /// The snapshot's QoS and team fields as limits (no limit list).
    fn reject_check_fields(&mut self, j: usize) -> Option<(String, String)> {
        let job = &self.c.jobs[j];
        let team = &self.c.teams[job.team];
        let q = &self.c.qos[job.qos];
        if let (Some(mw), Some(l)) = (q.max_wall, job.limit) {
            if l > mw {
                return Some((
                    format!(
                        "rejected: time limit {}s is over QoS {}'s MaxWall of {}s",
                        fmt_amount(l),
                        q.name,
                        fmt_amount(mw)
                    ),
                    format!("QoS {} MaxWall", q.name),
                ));
            }
        }
        if let (Some(mw), Some(l)) = (team.max_wall, job.limit) {
            if l > mw {
                return Some((
                    format!(
                        "rejected: time limit {}s is over team {}'s max wall of {}s",
                        fmt_amount(l),
                        team.name,
                        fmt_amount(mw)
                    ),
                    format!("team {} max wall", team.name),
                ));
            }
        }
        for (lim, of_team) in [(team.per_job, true), (q.max_tres_job, false)] {
            if let Some(lim) = lim {
                for d in 0..3 {
                    if job.total[d] > lim[d] {
                        let who = if of_team {
                            format!("team {}'s per-job limit", team.name)
                        } else {
                            format!("QoS {}'s MaxTRESPerJob", q.name)
                        };
                        let b = if of_team {
                            format!("team {} per-job limit {}", team.name, self.dim_key(d))
                        } else {
                            format!("QoS {} MaxTRESPerJob {}", q.name, self.dim_key(d))
                        };
                        return Some((
                            format!(
                                "rejected: asks {} {} over {} of {}",
                                fmt_amount(job.total[d]),
                                dim_name(d),
                                who,
                                fmt_amount(lim[d])
                            ),
                            b,
                        ));
                    }
                }
            }
        }
        self.reject_over_team_max(j)
    }

    /// The submit counts of the snapshot's QoS and team fields.
    fn reject_check_submit(&self, j: usize) -> Option<(String, String)> {
        let job = &self.c.jobs[j];
        let team = &self.c.teams[job.team];
        let q = &self.c.qos[job.qos];
        if let Some(ms) = q.max_submit_user {
            let n = *self
                .submitted_user_qos
                .get(&(job.qos, job.user))
                .unwrap_or(&0);
            if n >= ms {
                return Some((
                    format!(
                        "rejected: user {} has {} jobs in QoS {}, its MaxSubmitJobsPerUser is {}",
                        job.user, n, q.name, ms
                    ),
                    format!("QoS {} MaxSubmitJobsPerUser", q.name),
                ));
            }
        }
        if let Some(ms) = team.max_submit {
            if self.submitted_team[job.team] >= ms {
                return Some((format!("rejected: team {} has {} jobs queued or running, its max_submit_jobs is {}", team.name, self.submitted_team[job.team], ms), format!("team {} max_submit_jobs", team.name)));
            }
        }
        None
    }

    /// Could the job fit on an empty cluster? (Counted once per shape.)
    fn reject_check_shape(&mut self, j: usize) -> Option<(String, String)> {
        let job = &self.c.jobs[j];
        let b = |x: f64| x.to_bits();
        let key = (
            (
                b(job.per_node[CPU]),
                b(job.per_node[MEM]),
                b(job.per_node[GPU]),
            ),
            job.gtype,
            job.part,
            job.cons,
        );
        let eligible = match self.eligible_count.get(&key) {
            Some(&k) => k,
            None => {
                let k = (0..self.c.nodes.len())
                    .filter(|&n| {
                        self.c.node_eligible(j, n) && fits(&self.c.nodes[n].cap, &job.per_node)
                    })
                    .count();
                self.eligible_count.insert(key, k);
                k
            }
        };
        let job = &self.c.jobs[j];
        if eligible < job.nn {
            let d = if job.per_node[GPU] > 0.0 { GPU } else { CPU };
            let largest = (0..self.c.nodes.len())
                .filter(|&n| self.c.node_eligible(j, n))
                .map(|n| self.c.nodes[n].cap[d])
                .fold(0.0, f64::max);
            let kind = job.gtype.map(|t| format!(" {t}")).unwrap_or_default();
            let cons = job
                .cons
                .map(|k| format!(" with constraint {}", self.c.cons_text[k as usize]))
                .unwrap_or_default();
            return Some((
                if job.nn == 1 {
                    format!("rejected: can never fit: asks {}{} {} on one node{cons}, the largest eligible node has {}", fmt_amount(job.per_node[d]), kind, dim_name(d), fmt_amount(largest))
                } else {
                    format!("rejected: can never fit: asks {} nodes with {}{} {} each{cons}, {} eligible nodes are that large", job.nn, fmt_amount(job.per_node[d]), kind, dim_name(d), eligible)
                },
                if job.cons.is_some() {
                    "constraint".into()
                } else {
                    "nodes".into()
                },
            ));
        }
        None
    }

    pub fn admit_submit(&mut self, j: usize, t: f64) -> bool {
        if let Some((r, b)) = self.reject_check(j) {
            self.c.jobs[j].st = St::Rejected;
            self.event(
                t,
                Ev::Reject {
                    job: j,
                    reason: r.clone(),
                },
            );
            self.reject_reason.insert(j, r);
            self.reject_binding.insert(j, b);
            return false;
        }
        self.count_submitted(j, 1);
        true
    }

    fn on_leave_queue(&mut self, j: usize) {
        self.count_submitted(j, -1);
    }

    /// Jobs queued or running per team, and per user in a QoS that limits them
    /// (kept only there: a per-user map over every job costs a lookup each).
    fn count_submitted(&mut self, j: usize, by: i64) {
        let job = &self.c.jobs[j];
        if job.lprof != NO_PROFILE {
            self.c.lim.count_submitted(job.lprof, by);
        }
        if self.c.qos[job.qos].max_submit_user.is_some() {
            *self
                .submitted_user_qos
                .entry((job.qos, job.user))
                .or_insert(0) += by;
        }
        self.submitted_team[job.team] += by;
    }

    fn hold_check(&self, j: usize) -> Option<Block> {
        let job = &self.c.jobs[j];
        if self.c.lim.active {
            return self
                .c
                .lim
                .hold(job.lprof, &job.total, job.ltype)
                .map(Block::Limit);
        }
        let q = &self.c.qos[job.qos];
        if q.max_tres_user.is_none()
            && q.max_jobs_user.is_none()
            && self.c.teams[job.team].per_user.is_none()
        {
            return None;
        }
        let (used, count) = self
            .user_qos
            .get(&(job.qos, job.user))
            .copied()
            .unwrap_or(([0.0; 3], 0));
        if let Some(lim) = q.max_tres_user {
            for d in 0..3 {
                if used[d] + job.total[d] > lim[d] {
                    return Some(Block::Hold(
                        format!(
                            "held: user {} holds {} of QoS {}'s MaxTRESPerUser of {} {}",
                            job.user,
                            fmt_amount(used[d]),
                            q.name,
                            fmt_amount(lim[d]),
                            dim_name(d)
                        ),
                        format!("QoS {} MaxTRESPerUser {}", q.name, self.dim_key(d)),
                    ));
                }
            }
        }
        if let Some(mj) = q.max_jobs_user {
            if count >= mj {
                return Some(Block::Hold(
                    format!(
                        "held: user {} runs {} jobs, QoS {}'s MaxJobsPerUser is {}",
                        job.user, count, q.name, mj
                    ),
                    format!("QoS {} MaxJobsPerUser", q.name),
                ));
            }
        }
        let team = &self.c.teams[job.team];
        if let Some(lim) = team.per_user {
            let used = self
                .user_team
                .get(&(job.team, job.user))
                .copied()
                .unwrap_or([0.0; 3]);
            for d in 0..3 {
                if used[d] + job.total[d] > lim[d] {
                    return Some(Block::Hold(
                        format!(
                            "held: user {} holds {} of team {}'s per-user limit of {} {}",
                            job.user,
                            fmt_amount(used[d]),
                            team.name,
                            fmt_amount(lim[d]),
                            dim_name(d)
                        ),
                        format!("team {} per-user limit {}", team.name, self.dim_key(d)),
                    ));
                }
            }
        }
        None
    }

    // ------------------------------------------------------------------ quotas

    /// Idle capacity the cohort of `t` can lend it, per quota dimension
    /// (Kueue's cohort borrowing with lendingLimit, per resource and flavor):
    /// unused guarantee of the other members up to their lendable, less what
    /// the others already borrow.
    fn cohort_avail(&self, t: usize, usage: &[Vec<f64>]) -> Vec<f64> {
        let c = self.c.teams[t].cohort;
        let nd = usage[t].len();
        let mut avail = vec![0.0; nd];
        for (s, team) in self.c.teams.iter().enumerate() {
            if s == t || !team.has_g || team.cohort != c {
                continue;
            }
            for (d, a) in avail.iter_mut().enumerate() {
                if team.g[d].is_finite() {
                    *a += (team.g[d] - usage[s][d]).max(0.0).min(team.l[d])
                        - (usage[s][d] - team.g[d]).max(0.0);
                }
            }
        }
        avail
    }

    /// Quota check of a request `need` (typed GPUs also in dimension `qdim`).
    fn quota_check(
        &self,
        t: usize,
        need: &V3,
        qdim: Option<usize>,
        usage: &[Vec<f64>],
    ) -> Option<Block> {
        if self.p.quota == QuotaMode::Off {
            return None;
        }
        let team = &self.c.teams[t];
        for d in [GPU, CPU, MEM].into_iter().chain(qdim) {
            if usage[t][d] + need_in(need, d) > team.m[d] {
                return Some(Block::Max {
                    dim: d,
                    max: team.m[d],
                    used: usage[t][d],
                });
            }
        }
        if self.p.quota == QuotaMode::MaxOnly || !team.has_g {
            return None;
        }
        let mut avail: Option<Vec<f64>> = None;
        for d in [GPU, CPU, MEM].into_iter().chain(qdim) {
            let over = usage[t][d] + need_in(need, d) - team.g[d];
            if over > 0.0 {
                let a = avail.get_or_insert_with(|| self.cohort_avail(t, usage));
                if over > a[d] {
                    return Some(Block::Cohort {
                        dim: d,
                        guarantee: team.g[d],
                        avail: a[d].max(0.0),
                    });
                }
            }
        }
        None
    }

    fn within_guarantee(&self, t: usize, need: &V3, qdim: Option<usize>) -> bool {
        let team = &self.c.teams[t];
        team.has_g
            && (0..3)
                .chain(qdim)
                .all(|d| self.usage[t][d] + need_in(need, d) <= team.g[d])
    }

    fn borrowing(&self, t: usize) -> bool {
        let team = &self.c.teams[t];
        team.has_g && self.usage[t].iter().zip(&team.g).any(|(u, g)| u > g)
    }

    /// "gpu", "cpu", "mem" or the typed key, e.g. "gpu:h100".
    fn dim_key(&self, d: usize) -> String {
        match d {
            CPU => "cpu".into(),
            MEM => "mem".into(),
            GPU => "gpu".into(),
            _ => format!("gpu:{}", self.c.qtypes[d - 3]),
        }
    }

    /// "GPUs", "CPUs", … or the typed key, e.g. "gpu:h100 GPUs".
    fn dim_label(&self, d: usize) -> String {
        if d < 3 {
            dim_name(d).to_string()
        } else {
            format!("gpu:{} GPUs", self.c.qtypes[d - 3])
        }
    }

    // --------------------------------------------------------------- placement

    fn free_at(&self, n: usize, at: f64, plan: &Plan) -> V3 {
        let node = &self.c.nodes[n];
        let mut f = node.free;
        for &r in &node.running {
            let job = &self.c.jobs[r];
            if job.planned_end <= at {
                for d in 0..3 {
                    f[d] += job.per_node[d];
                }
            }
        }
        for rv in plan.on(n) {
            if rv.start <= at && at < rv.end {
                for d in 0..3 {
                    f[d] -= rv.need[d];
                }
            }
        }
        f
    }

    /// Does `need` on node `n` over [from, to) stay clear of every reservation?
    fn clear_of(&self, n: usize, from: f64, to: f64, need: &V3, plan: &Plan) -> bool {
        for rv in plan.on(n) {
            if rv.start >= from && rv.start < to {
                let f = self.free_at(n, rv.start, plan);
                if !fits(&f, need) {
                    return false;
                }
            }
        }
        true
    }

    /// Makes `p` node `n`'s `Profile` under `plan`, in its own buffers.
    fn fill_profile(&self, n: usize, plan: &Plan, p: &mut Profile) {
        let Profile {
            live,
            stamp,
            at,
            free,
            start,
        } = p;
        at.clear();
        at.extend(
            self.c.nodes[n]
                .running
                .iter()
                .map(|&r| self.c.jobs[r].planned_end),
        );
        for rv in plan.on(n) {
            at.push(rv.start);
            at.push(rv.end);
        }
        at.sort_unstable_by(f64::total_cmp);
        at.dedup_by(|a, b| a == b);
        start.clear();
        start.resize(at.len(), false);
        for rv in plan.on(n) {
            start[at.partition_point(|&x| x < rv.start)] = true;
        }
        free.clear();
        free.resize(at.len(), None);
        *stamp = self.node_stamp[n];
        *live = true;
    }

    fn score(&self, free: &V3, need: &V3) -> (f64, f64, f64) {
        let left = [
            free[GPU] - need[GPU],
            free[CPU] - need[CPU],
            free[MEM] - need[MEM],
        ];
        match self.p.placement {
            Placement::BestFit => (left[0], left[1], left[2]),
            Placement::Spread => (-left[0], -left[1], -left[2]),
            // Scored by free CPUs only; `consecutive_pick` needs no more.
            Placement::Consecutive => (free[CPU], 0.0, 0.0),
        }
    }

    /// The node groups (one per GPU type) a job of GPU type `gtype` may use.
    fn node_groups(&self, gtype: Option<&str>) -> std::borrow::Cow<'_, [usize]> {
        match gtype {
            Some(t) => self
                .gpu_groups
                .iter()
                .position(|g| *g == Some(t))
                .into_iter()
                .collect(),
            None => std::borrow::Cow::Borrowed(&self.all_groups),
        }
    }

    /// `consecutive_pick` for a one-node job, now, without visiting every
    /// fitting node: the best run's CPUs are at least those of its tightest
    /// node, so walking nodes by free CPUs may stop at the first node with
    /// more than the best run found; with as many, only an earlier node can
    /// still win (a one-node run that starts first).
    fn one_node_run(&self, j: usize, res: &Plan, to: f64) -> Option<usize> {
        let job = &self.c.jobs[j];
        let need = job.per_node;
        let member = |n: usize| {
            fits(&self.c.nodes[n].free, &need)
                && self.c.node_eligible(j, n)
                && (res.is_empty() || self.clear_of(n, self.now, to, &need, res))
        };
        let groups = self.node_groups(job.gtype);
        // (run's free CPUs, its first node, its tightest node), and the runs seen.
        let mut best: Option<(f64, usize, usize)> = None;
        let mut seen: Vec<(usize, usize)> = Vec::new();
        let last = self.c.nodes.len() - 1;
        self.best.each_by_cpu(&groups, &need, |n, cpus| {
            if let Some((sum, first, _)) = best {
                if cpus > sum {
                    return Step::Stop;
                }
                if cpus == sum && n > first {
                    return Step::SkipLevel;
                }
            }
            if seen.iter().any(|&(lo, hi)| lo <= n && n <= hi) || !member(n) {
                return Step::Next;
            }
            let (mut lo, mut hi) = (n, n);
            while lo > 0 && member(lo - 1) {
                lo -= 1;
            }
            while hi < last && member(hi + 1) {
                hi += 1;
            }
            seen.push((lo, hi));
            // Summed in node order, as `consecutive_pick` sums: the same float.
            let (mut sum, mut tight) = (0.0, lo);
            for m in lo..=hi {
                let c = self.c.nodes[m].free[CPU];
                sum += c;
                if c < self.c.nodes[tight].free[CPU] {
                    tight = m;
                }
            }
            if best.is_none_or(|(s, first, _)| sum < s || (sum == s && lo < first)) {
                best = Some((sum, lo, tight));
            }
            Step::Next
        });
        best.map(|b| b.2)
    }

    /// Whole-job placement now on `nn` distinct nodes, best-fit or spread;
    /// ties go to the node listed first. Free capacity is `free_of(n)`.
    fn place_now(&self, j: usize, res: &Plan, free: Option<&[V3]>, to: f64) -> Option<Vec<usize>> {
        let job = &self.c.jobs[j];
        let need = job.per_node;
        if free.is_none() && self.p.placement == Placement::BestFit {
            // Nodes come tightest first: the first `nn` that take the job are
            // the ones scoring would pick.
            let groups = self.node_groups(job.gtype);
            let mut out = Vec::with_capacity(job.nn);
            self.best.each_best(&groups, &need, |n| {
                if self.c.node_eligible(j, n)
                    && (res.is_empty() || self.clear_of(n, self.now, to, &need, res))
                {
                    out.push(n);
                    return out.len() == job.nn;
                }
                false
            });
            if out.len() < job.nn {
                return None;
            }
            out.sort_unstable();
            return Some(out);
        }
        if self.p.placement == Placement::Consecutive && job.nn == 1 && free.is_none() {
            return self.one_node_run(j, res, to).map(|n| vec![n]);
        }
        if self.p.placement == Placement::Consecutive && job.nn == 1 {
            let mut runs = OneNodeRuns::default();
            let mut visit = |n: usize, f: &V3| {
                if fits(f, &need)
                    && self.c.node_eligible(j, n)
                    && (res.is_empty() || self.clear_of(n, self.now, to, &need, res))
                {
                    runs.push(n, f[CPU]);
                }
                false // the runs need every candidate
            };
            match free {
                Some(fr) => fr.iter().enumerate().for_each(|(n, f)| {
                    visit(n, f);
                }),
                None => self
                    .free_ix
                    .each_fitting(&need, |n| visit(n, &self.c.nodes[n].free)),
            }
            return runs.pick().map(|n| vec![n]);
        }
        let mut cands: Vec<((f64, f64, f64), usize)> = Vec::new();
        let mut visit = |n: usize, f: &V3| -> bool {
            if fits(f, &need)
                && self.c.node_eligible(j, n)
                && (res.is_empty() || self.clear_of(n, self.now, to, &need, res))
            {
                cands.push((self.score(f, &need), n));
                if self.p.placement == Placement::Consecutive {
                    return false; // the runs need every candidate
                }
                // A perfect fit: nothing can beat it, and earlier nodes win ties.
                return job.nn == 1
                    && self.p.placement == Placement::BestFit
                    && cands
                        .last()
                        .is_some_and(|c| c.0 .0 == 0.0 && c.0 .1 == 0.0 && c.0 .2 == 0.0);
            }
            false
        };
        match free {
            Some(fr) => {
                for (n, f) in fr.iter().enumerate() {
                    if visit(n, f) {
                        break;
                    }
                }
            }
            None => self
                .free_ix
                .each_fitting(&need, |n| visit(n, &self.c.nodes[n].free)),
        }
        if self.p.placement == Placement::Consecutive {
            return consecutive_pick(cands, job.nn);
        }
        pick(cands, job.nn)
    }

    /// The times `times` snapped up to the `bf_resolution` grid from `t`, within
    /// the backfill window, ascending and distinct. Lazily: the caller usually
    /// stops at the first few, so a heap beats sorting them all.
    fn grid(&self, t: f64, times: &[f64]) -> impl Iterator<Item = f64> {
        let step = self.p.bf_resolution;
        let last = t + self.p.bf_window;
        let mut heap: BinaryHeap<Reverse<u64>> = times
            .iter()
            .map(|&e| t + ((e - t) / step).ceil() * step)
            .filter(|&g| g <= last)
            .map(|g| Reverse(ord_bits(g)))
            .collect();
        let mut prev = None;
        std::iter::from_fn(move || loop {
            let Reverse(k) = heap.pop()?;
            if prev != Some(k) {
                prev = Some(k);
                return Some(from_ord_bits(k));
            }
        })
    }

    /// Earliest start at or after `t` on the resolution grid within the
    /// backfill window, given running jobs' planned ends and reservations.
    fn earliest(&self, j: usize, t: f64, res: &Plan) -> Option<(f64, Vec<usize>)> {
        if res.indexed {
            return self.earliest_profiled(j, t, res);
        }
        let job = &self.c.jobs[j];
        let need = job.per_node;
        let dur = job.limit.unwrap_or(INF);
        let eligible: Vec<usize> = (0..self.c.nodes.len())
            .filter(|&n| self.c.node_eligible(j, n))
            .collect();
        let mut times: Vec<f64> = Vec::with_capacity(eligible.len() + res.res.len());
        self.change_times(&eligible, t, res, &mut times);
        // Busy first: order by what is free now in the job's main resource, then by fit at
        // the reservation's start, so the reservation leaves idle capacity to backfill.
        let unit = if need[GPU] > 0.0 { GPU } else { CPU };
        for tau in self.grid(t, &times) {
            let mut cands: Vec<Scored> = Vec::new();
            for &n in &eligible {
                let f = self.free_at(n, tau, res);
                if fits(&f, &need) && self.clear_of(n, tau, tau + dur, &need, res) {
                    let s = self.score(&f, &need);
                    let s = if self.p.reserve_busy_first {
                        (self.c.nodes[n].free[unit], s.0, s.1)
                    } else {
                        s
                    };
                    cands.push((s, n));
                }
            }
            if let Some(v) = pick(cands, job.nn) {
                return Some((tau, v));
            }
        }
        None
    }

    /// The times after `t` at which room can change on `nodes`: the planned ends
    /// of the jobs running there and the ends of the plan's reservations.
    fn change_times(&self, nodes: &[usize], t: f64, res: &Plan, times: &mut Vec<f64>) {
        for &n in nodes {
            for &r in &self.c.nodes[n].running {
                let e = self.c.jobs[r].planned_end;
                if e > t && e.is_finite() {
                    times.push(e);
                }
            }
        }
        for rv in &res.res {
            if rv.end > t && rv.end.is_finite() {
                times.push(rv.end);
            }
        }
    }

    /// `earliest` under conservative backfill, reading each eligible node's
    /// `Profile` instead of summing its reservations again at every grid time;
    /// the same candidates, scores and choice (issue #17).
    fn earliest_profiled(&self, j: usize, t: f64, res: &Plan) -> Option<(f64, Vec<usize>)> {
        let job = &self.c.jobs[j];
        let need = job.per_node;
        let dur = job.limit.unwrap_or(INF);
        let mut sc = res.scratch.borrow_mut();
        let Scratch {
            eligible,
            times,
            cur,
            skip,
            cands,
            grid,
        } = &mut *sc;
        // As `earliest` makes them, in the plan's buffers.
        eligible.clear();
        eligible.extend((0..self.c.nodes.len()).filter(|&n| self.c.node_eligible(j, n)));
        times.clear();
        self.change_times(eligible, t, res, times);
        let unit = if need[GPU] > 0.0 { GPU } else { CPU };
        {
            let mut pr = res.profiles.borrow_mut();
            if pr.len() < self.c.nodes.len() {
                pr.resize_with(self.c.nodes.len(), Profile::default);
            }
            for &n in eligible.iter() {
                if !pr[n].live || pr[n].stamp != self.node_stamp[n] {
                    self.fill_profile(n, res, &mut pr[n]);
                }
            }
        }
        let mut pr = res.profiles.borrow_mut();
        let value = |p: &mut Profile, n: usize, i: usize| -> V3 {
            *p.free[i].get_or_insert_with(|| self.free_at(n, p.at[i], res))
        };
        // Per eligible node, two cursors into its profile, which only move forward
        // as the grid times ascend: the first breakpoint at or after `tau`, and
        // the first reservation start from there at which `need` does not fit.
        cur.clear();
        cur.resize(eligible.len(), (0, 0));
        // Per eligible node, grid times it cannot take the job at, found at an
        // earlier one: before `.0` (its free capacity short until that breakpoint),
        // or up to `.1` (a reservation start where it does not fit stays in every
        // later window until then). Skipping them is one comparison per node.
        skip.clear();
        skip.resize(eligible.len(), (f64::NEG_INFINITY, f64::NEG_INFINITY));
        let blocked = |s: &(f64, f64), tau: f64| tau < s.0 || tau <= s.1;
        // The first breakpoint from `k` at which `need` fits (its free capacity
        // is short at every one between), or INF: a node short at `k` is short
        // at every grid time up to there. Reservations come back to back on a
        // node, so one look ahead skips the whole run of them (issue #17).
        let fits_from = |p: &mut Profile, n: usize, mut k: usize| -> f64 {
            while k < p.at.len() {
                if fits(&value(p, n, k), &need) {
                    return p.at[k];
                }
                k += 1;
            }
            INF
        };
        // One buffer for every grid time: `pick` finds nothing with fewer than `nn`
        // candidates, so it is given a copy only when there are enough.
        // `grid(t, times)`, in the plan's buffer.
        let (step, last) = (self.p.bf_resolution, t + self.p.bf_window);
        let mut buf = std::mem::take(grid);
        buf.clear();
        buf.extend(
            times
                .iter()
                .map(|&e| t + ((e - t) / step).ceil() * step)
                .filter(|&g| g <= last)
                .map(|g| Reverse(ord_bits(g))),
        );
        let mut heap = BinaryHeap::from(buf);
        let mut prev = None;
        let found = loop {
            let Some(Reverse(k)) = heap.pop() else {
                break None;
            };
            if prev == Some(k) {
                continue;
            }
            prev = Some(k);
            let tau = from_ord_bits(k);
            // Fewer nodes than the job needs can take it here: nothing to read.
            // (A node's cursors and skips stay valid for any later grid time.)
            let mut open = skip.iter().filter(|s| !blocked(s, tau)).count();
            if open < job.nn {
                continue;
            }
            cands.clear();
            let to = tau + dur;
            for (i, &n) in eligible.iter().enumerate() {
                if cands.len() + open < job.nn {
                    break; // the rest cannot make up the number
                }
                if blocked(&skip[i], tau) {
                    continue;
                }
                open -= 1;
                let (p, c) = (&mut pr[n], &mut cur[i]);
                // Usually a step or two; after a skip, maybe many: then halving.
                let mut steps = 0;
                while c.0 < p.at.len() && p.at[c.0] < tau {
                    c.0 += 1;
                    steps += 1;
                    if steps == 4 {
                        c.0 += p.at[c.0..].partition_point(|&x| x < tau);
                        break;
                    }
                }
                // free_at(n, tau), the same until the next breakpoint after tau.
                let (f, next) = if c.0 < p.at.len() && p.at[c.0] == tau {
                    (value(p, n, c.0), c.0 + 1)
                } else if c.0 > 0 {
                    (value(p, n, c.0 - 1), c.0)
                } else {
                    (self.c.nodes[n].free, c.0)
                };
                if !fits(&f, &need) {
                    skip[i].0 = fits_from(p, n, next);
                    continue;
                }
                // clear_of(n, tau, to): no reservation start in [tau, to) at which
                // `need` does not fit. Breakpoints before `c.1` (and from `c.0`) hold
                // no such start; `to` only grows with `tau`.
                c.1 = c.1.max(c.0);
                let clear = loop {
                    if c.1 >= p.at.len() || p.at[c.1] >= to {
                        break true;
                    }
                    if p.start[c.1] && !fits(&value(p, n, c.1), &need) {
                        // Blocked by this start up to it, and after it while short.
                        skip[i].1 = p.at[c.1];
                        skip[i].0 = fits_from(p, n, c.1 + 1);
                        break false;
                    }
                    c.1 += 1;
                };
                if clear {
                    let s = self.score(&f, &need);
                    let s = if self.p.reserve_busy_first {
                        (self.c.nodes[n].free[unit], s.0, s.1)
                    } else {
                        s
                    };
                    cands.push((s, n));
                }
            }
            if cands.len() >= job.nn {
                if let Some(v) = pick(cands.clone(), job.nn) {
                    break Some((tau, v));
                }
            }
        };
        *grid = heap.into_vec();
        found
    }

    /// Earliest grid time within the backfill window at which every pending
    /// member of a gang fits at once for its whole limit, with each member's nodes.
    fn earliest_gang(
        &self,
        pend: &[usize],
        t: f64,
        res: &Plan,
    ) -> Option<(f64, Vec<(usize, Vec<usize>)>)> {
        let n_nodes = self.c.nodes.len();
        let mut times: Vec<f64> = Vec::new();
        for &m in pend {
            for n in (0..n_nodes).filter(|&n| self.c.node_eligible(m, n)) {
                for &r in &self.c.nodes[n].running {
                    let e = self.c.jobs[r].planned_end;
                    if e > t && e.is_finite() {
                        times.push(e);
                    }
                }
            }
        }
        for rv in &res.res {
            if rv.end > t && rv.end.is_finite() {
                times.push(rv.end);
            }
        }
        'times: for tau in self.grid(t, &times) {
            let mut free: Vec<V3> = (0..n_nodes).map(|n| self.free_at(n, tau, res)).collect();
            let mut plan = Vec::with_capacity(pend.len());
            for &m in pend {
                let job = &self.c.jobs[m];
                let need = job.per_node;
                let dur = job.limit.unwrap_or(INF);
                let cands: Vec<Scored> = (0..n_nodes)
                    .filter(|&n| {
                        self.c.node_eligible(m, n)
                            && fits(&free[n], &need)
                            && self.clear_of(n, tau, tau + dur, &need, res)
                    })
                    .map(|n| (self.score(&free[n], &need), n))
                    .collect();
                let Some(nodes) = pick(cands, job.nn) else {
                    continue 'times;
                };
                for &n in &nodes {
                    for d in 0..3 {
                        free[n][d] -= need[d];
                    }
                }
                plan.push((m, nodes));
            }
            return Some((tau, plan));
        }
        None
    }

    // ------------------------------------------------------------ start / stop

    fn start(&mut self, j: usize, nodes: Vec<usize>, t: f64, backfill: bool) {
        self.start_at(j, nodes, t, t, backfill);
    }

    /// Starts job `j` on `nodes`, decided at `t`; it begins running at `begin`
    /// (later than `t` when preempted victims are given a grace time to end).
    fn start_at(&mut self, j: usize, nodes: Vec<usize>, t: f64, begin: f64, backfill: bool) {
        let trigger = nodes
            .iter()
            .filter_map(|&n| self.c.nodes[n].last_end)
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
            .map(|x| x.1);
        let team_trigger = self.team_last_end[self.c.jobs[j].team];
        self.start_trigger[j].get_or_insert((trigger, team_trigger));
        let need = self.c.jobs[j].per_node;
        for &n in &nodes {
            for (d, x) in need.iter().enumerate() {
                self.c.nodes[n].free[d] -= x;
            }
            self.free_ix.set(n, self.c.nodes[n].free);
            self.best.set(n, &self.c.nodes[n].free);
            self.c.nodes[n].running.push(j);
            self.node_stamp[n] += 1;
        }
        self.account(j, 1.0);
        self.seq += 1;
        let job = &mut self.c.jobs[j];
        job.st = St::Running;
        job.start = begin;
        if job.first_start.is_none() {
            job.first_start = Some(begin);
            job.first_nodes = nodes.clone();
            job.first_run = job.remaining;
        }
        job.planned_end = begin + job.limit.unwrap_or(INF);
        job.nodes = nodes.clone();
        job.run_seq = self.seq;
        let end = begin + job.remaining;
        if end.is_finite() {
            self.ends.insert((bits(end), j, self.seq));
        }
        self.index_victim(j, true);
        self.event(
            t,
            Ev::Start {
                job: j,
                nodes,
                backfill,
            },
        );
    }

    fn release(&mut self, j: usize) {
        self.index_victim(j, false);
        let need = self.c.jobs[j].per_node;
        let nodes = std::mem::take(&mut self.c.jobs[j].nodes);
        for &n in &nodes {
            for (d, x) in need.iter().enumerate() {
                self.c.nodes[n].free[d] += x;
            }
            self.free_ix.set(n, self.c.nodes[n].free);
            self.best.set(n, &self.c.nodes[n].free);
            self.c.nodes[n].running.retain(|&r| r != j);
            self.node_stamp[n] += 1;
        }
        self.c.jobs[j].nodes = nodes;
        self.account(j, -1.0);
    }

    pub fn finish(&mut self, j: usize, t: f64) {
        if let Some(f) = self.fair.as_mut() {
            f.accrue(j, self.c.jobs[j].start, t);
        }
        self.release(j);
        for &n in &self.c.jobs[j].nodes {
            self.c.nodes[n].last_end = Some((t, j));
        }
        self.c.jobs[j].st = St::Done;
        self.c.jobs[j].planned_end = t;
        self.team_last_end[self.c.jobs[j].team] = Some(j);
        self.on_leave_queue(j);
        self.event(t, Ev::Finish(j));
    }

    fn preempt(&mut self, v: usize, by: usize, t: f64) {
        if let Some(f) = self.fair.as_mut() {
            f.accrue(v, self.c.jobs[v].start, t);
        }
        let mode = self.p.preempt_mode;
        self.release(v);
        let ran = t - self.c.jobs[v].start;
        self.ends.retain(|e| e.1 != v);
        let job = &mut self.c.jobs[v];
        match mode {
            PreemptMode::Cancel => job.st = St::Cancelled,
            PreemptMode::Suspend => {
                job.remaining = (job.remaining - ran).max(0.0);
                job.st = St::Pending;
            }
            PreemptMode::Requeue => job.st = St::Pending,
        }
        job.nodes.clear();
        if job.st == St::Cancelled {
            self.on_leave_queue(v);
        } else {
            self.mark_pending(v);
        }
        self.requeued_now.push(v);
        self.preempted_by.entry(by).or_default().push((v, mode));
        self.event(t, Ev::Preempt { job: v, by, mode });
    }

    // -------------------------------------------------------------- preemption

    /// Victims that make room for `j` now, or None. Candidates: jobs of
    /// borrowing teams in j's cohort when j stays within its guarantee
    /// (reclaim), and jobs j's QoS outranks. Order: borrowing teams first,
    /// then lowest priority, then most recently started. No victim team may
    /// drop below its guarantee.
    /// Cheap test whether any victim could exist, before scanning running jobs.
    fn may_preempt(&self, j: usize) -> bool {
        let job = &self.c.jobs[j];
        if !self.c.qos[job.qos].preempts.is_empty() || job.class_rank > 1 {
            return true;
        }
        let team = &self.c.teams[job.team];
        self.p.quota == QuotaMode::Enforce
            && self.within_guarantee(job.team, &job.total, job.qdim)
            && (0..self.c.teams.len()).any(|x| {
                x != job.team && self.c.teams[x].cohort == team.cohort && self.borrowing(x)
            })
    }

    fn find_victims(&self, j: usize, t: f64) -> Option<(Vec<usize>, Vec<usize>)> {
        let job = &self.c.jobs[j];
        let reclaim = self.p.quota == QuotaMode::Enforce
            && self.within_guarantee(job.team, &job.total, job.qdim);
        let my_cohort = self.c.teams[job.team].cohort;
        let borrowing: Vec<bool> = (0..self.c.teams.len()).map(|x| self.borrowing(x)).collect();
        let jobs = &self.c.jobs;
        let mut heap: BinaryHeap<Cand<'a>> = BinaryHeap::new();
        // A gang member is a candidate only with all its gang: `cands` says which are.
        let mut cands: FxSet<usize> = FxSet::default();
        // Started in this same pass (start >= t): not a victim.
        let before_t = (ord_bits(t), 0);
        for (&(q, vteam, rank), set) in &self.victims {
            let by_qos = self.c.qos[job.qos].preempts.contains(&q)
                || (job.class_rank > 0 && rank > 0 && job.class_rank > rank);
            let by_reclaim = reclaim
                && vteam != job.team
                && self.c.teams[vteam].cohort == my_cohort
                && borrowing[vteam];
            if by_qos || by_reclaim {
                // Younger than its QoS's exempt time: not a victim yet.
                let exempt = self.c.qos[q].exempt_time;
                let bound = if exempt > 0.0 {
                    (ord_bits(t - exempt), usize::MAX).min(before_t)
                } else {
                    before_t
                };
                if bound < before_t {
                    if let Some(&(s, _)) = set.range(bound..before_t).next() {
                        let until = from_ord_bits(s) + exempt;
                        self.exempt_until.set(self.exempt_until.get().min(until));
                    }
                }
                for &(_, v) in set.range(..bound) {
                    let vj = &jobs[v];
                    if vj.gang.is_some() {
                        cands.insert(v);
                    }
                    heap.push(Cand {
                        borrowing: borrowing[vteam],
                        prio: vj.prio,
                        start: vj.start,
                        id: vj.id,
                        v,
                    });
                }
            }
        }
        if heap.is_empty() {
            return None;
        }
        let need = job.per_node;
        let mut free: Vec<V3> = self.c.nodes.iter().map(|n| n.free).collect();
        // Nodes that fit the job in `free`, kept up to date as victims are given
        // back and forth, so each try costs the victim's nodes and not the cluster.
        let mut fit: BTreeSet<usize> = BTreeSet::new();
        self.free_ix.each_fitting(&need, |n| {
            if self.c.node_eligible(j, n) {
                fit.insert(n);
            }
            false
        });
        let mut usage = self.usage.clone();
        // Victims in units: a job alone, or every running member of a gang.
        let mut chosen: Vec<Vec<usize>> = Vec::new();
        let mut taken: FxSet<usize> = FxSet::default();
        let give = |free: &mut Vec<V3>,
                    fit: &mut BTreeSet<usize>,
                    usage: &mut Vec<Vec<f64>>,
                    unit: &[usize],
                    sign: f64| {
            for &v in unit {
                let vj = &jobs[v];
                for &n in &vj.nodes {
                    for d in 0..3 {
                        free[n][d] += sign * vj.per_node[d];
                    }
                    if fits(&free[n], &need) && self.c.node_eligible(j, n) {
                        fit.insert(n);
                    } else {
                        fit.remove(&n);
                    }
                }
                for d in (0..3).chain(vj.qdim) {
                    usage[vj.team][d] -= sign * need_in(&vj.total, d);
                }
            }
        };
        // The same choice as `place_now` on `free` without reservations.
        let place = |free: &[V3], fit: &BTreeSet<usize>| -> Option<Vec<usize>> {
            if fit.len() < job.nn {
                return None;
            }
            pick(
                fit.iter()
                    .map(|&n| (self.score(&free[n], &need), n))
                    .collect(),
                job.nn,
            )
        };
        let mut placed = None;
        while let Some(Cand { v, .. }) = heap.pop() {
            if taken.contains(&v) {
                continue;
            }
            let unit = match jobs[v].gang {
                None => vec![v],
                Some(g) => {
                    let unit: Vec<usize> = self.c.gang_members[g]
                        .iter()
                        .copied()
                        .filter(|&m| jobs[m].st == St::Running)
                        .collect();
                    if !unit.iter().all(|m| cands.contains(m)) {
                        continue; // a member this job may not preempt: the gang stays whole
                    }
                    unit
                }
            };
            if self.below_guarantee(&unit, &usage) {
                continue; // would take a victim's team below its guarantee
            }
            give(&mut free, &mut fit, &mut usage, &unit, 1.0);
            taken.extend(unit.iter().copied());
            chosen.push(unit);
            if self
                .quota_check(job.team, &job.total, job.qdim, &usage)
                .is_none()
            {
                if let Some(p) = place(&free, &fit) {
                    placed = Some(p);
                    break;
                }
            }
        }
        placed.as_ref()?;
        // Keep running any victim the placement does not need (Kueue's fill-back).
        let mut i = chosen.len();
        while i > 0 {
            i -= 1;
            give(&mut free, &mut fit, &mut usage, &chosen[i], -1.0);
            let ok = self
                .quota_check(job.team, &job.total, job.qdim, &usage)
                .is_none();
            match if ok { place(&free, &fit) } else { None } {
                Some(p) => {
                    chosen.remove(i);
                    placed = Some(p);
                }
                None => give(&mut free, &mut fit, &mut usage, &chosen[i], 1.0),
            }
        }
        Some((chosen.concat(), placed.expect("checked")))
    }

    /// Whether preempting `unit` would take any of its teams below its guarantee.
    fn below_guarantee(&self, unit: &[usize], usage: &[Vec<f64>]) -> bool {
        let jobs = &self.c.jobs;
        unit.iter().any(|&v| {
            let vt = jobs[v].team;
            let team = &self.c.teams[vt];
            team.has_g
                && (0..3).chain(jobs[v].qdim).any(|d| {
                    let gone: f64 = unit
                        .iter()
                        .filter(|&&m| jobs[m].team == vt)
                        .map(|&m| need_in(&jobs[m].total, d))
                        .sum();
                    team.g[d].is_finite() && usage[vt][d] - gone < team.g[d]
                })
        })
    }

    // -------------------------------------------------------------------- pass

    fn record(&mut self, j: usize, b: Block) {
        if self.record_first {
            self.first_block[j].get_or_insert(b);
        }
    }

    pub fn pass(&mut self, t: f64) {
        self.now = t;
        if !self.static_priority {
            self.compute_priorities(t);
        } else if self.age_drift.is_some() {
            self.drift_priorities(t);
        }
        let max_res = match self.p.backfill {
            Backfill::None => 0,
            Backfill::Easy => 1,
            Backfill::Conservative => self.p.bf_max_job_test,
        };
        let grouped = self.static_priority && !self.record_first;
        // Per-node reservation lists and profiles, and reservations made only when
        // read, pay off only with many reservations: conservative backfill.
        let conservative = self.p.backfill == Backfill::Conservative;
        let mut cx = PassCtx {
            plan: match self.spare_plan.take() {
                Some(mut p) if conservative => {
                    p.reset();
                    p
                }
                _ => Plan::new(conservative),
            },
            res_holder: Vec::new(),
            stopped_by: None,
            fifo_blocked: BTreeMap::new(),
            gang_tried: BTreeSet::new(),
            max_res,
            // Not when recording reasons (a reason names the first reservation) nor
            // in the grouped pass (whether a class goes on depends on whether its
            // job got a reservation): there, reservations are made in turn.
            lazy: conservative && !grouped && !self.record_first,
            deferred: std::collections::VecDeque::new(),
        };
        self.resource_blocked = false;
        self.requeued_now.clear();
        self.failed_shapes.clear();
        self.unfit_shapes.clear();
        if self.p.main_pass {
            self.main_pass(t);
        }
        if grouped {
            self.pass_grouped(t, &mut cx);
        } else {
            let order = self.queue_order();
            for &j in &order {
                self.consider(j, t, &mut cx);
            }
        }
        if conservative {
            self.spare_plan = Some(cx.plan);
        }
    }

    /// The source's priorities at the snapshot plus the age each job has gained
    /// since (`weights.age × Δmin(age, max_age) / max_age`); the queue is sorted
    /// again only if that changed its order (jobs whose age saturates fall back).
    fn drift_priorities(&mut self, t: f64) {
        if self.age_drift.is_none() {
            return;
        }
        self.compact_pending();
        if let Some(f) = self.fair.as_mut() {
            if f.due(t) {
                // The scheduler's recalculation: running jobs' usage so far, then a new ranking.
                for (j, job) in self.c.jobs.iter().enumerate() {
                    if job.st == St::Running {
                        f.accrue(j, job.start, t);
                    }
                }
                f.recalc(t);
            }
        }
        let base = self.age_drift.as_ref().expect("checked");
        let (w, max_age, t0) = (self.p.w.age, self.p.max_age, self.t0);
        let age = |x: f64, e: f64| (x - e).max(0.0).min(max_age);
        let fair = self.fair.as_ref();
        for &j in &self.pending {
            let job = &mut self.c.jobs[j];
            job.prio = base[j]
                + w * (age(t, job.eligible) - age(t0, job.eligible)) / max_age
                + fair.map_or(0.0, |f| f.delta(j));
        }
        let jobs = &self.c.jobs;
        let sorted = match &self.order_cache {
            None => true,
            Some(cache) => {
                let mut prev: Option<usize> = None;
                let mut ok = true;
                for &j in cache.iter().filter(|&&j| jobs[j].st == St::Pending) {
                    if let Some(p) = prev {
                        let (a, b) = (&jobs[p], &jobs[j]);
                        let ord = b
                            .prio
                            .total_cmp(&a.prio)
                            .then(a.submit.total_cmp(&b.submit))
                            .then_with(|| id_cmp(a.id, b.id));
                        if ord == std::cmp::Ordering::Greater {
                            ok = false;
                            break;
                        }
                    }
                    prev = Some(j);
                }
                ok
            }
        };
        if !sorted {
            self.order_cache = None;
            self.classes = None;
        }
    }

    /// The main scheduler's pass before backfill: pending jobs in priority
    /// order start wherever they fit now, reservations aside. Once a job finds
    /// no room, the nodes of its partition are taken out for the rest of the
    /// pass: later jobs of that partition wait for the backfill pass, and a
    /// job of another partition may start only on nodes outside it (Slurm's
    /// job_scheduler.c: `bit_and_not(avail_node_bitmap, part_ptr->node_bitmap)`),
    /// so a partition that shares nodes cannot jump the blocked job there.
    /// Jobs held by limits or quotas block nothing.
    fn main_pass(&mut self, t: f64) {
        let order = self.queue_order();
        let mut parts: Vec<Option<&'a str>> = Vec::new();
        for &j in &order {
            let p = self.c.jobs[j].part;
            if !parts.contains(&p) {
                parts.push(p);
            }
        }
        let mut blocked: Vec<Option<&'a str>> = Vec::new();
        // Nodes taken out by a blocked partition; None until one is.
        let mut masked: Option<Vec<bool>> = None;
        for j in order {
            let job = &self.c.jobs[j];
            if job.st != St::Pending || job.gang.is_some() || blocked.contains(&job.part) {
                continue;
            }
            if self.hold_check(j).is_some()
                || self
                    .quota_check(job.team, &job.total, job.qdim, &self.usage)
                    .is_some()
            {
                continue;
            }
            let (shape, part, end) = (job.shape, job.part, t + job.limit.unwrap_or(INF));
            let shares_masked = masked
                .as_ref()
                .is_some_and(|m| (0..m.len()).any(|n| m[n] && self.c.in_partition(n, part)));
            let placed = if self.failed_shapes.contains(shape) {
                None
            } else if shares_masked {
                let m = masked.as_ref().expect("checked");
                let free: Vec<V3> = (0..m.len())
                    .map(|n| if m[n] { [0.0; 3] } else { self.c.nodes[n].free })
                    .collect();
                self.place_now(j, &Plan::default(), Some(&free), end)
            } else {
                self.place_now(j, &Plan::default(), None, end)
            };
            match placed {
                Some(nodes) => self.start(j, nodes, t, false),
                None => {
                    if !shares_masked {
                        // No room on any of its nodes: the backfill pass need not look again.
                        self.failed_shapes.insert(shape);
                        self.unfit_shapes.insert(shape);
                    }
                    blocked.push(part);
                    let m = masked.get_or_insert_with(|| vec![false; self.c.nodes.len()]);
                    for (n, x) in m.iter_mut().enumerate() {
                        *x = *x || self.c.in_partition(n, part);
                    }
                    if blocked.len() == parts.len() {
                        break;
                    }
                }
            }
        }
    }

    /// The pass over a static queue without recording reasons: the queue is
    /// merged from its job classes (same shape, team, QoS, limits), and a class
    /// whose job could not start is dropped for the rest of the pass, since each
    /// of its peers would fail the same way (free capacity and quota headroom
    /// only shrink, reservations only grow) until a preemption frees room. So a
    /// pass costs the classes and the starts, not the whole queue.
    fn pass_grouped(&mut self, t: f64, cx: &mut PassCtx) {
        if self.classes.is_none() {
            self.queue_order();
            let order = self.order_cache.as_ref().expect("sorted by queue_order");
            self.classes = Some(Classes::build(&self.c, order));
        }
        let mut cl = self.classes.take().expect("built");
        let mut heap: BinaryHeap<Reverse<(usize, usize)>> =
            BinaryHeap::with_capacity(cl.members.len());
        for c in 0..cl.members.len() {
            let m = &cl.members[c];
            let mut lo = cl.lo[c];
            while lo < m.len() && self.c.jobs[m[lo]].st != St::Pending {
                lo += 1;
            }
            cl.lo[c] = lo;
            cl.cursor[c] = lo;
            if lo < m.len() {
                heap.push(Reverse((cl.rank[m[lo]], c)));
            }
        }
        let mut dropped: Vec<usize> = Vec::new();
        while let Some(Reverse((r, c))) = heap.pop() {
            let j = cl.members[c][cl.cursor[c]];
            let pending_at_start =
                self.c.jobs[j].st == St::Pending && !self.requeued_now.contains(&j);
            let outcome = if pending_at_start {
                self.consider(j, t, cx)
            } else {
                Outcome::Next
            };
            match outcome {
                Outcome::Stop => break,
                Outcome::Drop => {
                    dropped.push(c);
                    continue;
                }
                Outcome::Next => {}
                Outcome::Preempted => {
                    // Room was freed: every dropped class resumes after this job.
                    for d in dropped.drain(..) {
                        let m = &cl.members[d];
                        let k = m.partition_point(|&x| cl.rank[x] <= r);
                        cl.cursor[d] = k;
                        if k < m.len() {
                            heap.push(Reverse((cl.rank[m[k]], d)));
                        }
                    }
                    for &v in &self.requeued_now {
                        let vc = cl.class_of[v];
                        cl.lo[vc] = cl.lo[vc].min(cl.pos[v]);
                    }
                }
            }
            cl.cursor[c] += 1;
            if let Some(&nx) = cl.members[c].get(cl.cursor[c]) {
                heap.push(Reverse((cl.rank[nx], c)));
            }
        }
        self.classes = Some(cl);
    }

    /// One job of a pass: start it, preempt for it, reserve for it, or record why not.
    fn consider(&mut self, j: usize, t: f64, cx: &mut PassCtx) -> Outcome {
        if self.c.jobs[j].st != St::Pending {
            return Outcome::Next;
        }
        let team = self.c.jobs[j].team;
        if let Some(h) = cx.stopped_by {
            self.record(j, Block::Behind { head: h });
            return Outcome::Stop;
        }
        if self.p.strict_team_fifo {
            if let Some(&h) = cx.fifo_blocked.get(&team) {
                self.record(j, Block::Fifo { head: h });
                return Outcome::Drop;
            }
        }
        if let Some(g) = self.c.jobs[j].gang {
            if cx.gang_tried.insert(g) {
                // A gang reads the reservations and may start.
                self.reserve_deferred(t, cx, usize::MAX);
                self.try_gang(g, t, cx);
            }
            if self.c.jobs[j].st == St::Pending {
                cx.fifo_blocked.entry(team).or_insert(j);
            }
            return Outcome::Next;
        }
        if let Some(h) = self.hold_check(j) {
            self.record(j, h);
            cx.fifo_blocked.entry(team).or_insert(j);
            return Outcome::Drop;
        }
        let (total, qdim) = (self.c.jobs[j].total, self.c.jobs[j].qdim);
        if let Some(b) = self.quota_check(team, &total, qdim, &self.usage) {
            self.record(j, b);
            cx.fifo_blocked.entry(team).or_insert(j);
            return Outcome::Drop;
        }
        let job = &self.c.jobs[j];
        let end = t + job.limit.unwrap_or(INF);
        let shape = job.shape;
        // A shape that found no room cannot find it later in this pass: free
        // capacity only shrinks and reservations only grow, until a preemption.
        let placed = if self.failed_shapes.contains(shape) {
            None
        } else {
            self.place_planned(j, t, end, cx)
        };
        if let Some(nodes) = placed {
            let bf = !cx.plan.is_empty();
            self.start(j, nodes, t, bf);
            return Outcome::Next;
        }
        self.failed_shapes.insert(shape);
        if self.p.preemption && self.may_preempt(j) {
            self.exempt_until.set(INF);
            let found = self.find_victims(j, t);
            let until = self.exempt_until.get();
            if found.is_none() && until.is_finite() && until > t {
                // Try again when the youngest exempt candidate may be preempted.
                self.wake.insert(bits(until));
            }
            if let Some((victims, nodes)) = found {
                // The cluster changes now: waiting reservation attempts are made first.
                self.reserve_deferred(t, cx, usize::MAX);
                // Victims given a grace time end then; the job starts when the last has ended.
                let grace = if self.p.preempt_mode == PreemptMode::Suspend {
                    0.0
                } else {
                    victims
                        .iter()
                        .map(|&v| self.c.qos[self.c.jobs[v].qos].grace)
                        .fold(0.0, f64::max)
                };
                for v in victims {
                    self.preempt(v, j, t);
                }
                self.start_at(j, nodes, t, t + grace, false);
                self.failed_shapes.clear();
                self.unfit_shapes.clear();
                return Outcome::Preempted;
            }
        }
        self.resource_blocked = true;
        cx.fifo_blocked.entry(team).or_insert(j);
        // Would it fit now but for a reservation?
        // (A shape that did not fit even so will not fit later in this pass either.)
        let fits_ignoring = self.record_first
            && !cx.plan.is_empty()
            && !self.unfit_shapes.contains(shape)
            && self.place_now(j, &Plan::default(), None, end).is_some();
        if !fits_ignoring {
            self.unfit_shapes.insert(shape);
        }
        if fits_ignoring {
            let at = cx.plan.res.iter().map(|r| r.start).fold(INF, f64::min);
            self.record(
                j,
                Block::Reservation {
                    holder: cx.res_holder[0],
                    at,
                },
            );
        } else {
            self.record(j, Block::Nodes);
        }
        if self.p.backfill == Backfill::None {
            cx.stopped_by = Some(j);
            return Outcome::Stop;
        }
        if cx.lazy {
            if cx.res_holder.len() < cx.max_res {
                cx.deferred.push_back(j);
            }
            // `pass` reads no outcome (only `pass_grouped`, which is never lazy).
            return Outcome::Drop;
        }
        if self.reserve(j, t, cx) && cx.res_holder.len() < cx.max_res {
            // A peer would get a reservation of its own: keep the class.
            return Outcome::Next;
        }
        Outcome::Drop
    }

    /// Job `j`'s reservation, at the earliest time it fits beside the earlier
    /// ones, while fewer than `max_res` are held; true if one was made.
    fn reserve(&mut self, j: usize, t: f64, cx: &mut PassCtx) -> bool {
        if cx.res_holder.len() >= cx.max_res {
            return false;
        }
        let Some((at, nodes)) = self.earliest(j, t, &cx.plan) else {
            return false;
        };
        let need = self.c.jobs[j].per_node;
        let end = at + self.c.jobs[j].limit.unwrap_or(INF);
        cx.plan.push(Reservation {
            start: at,
            end,
            nodes,
            need,
        });
        cx.res_holder.push(j);
        true
    }

    /// Makes up to `count` of the deferred reservation attempts, in queue order.
    fn reserve_deferred(&mut self, t: f64, cx: &mut PassCtx, count: usize) {
        for _ in 0..count {
            let Some(d) = cx.deferred.pop_front() else {
                return;
            };
            self.reserve(d, t, cx);
            if cx.res_holder.len() >= cx.max_res {
                // No further attempt can make one.
                cx.deferred.clear();
            }
        }
    }

    /// `place_now(j, <every reservation of the pass so far>)`, making deferred
    /// reservations only while the placement still stands: more reservations
    /// only take candidate nodes away (each adds checks and lowers the free
    /// capacity they test), so once the job is blocked it stays blocked, and the
    /// rest may wait. A reservation that holds none of the chosen nodes leaves
    /// them clear and the others no better, so best fit and spread (the best
    /// `nn` candidates) choose the same nodes without placing again; consecutive
    /// runs depend on every candidate, so there it places again.
    fn place_planned(
        &mut self,
        j: usize,
        t: f64,
        end: f64,
        cx: &mut PassCtx,
    ) -> Option<Vec<usize>> {
        let mut placed = self.place_now(j, &cx.plan, None, end);
        while let Some(nodes) = &placed {
            if cx.deferred.is_empty() {
                break;
            }
            let before = cx.plan.res.len();
            self.reserve_deferred(t, cx, 1);
            let touched = cx.plan.res[before..]
                .iter()
                .any(|r| r.nodes.iter().any(|n| nodes.contains(n)));
            if touched || self.p.placement == Placement::Consecutive {
                placed = self.place_now(j, &cx.plan, None, end);
            }
        }
        placed
    }

    /// Starts a gang whole or not at all; one short of nodes gets a reservation
    /// for all its members at once, as a single job would.
    fn try_gang(&mut self, g: usize, t: f64, cx: &mut PassCtx) {
        let res = &cx.plan;
        let members: Vec<usize> = self.c.gang_members[g]
            .iter()
            .copied()
            .filter(|&m| self.c.jobs[m].st != St::Done && self.c.jobs[m].st != St::Rejected)
            .collect();
        if members.iter().any(|&m| self.c.jobs[m].st == St::Running) {
            // Part of the gang runs already (a snapshot mid-start): the rest start one by one.
        } else if members.iter().any(|&m| self.c.jobs[m].st != St::Pending) {
            for &m in &members {
                if self.c.jobs[m].st == St::Pending {
                    self.record(m, Block::Gang);
                }
            }
            return;
        }
        let pend: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&m| self.c.jobs[m].st == St::Pending)
            .collect();
        let mut usage = self.usage.clone();
        let mut free: Vec<V3> = self.c.nodes.iter().map(|n| n.free).collect();
        let mut plan = Vec::new();
        for &m in &pend {
            if let Some(h) = self.hold_check(m) {
                self.record(m, h);
                return self.gang_blocked(&pend);
            }
            let job = &self.c.jobs[m];
            if let Some(b) = self.quota_check(job.team, &job.total, job.qdim, &usage) {
                self.record(m, b);
                return self.gang_blocked(&pend);
            }
            let end = t + job.limit.unwrap_or(INF);
            match self.place_now(m, res, Some(&free), end) {
                Some(nodes) => {
                    for &n in &nodes {
                        for d in 0..3 {
                            free[n][d] -= job.per_node[d];
                        }
                    }
                    for d in (0..3).chain(job.qdim) {
                        usage[job.team][d] += need_in(&job.total, d);
                    }
                    plan.push((m, nodes));
                }
                None => {
                    self.resource_blocked = true;
                    self.gang_blocked(&pend);
                    if self.p.backfill != Backfill::None && cx.res_holder.len() < cx.max_res {
                        if let Some((at, plan)) = self.earliest_gang(&pend, t, &cx.plan) {
                            for (m, nodes) in plan {
                                let end = at + self.c.jobs[m].limit.unwrap_or(INF);
                                cx.plan.push(Reservation {
                                    start: at,
                                    end,
                                    nodes,
                                    need: self.c.jobs[m].per_node,
                                });
                            }
                            cx.res_holder.push(pend[0]);
                        }
                    }
                    return;
                }
            }
        }
        let bf = !res.is_empty();
        for (m, nodes) in plan {
            self.start(m, nodes, t, bf);
        }
    }

    fn gang_blocked(&mut self, pend: &[usize]) {
        for &m in pend {
            self.record(m, Block::Gang);
        }
    }

    // --------------------------------------------------------------- the loop

    /// Runs passes forward from `t0` until nothing is left to happen or `until`.
    /// `arrivals` are job indices in (submit, id) order.
    pub fn run(
        &mut self,
        arrivals: &[usize],
        until: f64,
        mut on_step: impl FnMut(&mut Self, f64, f64),
    ) {
        let t0 = self.t0;
        let step = self.p.bf_resolution;
        let mut ai = 0;
        let mut last = t0;
        let mut first = true;
        loop {
            let next_arr = arrivals.get(ai).map(|&j| self.c.jobs[j].submit.max(t0));
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
            let tp = if first || self.p.passes == Passes::Events {
                if first {
                    t0
                } else {
                    te + self.p.pass_delay
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
                    .map(|j| self.c.jobs[j].submit.max(t0))
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
                        self.c.jobs[j].st = St::Pending;
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

    pub fn words(&self, b: &Block, j: usize) -> String {
        let job = &self.c.jobs[j];
        let team = &self.c.teams[job.team];
        match b {
            Block::Max { dim, max, used } => format!(
                "waits for team {}'s max of {} {} (holds {}, asks {})",
                team.name,
                fmt_amount(*max),
                self.dim_label(*dim),
                fmt_amount(*used),
                fmt_amount(need_in(&job.total, *dim))
            ),
            Block::Cohort {
                dim,
                guarantee,
                avail,
            } => {
                let c = self.c.cohorts[team.cohort];
                let c = if c.is_empty() {
                    "the cluster".to_string()
                } else {
                    format!("cohort {c}")
                };
                format!(
                    "waits for idle {} to borrow in {}: team {} is over its guarantee of {}, {} lendable now",
                    self.dim_label(*dim), c, team.name, fmt_amount(*guarantee), fmt_amount(*avail)
                )
            }
            Block::Nodes => {
                let d = if job.per_node[GPU] > 0.0 {
                    GPU
                } else if job.per_node[CPU] > 0.0 {
                    CPU
                } else {
                    MEM
                };
                let kind = match (d, job.gtype) {
                    (GPU, Some(t)) => format!("{t} GPUs"),
                    _ => dim_name(d).to_string(),
                };
                if job.nn == 1 {
                    format!(
                        "waits for {} free {} on one node",
                        fmt_amount(job.per_node[d]),
                        kind
                    )
                } else {
                    format!(
                        "waits for {} nodes with {} free {} each",
                        job.nn,
                        fmt_amount(job.per_node[d]),
                        kind
                    )
                }
            }
            Block::Reservation { holder, at } => format!(
                "waits: starting now would delay job {}'s reservation at {}",
                self.c.jobs[*holder].id,
                fmt_clock(*at, self.t0)
            ),
            Block::Behind { head } => format!(
                "waits behind higher-priority job {} (backfill off)",
                self.c.jobs[*head].id
            ),
            Block::Fifo { head } => format!(
                "waits behind job {} (strict FIFO in team {})",
                self.c.jobs[*head].id, team.name
            ),
            Block::Gang => format!(
                "waits for all members of gang {} to fit together",
                job.gang.map_or("?", |g| self.c.gangs[g])
            ),
            Block::Hold(s, _) => s.clone(),
            Block::Limit(b) => self.c.lim.words(b, job.user, team.name),
        }
    }

    /// The binding limit or resource in short words: "nodes", "QoS high GrpTRES gpu",
    /// "reservation of job 12".
    pub fn binding(&self, b: &Block, j: usize) -> String {
        let job = &self.c.jobs[j];
        match b {
            Block::Max { dim, .. } => format!(
                "team {} max {}",
                self.c.teams[job.team].name,
                self.dim_key(*dim)
            ),
            Block::Cohort { dim, .. } => format!(
                "team {} guarantee {}",
                self.c.teams[job.team].name,
                self.dim_key(*dim)
            ),
            Block::Nodes => "nodes".into(),
            Block::Reservation { holder, .. } => {
                format!("reservation of job {}", self.c.jobs[*holder].id)
            }
            Block::Behind { head } => format!("job {} ahead", self.c.jobs[*head].id),
            Block::Fifo { head } => format!("job {} ahead in team", self.c.jobs[*head].id),
            Block::Gang => "gang".into(),
            Block::Hold(_, b) => b.clone(),
            Block::Limit(b) => self.c.lim.binding(b),
        }
    }
}
