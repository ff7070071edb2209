//! Team quotas: guarantees, borrowing and lending within a cohort, and the cohort capacity still available.

use super::*;

impl<'a, 'p> Engine<'a, 'p> {
    /// Idle capacity the cohort of `t` can lend it, per quota dimension
    /// (Kueue's cohort borrowing with lendingLimit, per resource and flavor):
    /// unused guarantee of the other members up to their lendable, less what
    /// the others already borrow.
    pub(super) fn cohort_avail(&self, t: usize, usage: &[Vec<f64>]) -> Vec<f64> {
        let c = self.cluster.teams[t].cohort;
        let nd = usage[t].len();
        let mut avail = vec![0.0; nd];
        for (s, team) in self.cluster.teams.iter().enumerate() {
            if s == t || !team.has_guarantee || team.cohort != c {
                continue;
            }
            for (d, a) in avail.iter_mut().enumerate() {
                if team.guarantee[d].is_finite() {
                    *a += (team.guarantee[d] - usage[s][d])
                        .max(0.0)
                        .min(team.lendable[d])
                        - (usage[s][d] - team.guarantee[d]).max(0.0);
                }
            }
        }
        avail
    }

    /// Quota check of a request `need` (typed GPUs also in dimension `qdim`).
    pub(super) fn quota_check(
        &self,
        t: usize,
        need: &V3,
        qdim: Option<usize>,
        usage: &[Vec<f64>],
    ) -> Option<Block> {
        if self.policy.quota == QuotaMode::Off {
            return None;
        }
        let team = &self.cluster.teams[t];
        for d in [GPU, CPU, MEM].into_iter().chain(qdim) {
            if usage[t][d] + need_in(need, d) > team.max[d] {
                return Some(Block::Max {
                    dim: d,
                    max: team.max[d],
                    used: usage[t][d],
                });
            }
        }
        if self.policy.quota == QuotaMode::MaxOnly || !team.has_guarantee {
            return None;
        }
        let mut avail: Option<Vec<f64>> = None;
        for d in [GPU, CPU, MEM].into_iter().chain(qdim) {
            let over = usage[t][d] + need_in(need, d) - team.guarantee[d];
            if over > 0.0 {
                let a = avail.get_or_insert_with(|| self.cohort_avail(t, usage));
                if over > a[d] {
                    return Some(Block::Cohort {
                        dim: d,
                        guarantee: team.guarantee[d],
                        avail: a[d].max(0.0),
                    });
                }
            }
        }
        None
    }

    /// Whether a job short of quota may preempt for it. Kueue's flavor assigner gives a
    /// resource the Preempt mode only where the request fits the queue's nominal quota, so
    /// every dimension that does not fit now must ask no more than the team's guarantee.
    pub(super) fn may_preempt_for_quota(&self, t: usize, need: &V3, qdim: Option<usize>) -> bool {
        let team = &self.cluster.teams[t];
        let usage = &self.usage;
        let avail = self.cohort_avail(t, usage);
        let max_only = self.policy.quota == QuotaMode::MaxOnly;
        [GPU, CPU, MEM].into_iter().chain(qdim).all(|d| {
            let want = usage[t][d] + need_in(need, d);
            let over = want - team.guarantee[d];
            let fits = want <= team.max[d] && (max_only || over <= 0.0 || over <= avail[d]);
            // A team that may preempt while it borrows (a stated borrow_within) may do
            // so for any request within its max.
            let while_borrowing = team
                .stated
                .is_some_and(|s| s.borrow_below.is_some() && need_in(need, d) <= team.max[d]);
            fits || need_in(need, d) <= team.guarantee[d] || while_borrowing
        })
    }

    pub(super) fn within_guarantee(&self, t: usize, need: &V3, qdim: Option<usize>) -> bool {
        let team = &self.cluster.teams[t];
        team.has_guarantee
            && (0..3)
                .chain(qdim)
                .all(|d| self.usage[t][d] + need_in(need, d) <= team.guarantee[d])
    }

    pub(super) fn borrowing(&self, t: usize) -> bool {
        let team = &self.cluster.teams[t];
        team.has_guarantee
            && self.usage[t]
                .iter()
                .zip(&team.guarantee)
                .any(|(u, g)| u > g)
    }

    /// Whether preempting `unit` would take any of its teams other than the preemptor's
    /// (`by`) below its guarantee, in a resource the unit frees. A team already below its
    /// guarantee in a resource the victims do not hold is not taken there by them (else a
    /// cpu-only workload of a queue holding no memory was never a victim); the preemptor's
    /// own team swaps one job for another (Kueue's withinClusterQueue).
    pub(super) fn below_guarantee(&self, unit: &[usize], usage: &[Vec<f64>], by: usize) -> bool {
        let jobs = &self.cluster.jobs;
        unit.iter().any(|&v| {
            let vt = jobs[v].team;
            let team = &self.cluster.teams[vt];
            vt != by
                && team.has_guarantee
                && (0..3).chain(jobs[v].quota_dim).any(|d| {
                    let gone: f64 = unit
                        .iter()
                        .filter(|&&m| jobs[m].team == vt)
                        .map(|&m| need_in(&jobs[m].total, d))
                        .sum();
                    team.guarantee[d].is_finite()
                        && gone > 0.0
                        && usage[vt][d] - gone < team.guarantee[d]
                })
        })
    }
}
