//! Team quotas: guarantees, borrowing and lending within a cohort, and the cohort capacity still available.

use super::*;

impl<'a, 'p> Engine<'a, 'p> {
    /// Idle capacity the cohort of `t` can lend it, per quota dimension
    /// (Kueue's cohort borrowing with lendingLimit, per resource and flavor):
    /// unused guarantee of the other members up to their lendable, less what
    /// the others already borrow.
    pub(super) fn cohort_avail(&self, t: usize, usage: &[Vec<f64>]) -> Vec<f64> {
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
    pub(super) fn quota_check(
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

    pub(super) fn within_guarantee(&self, t: usize, need: &V3, qdim: Option<usize>) -> bool {
        let team = &self.c.teams[t];
        team.has_g
            && (0..3)
                .chain(qdim)
                .all(|d| self.usage[t][d] + need_in(need, d) <= team.g[d])
    }

    pub(super) fn borrowing(&self, t: usize) -> bool {
        let team = &self.c.teams[t];
        team.has_g && self.usage[t].iter().zip(&team.g).any(|(u, g)| u > g)
    }

    /// Whether preempting `unit` would take any of its teams below its guarantee.
    pub(super) fn below_guarantee(&self, unit: &[usize], usage: &[Vec<f64>]) -> bool {
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
}
