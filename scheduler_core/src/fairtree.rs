//! Fair Tree fair-share (Slurm's fair_tree document): every user association is
//! ranked by a depth-first walk of the association tree in which siblings are
//! visited in order of their level fair-share `LF = S / U` — `S` the association's
//! shares over its siblings' (itself included), `U` its usage over its siblings'
//! usage; no usage is an infinite LF. The first user visited gets factor 1, each
//! later one `rank / users`, where rank counts down; siblings tied on LF share a
//! rank, and the children of tied sibling accounts are merged and ranked together.
//!
//! The prediction ranks the tree again as usage accrues over its horizon, so that
//! a team whose jobs run loses priority to the others as the real scheduler's
//! recalculation would make it.

/// One association: an account or a user within an account.
#[derive(Debug, Clone)]
pub struct ShareAssoc {
    pub parent: Option<usize>,
    pub shares: f64,
    /// The association's own usage; an account's usage is the sum of its children's.
    pub usage: f64,
    pub user: bool,
}

#[derive(Debug, Clone)]
pub struct FairTree {
    pub assocs: Vec<ShareAssoc>,
    children: Vec<Vec<usize>>,
    roots: Vec<usize>,
    users: usize,
}

impl FairTree {
    pub fn new(assocs: Vec<ShareAssoc>) -> FairTree {
        let mut children = vec![Vec::new(); assocs.len()];
        let mut roots = Vec::new();
        for (i, a) in assocs.iter().enumerate() {
            match a.parent {
                Some(p) if p < assocs.len() && p != i => children[p].push(i),
                _ => roots.push(i),
            }
        }
        let users = assocs.iter().filter(|a| a.user).count();
        FairTree {
            assocs,
            children,
            roots,
            users,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.users == 0
    }

    /// Usage of every association: users their own, accounts the sum below them.
    fn subtree_usage(&self) -> Vec<f64> {
        let mut total = vec![0.0; self.assocs.len()];
        for r in &self.roots {
            self.sum_into(*r, &mut total, 0);
        }
        total
    }

    fn sum_into(&self, i: usize, total: &mut [f64], depth: usize) -> f64 {
        // A cycle in a malformed tree must not recurse forever.
        if depth > 64 {
            return 0.0;
        }
        let mut u = if self.assocs[i].user || self.children[i].is_empty() {
            self.assocs[i].usage
        } else {
            0.0
        };
        for &c in &self.children[i] {
            u += self.sum_into(c, total, depth + 1);
        }
        total[i] = u;
        u
    }

    /// The fair-share factor of every association (users; accounts get 0).
    pub fn factors(&self) -> Vec<f64> {
        let mut out = vec![0.0; self.assocs.len()];
        if self.users == 0 {
            return out;
        }
        let usage = self.subtree_usage();
        let mut rank = self.users as f64;
        let mut rnt = self.users as f64;
        self.walk(&self.roots, &usage, &mut rank, &mut rnt, false, &mut out, 0);
        out
    }

    fn level_fs(&self, sibs: &[usize], usage: &[f64]) -> Vec<f64> {
        let shares: f64 = sibs.iter().map(|&s| self.assocs[s].shares.max(0.0)).sum();
        let used: f64 = sibs.iter().map(|&s| usage[s]).sum();
        sibs.iter()
            .map(|&s| {
                let sh = if shares > 0.0 {
                    self.assocs[s].shares.max(0.0) / shares
                } else {
                    0.0
                };
                let u = if used > 0.0 { usage[s] / used } else { 0.0 };
                if sh == 0.0 {
                    0.0
                } else if u == 0.0 {
                    f64::INFINITY
                } else {
                    sh / u
                }
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn walk(
        &self,
        sibs: &[usize],
        usage: &[f64],
        rank: &mut f64,
        rnt: &mut f64,
        mut account_tied: bool,
        out: &mut [f64],
        depth: usize,
    ) {
        if depth > 64 || sibs.is_empty() {
            return;
        }
        let lf = self.level_fs(sibs, usage);
        let mut order: Vec<usize> = (0..sibs.len()).collect();
        // Highest LF first; equal LFs keep the source's order.
        order.sort_by(|&a, &b| lf[b].total_cmp(&lf[a]));
        let mut k = 0;
        while k < order.len() {
            let i = order[k];
            let tied = if account_tied {
                account_tied = false;
                true
            } else {
                k > 0 && lf[order[k - 1]] == lf[i]
            };
            let a = sibs[i];
            if self.assocs[a].user {
                if !tied {
                    *rank = *rnt;
                }
                out[a] = *rank / self.users as f64;
                *rnt -= 1.0;
                k += 1;
                continue;
            }
            // Accounts tied with this one on LF: their children are ranked together.
            let mut merged: Vec<usize> = self.children[a].clone();
            let mut m = k + 1;
            while m < order.len() && lf[order[m]] == lf[i] && !self.assocs[sibs[order[m]]].user {
                merged.extend(self.children[sibs[order[m]]].iter().copied());
                m += 1;
            }
            self.walk(&merged, usage, rank, rnt, tied, out, depth + 1);
            k = m;
        }
    }
}

/// Fair Tree over a prediction's horizon: the usage that simulated jobs add to
/// their association, the recalculation every `period` (with the usage half-life's
/// decay), and what each job's priority gains or loses by it.
#[derive(Debug, Clone)]
pub struct FairDrift {
    pub tree: FairTree,
    /// Per job: its user association in the tree, and the usage it adds per second.
    pub assoc: Vec<Option<usize>>,
    pub rate: Vec<f64>,
    accrued_to: Vec<f64>,
    fs0: Vec<f64>,
    fs: Vec<f64>,
    period: f64,
    decay: f64,
    next_calc: f64,
    weight: f64,
}

impl FairDrift {
    /// `weight` is the fair-share priority weight; usage before `t0` is already in
    /// the tree's reported usage.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        tree: FairTree,
        assoc: Vec<Option<usize>>,
        rate: Vec<f64>,
        t0: f64,
        period: f64,
        half_life: f64,
        weight: f64,
    ) -> FairDrift {
        let fs0 = tree.factors();
        let n = assoc.len();
        FairDrift {
            fs: fs0.clone(),
            fs0,
            tree,
            assoc,
            rate,
            accrued_to: vec![t0; n],
            period,
            decay: if half_life > 0.0 {
                0.5f64.powf(period / half_life)
            } else {
                1.0
            },
            next_calc: t0 + period,
            weight,
        }
    }

    /// Job `j` ran from `start` until `to`: its association's usage grows by that.
    pub fn accrue(&mut self, j: usize, start: f64, to: f64) {
        if let Some(a) = self.assoc[j] {
            let from = self.accrued_to[j].max(start);
            if to > from {
                self.tree.assocs[a].usage += self.rate[j] * (to - from);
                self.accrued_to[j] = to;
            }
        }
    }

    /// Whether a recalculation is due at `t` (the caller accrues running jobs first).
    pub fn due(&self, t: f64) -> bool {
        t >= self.next_calc
    }

    /// Decays the usage once per period passed and ranks the tree again.
    pub fn recalc(&mut self, t: f64) {
        while self.next_calc <= t {
            for a in self.tree.assocs.iter_mut() {
                a.usage *= self.decay;
            }
            self.next_calc += self.period;
        }
        self.fs = self.tree.factors();
    }

    /// What job `j`'s priority has gained (or lost) since the snapshot.
    pub fn delta(&self, j: usize) -> f64 {
        self.assoc[j].map_or(0.0, |a| self.weight * (self.fs[a] - self.fs0[a]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acct(parent: Option<usize>, shares: f64) -> ShareAssoc {
        ShareAssoc {
            parent,
            shares,
            usage: 0.0,
            user: false,
        }
    }
    fn user(parent: usize, usage: f64) -> ShareAssoc {
        ShareAssoc {
            parent: Some(parent),
            shares: 1.0,
            usage,
            user: true,
        }
    }

    #[test]
    fn the_less_used_account_ranks_all_its_users_first() {
        // a (60 shares) and b (40): a used 10, b used 30, so LF a = 0.6/0.25 = 2.4 >
        // LF b = 0.4/0.75 = 0.53: both of a's users rank above b's.
        let t = FairTree::new(vec![
            acct(None, 60.0),
            acct(None, 40.0),
            user(0, 9.0),
            user(0, 1.0),
            user(1, 30.0),
            user(1, 0.0),
        ]);
        let f = t.factors();
        // Within a: the user with 1 has the higher LF (0.5/0.1 > 0.5/0.9).
        assert_eq!(f[3], 1.0);
        assert_eq!(f[2], 0.75);
        // Within b: the unused user has LF infinity.
        assert_eq!(f[5], 0.5);
        assert_eq!(f[4], 0.25);
    }

    #[test]
    fn tied_users_share_a_rank_and_the_next_one_counts_both() {
        let t = FairTree::new(vec![
            acct(None, 1.0),
            user(0, 0.0),
            user(0, 0.0),
            user(0, 5.0),
        ]);
        let f = t.factors();
        assert_eq!((f[1], f[2], f[3]), (1.0, 1.0, 1.0 / 3.0));
    }

    #[test]
    fn tied_accounts_merge_their_children() {
        // Two accounts with no usage (LF infinite, tied): their users are ranked
        // together, the unused ones first.
        let t = FairTree::new(vec![
            acct(None, 1.0),
            acct(None, 1.0),
            user(0, 2.0),
            user(1, 0.0),
            acct(None, 1.0),
            user(4, 0.0),
        ]);
        let mut t2 = t.clone();
        t2.assocs[2].usage = 0.0;
        let f = t2.factors();
        // Everyone unused: all tied at the top.
        assert!(f
            .iter()
            .enumerate()
            .filter(|(i, _)| t2.assocs[*i].user)
            .all(|(_, &x)| x == 1.0));
        let f = t.factors();
        // Account 0 now has usage: accounts 1 and 4 (no usage) rank first, merged.
        assert_eq!((f[3], f[5]), (1.0, 1.0));
        assert_eq!(f[2], 1.0 / 3.0);
    }

    #[test]
    fn usage_accrued_over_the_horizon_reorders_users() {
        // Two users of one account, 10 and 12 used: u1 ranks first. u1's job runs
        // 4 cpus for 60 s: by the recalculation at +60 it has used 250 > 12, and
        // the order flips; before it, nothing moves.
        let t = FairTree::new(vec![acct(None, 1.0), user(0, 10.0), user(0, 12.0)]);
        let mut d = FairDrift::new(
            t,
            vec![Some(1), Some(2)],
            vec![4.0, 4.0],
            0.0,
            60.0,
            7.0 * 86400.0,
            1000.0,
        );
        d.accrue(0, 0.0, 30.0);
        assert!(!d.due(30.0) && d.delta(0) == 0.0);
        d.accrue(0, 0.0, 60.0);
        assert!(d.due(60.0));
        d.recalc(60.0);
        assert_eq!(d.delta(0), -500.0);
        assert_eq!(d.delta(1), 500.0);
    }

    #[test]
    fn a_cycle_does_not_hang() {
        let t = FairTree::new(vec![
            ShareAssoc {
                parent: Some(1),
                shares: 1.0,
                usage: 0.0,
                user: false,
            },
            ShareAssoc {
                parent: Some(0),
                shares: 1.0,
                usage: 0.0,
                user: false,
            },
        ]);
        assert!(t.factors().iter().all(|x| *x == 0.0));
    }
}
