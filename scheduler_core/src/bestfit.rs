//! Nodes ordered by free (GPU, CPU, memory), one ordered set per GPU type, so
//! best-fit placement walks from the tightest node that can hold a request
//! instead of scoring every node with room.

use std::collections::BTreeSet;

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

fn key(n: usize, f: &V3) -> Key {
    (ord_bits(f[GPU]), ord_bits(f[CPU]), ord_bits(f[MEM]), n)
}

pub struct BestFit {
    groups: Vec<BTreeSet<Key>>,
    group_of: Vec<usize>,
    key_of: Vec<Key>,
}

impl BestFit {
    /// `group_of[n]`: the GPU-type group of node n, below `groups`.
    pub fn new(free: &[V3], group_of: Vec<usize>, groups: usize) -> BestFit {
        let mut sets = vec![BTreeSet::new(); groups];
        let key_of: Vec<Key> = free.iter().enumerate().map(|(n, f)| key(n, f)).collect();
        for (n, k) in key_of.iter().enumerate() {
            sets[group_of[n]].insert(*k);
        }
        BestFit {
            groups: sets,
            group_of,
            key_of,
        }
    }

    pub fn set(&mut self, n: usize, free: &V3) {
        let k = key(n, free);
        let set = &mut self.groups[self.group_of[n]];
        set.remove(&self.key_of[n]);
        set.insert(k);
        self.key_of[n] = k;
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
        let mut bf = BestFit::new(&free, vec![0, 1, 0, 1], 2);
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
        let bf = BestFit::new(&free, vec![0; 4], 1);
        assert_eq!(walk(&bf, &[0], &[1.0, 50.0, 1.0]), vec![2, 3]);
        assert!(ord_bits(-1.0) < ord_bits(0.0));
        for x in [-2.5, -0.0, 0.0, 1e-300, 3.0, 1e300] {
            assert_eq!(from_ord_bits(ord_bits(x)).to_bits(), f64::to_bits(x));
        }
        assert!(ord_bits(0.5) < ord_bits(2.0));
    }
}
