//! Placement: which free nodes a job gets now (best fit, spread, consecutive runs, one-node runs) and their scores.

use super::*;

pub(super) type Scored = ((f64, f64, f64), usize);

pub(super) fn score_cmp(a: &Scored, b: &Scored) -> std::cmp::Ordering {
    a.0 .0
        .total_cmp(&b.0 .0)
        .then(a.0 .1.total_cmp(&b.0 .1))
        .then(a.0 .2.total_cmp(&b.0 .2))
        .then(a.1.cmp(&b.1))
}

/// The `nn` best-scored candidates, in node order; None if too few.
pub(super) fn pick(mut cands: Vec<Scored>, nn: usize) -> Option<Vec<usize>> {
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
pub(super) fn consecutive_pick(mut cands: Vec<Scored>, nn: usize) -> Option<Vec<usize>> {
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
pub(super) struct OneNodeRuns {
    /// The open run: (last node, run's free CPUs, its tightest node, that node's CPUs).
    pub(super) open: Option<(usize, f64, usize, f64)>,
    /// The best closed run: (run's free CPUs, its tightest node).
    pub(super) best: Option<(f64, usize)>,
}

impl OneNodeRuns {
    pub(super) fn push(&mut self, n: usize, cpus: f64) {
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

    pub(super) fn close(&mut self) {
        if let Some((_, sum, node, _)) = self.open.take() {
            if self.best.is_none_or(|(b, _)| sum < b) {
                self.best = Some((sum, node));
            }
        }
    }

    pub(super) fn pick(mut self) -> Option<usize> {
        self.close();
        self.best.map(|(_, n)| n)
    }
}

impl<'a, 'p> Engine<'a, 'p> {
    pub(super) fn score(&self, free: &V3, need: &V3) -> (f64, f64, f64) {
        let left = [
            free[GPU] - need[GPU],
            free[CPU] - need[CPU],
            free[MEM] - need[MEM],
        ];
        match self.policy.placement {
            Placement::BestFit => (left[0], left[1], left[2]),
            Placement::Spread => (-left[0], -left[1], -left[2]),
            // Scored by free CPUs only; `consecutive_pick` needs no more.
            Placement::Consecutive => (free[CPU], 0.0, 0.0),
        }
    }

    /// The node groups (one per GPU type) a job of GPU type `gtype` may use.
    pub(super) fn node_groups(&self, gtype: Option<&str>) -> std::borrow::Cow<'_, [usize]> {
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
    pub(super) fn one_node_run(&self, j: usize, res: &Plan, to: f64) -> Option<usize> {
        let job = &self.cluster.jobs[j];
        let need = job.per_node;
        let member = |n: usize| {
            fits(&self.cluster.nodes[n].free, &need)
                && self.cluster.node_eligible(j, n)
                && self.cluster.resv_open(j, n, self.now, to)
                && (res.is_empty() || self.clear_of(n, self.now, to, &need, res))
        };
        let groups = self.node_groups(job.gpu_type);
        // (run's free CPUs, its first node, its tightest node), and the runs seen.
        let mut best: Option<(f64, usize, usize)> = None;
        let mut seen: Vec<(usize, usize)> = Vec::new();
        let last = self.cluster.nodes.len() - 1;
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
                let c = self.cluster.nodes[m].free[CPU];
                sum += c;
                if c < self.cluster.nodes[tight].free[CPU] {
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
    pub(super) fn place_now(
        &self,
        j: usize,
        res: &Plan,
        free: Option<&[V3]>,
        to: f64,
    ) -> Option<Vec<usize>> {
        let job = &self.cluster.jobs[j];
        let need = job.per_node;
        if free.is_none() && self.policy.placement == Placement::BestFit {
            // Nodes come tightest first: the first `nn` that take the job are
            // the ones scoring would pick.
            let groups = self.node_groups(job.gpu_type);
            let mut out = Vec::with_capacity(job.nodes_wanted);
            self.best.each_best(&groups, &need, |n| {
                if self.cluster.node_eligible(j, n)
                    && self.cluster.resv_open(j, n, self.now, to)
                    && (res.is_empty() || self.clear_of(n, self.now, to, &need, res))
                {
                    out.push(n);
                    return out.len() == job.nodes_wanted;
                }
                false
            });
            if out.len() < job.nodes_wanted {
                return None;
            }
            out.sort_unstable();
            return Some(out);
        }
        if self.policy.placement == Placement::Consecutive
            && job.nodes_wanted == 1
            && free.is_none()
        {
            return self.one_node_run(j, res, to).map(|n| vec![n]);
        }
        if self.policy.placement == Placement::Consecutive && job.nodes_wanted == 1 {
            let mut runs = OneNodeRuns::default();
            let mut visit = |n: usize, f: &V3| {
                if fits(f, &need)
                    && self.cluster.node_eligible(j, n)
                    && self.cluster.resv_open(j, n, self.now, to)
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
                    .each_fitting(&need, |n| visit(n, &self.cluster.nodes[n].free)),
            }
            return runs.pick().map(|n| vec![n]);
        }
        let mut cands: Vec<((f64, f64, f64), usize)> = Vec::new();
        let mut visit = |n: usize, f: &V3| -> bool {
            if fits(f, &need)
                && self.cluster.node_eligible(j, n)
                && self.cluster.resv_open(j, n, self.now, to)
                && (res.is_empty() || self.clear_of(n, self.now, to, &need, res))
            {
                cands.push((self.score(f, &need), n));
                if self.policy.placement == Placement::Consecutive {
                    return false; // the runs need every candidate
                }
                // A perfect fit: nothing can beat it, and earlier nodes win ties.
                return job.nodes_wanted == 1
                    && self.policy.placement == Placement::BestFit
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
                .each_fitting(&need, |n| visit(n, &self.cluster.nodes[n].free)),
        }
        if self.policy.placement == Placement::Consecutive {
            return consecutive_pick(cands, job.nodes_wanted);
        }
        pick(cands, job.nodes_wanted)
    }
}
