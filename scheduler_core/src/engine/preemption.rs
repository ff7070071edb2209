//! Preemption: the index of possible victims, the choice of victims for a preemptor, and the preemption itself.

use super::placement::pick;
use super::*;
use crate::cluster::{Job, Rule, Stated};

/// The cluster as a victim search tries it: free capacity per node, the nodes that fit
/// the preemptor now (kept up to date as victims are given back and forth, so each try
/// costs the victim's nodes and not the cluster), and the teams' usage.
struct Trial {
    free: Vec<V3>,
    fit: BTreeSet<usize>,
    usage: Vec<Vec<f64>>,
}

impl Trial {
    fn new(e: &Engine<'_, '_>, need: &V3, usable: &impl Fn(usize) -> bool) -> Self {
        let mut fit = BTreeSet::new();
        e.free_ix.each_fitting(need, |n| {
            if usable(n) {
                fit.insert(n);
            }
            false
        });
        Trial {
            free: e.cluster.nodes.iter().map(|n| n.free).collect(),
            fit,
            usage: e.usage.clone(),
        }
    }

    /// `unit`'s jobs given back (`sign` 1: their nodes free, their teams' usage drops)
    /// or taken again (-1).
    fn give(
        &mut self,
        jobs: &[Job],
        need: &V3,
        usable: &impl Fn(usize) -> bool,
        unit: &[usize],
        sign: f64,
    ) {
        for &v in unit {
            let vj = &jobs[v];
            for &n in &vj.nodes {
                for d in 0..3 {
                    self.free[n][d] += sign * vj.per_node[d];
                }
                if fits(&self.free[n], need) && usable(n) {
                    self.fit.insert(n);
                } else {
                    self.fit.remove(&n);
                }
            }
            for d in (0..3).chain(vj.quota_dim) {
                self.usage[vj.team][d] -= sign * need_in(&vj.total, d);
            }
        }
    }
}

/// A preemption candidate; the heap pops borrowing teams first, then lowest
/// priority, then most recently started, then the highest job id.
pub(super) struct Cand<'a> {
    pub(super) borrowing: bool,
    pub(super) prio: f64,
    pub(super) start: f64,
    pub(super) id: &'a str,
    pub(super) v: usize,
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

