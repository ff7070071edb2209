//! Job start and stop: usage accounting and the running-job bookkeeping when a job starts, ends or is released.

use super::*;

impl<'a, 'p> Engine<'a, 'p> {
    pub(super) fn account(&mut self, j: usize, sign: f64) {
        self.usage_version += 1;
        let job = &self.cluster.jobs[j];
        let (t, q, u, tot) = (job.team, job.qos, job.user, job.total);
        if job.limit_profile != NO_PROFILE {
            self.cluster
                .limits
                .account(job.limit_profile, &tot, job.limit_gpu_key, sign);
        }
        for (d, x) in tot.iter().enumerate() {
            self.usage[t][d] += sign * x;
        }
        if let Some(k) = job.quota_dim {
            self.usage[t][k] += sign * tot[GPU];
        }
        // Per-user totals are kept only where a per-user limit reads them.
        let qq = &self.cluster.qos[q];
        if qq.max_tres_user.is_some() || qq.max_jobs_user.is_some() {
            let e = self.user_qos.entry((q, u)).or_insert(([0.0; 3], 0));
            for (d, x) in tot.iter().enumerate() {
                e.0[d] += sign * x;
            }
            e.1 += sign as i64;
        }
        if self.cluster.teams[t].per_user.is_some() {
            let e = self.user_team.entry((t, u)).or_insert([0.0; 3]);
            for (d, x) in tot.iter().enumerate() {
                e[d] += sign * x;
            }
        }
    }

    pub(super) fn start(&mut self, j: usize, nodes: Vec<usize>, t: f64, backfill: bool) {
        self.start_at(j, nodes, t, t, backfill);
    }

    /// Starts job `j` on `nodes`, decided at `t`; it begins running at `begin`
    /// (later than `t` when preempted victims are given a grace time to end).
    pub(super) fn start_at(
        &mut self,
        j: usize,
        nodes: Vec<usize>,
        t: f64,
        begin: f64,
        backfill: bool,
    ) {
        let trigger = nodes
            .iter()
            .filter_map(|&n| self.cluster.nodes[n].last_end)
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
            .map(|x| x.1);
        let team_trigger = self.team_last_end[self.cluster.jobs[j].team];
        self.start_trigger[j].get_or_insert((trigger, team_trigger));
        let need = self.cluster.jobs[j].per_node;
        for &n in &nodes {
            for (d, x) in need.iter().enumerate() {
                self.cluster.nodes[n].free[d] -= x;
            }
            self.free_ix.set(n, self.cluster.nodes[n].free);
            self.best.set(n, &self.cluster.nodes[n].free);
            self.cluster.nodes[n].running.push(j);
            self.node_stamp[n] += 1;
            self.node_epoch += 1;
        }
        self.account(j, 1.0);
        self.seq += 1;
        let job = &mut self.cluster.jobs[j];
        job.state = JobState::Running;
        job.start = begin;
        if job.first_start.is_none() {
            job.first_start = Some(begin);
            job.first_nodes = nodes.clone();
            job.first_run = job.remaining;
        }
        job.planned_end = begin + job.limit.unwrap_or(INF);
        let mut end = begin + job.remaining;
        if let Some(r) = job.resv {
            // A job in a reservation is killed when the reservation ends
            // (slurm.conf ResvOverRun, default 0).
            let stop = self.cluster.resvs[r as usize].end;
            job.planned_end = job.planned_end.min(stop);
            end = end.min(stop);
        }
        job.nodes = nodes.clone();
        job.run_seq = self.seq;
        if end.is_finite() {
            self.ends.insert((bits(end), j, self.seq));
        }
        self.index_victim(j, true);
        self.event(
            t,
            Ev::Start {
                job: j,
                nodes,
                backfill,
            },
        );
    }

    pub(super) fn release(&mut self, j: usize) {
        self.index_victim(j, false);
        let need = self.cluster.jobs[j].per_node;
        let nodes = std::mem::take(&mut self.cluster.jobs[j].nodes);
        for &n in &nodes {
            for (d, x) in need.iter().enumerate() {
                self.cluster.nodes[n].free[d] += x;
            }
            self.free_ix.set(n, self.cluster.nodes[n].free);
            self.best.set(n, &self.cluster.nodes[n].free);
            self.cluster.nodes[n].running.retain(|&r| r != j);
            self.node_stamp[n] += 1;
            self.node_epoch += 1;
        }
        self.cluster.jobs[j].nodes = nodes;
        self.account(j, -1.0);
    }

    pub fn finish(&mut self, j: usize, t: f64) {
        if let Some(f) = self.fair.as_mut() {
            f.accrue(j, self.cluster.jobs[j].start, t);
        }
        self.release(j);
        for &n in &self.cluster.jobs[j].nodes {
            self.cluster.nodes[n].last_end = Some((t, j));
        }
        self.cluster.jobs[j].state = JobState::Done;
        self.cluster.jobs[j].planned_end = t;
        self.team_last_end[self.cluster.jobs[j].team] = Some(j);
        self.on_leave_queue(j);
        self.event(t, Ev::Finish(j));
    }
}
