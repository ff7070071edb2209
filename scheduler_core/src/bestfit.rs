//! Nodes ordered by free (GPU, CPU, memory), one ordered set per GPU type, so
//! best-fit placement walks from the tightest node that can hold a request
//! instead of scoring every node with room.

use std::collections::{BTreeMap, BTreeSet};

use crate::wire::{CPU, GPU, MEM, V3};

/// An f64 as a u64 with the same order, negative numbers included.
pub fn ord_bits(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// The inverse of `ord_bits`.
pub fn from_ord_bits(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// (free GPUs, free CPUs, free memory, node): the best-fit order, ties to the
/// node listed first.
type Key = (u64, u64, u64, usize);

fn key(n: usize, f: &V3, by_cpu: bool) -> Key {
    // By CPU, memory stays out of the key, so that the nodes of one GPU level
    // come in (free CPUs, node index) order: what `each_by_cpu` merges.
    let mem = if by_cpu { 0 } else { ord_bits(f[MEM]) };
    (ord_bits(f[GPU]), ord_bits(f[CPU]), mem, n)
}

/// What `each_by_cpu` does after a node: go on, skip the rest of this node's
/// (free GPUs, free CPUs) level (they come in node order), or stop.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Step {
    Next,
    SkipLevel,
    Stop,
}

pub struct BestFit {
    groups: Vec<BTreeSet<Key>>,
    group_of: Vec<usize>,
    key_of: Vec<Key>,
    by_cpu: bool,
    /// By CPU only: per group, how many nodes have each free-GPU value, so that
    /// `each_by_cpu` finds the levels without searching the node set.
    levels: Vec<BTreeMap<u64, u32>>,
}

impl BestFit {
    /// `group_of[n]`: the GPU-type group of node n, below `groups`.
    /// `by_cpu`: keys for `each_by_cpu` rather than `each_best`; the two walks
    /// need different orders and a cluster places by one rule.
    pub fn new(free: &[V3], group_of: Vec<usize>, groups: usize, by_cpu: bool) -> BestFit {
        let mut sets = vec![BTreeSet::new(); groups];
        let key_of: Vec<Key> = free
            .iter()
            .enumerate()
            .map(|(n, f)| key(n, f, by_cpu))
            .collect();
        for (n, k) in key_of.iter().enumerate() {
            sets[group_of[n]].insert(*k);
        }
        let mut levels = vec![BTreeMap::new(); if by_cpu { groups } else { 0 }];
        if by_cpu {
            for (n, k) in key_of.iter().enumerate() {
                *levels[group_of[n]].entry(k.0).or_insert(0) += 1;
            }
        }
        BestFit {
            groups: sets,
            group_of,
            key_of,
            by_cpu,
            levels,
        }
    }

    pub fn set(&mut self, n: usize, free: &V3) {
        let k = key(n, free, self.by_cpu);
        let g = self.group_of[n];
        let old = self.key_of[n];
        let set = &mut self.groups[g];
        set.remove(&old);
        set.insert(k);
        self.key_of[n] = k;
        if self.by_cpu && old.0 != k.0 {
            let lv = &mut self.levels[g];
            if let Some(c) = lv.get_mut(&old.0) {
                *c -= 1;
                if *c == 0 {
                    lv.remove(&old.0);
                }
            }
            *lv.entry(k.0).or_insert(0) += 1;
        }
    }

    /// The first node of `group` at or after `from` whose free capacity holds
    /// `need`; a run of nodes short of CPUs or memory is skipped in one step.
    fn next_holding(&self, group: usize, mut from: Key, need: &V3) -> Option<Key> {
        let (c, m) = (ord_bits(need[CPU]), ord_bits(need[MEM]));
        loop {
            let k = *self.groups[group].range(from..).next()?;
            if k.1 < c {
                from = (k.0, c, m, 0);
            } else if k.2 < m {
                from = (k.0, k.1, m, 0);
            } else {
                return Some(k);
            }
        }
    }

    /// Calls `f` on the nodes of `groups` whose free capacity holds `need`, in
    /// best-fit order (fewest GPUs left, then CPUs, then memory, then node
    /// index), until `f` returns true.
    /// Calls `f` on the nodes of `groups` with at least `need`'s GPUs and CPUs
    /// free (memory is the caller's to check), fewest free CPUs first, then
    /// node index across GPU levels, as `f` steps. Needs keys made `by_cpu`:
    /// one list per (group, free-GPU level), merged.
    pub fn each_by_cpu(&self, groups: &[usize], need: &V3, mut f: impl FnMut(usize, f64) -> Step) {
        debug_assert!(self.by_cpu);
        let c = ord_bits(need[CPU]);
        // Per list: its head and the rest of the set after it (read while the
        // level holds: an unbounded range costs one search, a bounded one two).
        let mut lists: Vec<(Key, std::collections::btree_set::Range<'_, Key>)> = Vec::new();
        for &g in groups {
            for &level in self.levels[g].range(ord_bits(need[GPU])..).map(|(l, _)| l) {
                let mut it = self.groups[g].range((level, c, 0, 0)..);
                match it.next() {
                    Some(&h) if h.0 == level => lists.push((h, it)),
                    _ => {}
                }
            }
        }
        while let Some(i) = (0..lists.len()).min_by_key(|&i| (lists[i].0 .1, lists[i].0 .3)) {
            let k = lists[i].0;
            match f(k.3, from_ord_bits(k.1)) {
                Step::Stop => return,
                Step::Next => match lists[i].1.next() {
                    Some(&nk) if nk.0 == k.0 => lists[i].0 = nk,
                    _ => drop(lists.swap_remove(i)),
                },
                Step::SkipLevel => drop(lists.swap_remove(i)),
            }
        }
    }

    pub fn each_best(&self, groups: &[usize], need: &V3, mut f: impl FnMut(usize) -> bool) {
        let start = (ord_bits(need[GPU]), 0, 0, 0);
        let mut heads: Vec<(Key, usize)> = groups
            .iter()
            .filter_map(|&g| self.next_holding(g, start, need).map(|k| (k, g)))
            .collect();
        while let Some(i) = (0..heads.len()).min_by_key(|&i| heads[i].0) {
            let (k, g) = heads[i];
            if f(k.3) {
                return;
            }
            match self.next_holding(g, (k.0, k.1, k.2, k.3 + 1), need) {
                Some(nk) => heads[i].0 = nk,
                None => {
                    heads.swap_remove(i);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_fitting_nodes_tightest_first_across_groups() {
        // [cpu, mem, gpu] per node; groups: 0, 1, 0, 1.
        let free = vec![
            [8.0, 100.0, 4.0],
            [4.0, 100.0, 2.0],
            [2.0, 100.0, 2.0],
            [16.0, 50.0, 8.0],
        ];
        let mut bf = BestFit::new(&free, vec![0, 1, 0, 1], 2, false);
        let walk = |bf: &BestFit, groups: &[usize], need: &V3| {
            let mut v = Vec::new();
            bf.each_best(groups, need, |n| {
                v.push(n);
                false
            });
            v
        };
        assert_eq!(walk(&bf, &[0, 1], &[3.0, 0.0, 2.0]), vec![1, 0, 3]);
        assert_eq!(walk(&bf, &[0], &[3.0, 0.0, 2.0]), vec![0]);
        assert_eq!(walk(&bf, &[0, 1], &[1.0, 60.0, 1.0]), vec![2, 1, 0]);
        bf.set(1, &[0.0, 0.0, 0.0]);
        assert_eq!(walk(&bf, &[0, 1], &[1.0, 0.0, 1.0]), vec![2, 0, 3]);
        // Same GPUs and CPUs free, memory tells them apart: the walk skips only
        // the nodes short of memory, not the whole (GPU, CPU) run.
        let free = vec![
            [4.0, 10.0, 2.0],
            [4.0, 40.0, 2.0],
            [4.0, 100.0, 2.0],
            [4.0, 200.0, 2.0],
        ];
        let bf = BestFit::new(&free, vec![0; 4], 1, false);
        assert_eq!(walk(&bf, &[0], &[1.0, 50.0, 1.0]), vec![2, 3]);
        assert!(ord_bits(-1.0) < ord_bits(0.0));
        for x in [-2.5, -0.0, 0.0, 1e-300, 3.0, 1e300] {
            assert_eq!(from_ord_bits(ord_bits(x)).to_bits(), f64::to_bits(x));
        }
        assert!(ord_bits(0.5) < ord_bits(2.0));
    }

    #[test]
    fn walks_nodes_with_the_gpus_and_cpus_fewest_cpus_first() {
        // [cpu, mem, gpu]; groups 0, 0, 1, 0, 1, 0.
        let free = vec![
            [8.0, 0.0, 4.0],
            [6.0, 0.0, 1.0],
            [6.0, 0.0, 2.0],
            [2.0, 0.0, 8.0],
            [6.0, 0.0, 4.0],
            [7.0, 0.0, 2.0],
        ];
        let mut bf = BestFit::new(&free, vec![0, 0, 1, 0, 1, 0], 2, true);
        let walk = |bf: &BestFit, groups: &[usize], need: &V3, skip_at: Option<usize>| {
            let mut v = Vec::new();
            bf.each_by_cpu(groups, need, |n, cpus| {
                v.push((n, cpus));
                if Some(n) == skip_at {
                    Step::SkipLevel
                } else {
                    Step::Next
                }
            });
            v
        };
        // Node 1 lacks GPUs, node 3 CPUs; the rest by free CPUs, then index.
        let all = vec![(2, 6.0), (4, 6.0), (5, 7.0), (0, 8.0)];
        assert_eq!(walk(&bf, &[0, 1], &[4.0, 0.0, 2.0], None), all);
        assert_eq!(
            walk(&bf, &[0], &[4.0, 0.0, 2.0], None),
            vec![(5, 7.0), (0, 8.0)]
        );
        // Skipping at node 2 drops its level (group 1, 2 GPUs), not node 4's.
        assert_eq!(
            walk(&bf, &[0, 1], &[4.0, 0.0, 2.0], Some(2)),
            vec![(2, 6.0), (4, 6.0), (5, 7.0), (0, 8.0)]
        );
        assert_eq!(
            walk(&bf, &[0, 1], &[4.0, 0.0, 2.0], Some(5)),
            vec![(2, 6.0), (4, 6.0), (5, 7.0), (0, 8.0)]
        );
        bf.set(0, &[5.0, 0.0, 2.0]);
        bf.set(5, &[9.0, 0.0, 0.0]);
        assert_eq!(
            walk(&bf, &[0, 1], &[4.0, 0.0, 2.0], Some(0)),
            vec![(0, 5.0), (2, 6.0), (4, 6.0)]
        );
    }
}
