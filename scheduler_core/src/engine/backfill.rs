//! Backfill: the earliest start of a job or gang under the plan's reservations (engine/plan.rs holds the plan and its profiles), and the reservations a pass makes.

use super::pass::PassCtx;
use super::placement::{pick, score_cmp, Scored};
use super::plan::*;
use super::*;
impl<'a, 'p> Engine<'a, 'p> {
    pub(super) fn free_at(&self, n: usize, at: f64, plan: &Plan) -> V3 {
        let node = &self.cluster.nodes[n];
        let mut f = node.free;
        for &r in &node.running {
            let job = &self.cluster.jobs[r];
            if job.planned_end <= at {
                for d in 0..3 {
                    f[d] += job.per_node[d];
                }
            }
        }
        plan.each_on(n, |rv| {
            if rv.start <= at && at < rv.end {
                for d in 0..3 {
                    f[d] -= rv.need[d];
                }
            }
        });
        f
    }

    /// Node `n`'s free capacity at its profile's breakpoint `i`: the value
    /// kept there, or `free_at` made and kept when first read.
    #[inline(always)]
    pub(super) fn profile_value(&self, n: usize, p: &mut Profile, i: usize, plan: &Plan) -> V3 {
        *p.free[i].get_or_insert_with(|| self.free_at(n, p.at[i], plan))
    }

    /// Does `need` on node `n` over [from, to) stay clear of every reservation?
    pub(super) fn clear_of(&self, n: usize, from: f64, to: f64, need: &V3, plan: &Plan) -> bool {
        // Under conservative backfill, from the node's profile when it is up to
        // date: its breakpoints hold each reservation start, with `free_at`
        // there (bit for bit), where the loop below sums the node's running
        // jobs and reservations again for each start (issue #17). Not while a
        // search holds the profiles (a gang's search calls this).
        if plan.indexed {
            if let Ok(mut pr) = plan.profiles.try_borrow_mut() {
                if let Some(p) = pr
                    .get_mut(n)
                    .filter(|p| p.live && p.stamp == self.node_stamp[n])
                {
                    let mut i = p.at.partition_point(|&x| x < from);
                    while i < p.at.len() && p.at[i] < to {
                        if p.start[i] && !fits(&self.profile_value(n, p, i, plan), need) {
                            return false;
                        }
                        i += 1;
                    }
                    return true;
                }
            }
        }
        let mut clear = true;
        plan.each_on(n, |rv| {
            if clear && rv.start >= from && rv.start < to {
                clear = fits(&self.free_at(n, rv.start, plan), need);
            }
        });
        clear
    }

    /// Makes `p` node `n`'s `Profile` under `plan`, in its own buffers.
    pub(super) fn fill_profile(&self, n: usize, plan: &Plan, p: &mut Profile) {
        let Profile {
            live,
            stamp,
            at,
            free,
            start,
            fit_memo,
        } = p;
        *fit_memo = [None; 2];
        at.clear();
        at.extend(
            self.cluster.nodes[n]
                .running
                .iter()
                .map(|&r| self.cluster.jobs[r].planned_end),
        );
        plan.each_on(n, |rv| {
            at.push(rv.start);
            at.push(rv.end);
        });
        // Mostly one running job and no reservation yet (a pass's first search
        // fills every profile): already sorted, which a check sees for less
        // than the sort's call (issue #17).
        if !at.is_sorted_by(|a, b| a.total_cmp(b).is_le()) {
            at.sort_unstable_by(f64::total_cmp);
        }
        at.dedup_by(|a, b| a == b);
        start.clear();
        start.resize(at.len(), false);
        plan.each_on(n, |rv| {
            start[at.partition_point(|&x| x < rv.start)] = true;
        });
        free.clear();
        free.resize(at.len(), None);
        *stamp = self.node_stamp[n];
        *live = true;
    }

