//! One scheduling pass: the queue split into classes, each job considered in order (start, reserve, preempt, block), and gangs.

use super::plan::Reservation;
use super::*;

/// What a job's turn in a pass means for the peers of its class.
pub(super) enum Outcome {
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
pub(super) struct ShapeSet {
    pub(super) stamp: Vec<u32>,
    pub(super) gen: u32,
}

impl ShapeSet {
    pub(super) fn new(n: usize) -> ShapeSet {
        ShapeSet {
            stamp: vec![0; n],
            gen: 1,
        }
    }
    pub(super) fn contains(&self, s: usize) -> bool {
        self.stamp[s] == self.gen
    }
    pub(super) fn insert(&mut self, s: usize) {
        self.stamp[s] = self.gen;
    }
    pub(super) fn clear(&mut self) {
        self.gen += 1;
    }
}

pub(super) struct PassCtx {
    pub(super) plan: Plan,
    /// The job (or a gang's first member) holding each reservation; a gang's
    /// members share one, so this, not `res`, counts reservations.
    pub(super) res_holder: Vec<usize>,
    pub(super) stopped_by: Option<usize>,
    pub(super) fifo_blocked: BTreeMap<usize, usize>,
    pub(super) gang_tried: BTreeSet<usize>,
    pub(super) max_res: usize,
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
    pub(super) lazy: bool,
    pub(super) deferred: std::collections::VecDeque<usize>,
}

/// The static queue split into classes of jobs that every check treats alike:
/// same per-node shape, node count, typed GPU, partition, limit, team, QoS,
/// QoS class, constraint, advanced reservation, and user where a per-user limit
/// applies. A gang member is a class of its own. Members are in queue order.
pub(super) struct Classes {
    pub(super) members: Vec<Vec<usize>>,
    pub(super) rank: Vec<usize>,
    pub(super) class_of: Vec<usize>,
    pub(super) pos: Vec<usize>,
    pub(super) lo: Vec<usize>,
    pub(super) cursor: Vec<usize>,
}

impl Classes {
    // Inlined into the pass, as it was before the engine was split into modules: out of
    // line, its key map's lookups were not inlined either (predict_bench: +0.6% instructions).
    #[inline]
    pub(super) fn build(c: &Cluster, order: &[usize]) -> Classes {
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
                (u32, Option<u32>, Option<u32>),
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
                job.nodes_wanted,
                job.gpu_type,
                job.partition,
                b(job.limit.unwrap_or(INF)),
                (job.team, job.qos, job.class_rank),
                if per_user { Some(job.user) } else { None },
                if job.gang.is_some() { j } else { usize::MAX },
                (job.limit_profile, job.constraint, job.resv),
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

impl<'a, 'p> Engine<'a, 'p> {
    pub(super) fn record(&mut self, j: usize, b: Block) {
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
        let max_res = match self.policy.backfill {
            Backfill::None => 0,
            Backfill::Easy => 1,
            Backfill::Conservative => self.policy.bf_max_job_test,
        };
        let grouped = self.static_priority && !self.record_first;
        // Per-node reservation lists and profiles, and reservations made only when
        // read, pay off only with many reservations: conservative backfill.
        let conservative = self.policy.backfill == Backfill::Conservative;
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
        if self.policy.main_pass {
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

    /// The main scheduler's pass before backfill: pending jobs in priority
    /// order start wherever they fit now, reservations aside. Once a job finds
    /// no room, the nodes of its partition are taken out for the rest of the
    /// pass: later jobs of that partition wait for the backfill pass, and a
    /// job of another partition may start only on nodes outside it (Slurm's
    /// job_scheduler.c: `bit_and_not(avail_node_bitmap, part_ptr->node_bitmap)`),
    /// so a partition that shares nodes cannot jump the blocked job there.
    /// Jobs held by limits or quotas block nothing.
    pub(super) fn main_pass(&mut self, t: f64) {
        let order = self.queue_order();
        let mut parts: Vec<Option<&'a str>> = Vec::new();
        for &j in &order {
            let p = self.cluster.jobs[j].partition;
            if !parts.contains(&p) {
                parts.push(p);
            }
        }
        let mut blocked: Vec<Option<&'a str>> = Vec::new();
        // Nodes taken out by a blocked partition; None until one is.
        let mut masked: Option<Vec<bool>> = None;
        for j in order {
            let job = &self.cluster.jobs[j];
            if job.state != JobState::Pending
                || job.gang.is_some()
                || job.eligible > t
                || blocked.contains(&job.partition)
            {
                continue;
            }
            if self.hold_check(j).is_some()
                || self
                    .quota_check(job.team, &job.total, job.quota_dim, &self.usage)
                    .is_some()
            {
                continue;
            }
            let (shape, part, end) = (job.shape, job.partition, t + job.limit.unwrap_or(INF));
            let shares_masked = masked
                .as_ref()
                .is_some_and(|m| (0..m.len()).any(|n| m[n] && self.cluster.in_partition(n, part)));
            let placed = if self.failed_shapes.contains(shape) {
                None
            } else if shares_masked {
                let m = masked.as_ref().expect("checked");
                let free: Vec<V3> = (0..m.len())
                    .map(|n| {
                        if m[n] {
                            [0.0; 3]
                        } else {
                            self.cluster.nodes[n].free
                        }
                    })
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
                    let m = masked.get_or_insert_with(|| vec![false; self.cluster.nodes.len()]);
                    for (n, x) in m.iter_mut().enumerate() {
                        *x = *x || self.cluster.in_partition(n, part);
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
    pub(super) fn pass_grouped(&mut self, t: f64, cx: &mut PassCtx) {
        if self.classes.is_none() {
            self.queue_order();
            let order = self.order_cache.as_ref().expect("sorted by queue_order");
            self.classes = Some(Classes::build(&self.cluster, order));
        }
        let mut cl = self.classes.take().expect("built");
        let mut heap: BinaryHeap<Reverse<(usize, usize)>> =
            BinaryHeap::with_capacity(cl.members.len());
        for c in 0..cl.members.len() {
            let m = &cl.members[c];
            let mut lo = cl.lo[c];
            while lo < m.len() && self.cluster.jobs[m[lo]].state != JobState::Pending {
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
                self.cluster.jobs[j].state == JobState::Pending && !self.requeued_now.contains(&j);
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
    pub(super) fn consider(&mut self, j: usize, t: f64, cx: &mut PassCtx) -> Outcome {
        if self.cluster.jobs[j].state != JobState::Pending {
            return Outcome::Next;
        }
        let team = self.cluster.jobs[j].team;
        let eligible = self.cluster.jobs[j].eligible;
        if eligible > t {
            // The scheduler passes over a job before its begin time: no start, no
            // reservation, nothing held behind it (a wake-up runs a pass then).
            self.record(j, Block::Begin { at: eligible });
            return Outcome::Next;
        }
        if let Some(h) = cx.stopped_by {
            self.record(j, Block::Behind { head: h });
            return Outcome::Stop;
        }
        if self.policy.strict_team_fifo {
            if let Some(&h) = cx.fifo_blocked.get(&team) {
                self.record(j, Block::Fifo { head: h });
                return Outcome::Drop;
            }
        }
        if let Some(g) = self.cluster.jobs[j].gang {
            if cx.gang_tried.insert(g) {
                // A gang reads the reservations and may start.
                self.reserve_deferred(t, cx, usize::MAX);
                self.try_gang(g, t, cx);
            }
            if self.cluster.jobs[j].state == JobState::Pending {
                cx.fifo_blocked.entry(team).or_insert(j);
            }
            return Outcome::Next;
        }
        if let Some(h) = self.hold_check(j) {
            self.record(j, h);
            cx.fifo_blocked.entry(team).or_insert(j);
            return Outcome::Drop;
        }
        let (total, qdim) = (self.cluster.jobs[j].total, self.cluster.jobs[j].quota_dim);
        if let Some(b) = self.quota_check(team, &total, qdim, &self.usage) {
            // Kueue preempts for quota, not only for nodes: a ClusterQueue at its quota
            // may preempt its own lower-priority workloads (withinClusterQueue) and, within
            // its nominal quota, its cohort's borrowers (reclaimWithinCohort). A team with
            // a guarantee is such a queue; Slurm's teams have a max only.
            if self.policy.preemption
                && self.cluster.teams[team].has_guarantee
                && self.may_preempt_for_quota(team, &total, qdim)
                && self.may_preempt(j)
            {
                if let Some(o) = self.preempt_for(j, t, cx) {
                    return o;
                }
            }
            self.record(j, b);
            cx.fifo_blocked.entry(team).or_insert(j);
            return Outcome::Drop;
        }
        let job = &self.cluster.jobs[j];
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
        if self.policy.preemption && self.may_preempt(j) {
            if let Some(o) = self.preempt_for(j, t, cx) {
                return o;
            }
        }
        self.resource_blocked = true;
        cx.fifo_blocked.entry(team).or_insert(j);
        if self.record_first && self.cluster.has_resv && self.first_block[j].is_none() {
            if let Some(b) = self.kept_off_by_resv(j, t, end) {
                self.record(j, b);
            }
        }
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
        if self.policy.backfill == Backfill::None {
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

    /// The advanced reservation that keeps job `j` off nodes it would fit on
    /// now over [t, end), if one does (for its reason).
    fn kept_off_by_resv(&mut self, j: usize, t: f64, end: f64) -> Option<Block> {
        self.cluster.has_resv = false;
        let placed = self.place_now(j, &Plan::default(), None, end);
        self.cluster.has_resv = true;
        let own = self.cluster.jobs[j].resv;
        placed?.into_iter().find_map(|n| {
            self.cluster.node_resv[n]
                .iter()
                .find(|&&(s, e, r)| Some(r) != own && t < e && end > s)
                .map(|&(s, e, r)| Block::AdvResv {
                    resv: r,
                    from: s,
                    to: e,
                })
        })
    }

    /// Starts a gang whole or not at all; one short of nodes gets a reservation
    /// for all its members at once, as a single job would.
    pub(super) fn try_gang(&mut self, g: usize, t: f64, cx: &mut PassCtx) {
        let res = &cx.plan;
        let members: Vec<usize> = self.cluster.gang_members[g]
            .iter()
            .copied()
            .filter(|&m| {
                self.cluster.jobs[m].state != JobState::Done
                    && self.cluster.jobs[m].state != JobState::Rejected
            })
            .collect();
        if members
            .iter()
            .any(|&m| self.cluster.jobs[m].state == JobState::Running)
        {
            // Part of the gang runs already (a snapshot mid-start): the rest start one by one.
        } else if members
            .iter()
            .any(|&m| self.cluster.jobs[m].state != JobState::Pending)
        {
            for &m in &members {
                if self.cluster.jobs[m].state == JobState::Pending {
                    self.record(m, Block::Gang);
                }
            }
            return;
        }
        let pend: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&m| self.cluster.jobs[m].state == JobState::Pending)
            .collect();
        let mut usage = self.usage.clone();
        let mut free: Vec<V3> = self.cluster.nodes.iter().map(|n| n.free).collect();
        let mut plan = Vec::new();
        for &m in &pend {
            if let Some(h) = self.hold_check(m) {
                self.record(m, h);
                return self.gang_blocked(&pend);
            }
            let job = &self.cluster.jobs[m];
            if let Some(b) = self.quota_check(job.team, &job.total, job.quota_dim, &usage) {
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
                    for d in (0..3).chain(job.quota_dim) {
                        usage[job.team][d] += need_in(&job.total, d);
                    }
                    plan.push((m, nodes));
                }
                None => {
                    self.resource_blocked = true;
                    self.gang_blocked(&pend);
                    if self.policy.backfill != Backfill::None && cx.res_holder.len() < cx.max_res {
                        if let Some((at, plan)) = self.earliest_gang(&pend, t, &cx.plan) {
                            for (m, nodes) in plan {
                                let (start, end) =
                                    self.reserved_span(t, at, self.cluster.jobs[m].limit);
                                cx.plan.push(Reservation {
                                    start,
                                    end,
                                    nodes,
                                    need: self.reserved_need(m),
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

    /// Preempts for job `j` and starts it, if victims that make room for it exist now.
    pub(super) fn preempt_for(&mut self, j: usize, t: f64, cx: &mut PassCtx) -> Option<Outcome> {
        self.exempt_until.set(INF);
        let found = self.find_victims(j, t);
        let until = self.exempt_until.get();
        if found.is_none() && until.is_finite() && until > t {
            // Try again when the youngest exempt candidate may be preempted.
            self.wake.insert(bits(until));
        }
        let (victims, nodes) = found?;
        // The cluster changes now: waiting reservation attempts are made first.
        self.reserve_deferred(t, cx, usize::MAX);
        // Victims given a grace time end then; the job starts when the last has ended.
        let grace = if self.policy.preempt_mode == PreemptMode::Suspend {
            0.0
        } else {
            victims
                .iter()
                .map(|&v| self.cluster.qos[self.cluster.jobs[v].qos].grace)
                .fold(0.0, f64::max)
        };
        for v in victims {
            self.preempt(v, j, t);
        }
        self.start_at(j, nodes, t, t + grace, false);
        self.failed_shapes.clear();
        self.unfit_shapes.clear();
        Some(Outcome::Preempted)
    }

    pub(super) fn gang_blocked(&mut self, pend: &[usize]) {
        for &m in pend {
            self.record(m, Block::Gang);
        }
    }
}
