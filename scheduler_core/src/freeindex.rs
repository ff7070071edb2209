//! Free capacity per node in a max-segment tree, so placement visits only
//! nodes that can hold a request instead of every node of the cluster.

use crate::wire::V3;

pub struct FreeIndex {
    size: usize,
    n: usize,
    /// Per tree node, the per-dimension maximum free capacity below it.
    mx: Vec<V3>,
}

fn max3(a: &V3, b: &V3) -> V3 {
    [a[0].max(b[0]), a[1].max(b[1]), a[2].max(b[2])]
}

fn holds(f: &V3, need: &V3) -> bool {
    f[0] >= need[0] && f[1] >= need[1] && f[2] >= need[2]
}

impl FreeIndex {
    pub fn new(free: impl ExactSizeIterator<Item = V3>) -> FreeIndex {
        let n = free.len();
        let size = n.next_power_of_two().max(1);
        let mut mx = vec![[f64::NEG_INFINITY; 3]; 2 * size];
        for (i, f) in free.enumerate() {
            mx[size + i] = f;
        }
        for i in (1..size).rev() {
            mx[i] = max3(&mx[2 * i], &mx[2 * i + 1]);
        }
        FreeIndex { size, n, mx }
    }

    pub fn set(&mut self, node: usize, free: V3) {
        let mut i = self.size + node;
        self.mx[i] = free;
        while i > 1 {
            i /= 2;
            self.mx[i] = max3(&self.mx[2 * i], &self.mx[2 * i + 1]);
        }
    }

    /// Calls `f` on every node whose free capacity holds `need`, in node order,
    /// until `f` returns true.
    pub fn each_fitting(&self, need: &V3, mut f: impl FnMut(usize) -> bool) {
        if self.n == 0 {
            return;
        }
        let mut stack = vec![1usize];
        while let Some(i) = stack.pop() {
            if !holds(&self.mx[i], need) {
                continue;
            }
            if i >= self.size {
                if f(i - self.size) {
                    return;
                }
            } else {
                stack.push(2 * i + 1);
                stack.push(2 * i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visits_exactly_the_fitting_nodes_in_order() {
        let free = [
            [1.0, 0.0, 8.0],
            [0.0, 0.0, 2.0],
            [4.0, 0.0, 4.0],
            [9.0, 9.0, 0.0],
            [4.0, 1.0, 8.0],
        ];
        let mut ix = FreeIndex::new(free.iter().copied());
        let mut seen = Vec::new();
        ix.each_fitting(&[1.0, 0.0, 4.0], |n| {
            seen.push(n);
            false
        });
        assert_eq!(seen, vec![0, 2, 4]);
        ix.set(0, [0.0, 0.0, 0.0]);
        seen.clear();
        ix.each_fitting(&[1.0, 0.0, 4.0], |n| {
            seen.push(n);
            n == 2
        });
        assert_eq!(seen, vec![2]);
    }
}