    /// The times `times` snapped up to the `bf_resolution` grid from `t`, within
    /// the backfill window, ascending and distinct. Lazily: the caller usually
    /// stops at the first few, so a heap beats sorting them all.
    pub(super) fn grid(&self, t: f64, times: &[f64]) -> impl Iterator<Item = f64> {
        let step = self.policy.bf_resolution;
        let last = t + self.policy.bf_window;
        let exact = self.policy.floor_to_grid;
        let mut heap: BinaryHeap<Reverse<u64>> = times
            .iter()
            .map(|&e| {
                if exact {
                    e
                } else {
                    t + ((e - t) / step).ceil() * step
                }
            })
            .filter(|&g| g <= last)
            .map(|g| Reverse(ord_bits(g)))
            .collect();
        let mut prev = None;
        std::iter::from_fn(move || loop {
            let Reverse(k) = heap.pop()?;
            if prev != Some(k) {
                prev = Some(k);
                return Some(from_ord_bits(k));
            }
        })
    }

    /// Earliest start at or after `t` on the resolution grid within the
    /// backfill window, given running jobs' planned ends and reservations.
    pub(super) fn earliest(&self, j: usize, t: f64, res: &Plan) -> Option<(f64, Vec<usize>)> {
        if res.indexed {
            return self.earliest_profiled(j, t, res);
        }
        let job = &self.cluster.jobs[j];
        let need = job.per_node;
        let dur = job.limit.unwrap_or(INF);
        let eligible: Vec<usize> = (0..self.cluster.nodes.len())
            .filter(|&n| self.cluster.node_eligible(j, n))
            .collect();
        let mut times: Vec<f64> = Vec::with_capacity(eligible.len() + res.res.len());
        self.change_times(&eligible, t, res, &mut times);
        // Busy first: order by what is free now in the job's main resource, then by fit at
        // the reservation's start, so the reservation leaves idle capacity to backfill.
        let unit = if need[GPU] > 0.0 { GPU } else { CPU };
        for tau in self.grid(t, &times) {
            let mut cands: Vec<Scored> = Vec::new();
            for &n in &eligible {
                let f = self.free_at(n, tau, res);
                if fits(&f, &need)
                    && self.clear_of(n, tau, tau + dur, &need, res)
                    && self.cluster.resv_open(j, n, tau, tau + dur)
                {
                    let s = self.score(&f, &need);
                    let s = if self.policy.reserve_busy_first {
                        (self.cluster.nodes[n].free[unit], s.0, s.1)
                    } else {
                        s
                    };
                    cands.push((s, n));
                }
            }
            if let Some(v) = pick(cands, job.nodes_wanted) {
                return Some((tau, v));
            }
        }
        None
    }

    /// The times after `t` at which room can change on `nodes`: the planned ends
    /// of the jobs running there and the ends of the plan's reservations.
    /// A time already listed last is not listed again: a job running on many
    /// nodes lists its end once per run of them, not once per node, so the
    /// grid made from the times has fewer to snap and sort (the same grid).
    pub(super) fn change_times(&self, nodes: &[usize], t: f64, res: &Plan, times: &mut Vec<f64>) {
        for &n in nodes {
            for &r in &self.cluster.nodes[n].running {
                let e = self.cluster.jobs[r].planned_end;
                if e > t && e.is_finite() && times.last() != Some(&e) {
                    times.push(e);
                }
            }
        }
        for rv in &res.res {
            if rv.end > t && rv.end.is_finite() {
                times.push(rv.end);
            }
        }
        self.resv_ends(nodes.iter().copied(), t, times);
    }

    /// The ends after `t` of the advanced reservations on `nodes`: a job kept
    /// off a node by one may take it then.
    pub(super) fn resv_ends(
        &self,
        nodes: impl IntoIterator<Item = usize>,
        t: f64,
        times: &mut Vec<f64>,
    ) {
        if self.cluster.has_resv {
            for n in nodes {
                for &(_, e, _) in &self.cluster.node_resv[n] {
                    if e > t && e.is_finite() {
                        times.push(e);
                    }
                }
            }
        }
    }

