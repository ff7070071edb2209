//! The backfill plan: reservations, each node's holds under them, and the profiles of free capacity over time that `earliest` reads. Data and its upkeep only; the searches that fill it are in `backfill`, which the pass calls (kept apart so that `pass` and `backfill` do not import each other).

use super::placement::Scored;
use super::*;

/// What a reservation that holds its nodes whole takes of each: more than any
/// node has in any resource.
pub(super) const WHOLE_NODE: f64 = 1e30;

pub(super) struct Reservation {
    pub(super) start: f64,
    pub(super) end: f64,
    pub(super) nodes: Vec<usize>,
    pub(super) need: V3,
}

/// A reservation as a node holding it sees it: what `free_at`, `clear_of` and
/// `fill_profile` read. Each node keeps copies, one after another, so that
/// `free_at` reads them in one sweep instead of fetching each reservation
/// (with its node list) from wherever it lies (issue #17).
#[derive(Clone, Copy)]
pub(super) struct Hold {
    pub(super) start: f64,
    pub(super) end: f64,
    pub(super) need: V3,
}

impl From<&Reservation> for Hold {
    fn from(r: &Reservation) -> Self {
        Hold {
            start: r.start,
            end: r.end,
            need: r.need,
        }
    }
}

/// A pass's reservations, with each node's listed in the order they were made.
/// `free_at` and `clear_of` read only the node's own reservations, instead of
/// scanning every reservation's node list (conservative backfill keeps up to
/// `bf_max_job_test` of them, and each `earliest` asks every node at every grid
/// time: issue #17). The same reservations in the same order are summed, so the
/// floating-point results are those of the full scan.
///
/// Only conservative backfill (`indexed`) keeps the per-node lists and profiles:
/// EASY holds at most one reservation, where they would cost `predict` their
/// upkeep every pass and save nothing, so there `on` scans the reservations as
/// before.
#[derive(Default)]
pub(super) struct Plan {
    pub(super) res: Vec<Reservation>,
    pub(super) indexed: bool,
    /// Per node, the reservations holding it, in the order they were made.
    pub(super) on_node: Vec<Vec<Hold>>,
    /// Per node, its `Profile` under these reservations, made by `earliest` when
    /// first needed (`live`) and brought up to date as reservations are added.
    /// A pass's plan is `reset` for the next, its buffers kept: growing them anew
    /// each pass was most of conservative backfill's allocation cost (issue #17).
    pub(super) profiles: std::cell::RefCell<Vec<Profile>>,
    /// `earliest_profiled`'s buffers, kept from one search to the next.
    pub(super) scratch: std::cell::RefCell<Scratch>,
}

/// The end of a list of parked nodes (`Scratch::parked_head`).
pub(super) const NONE: u32 = u32::MAX;

/// The most `Scratch::bounds` kept for one grid.
pub(super) const MAX_BOUNDS: usize = 64;

/// A search's eligible nodes (and the job they were listed for: `eligible_for`)
/// and the times its grid is made from; per eligible
/// node, its profile cursors; the eligible nodes (as indices into `eligible`)
/// that may take the job at the grid time (`open`) and those that cannot until
/// a later one (`parked_head`/`parked_next`); the candidates at a grid
/// time; the grid times still to visit.
#[derive(Default)]
pub(super) struct Scratch {
    pub(super) eligible: Vec<usize>,
    pub(super) eligible_for: Option<usize>,
    pub(super) times: Vec<f64>,
    pub(super) cur: Vec<(usize, usize)>,
    pub(super) open: Vec<usize>,
    /// The nodes parked until each grid time, as lists threaded through
    /// `parked_next` (`NONE` ends one): a node is parked and reopened in O(1),
    /// where a heap ordered by time spent a tenth of the search sifting (issue
    /// #17). The order in which nodes reopen does not matter (see `open`).
    pub(super) parked_head: Vec<u32>,
    pub(super) parked_next: Vec<u32>,
    /// Candidates at a grid time, by index into `eligible` (ascending as the
    /// node numbers are, so ties fall the same way), and which `nn` were chosen.
    pub(super) cands: Vec<Scored>,
    pub(super) chosen: Vec<bool>,
    pub(super) grid: Vec<u64>,
    /// What `grid` was made for: the search's start, the sum of its eligible
    /// nodes' `Engine::node_stamp`s, and how many of the plan's reservations
    /// it holds the ends of (see `earliest_profiled`).
    pub(super) grid_for: Option<(u64, u64, usize)>,
    /// The `Engine::node_epoch` at which the eligible nodes' profiles were
    /// last found up to date, and their stamps' sum then: until a node
    /// changes, the next search with these nodes need not look again.
    pub(super) checked: Option<(u64, u64)>,
    /// Searches made on `grid` as it is now (those that told more than the
    /// bounds before them, up to `MAX_BOUNDS`): per search, the job's node
    /// count, limit and per-node need, and the grid time it found
    /// (`ord_bits`), or `u64::MAX` if none. See `earliest_profiled`.
    pub(super) bounds: Vec<(usize, f64, V3, u64)>,
}