impl<'a, 'p> Engine<'a, 'p> {
    /// Adds or removes a running job in the preemption index, if it could ever be a victim.
    pub(super) fn index_victim(&mut self, j: usize, add: bool) {
        let job = &self.cluster.jobs[j];
        if !self.policy.preemption
            || !self.cluster.teams[job.team].preemptible
            || self.cluster.qos[job.qos].exempt
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

    pub(super) fn preempt(&mut self, v: usize, by: usize, t: f64) {
        if let Some(f) = self.fair.as_mut() {
            f.accrue(v, self.cluster.jobs[v].start, t);
        }
        let mode = self.policy.preempt_mode;
        self.release(v);
        let ran = t - self.cluster.jobs[v].start;
        self.ends.retain(|e| e.1 != v);
        let job = &mut self.cluster.jobs[v];
        match mode {
            PreemptMode::Cancel => job.state = JobState::Cancelled,
            PreemptMode::Suspend => {
                job.remaining = (job.remaining - ran).max(0.0);
                job.state = JobState::Pending;
            }
            PreemptMode::Requeue => {
                job.state = JobState::Pending;
                // Requeued, it may start again only after the site's delay; its age
                // counts from then, as the scheduler resets the begin time.
                if self.policy.requeue_delay > 0.0 {
                    job.eligible = t + self.policy.requeue_delay;
                    self.wake.insert(bits(t + self.policy.requeue_delay));
                }
            }
        }
        job.nodes.clear();
        if job.state == JobState::Cancelled {
            self.on_leave_queue(v);
        } else {
            self.mark_pending(v);
        }
        self.requeued_now.push(v);
        self.preempted_by.entry(by).or_default().push((v, mode));
        self.event(t, Ev::Preempt { job: v, by, mode });
    }

    /// Victims that make room for `j` now, or None. Candidates: jobs of
    /// borrowing teams in j's cohort when j stays within its guarantee
    /// (reclaim), and jobs j's QoS outranks. Order: borrowing teams first,
    /// then lowest priority, then most recently started. No victim team may
    /// drop below its guarantee.
    /// Cheap test whether any victim could exist, before scanning running jobs.
    pub(super) fn may_preempt(&self, j: usize) -> bool {
        let job = &self.cluster.jobs[j];
        if let Some(st) = self.cluster.teams[job.team].stated {
            let in_cohort = self.cluster.teams[job.team].cohort != 0;
            return st.within != Rule::Never
                || (in_cohort && (st.reclaim != Rule::Never || st.borrow_below.is_some()));
        }
        if !self.cluster.qos[job.qos].preempts.is_empty() || job.class_rank > 1 {
            return true;
        }
        let team = &self.cluster.teams[job.team];
        self.policy.quota == QuotaMode::Enforce
            && self.within_guarantee(job.team, &job.total, job.quota_dim)
            && (0..self.cluster.teams.len()).any(|x| {
                x != job.team && self.cluster.teams[x].cohort == team.cohort && self.borrowing(x)
            })
    }

    pub(super) fn find_victims(&self, j: usize, t: f64) -> Option<(Vec<usize>, Vec<usize>)> {
        let job = &self.cluster.jobs[j];
        if let Some(st) = self.cluster.teams[job.team].stated {
            return self.find_victims_staged(j, t, st);
        }
        let reclaim = self.policy.quota == QuotaMode::Enforce
            && self.within_guarantee(job.team, &job.total, job.quota_dim);
        let my_cohort = self.cluster.teams[job.team].cohort;
        // A team with a guarantee is a Kueue ClusterQueue: priority preempts within the
        // queue only (withinClusterQueue); other queues lose workloads only to reclaim.
        let own_only = self.cluster.teams[job.team].has_guarantee;
        let borrowing: Vec<bool> = (0..self.cluster.teams.len())
            .map(|x| self.borrowing(x))
            .collect();
        let jobs = &self.cluster.jobs;
        let mut heap: BinaryHeap<Cand<'a>> = BinaryHeap::new();
        // A gang member is a candidate only with all its gang: `cands` says which are.
        let mut cands: FxSet<usize> = FxSet::default();
        // Started in this same pass (start >= t): not a victim.
        let before_t = (ord_bits(t), 0);
        for (&(q, vteam, rank), set) in &self.victims {
            let by_qos = (self.cluster.qos[job.qos].preempts.contains(&q)
                || (job.class_rank > 0 && rank > 0 && job.class_rank > rank))
                && (!own_only || vteam == job.team);
            let by_reclaim = reclaim
                && vteam != job.team
                && self.cluster.teams[vteam].cohort == my_cohort
                && borrowing[vteam];
            if by_qos || by_reclaim {
                // Younger than its QoS's exempt time: not a victim yet.
                let exempt = self.cluster.qos[q].exempt_time;
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
                        prio: vj.priority,
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
        // Nodes an advanced reservation keeps the job off over its run are no use.
        let to = t + job.limit.unwrap_or(INF);
        let usable =
            |n: usize| self.cluster.node_eligible(j, n) && self.cluster.resv_open(j, n, t, to);
        let mut tr = Trial::new(self, &need, &usable);
        // Victims in units: a job alone, or every running member of a gang.
        let mut chosen: Vec<Vec<usize>> = Vec::new();
        let mut taken: FxSet<usize> = FxSet::default();
        // The same choice as `place_now` on `free` without reservations.
        let place = |free: &[V3], fit: &BTreeSet<usize>| -> Option<Vec<usize>> {
            if fit.len() < job.nodes_wanted {
                return None;
            }
            pick(
                fit.iter()
                    .map(|&n| (self.score(&free[n], &need), n))
                    .collect(),
                job.nodes_wanted,
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
                    let unit: Vec<usize> = self.cluster.gang_members[g]
                        .iter()
                        .copied()
                        .filter(|&m| jobs[m].state == JobState::Running)
                        .collect();
                    if !unit.iter().all(|m| cands.contains(m)) {
                        continue; // a member this job may not preempt: the gang stays whole
                    }
                    unit
                }
            };
            if self.below_guarantee(&unit, &tr.usage, job.team) {
                continue; // would take a victim's team below its guarantee
            }
            tr.give(jobs, &need, &usable, &unit, 1.0);
            taken.extend(unit.iter().copied());
            chosen.push(unit);
            if self
                .quota_check(job.team, &job.total, job.quota_dim, &tr.usage)
                .is_none()
            {
                if let Some(p) = place(&tr.free, &tr.fit) {
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
            tr.give(jobs, &need, &usable, &chosen[i], -1.0);
            let ok = self
                .quota_check(job.team, &job.total, job.quota_dim, &tr.usage)
                .is_none();
            match if ok { place(&tr.free, &tr.fit) } else { None } {
                Some(p) => {
                    chosen.remove(i);
                    placed = Some(p);
                }
                None => tr.give(jobs, &need, &usable, &chosen[i], 1.0),
            }
        }
        Some((chosen.concat(), placed.expect("checked")))
    }
}

/// A candidate of the stated-policy search: other teams' jobs first, then lowest
/// priority, then most recently started, then the lowest id.
struct StagedCand {
    own: bool,
    prio: f64,
    start: f64,
    v: usize,
}

impl<'a, 'p> Engine<'a, 'p> {
    /// The priority a stated policy compares: the source's, else the QoS's.
    fn stated_prio(&self, j: usize) -> f64 {
        let job = &self.cluster.jobs[j];
        job.source_priority
            .unwrap_or(self.cluster.qos[job.qos].priority)
    }

    /// Whether team `x` uses more than its guarantee in one of `dims` under `usage`.
    fn borrows_in(&self, x: usize, dims: &[usize], usage: &[Vec<f64>]) -> bool {
        let team = &self.cluster.teams[x];
        team.has_guarantee
            && team.cohort != 0
            && dims.iter().any(|&d| usage[x][d] > team.guarantee[d] + 1e-9)
    }

    /// Victims for `j` under its team's stated policy (docs/core.md, "Stated
    /// preemption"), or None. Candidates are the team's own jobs its `within` rule allows
    /// and, in a cohort, the jobs its `reclaim` rule allows of teams that borrow in a
    /// resource the job is short of; each uses such a resource. They are tried in order,
    /// other teams' first, a job of another team only while its team still borrows
    /// (there is no floor at the guarantee), in stages: with only the team's own
    /// candidates, borrowing allowed; with `borrow_within`, all of them, borrowing
    /// allowed until a victim at or above the threshold is taken; else, if the team is
    /// under its guarantee in every resource it is short of, all of them with the job
    /// fitting its guarantee; last, its own candidates, borrowing allowed.
    pub(super) fn find_victims_staged(
        &self,
        j: usize,
        t: f64,
        st: Stated,
    ) -> Option<(Vec<usize>, Vec<usize>)> {
        let jobs = &self.cluster.jobs;
        let teams = &self.cluster.teams;
        let job = &jobs[j];
        let me = job.team;
        let cohort = teams[me].cohort;
        let wprio = self.stated_prio(j);
        let asked: Vec<usize> = (0..3)
            .chain(job.quota_dim)
            .filter(|&d| need_in(&job.total, d) > 0.0)
            .collect();
        // The resources that need preemption: those the job does not fit its quota in
        // now; where it fits them all (it is short of nodes), every one it asks for.
        let avail = self.cohort_avail(me, &self.usage);
        let mut short: Vec<usize> = asked
            .iter()
            .copied()
            .filter(|&d| {
                let want = self.usage[me][d] + need_in(&job.total, d);
                let over = want - teams[me].guarantee[d];
                want > teams[me].max[d]
                    || (self.policy.quota == QuotaMode::Enforce && over > 0.0 && over > avail[d])
            })
            .collect();
        if short.is_empty() {
            short.clone_from(&asked);
        }
        let uses = |v: usize| short.iter().any(|&d| need_in(&jobs[v].total, d) > 0.0);
        let before_t = (ord_bits(t), 0);
        let mut cands: Vec<StagedCand> = Vec::new();
        for (&(q, vteam, _), set) in &self.victims {
            let own = vteam == me;
            let rule = if own {
                st.within
            } else if cohort != 0
                && teams[vteam].cohort == cohort
                && self.borrows_in(vteam, &short, &self.usage)
            {
                st.reclaim
            } else {
                Rule::Never
            };
            if rule == Rule::Never {
                continue;
            }
            let exempt = self.cluster.qos[q].exempt_time;
            let bound = if exempt > 0.0 {
                (ord_bits(t - exempt), usize::MAX).min(before_t)
            } else {
                before_t
            };
            if bound < before_t {
                if let Some(&(s, _)) = set.range(bound..before_t).next() {
                    self.exempt_until
                        .set(self.exempt_until.get().min(from_ord_bits(s) + exempt));
                }
            }
            for &(_, v) in set.range(..bound) {
                let p = self.stated_prio(v);
                let ok = match rule {
                    Rule::Any => true,
                    Rule::Lower => p < wprio,
                    Rule::LowerOrNewerEqual => {
                        p < wprio || (p == wprio && job.submit < jobs[v].submit)
                    }
                    Rule::Never => false,
                };
                if ok && uses(v) {
                    cands.push(StagedCand {
                        own,
                        prio: p,
                        start: jobs[v].start,
                        v,
                    });
                }
            }
        }
        if cands.is_empty() {
            return None;
        }
        cands.sort_by(|a, b| {
            a.own
                .cmp(&b.own)
                .then(a.prio.total_cmp(&b.prio))
                .then(b.start.total_cmp(&a.start))
                .then_with(|| id_cmp(jobs[a.v].id, jobs[b.v].id))
        });
        let order: Vec<usize> = cands.iter().map(|c| c.v).collect();
        let own_only: Vec<usize> = cands.iter().filter(|c| c.own).map(|c| c.v).collect();
        if own_only.len() == order.len() {
            return self.minimal_victims(j, t, &order, &short, true, None);
        }
        if let Some(below) = st.borrow_below {
            let thr = wprio.min(below);
            let under = short
                .iter()
                .all(|&d| self.usage[me][d] < teams[me].guarantee[d]);
            let order: Vec<usize> = if under {
                order
            } else {
                // Over its guarantee already: other teams' jobs only below the threshold.
                order
                    .into_iter()
                    .filter(|&v| jobs[v].team == me || self.stated_prio(v) < thr)
                    .collect()
            };
            return self.minimal_victims(j, t, &order, &short, true, Some(thr));
        }
        let under = short
            .iter()
            .all(|&d| self.usage[me][d] < teams[me].guarantee[d]);
        if under {
            if let Some(found) = self.minimal_victims(j, t, &order, &short, false, None) {
                return Some(found);
            }
        }
        self.minimal_victims(j, t, &own_only, &short, true, None)
    }

    /// Takes `order`'s jobs until `j` fits its quota (within its guarantee unless
    /// `borrow`) and the nodes, skipping another team's job once that team no longer
    /// borrows in `short`; then gives back, from the second last, each victim the job
    /// does not need. With `below`, taking another team's job at or above that priority
    /// stops the job from borrowing.
    fn minimal_victims(
        &self,
        j: usize,
        t: f64,
        order: &[usize],
        short: &[usize],
        mut borrow: bool,
        below: Option<f64>,
    ) -> Option<(Vec<usize>, Vec<usize>)> {
        let jobs = &self.cluster.jobs;
        let job = &jobs[j];
        let me = job.team;
        let guarantee = &self.cluster.teams[me].guarantee;
        let need = job.per_node;
        let to = t + job.limit.unwrap_or(INF);
        let usable =
            |n: usize| self.cluster.node_eligible(j, n) && self.cluster.resv_open(j, n, t, to);
        let mut tr = Trial::new(self, &need, &usable);
        let fits_now = |free: &[V3], fit: &BTreeSet<usize>, usage: &[Vec<f64>], borrow: bool| {
            let within = borrow
                || (0..3).chain(job.quota_dim).all(|d| {
                    need_in(&job.total, d) <= 0.0
                        || usage[me][d] + need_in(&job.total, d) <= guarantee[d] + 1e-9
                });
            if !within
                || self
                    .quota_check(me, &job.total, job.quota_dim, usage)
                    .is_some()
                || fit.len() < job.nodes_wanted
            {
                return None;
            }
            pick(
                fit.iter()
                    .map(|&n| (self.score(&free[n], &need), n))
                    .collect(),
                job.nodes_wanted,
            )
        };
        let mut chosen: Vec<Vec<usize>> = Vec::new();
        let mut taken: FxSet<usize> = FxSet::default();
        let mut placed = None;
        for &v in order {
            if taken.contains(&v) {
                continue;
            }
            let vt = jobs[v].team;
            if vt != me && !self.borrows_in(vt, short, &tr.usage) {
                continue; // its team no longer borrows: nothing to reclaim there
            }
            let unit = match jobs[v].gang {
                None => vec![v],
                Some(g) => {
                    let unit: Vec<usize> = self.cluster.gang_members[g]
                        .iter()
                        .copied()
                        .filter(|&m| jobs[m].state == JobState::Running)
                        .collect();
                    if !unit.iter().all(|m| order.contains(m)) {
                        continue; // a member this job may not preempt: the gang stays whole
                    }
                    unit
                }
            };
            if vt != me && below.is_some_and(|b| self.stated_prio(v) >= b) {
                borrow = false;
            }
            tr.give(jobs, &need, &usable, &unit, 1.0);
            taken.extend(unit.iter().copied());
            chosen.push(unit);
            if let Some(p) = fits_now(&tr.free, &tr.fit, &tr.usage, borrow) {
                placed = Some(p);
                break;
            }
        }
        placed.as_ref()?;
        // Give back, newest choice first (the last one stays), each victim not needed.
        let mut i = chosen.len().saturating_sub(1);
        while i > 0 {
            i -= 1;
            tr.give(jobs, &need, &usable, &chosen[i], -1.0);
            match fits_now(&tr.free, &tr.fit, &tr.usage, borrow) {
                Some(p) => {
                    chosen.remove(i);
                    placed = Some(p);
                }
                None => tr.give(jobs, &need, &usable, &chosen[i], 1.0),
            }
        }
        Some((chosen.concat(), placed.expect("checked")))
    }
}
