//! Preemption: the index of possible victims, the choice of victims for a preemptor, and the preemption itself.

use super::placement::pick;
use super::*;

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
        let mut free: Vec<V3> = self.cluster.nodes.iter().map(|n| n.free).collect();
        // Nodes that fit the job in `free`, kept up to date as victims are given
        // back and forth, so each try costs the victim's nodes and not the cluster.
        let mut fit: BTreeSet<usize> = BTreeSet::new();
        self.free_ix.each_fitting(&need, |n| {
            if usable(n) {
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
                    if fits(&free[n], &need) && usable(n) {
                        fit.insert(n);
                    } else {
                        fit.remove(&n);
                    }
                }
                for d in (0..3).chain(vj.quota_dim) {
                    usage[vj.team][d] -= sign * need_in(&vj.total, d);
                }
            }
        };
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
            if self.below_guarantee(&unit, &usage, job.team) {
                continue; // would take a victim's team below its guarantee
            }
            give(&mut free, &mut fit, &mut usage, &unit, 1.0);
            taken.extend(unit.iter().copied());
            chosen.push(unit);
            if self
                .quota_check(job.team, &job.total, job.quota_dim, &usage)
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
                .quota_check(job.team, &job.total, job.quota_dim, &usage)
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
}