/// A node's free capacity over time under a plan, as a step function: `free[i]`
/// is `free_at(n, t)` for `at[i] <= t < at[i + 1]` (before `at[0]`, the node's
/// free capacity now). Its breakpoints are every time a condition of `free_at`
/// can change (its running jobs' planned ends, its reservations' starts and
/// ends), so between two the very same sums are made, and each value is
/// computed by `free_at` itself, when first read, or made by `add` with the
/// very operations `free_at` would make: a lookup gives `free_at`'s result bit
/// for bit. `earliest` reads it at every grid time, and `clear_of`'s
/// checks at reservation starts, instead of summing again per node and time.
#[derive(Default)]
pub(super) struct Profile {
    /// Made under the current plan (else to be made when read).
    pub(super) live: bool,
    /// `Engine::node_stamp` of the node when made: a start or end on it since
    /// makes the profile stale.
    pub(super) stamp: u64,
    pub(super) at: Vec<f64>,
    pub(super) free: Vec<Option<V3>>,
    /// A reservation on the node starts at `at[i]` (what `clear_of` checks).
    pub(super) start: Vec<bool>,
    /// `first_fit`'s last answer per slot, until the profile changes.
    pub(super) fit_memo: [Option<FitMemo>; 2],
}

/// `need` (as bits) is short at every breakpoint in [lo, at) and fits at `at`
/// (or `at` is past the last: it fits at none).
#[derive(Clone, Copy)]
pub(super) struct FitMemo {
    pub(super) need: [u64; 3],
    pub(super) lo: usize,
    pub(super) at: usize,
}

impl Profile {
    /// The first breakpoint from `k` at which `need` (and its bits) fits (`value` gives a
    /// breakpoint's free capacity), or `at.len()` if none. Remembered in `fit_memo`
    /// (one per asking `slot`, as two look aheads of a search alternate): a question
    /// from inside the last answer's short run has its answer, and one from before
    /// it walks only up to it. Searches of a pass mostly ask the same need of the
    /// nodes the search before them did not reserve, and walked the same
    /// breakpoints again (issue #17).
    pub(super) fn first_fit(
        &mut self,
        slot: usize,
        k: usize,
        (need, bits): (&V3, [u64; 3]),
        mut value: impl FnMut(&mut Profile, usize) -> V3,
    ) -> usize {
        // Read in place: a copy of the memo, read back at once in other widths,
        // stalled on store forwarding (issue #17).
        let memo = match &self.fit_memo[slot] {
            Some(m) if m.need == bits && k <= m.at => {
                if m.lo <= k {
                    return m.at;
                }
                Some((m.lo, m.at))
            }
            _ => None,
        };
        let stop = memo.map_or(self.at.len(), |m| m.0);
        let mut i = k;
        while i < stop && !fits(&value(self, i), need) {
            i += 1;
        }
        let found = if i < stop {
            i
        } else {
            memo.map_or(stop, |m| m.1)
        };
        self.fit_memo[slot] = Some(FitMemo {
            need: bits,
            lo: k,
            at: found,
        });
        found
    }

