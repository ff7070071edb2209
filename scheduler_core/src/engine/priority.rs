//! Job priority: fair-share factors and levels, the multifactor sum, the queue order, and its drift over a simulated horizon.

use super::*;

impl<'a, 'p> Engine<'a, 'p> {
    /// Per team, what its fair-share factor is made of: (its shares over its
    /// siblings', its usage over its siblings', level fair-share S/U). Siblings are
    /// the children of one parent under Fair Tree, every team under classic; the
    /// usage of an account is its subtree's. No usage: an infinite level.
    pub fn fairshare_levels(&self) -> Vec<(f64, f64, f64)> {
        let teams = &self.cluster.teams;
        let n = teams.len();
        let tree = self.policy.fairshare == FairShareMode::FairTree;
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
        let teams = &self.cluster.teams;
        let n = teams.len();
        match self.policy.fairshare {
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
        let running: Vec<usize> = (0..self.cluster.jobs.len())
            .filter(|&j| self.cluster.jobs[j].from_snapshot_running)
            .collect();
        self.set_priorities(&running, t, &fs);
        for &j in &running {
            let job = &mut self.cluster.jobs[j];
            if let Some(p) = job.source_priority {
                job.priority = p;
            }
        }
    }

    /// Each team's fair-share factor as priorities read it.
    pub(super) fn priority_fairshare(&self) -> Vec<f64> {
        // With no fair-share weight (FCFS trace replays) the factors would be multiplied away.
        if self.policy.w.fairshare == 0.0 {
            vec![0.0; self.cluster.teams.len()]
        } else {
            self.fairshare_factors()
        }
    }

    pub(super) fn prioritise_pending(&mut self, t: f64, fs: &[f64]) {
        self.compact_pending();
        let pending = std::mem::take(&mut self.pending);
        self.set_priorities(&pending, t, fs);
        self.pending = pending;
    }

    /// Each job's factors and priority at `t`, with fair-share factors `fs` per team.
    pub(super) fn set_priorities(&mut self, jobs: &[usize], t: f64, fs: &[f64]) {
        let w = &self.policy.w;
        let tot = self.cluster.total;
        let unit = self.cluster.unit;
        for &j in jobs {
            let job = &mut self.cluster.jobs[j];
            let age = ((t - job.eligible).max(0.0).min(self.policy.max_age)) / self.policy.max_age;
            let mut size = if tot[unit] > 0.0 {
                (job.total[unit] / tot[unit]).min(1.0)
            } else {
                0.0
            };
            if self.policy.favor_small {
                size = 1.0 - size;
            }
            let part = job
                .partition
                .and_then(|p| self.cluster.part_factor.get(p).copied())
                .unwrap_or(0.0);
            let f = [
                w.age * age,
                w.fairshare * fs[job.team],
                w.qos * self.cluster.qos[job.qos].priority,
                w.job_size * size,
                w.partition * part,
            ];
            job.factors = f;
            job.priority = f[0] + f[1] + f[2] + f[3] + f[4];
        }
    }

    pub(super) fn queue_order(&mut self) -> Vec<usize> {
        if self.static_priority {
            if self.order_cache.is_none() {
                // Every job that is or may become pending (a requeued victim) once.
                let all: Vec<usize> = (0..self.cluster.jobs.len()).collect();
                self.order_cache = Some(self.sorted(all));
            }
            let jobs = &self.cluster.jobs;
            return self
                .order_cache
                .as_ref()
                .expect("set")
                .iter()
                .copied()
                .filter(|&j| jobs[j].state == JobState::Pending)
                .collect();
        }
        let v = self.compact_pending().to_vec();
        self.sorted(v)
    }

    pub(super) fn sorted(&self, mut v: Vec<usize>) -> Vec<usize> {
        let jobs = &self.cluster.jobs;
        if self.policy.strict_team_fifo {
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

    /// The source's priorities at the snapshot plus the age each job has gained
    /// since (`weights.age × Δmin(age, max_age) / max_age`); the queue is sorted
    /// again only if that changed its order (jobs whose age saturates fall back).
    pub(super) fn drift_priorities(&mut self, t: f64) {
        if self.age_drift.is_none() {
            return;
        }
        self.compact_pending();
        if let Some(f) = self.fair.as_mut() {
            if f.due(t) {
                // The scheduler's recalculation: running jobs' usage so far, then a new ranking.
                for (j, job) in self.cluster.jobs.iter().enumerate() {
                    if job.state == JobState::Running {
                        f.accrue(j, job.start, t);
                    }
                }
                f.recalc(t);
            }
        }
        let base = self.age_drift.as_ref().expect("checked");
        let (w, max_age, t0) = (self.policy.w.age, self.policy.max_age, self.t0);
        let age = |x: f64, e: f64| (x - e).max(0.0).min(max_age);
        let fair = self.fair.as_ref();
        for &j in &self.pending {
            let job = &mut self.cluster.jobs[j];
            job.priority = base[j]
                + w * (age(t, job.eligible) - age(t0, job.eligible)) / max_age
                + fair.map_or(0.0, |f| f.delta(j));
        }
        let jobs = &self.cluster.jobs;
        let sorted = match &self.order_cache {
            None => true,
            Some(cache) => {
                let mut prev: Option<usize> = None;
                let mut ok = true;
                for &j in cache
                    .iter()
                    .filter(|&&j| jobs[j].state == JobState::Pending)
                {
                    if let Some(p) = prev {
                        let (a, b) = (&jobs[p], &jobs[j]);
                        let ord = b
                            .priority
                            .total_cmp(&a.priority)
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
}