    /// `earliest` under conservative backfill, reading each eligible node's
    /// `Profile` instead of summing its reservations again at every grid time;
    /// the same candidates, scores and choice (issue #17).
    // Out of line: inlined into `reserve`, it made EASY's path through there
    // (which never takes it) a few percent slower.
    #[inline(never)]
    pub(super) fn earliest_profiled(
        &self,
        j: usize,
        t: f64,
        res: &Plan,
    ) -> Option<(f64, Vec<usize>)> {
        let job = &self.cluster.jobs[j];
        let need = job.per_node;
        let nn = job.nodes_wanted;
        let dur = job.limit.unwrap_or(INF);
        let mut sc = res.scratch.borrow_mut();
        let Scratch {
            eligible,
            eligible_for,
            times,
            cur,
            open,
            parked_head,
            parked_next,
            cands,
            chosen,
            grid,
            grid_for,
            checked,
            bounds,
        } = &mut *sc;
        // As `earliest` makes them, in the plan's buffers. Which nodes a job may
        // use depends on its GPU type, partition and constraint alone (and on
        // the nodes, which a pass does not change), so the last search's list
        // serves a job asking the same: most of a deep queue does.
        let same = eligible_for.is_some_and(|p| {
            let prev = &self.cluster.jobs[p];
            (prev.gpu_type, prev.partition, prev.constraint, prev.resv)
                == (job.gpu_type, job.partition, job.constraint, job.resv)
        });
        if !same {
            eligible.clear();
            eligible.extend(
                (0..self.cluster.nodes.len()).filter(|&n| self.cluster.node_eligible(j, n)),
            );
            *eligible_for = Some(j);
            *grid_for = None;
            *checked = None;
        }
        let unit = if need[GPU] > 0.0 { GPU } else { CPU };
        let mut pr = res.profiles.borrow_mut();
        if pr.len() < self.cluster.nodes.len() {
            pr.resize_with(self.cluster.nodes.len(), Profile::default);
        }
        // The eligible nodes' stamps, summed in the same sweep (for `grid_for`),
        // unless no node changed since the last search found them up to date
        // (reservations since keep them so): a deep queue's searches come one
        // after another with nothing started between (issue #17).
        let stamps = match *checked {
            Some((epoch, sum)) if epoch == self.node_epoch => sum,
            _ => {
                let mut stamps = 0u64;
                for &n in eligible.iter() {
                    let stamp = self.node_stamp[n];
                    stamps = stamps.wrapping_add(stamp);
                    let p = &mut pr[n];
                    if !p.live || p.stamp != stamp {
                        self.fill_profile(n, res, p);
                    }
                }
                *checked = Some((self.node_epoch, stamps));
                stamps
            }
        };
        let value = |p: &mut Profile, n: usize, i: usize| self.profile_value(n, p, i, res);
        // Per eligible node, two cursors into its profile, which only move forward
        // as the grid times ascend: the first breakpoint at or after `tau`, and
        // the first reservation start from there at which `need` does not fit.
        cur.clear();
        cur.resize(eligible.len(), (0, 0));
        // A node found unable to take the job at a grid time often cannot until
        // a later breakpoint (see `fits_from`); it is parked until then, so that
        // the grid times between touch only the nodes that may take the job
        // (most are blocked when queues are deep: issue #17). Every node starts
        // open. The candidates then come in another order than the nodes', which
        // `pick` does not see: it keeps the `nn` least by `score_cmp`, a total
        // order (ties go to the node index), whatever order they come in.
        open.clear();
        open.extend(0..eligible.len());
        parked_next.resize(eligible.len(), NONE);
        // The first breakpoint from `k` at which `need` fits (its free capacity
        // is short at every one between), or INF: a node short at `k` is short
        // at every grid time up to there. Reservations come back to back on a
        // node, so one look ahead skips the whole run of them (issue #17).
        let need_bits = need.map(f64::to_bits);
        let fits_from = |p: &mut Profile, n: usize, k: usize, slot: usize| -> f64 {
            let found = p.first_fit(slot, k, (&need, need_bits), |p, i| value(p, n, i));
            p.at.get(found).copied().unwrap_or(INF)
        };
        // One buffer of candidates for every grid time: a pick needs `nn` of
        // them, so it is made only when there are enough (once, at the end).
        // `grid(t, times)`, in the plan's buffer, sorted whole rather than
        // popped from a heap: a search reads about half of its grid times, and
        // one sort of the keys costs less than that many pops (issue #17).
        let (step, last) = (self.policy.bf_resolution, t + self.policy.bf_window);
        let exact = self.policy.floor_to_grid;
        let snap = |e: f64| {
            Some(if exact {
                e
            } else {
                t + ((e - t) / step).ceil() * step
            })
            .filter(|&g| g <= last)
        };
        // The grid of the previous search of the pass serves this one when made
        // from the same times: the same start and eligible nodes (`grid_for` is
        // forgotten when those change), no job started or ended on them since
        // (their stamps only grow, so their sum is the same only then), and the
        // reservations made since, whose ends are added in place. That is most
        // searches of a pass: its reservations are made one after another.
        match *grid_for {
            Some((tb, st, made)) if tb == t.to_bits() && st == stamps && made <= res.res.len() => {
                for rv in &res.res[made..] {
                    if rv.end > t && rv.end.is_finite() {
                        if let Some(g) = snap(rv.end) {
                            let k = ord_bits(g);
                            if let Err(i) = grid.binary_search(&k) {
                                grid.insert(i, k);
                            }
                        }
                    }
                }
            }
            _ => {
                bounds.clear();
                times.clear();
                self.change_times(eligible, t, res, times);
                grid.clear();
                grid.extend(times.iter().filter_map(|&e| snap(e)).map(ord_bits));
                grid.sort_unstable();
                grid.dedup();
            }
        }
        *grid_for = Some((t.to_bits(), stamps, res.res.len()));
        // A search on this grid for a job asking no more (as many nodes or
        // fewer, each needing no more, for no longer) found nothing before its
        // time, and this job cannot start before it either: nothing has been
        // freed since (no job started or ended on these nodes, and reservations
        // only take room), and the grid times added since (ends of reservations
        // made since, none before the first grid time) lie between times that
        // search read, where room only shrinks. So the search starts there, or
        // is over if that search found nothing (issue #17: a pass's searches
        // for jobs of one shape read the same short grid times again).
        let lb = bounds
            .iter()
            .filter(|b| b.0 <= nn && b.1 <= dur && (0..3).all(|d| b.2[d] <= need[d]))
            .map(|b| b.3)
            .max()
            .unwrap_or(0);
        if lb == u64::MAX {
            return None;
        }
        parked_head.clear();
        parked_head.resize(grid.len(), NONE);
        let first = grid.partition_point(|&g| g < lb);
        let mut found = None;
        for (gi, &k) in grid.iter().enumerate().skip(first) {
            let tau = from_ord_bits(k);
            let mut x = parked_head[gi];
            while x != NONE {
                open.push(x as usize);
                x = parked_next[x as usize];
            }
            // Fewer nodes than the job needs can take it here: nothing to read.
            // (A node's cursors stay valid for any later grid time.)
            if open.len() < nn {
                continue;
            }
            cands.clear();
            let to = tau + dur;
            // `open` is compacted in place: `kept` nodes stay open.
            let mut kept = 0;
            for r in 0..open.len() {
                let i = open[r];
                if cands.len() + open.len() - r < nn {
                    // The rest cannot make up the number: they stay open, unread.
                    open.copy_within(r.., kept);
                    kept += open.len() - r;
                    break;
                }
                let n = eligible[i];
                let (p, c) = (&mut pr[n], &mut cur[i]);
                // Usually a step or two; after a park, maybe many: then halving.
                let mut steps = 0;
                while c.0 < p.at.len() && p.at[c.0] < tau {
                    c.0 += 1;
                    steps += 1;
                    if steps == 4 {
                        c.0 += p.at[c.0..].partition_point(|&x| x < tau);
                        break;
                    }
                }
                // free_at(n, tau), the same until the next breakpoint after tau.
                let (f, next) = if c.0 < p.at.len() && p.at[c.0] == tau {
                    (value(p, n, c.0), c.0 + 1)
                } else if c.0 > 0 {
                    (value(p, n, c.0 - 1), c.0)
                } else {
                    (self.cluster.nodes[n].free, c.0)
                };
                // The grid time from which the node may take the job again, if
                // it cannot now.
                let mut until = None;
                if !fits(&f, &need) {
                    until = Some(fits_from(p, n, next, 0));
                } else {
                    // clear_of(n, tau, to): no reservation start in [tau, to) at
                    // which `need` does not fit. Breakpoints before `c.1` (and
                    // from `c.0`) hold no such start; `to` only grows with `tau`.
                    c.1 = c.1.max(c.0);
                    while c.1 < p.at.len() && p.at[c.1] < to {
                        if p.start[c.1] && !fits(&value(p, n, c.1), &need) {
                            // Blocked by this start while a window holds it (up
                            // to it), and after it while short: both end at the
                            // first breakpoint after it where `need` fits.
                            until = Some(fits_from(p, n, c.1 + 1, 1));
                            break;
                        }
                        c.1 += 1;
                    }
                }
                if until.is_none() && self.cluster.has_resv {
                    // An advanced reservation keeps the job off until it ends.
                    until = self.cluster.resv_block(j, n, tau, to);
                }
                match until {
                    None => {
                        let s = self.score(&f, &need);
                        let s = if self.policy.reserve_busy_first {
                            (self.cluster.nodes[n].free[unit], s.0, s.1)
                        } else {
                            s
                        };
                        cands.push((s, i));
                        open[kept] = i;
                        kept += 1;
                    }
                    // Grid times are finite: a node blocked for good is dropped.
                    Some(u) if u < INF => {
                        // Parked until the first grid time at or after `u` (which
                        // is past `tau`); past the last, for good.
                        let key = ord_bits(u);
                        let b = gi + 1 + grid[gi + 1..].partition_point(|&g| g < key);
                        if b < grid.len() {
                            parked_next[i] = parked_head[b];
                            parked_head[b] = i as u32;
                        }
                    }
                    Some(_) => {}
                }
            }
            open.truncate(kept);
            if cands.len() >= nn {
                // `pick`, on eligible indices: the `nn` least by `score_cmp`,
                // then in node order. When they are a good share of the
                // eligible nodes, marked and read off in order instead of
                // sorted: the sort was a thirtieth of the run (issue #17).
                if nn > 0 && nn < cands.len() {
                    cands.select_nth_unstable_by(nn - 1, score_cmp);
                }
                let best = &cands[..nn];
                let v: Vec<usize> = if eligible.len() <= 8 * nn {
                    chosen.clear();
                    chosen.resize(eligible.len(), false);
                    for c in best {
                        chosen[c.1] = true;
                    }
                    (0..eligible.len())
                        .filter(|&i| chosen[i])
                        .map(|i| eligible[i])
                        .collect()
                } else {
                    let mut v: Vec<usize> = best.iter().map(|c| eligible[c.1]).collect();
                    v.sort_unstable();
                    v
                };
                found = Some((tau, v));
                break;
            }
        }
        // Kept only if it tells a later search more than the bounds it was
        // given (a run of jobs of one shape keeps one), and at most
        // `MAX_BOUNDS`: each search reads them all, and a deep queue whose
        // searches find nothing would otherwise make that quadratic.
        let key = found.as_ref().map_or(u64::MAX, |f| ord_bits(f.0));
        if key > lb && bounds.len() < MAX_BOUNDS {
            bounds.push((nn, dur, need, key));
        }
        found
    }