    /// A reservation over [start, end) needing `need` was added on the node
    /// (last in its order). `free_at` elsewhere makes the same sums as before
    /// (the condition of the new reservation is false there); in [start, end)
    /// it makes them and then, last, subtracts `need`: so a known value there
    /// becomes itself minus `need`, bit for bit, instead of being forgotten and
    /// summed again over all the node's reservations when read (issue #17).
    pub(super) fn add(&mut self, start: f64, end: f64, need: &V3) {
        self.fit_memo = [None; 2];
        let i = self.point(start);
        let k = self.point(end);
        // `end` went in after `start`, leaving its place, unless it is earlier.
        let i = if end >= start {
            i
        } else {
            self.at.partition_point(|&y| y < start)
        };
        self.start[i] = true;
        // A plain slice loop: `iter_mut().take(k).skip(i).flatten()` compiled to
        // several times the instructions of the sums (issue #17).
        if i < k {
            for f in self.free[i..k].iter_mut().flatten() {
                for d in 0..3 {
                    f[d] -= need[d];
                }
            }
        }
    }

    /// Makes `x` a breakpoint if it is not one; its index. It splits a step, so
    /// it takes that step's value (the same sums: no condition of `free_at`
    /// changes at `x`), or none before the first breakpoint (`free_at` is the
    /// node's free capacity now there, which the profile does not hold).
    // Inlined into `add`, its one caller: the call's own cost was a fifth of it.
    #[inline(always)]
    pub(super) fn point(&mut self, x: f64) -> usize {
        // Reservations mostly come after the earlier ones, often back to back:
        // at or past the last breakpoint, without a search.
        let i = match self.at.last() {
            Some(&l) if l < x => self.at.len(),
            Some(&l) if l == x => self.at.len() - 1,
            // Else mostly a few breakpoints from the end: scanned back, where
            // a binary search waited on each of its loads in turn.
            None => 0,
            _ => {
                let mut i = self.at.len() - 1;
                let stop = i.saturating_sub(8);
                while i > stop && self.at[i - 1] >= x {
                    i -= 1;
                }
                if i > 0 && self.at[i - 1] >= x {
                    self.at[..i].partition_point(|&y| y < x)
                } else {
                    i
                }
            }
        };
        if i == self.at.len() {
            // Past the last breakpoint (most points): appended, not inserted,
            // which would move nothing but still call the copy three times.
            let v = self.free.last().copied().flatten();
            self.at.push(x);
            self.free.push(v);
            self.start.push(false);
        } else if self.at[i] != x {
            let v = if i > 0 { self.free[i - 1] } else { None };
            self.at.insert(i, x);
            self.free.insert(i, v);
            self.start.insert(i, false);
        }
        i
    }
}

impl Plan {
    pub(super) fn new(indexed: bool) -> Self {
        Plan {
            indexed,
            ..Plan::default()
        }
    }

    pub(super) fn push(&mut self, r: Reservation) {
        if !self.indexed {
            self.res.push(r);
            return;
        }
        // A reservation's nodes are `pick`'s, each listed once, so each node
        // holds it once (as `nodes.contains(n)` counted it).
        debug_assert!(r
            .nodes
            .iter()
            .enumerate()
            .all(|(i, n)| !r.nodes[..i].contains(n)));
        for &n in &r.nodes {
            if self.on_node.len() <= n {
                self.on_node.resize_with(n + 1, Vec::new);
            }
            self.on_node[n].push(Hold::from(&r));
            if let Some(p) = self.profiles.get_mut().get_mut(n).filter(|p| p.live) {
                p.add(r.start, r.end, &r.need);
            }
        }
        self.res.push(r);
    }

    /// The reservations holding node `n`, in the order they were made: from its
    /// list when `indexed`, else by scanning them all. The two are separate
    /// loops, not one chained iterator: `free_at` is the hot path of
    /// conservative backfill, and the chain's checks per item cost as much
    /// as the sums (issue #17).
    pub(super) fn each_on(&self, n: usize, mut f: impl FnMut(&Hold)) {
        if self.indexed {
            for h in self.on_node.get(n).map_or(&[][..], |v| &v[..]) {
                f(h);
            }
        } else {
            for rv in self.res.iter().filter(|rv| rv.nodes.contains(&n)) {
                f(&Hold::from(rv));
            }
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.res.is_empty()
    }

    /// No reservations, as `Plan::new(self.indexed)`, keeping the buffers.
    pub(super) fn reset(&mut self) {
        self.res.clear();
        self.on_node.iter_mut().for_each(Vec::clear);
        let sc = self.scratch.get_mut();
        sc.eligible_for = None;
        sc.grid_for = None;
        sc.checked = None;
        self.profiles
            .get_mut()
            .iter_mut()
            .for_each(|p| p.live = false);
    }
}