    /// Earliest grid time within the backfill window at which every pending
    /// member of a gang fits at once for its whole limit, with each member's nodes.
    pub(super) fn earliest_gang(
        &self,
        pend: &[usize],
        t: f64,
        res: &Plan,
    ) -> Option<(f64, Vec<(usize, Vec<usize>)>)> {
        let n_nodes = self.cluster.nodes.len();
        let mut times: Vec<f64> = Vec::new();
        for &m in pend {
            for n in (0..n_nodes).filter(|&n| self.cluster.node_eligible(m, n)) {
                for &r in &self.cluster.nodes[n].running {
                    let e = self.cluster.jobs[r].planned_end;
                    if e > t && e.is_finite() {
                        times.push(e);
                    }
                }
            }
        }
        for rv in &res.res {
            if rv.end > t && rv.end.is_finite() {
                times.push(rv.end);
            }
        }
        self.resv_ends(0..n_nodes, t, &mut times);
        'times: for tau in self.grid(t, &times) {
            let mut free: Vec<V3> = (0..n_nodes).map(|n| self.free_at(n, tau, res)).collect();
            let mut plan = Vec::with_capacity(pend.len());
            for &m in pend {
                let job = &self.cluster.jobs[m];
                let need = job.per_node;
                let dur = job.limit.unwrap_or(INF);
                let cands: Vec<Scored> = (0..n_nodes)
                    .filter(|&n| {
                        self.cluster.node_eligible(m, n)
                            && fits(&free[n], &need)
                            && self.clear_of(n, tau, tau + dur, &need, res)
                            && self.cluster.resv_open(m, n, tau, tau + dur)
                    })
                    .map(|n| (self.score(&free[n], &need), n))
                    .collect();
                let Some(nodes) = pick(cands, job.nodes_wanted) else {
                    continue 'times;
                };
                for &n in &nodes {
                    for d in 0..3 {
                        free[n][d] -= need[d];
                    }
                }
                plan.push((m, nodes));
            }
            return Some((tau, plan));
        }
        None
    }

    /// What a reservation of job `j` holds on each of its nodes.
    pub(super) fn reserved_need(&self, j: usize) -> V3 {
        if self.policy.reserve_whole_nodes {
            // More than any node holds, and finite: sums of many stay ordered, never NaN.
            [WHOLE_NODE; 3]
        } else {
            self.cluster.jobs[j].per_node
        }
    }

    /// The span a reservation holds for a job that fits from `at` for `limit`:
    /// exactly that, or under `floor_to_grid` both ends rounded down to the
    /// `bf_resolution` grid (of absolute time, as the scheduler divides its clock),
    /// never before the pass at `t`: the scheduler's map of the future begins there.
    pub(super) fn reserved_span(&self, t: f64, at: f64, limit: Option<f64>) -> (f64, f64) {
        let end = at + limit.unwrap_or(INF);
        let step = self.policy.bf_resolution;
        if self.policy.floor_to_grid && step > 0.0 {
            let floor = |x: f64| {
                if x.is_finite() {
                    (x / step).floor() * step
                } else {
                    x
                }
            };
            (floor(at).max(t), floor(end).max(t))
        } else {
            (at, end)
        }
    }

    /// Job `j`'s reservation, at the earliest time it fits beside the earlier
    /// ones, while fewer than `max_res` are held; true if one was made.
    pub(super) fn reserve(&mut self, j: usize, t: f64, cx: &mut PassCtx) -> bool {
        if cx.res_holder.len() >= cx.max_res {
            return false;
        }
        let Some((at, nodes)) = self.earliest(j, t, &cx.plan) else {
            return false;
        };
        let need = self.reserved_need(j);
        let (start, end) = self.reserved_span(t, at, self.cluster.jobs[j].limit);
        cx.plan.push(Reservation {
            start,
            end,
            nodes,
            need,
        });
        cx.res_holder.push(j);
        true
    }

    /// Makes up to `count` of the deferred reservation attempts, in queue order.
    pub(super) fn reserve_deferred(&mut self, t: f64, cx: &mut PassCtx, count: usize) {
        for _ in 0..count {
            let Some(d) = cx.deferred.pop_front() else {
                return;
            };
            self.reserve(d, t, cx);
            if cx.res_holder.len() >= cx.max_res {
                // No further attempt can make one.
                cx.deferred.clear();
            }
        }
    }

    /// `place_now(j, <every reservation of the pass so far>)`, making deferred
    /// reservations only while the placement still stands: more reservations
    /// only take candidate nodes away (each adds checks and lowers the free
    /// capacity they test), so once the job is blocked it stays blocked, and the
    /// rest may wait. A reservation that holds none of the chosen nodes leaves
    /// them clear and the others no better, so best fit and spread (the best
    /// `nn` candidates) choose the same nodes without placing again; consecutive
    /// runs depend on every candidate, so there it places again.
    pub(super) fn place_planned(
        &mut self,
        j: usize,
        t: f64,
        end: f64,
        cx: &mut PassCtx,
    ) -> Option<Vec<usize>> {
        let mut placed = self.place_now(j, &cx.plan, None, end);
        while let Some(nodes) = &placed {
            if cx.deferred.is_empty() {
                break;
            }
            let before = cx.plan.res.len();
            self.reserve_deferred(t, cx, 1);
            let touched = cx.plan.res[before..]
                .iter()
                .any(|r| r.nodes.iter().any(|n| nodes.contains(n)));
            if touched || self.policy.placement == Placement::Consecutive {
                placed = self.place_now(j, &cx.plan, None, end);
            }
        }
        placed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `free_at` of a node with `base` free now and no running jobs: the
    /// reservations covering `at`, subtracted in the order they were made.
    fn naive(base: V3, holds: &[(f64, f64, V3)], at: f64) -> V3 {
        let mut f = base;
        for (s, e, need) in holds {
            if *s <= at && at < *e {
                for d in 0..3 {
                    f[d] -= need[d];
                }
            }
        }
        f
    }

    #[test]
    fn first_fit_remembered_answers_are_those_of_a_walk() {
        // Free CPUs per breakpoint; needs of 1 and 2 CPUs asked from every index in
        // a scrambled order, on both slots, with adds in between that change values.
        let mut p = Profile::default();
        let mut holds: Vec<(f64, f64, V3)> = Vec::new();
        let base = [3.0, 100.0, 0.0];
        let reserve = [
            (0.0, 10.0, 2.0),
            (10.0, 20.0, 3.0),
            (20.0, 25.0, 1.0),
            (25.0, 40.0, 3.0),
            (30.0, 50.0, 0.0),
            (60.0, 70.0, 2.0),
            (5.0, 33.0, 1.0),
        ];
        for (round, &(s, e, c)) in reserve.iter().enumerate() {
            let need = [c, 0.0, 0.0];
            holds.push((s, e, need));
            p.add(s, e, &need);
            for q in 0..3 * p.at.len() {
                let k = (q * 7 + round) % (p.at.len() + 1);
                let want_cpus = [1.0, 2.0, 3.0][q % 3];
                let need = [want_cpus, 0.0, 0.0];
                let slot = q % 2;
                let bits = need.map(f64::to_bits);
                let got = p.first_fit(slot, k, (&need, bits), |p, i| naive(base, &holds, p.at[i]));
                let walk = (k..p.at.len())
                    .find(|&i| fits(&naive(base, &holds, p.at[i]), &need))
                    .unwrap_or(p.at.len());
                assert_eq!(got, walk, "round {round}, from {k}, need {want_cpus}");
            }
        }
    }

    #[test]
    fn point_finds_a_time_near_the_end_and_far_from_it() {
        let mut p = Profile::default();
        for k in 0..20 {
            p.point(10.0 * f64::from(k));
        }
        // Before the first, on one, between two, within the last eight and
        // further back (where the scan gives way to a search), after the last.
        for x in [
            -5.0, 0.0, 5.0, 15.0, 100.0, 105.0, 185.0, 190.0, 195.0, 250.0,
        ] {
            let want = p.at.partition_point(|&y| y < x);
            let i = p.point(x);
            assert_eq!(i, want, "at {x}");
            assert_eq!(p.at[i], x);
            assert!(p.at.windows(2).all(|w| w[0] < w[1]), "{:?}", p.at);
            assert_eq!((p.free.len(), p.start.len()), (p.at.len(), p.at.len()));
        }
    }

    #[test]
    fn profile_add_keeps_each_known_value_that_of_free_at_bit_for_bit() {
        let base = [7.3, 1000.1, 3.0];
        // Fractional needs, so that a value made in another order of sums
        // would differ in its last bits; reservations after the last
        // breakpoint, before the first, inside, across, and on breakpoints.
        let adds: [(f64, f64, V3); 8] = [
            (10.0, 20.0, [0.1, 0.7, 0.0]),
            (20.0, 30.0, [1.3, 0.3, 1.0]),
            (15.0, 25.0, [0.2, 0.1, 0.0]),
            (5.0, 12.0, [0.7, 100.3, 0.0]),
            (2.0, 3.0, [0.3, 0.3, 1.0]),
            (12.0, 15.0, [0.9, 0.1, 0.0]),
            (40.0, INF, [1.1, 2.2, 0.0]),
            (18.0, 50.0, [0.1, 0.1, 1.0]),
        ];
        let mut holds: Vec<(f64, f64, V3)> = Vec::new();
        let mut p = Profile::default();
        for (s, e, need) in adds {
            holds.push((s, e, need));
            p.add(s, e, &need);
            // Values read now, as `earliest` reads them: later adds must keep
            // them right.
            for i in 0..p.at.len() {
                if p.free[i].is_none() {
                    p.free[i] = Some(naive(base, &holds, p.at[i]));
                }
            }
            assert!(p.at.windows(2).all(|w| w[0] < w[1]), "{:?}", p.at);
            for (i, &x) in p.at.iter().enumerate() {
                let want = naive(base, &holds, x);
                let got = p.free[i].unwrap();
                assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "at {x}");
                assert_eq!(p.start[i], holds.iter().any(|h| h.0 == x), "at {x}");
            }
        }
    }
}
