//! Admission and limits: jobs rejected at submission (fields, shape, limits) and held by QoS or team limits.

use super::*;

impl<'a, 'p> Engine<'a, 'p> {
    /// A reason the job can never run (rejected at submission), if any.
    /// A reason the job can never run, and the binding limit in short words.
    pub fn reject_check(&mut self, j: usize) -> Option<(String, String)> {
        if let Some(r) = self.held_by_source(j) {
            return Some(r);
        }
        if self.cluster.limits.active {
            return self.reject_check_limits(j);
        }
        self.reject_check_fields(j)
            .or_else(|| self.reject_check_shape(j))
            .or_else(|| self.reject_check_submit(j))
    }

    /// With a limit list, it is the authority: per-job limits, the wall
    /// limit (the job is held for good) and, for a job that arrives, the
    /// queued + running counts. A job the snapshot already holds is never
    /// dropped for a submit limit: it exists.
    pub(super) fn reject_check_limits(&mut self, j: usize) -> Option<(String, String)> {
        let job = &self.cluster.jobs[j];
        let lim = &self.cluster.limits;
        if let Some((b, _)) = lim.never(job.limit_profile, &job.total, job.limit_gpu_key, job.limit)
        {
            return Some((
                lim.words(&b, job.user, self.cluster.teams[job.team].name),
                lim.binding(&b),
            ));
        }
        if self.arriving {
            if let Some(b) = lim.over_submit(job.limit_profile) {
                return Some((
                    lim.words(&b, job.user, self.cluster.teams[job.team].name),
                    lim.binding(&b),
                ));
            }
        }
        self.reject_over_team_max(j)
            .or_else(|| self.reject_check_shape(j))
    }

    /// A job the source will not start as things stand (`held`), or one asking for a
    /// resource its team's exhaustive quota does not name: held for good, in words.
    pub(super) fn held_by_source(&self, j: usize) -> Option<(String, String)> {
        let job = &self.cluster.jobs[j];
        if let Some(h) = job.held {
            return Some((format!("held: {h}"), "source".to_string()));
        }
        let team = &self.cluster.teams[job.team];
        if !team.exhaustive || self.policy.quota == QuotaMode::Off {
            return None;
        }
        // A counted resource its quota does not track is as unnamed as any other.
        let unnamed = (0..3)
            .find(|&d| {
                job.total[d] > 0.0 && !team.guarantee[d].is_finite() && !team.max[d].is_finite()
            })
            .map(|d| ["cpu", "memory", "gpu"][d])
            .or(job.unnamed)?;
        Some((
            format!(
                "held: asks for {unnamed}, which team {}'s quota does not name (its quotas name every resource it admits)",
                team.name
            ),
            format!("team {} quota names no {unnamed}", team.name),
        ))
    }

    /// A request over its team's max (a quota it can never get inside), unless quotas are off.
    pub(super) fn reject_over_team_max(&self, j: usize) -> Option<(String, String)> {
        if self.policy.quota == QuotaMode::Off {
            return None;
        }
        let job = &self.cluster.jobs[j];
        let team = &self.cluster.teams[job.team];
        for d in (0..3).chain(job.quota_dim) {
            let ask = need_in(&job.total, d);
            if ask > team.max[d] {
                return Some((
                    format!(
                        "rejected: asks {} {}, more than team {}'s max of {}",
                        fmt_amount(ask),
                        self.dim_label(d),
                        team.name,
                        fmt_amount(team.max[d])
                    ),
                    format!("team {} max {}", team.name, self.dim_key(d)),
                ));
            }
        }
        None
    }

    /// The snapshot's QoS and team fields as limits (no limit list).
    pub(super) fn reject_check_fields(&mut self, j: usize) -> Option<(String, String)> {
        let job = &self.cluster.jobs[j];
        let team = &self.cluster.teams[job.team];
        let q = &self.cluster.qos[job.qos];
        // A time limit against a MaxWall stays in exact seconds, not human_duration:
        // that format truncates, and "7201s over 7200s" would read "2h over 2h".
        if let (Some(mw), Some(l)) = (q.max_wall, job.limit) {
            if l > mw {
                return Some((
                    format!(
                        "rejected: time limit {}s is over QoS {}'s MaxWall of {}s",
                        fmt_amount(l),
                        q.name,
                        fmt_amount(mw)
                    ),
                    format!("QoS {} MaxWall", q.name),
                ));
            }
        }
        if let (Some(mw), Some(l)) = (team.max_wall, job.limit) {
            if l > mw {
                return Some((
                    format!(
                        "rejected: time limit {}s is over team {}'s max wall of {}s",
                        fmt_amount(l),
                        team.name,
                        fmt_amount(mw)
                    ),
                    format!("team {} max wall", team.name),
                ));
            }
        }
        for (lim, of_team) in [(team.per_job, true), (q.max_tres_job, false)] {
            if let Some(lim) = lim {
                for d in 0..3 {
                    if job.total[d] > lim[d] {
                        let who = if of_team {
                            format!("team {}'s per-job limit", team.name)
                        } else {
                            format!("QoS {}'s MaxTRESPerJob", q.name)
                        };
                        let b = if of_team {
                            format!("team {} per-job limit {}", team.name, self.dim_key(d))
                        } else {
                            format!("QoS {} MaxTRESPerJob {}", q.name, self.dim_key(d))
                        };
                        return Some((
                            format!(
                                "rejected: asks {} {} over {} of {}",
                                fmt_amount(job.total[d]),
                                dim_name(d),
                                who,
                                fmt_amount(lim[d])
                            ),
                            b,
                        ));
                    }
                }
            }
        }
        self.reject_over_team_max(j)
    }

    /// The submit counts of the snapshot's QoS and team fields.
    pub(super) fn reject_check_submit(&self, j: usize) -> Option<(String, String)> {
        let job = &self.cluster.jobs[j];
        let team = &self.cluster.teams[job.team];
        let q = &self.cluster.qos[job.qos];
        if let Some(ms) = q.max_submit_user {
            let n = *self
                .submitted_user_qos
                .get(&(job.qos, job.user))
                .unwrap_or(&0);
            if n >= ms {
                return Some((
                    format!(
                        "rejected: user {} has {} jobs in QoS {}, its MaxSubmitJobsPerUser is {}",
                        job.user, n, q.name, ms
                    ),
                    format!("QoS {} MaxSubmitJobsPerUser", q.name),
                ));
            }
        }
        if let Some(ms) = team.max_submit {
            if self.submitted_team[job.team] >= ms {
                return Some((format!("rejected: team {} has {} jobs queued or running, its max_submit_jobs is {}", team.name, self.submitted_team[job.team], ms), format!("team {} max_submit_jobs", team.name)));
            }
        }
        None
    }

    /// Could the job fit on an empty cluster? (Counted once per shape.)
    pub(super) fn reject_check_shape(&mut self, j: usize) -> Option<(String, String)> {
        let job = &self.cluster.jobs[j];
        if let Some(r) = job.resv {
            let r = &self.cluster.resvs[r as usize];
            if !r.start.is_finite() {
                // Named by the job but not listed: it ended, or was deleted.
                return Some((
                    format!(
                        "rejected: can never start: it asks for reservation {}, which the snapshot does not list (ended or deleted)",
                        r.name
                    ),
                    r.binding(),
                ));
            }
        }
        let b = |x: f64| x.to_bits();
        let key = (
            (
                b(job.per_node[CPU]),
                b(job.per_node[MEM]),
                b(job.per_node[GPU]),
            ),
            job.gpu_type,
            job.partition,
            job.constraint,
            job.resv,
        );
        let eligible = match self.eligible_count.get(&key) {
            Some(&k) => k,
            None => {
                let k = (0..self.cluster.nodes.len())
                    .filter(|&n| {
                        self.cluster.node_eligible(j, n)
                            && fits(&self.cluster.nodes[n].capacity, &job.per_node)
                    })
                    .count();
                self.eligible_count.insert(key, k);
                k
            }
        };
        let job = &self.cluster.jobs[j];
        if eligible < job.nodes_wanted {
            let d = if job.per_node[GPU] > 0.0 { GPU } else { CPU };
            let largest = (0..self.cluster.nodes.len())
                .filter(|&n| self.cluster.node_eligible(j, n))
                .map(|n| self.cluster.nodes[n].capacity[d])
                .fold(0.0, f64::max);
            let kind = job.gpu_type.map(|t| format!(" {t}")).unwrap_or_default();
            let cons = job
                .constraint
                .map(|k| {
                    format!(
                        " with constraint {}",
                        self.cluster.constraint_text[k as usize]
                    )
                })
                .unwrap_or_default();
            let cons = match job.resv {
                Some(r) => format!(
                    "{cons} in reservation {}",
                    self.cluster.resvs[r as usize].name
                ),
                None => cons,
            };
            return Some((
                if job.nodes_wanted == 1 {
                    format!("rejected: can never fit: asks {}{} {} on one node{cons}, the largest eligible node has {}", fmt_amount(job.per_node[d]), kind, dim_name(d), fmt_amount(largest))
                } else {
                    format!("rejected: can never fit: asks {} nodes with {}{} {} each{cons}, {} eligible nodes are that large", job.nodes_wanted, fmt_amount(job.per_node[d]), kind, dim_name(d), eligible)
                },
                if let Some(r) = job.resv {
                    self.cluster.resvs[r as usize].binding()
                } else if job.constraint.is_some() {
                    "constraint".into()
                } else {
                    "nodes".into()
                },
            ));
        }
        None
    }

    pub fn admit_submit(&mut self, j: usize, t: f64) -> bool {
        if let Some((r, b)) = self.reject_check(j) {
            self.cluster.jobs[j].state = JobState::Rejected;
            self.event(
                t,
                Ev::Reject {
                    job: j,
                    reason: r.clone(),
                },
            );
            self.reject_reason.insert(j, r);
            self.reject_binding.insert(j, b);
            return false;
        }
        self.count_submitted(j, 1);
        true
    }

    pub(super) fn on_leave_queue(&mut self, j: usize) {
        self.count_submitted(j, -1);
    }

    /// Jobs queued or running per team, and per user in a QoS that limits them
    /// (kept only there: a per-user map over every job costs a lookup each).
    pub(super) fn count_submitted(&mut self, j: usize, by: i64) {
        let job = &self.cluster.jobs[j];
        if job.limit_profile != NO_PROFILE {
            self.cluster.limits.count_submitted(job.limit_profile, by);
        }
        if self.cluster.qos[job.qos].max_submit_user.is_some() {
            *self
                .submitted_user_qos
                .entry((job.qos, job.user))
                .or_insert(0) += by;
        }
        self.submitted_team[job.team] += by;
    }

    pub(super) fn hold_check(&self, j: usize) -> Option<Block> {
        let job = &self.cluster.jobs[j];
        if self.cluster.limits.active {
            return self
                .cluster
                .limits
                .hold(job.limit_profile, &job.total, job.limit_gpu_key)
                .map(Block::Limit);
        }
        let q = &self.cluster.qos[job.qos];
        if q.max_tres_user.is_none()
            && q.max_jobs_user.is_none()
            && self.cluster.teams[job.team].per_user.is_none()
        {
            return None;
        }
        let (used, count) = self
            .user_qos
            .get(&(job.qos, job.user))
            .copied()
            .unwrap_or(([0.0; 3], 0));
        if let Some(lim) = q.max_tres_user {
            for d in 0..3 {
                if used[d] + job.total[d] > lim[d] {
                    return Some(Block::Hold(
                        format!(
                            "held: user {} holds {} of QoS {}'s MaxTRESPerUser of {} {}",
                            job.user,
                            fmt_amount(used[d]),
                            q.name,
                            fmt_amount(lim[d]),
                            dim_name(d)
                        ),
                        format!("QoS {} MaxTRESPerUser {}", q.name, self.dim_key(d)),
                    ));
                }
            }
        }
        if let Some(mj) = q.max_jobs_user {
            if count >= mj {
                return Some(Block::Hold(
                    format!(
                        "held: user {} runs {} jobs, QoS {}'s MaxJobsPerUser is {}",
                        job.user, count, q.name, mj
                    ),
                    format!("QoS {} MaxJobsPerUser", q.name),
                ));
            }
        }
        let team = &self.cluster.teams[job.team];
        if let Some(lim) = team.per_user {
            let used = self
                .user_team
                .get(&(job.team, job.user))
                .copied()
                .unwrap_or([0.0; 3]);
            for d in 0..3 {
                if used[d] + job.total[d] > lim[d] {
                    return Some(Block::Hold(
                        format!(
                            "held: user {} holds {} of team {}'s per-user limit of {} {}",
                            job.user,
                            fmt_amount(used[d]),
                            team.name,
                            fmt_amount(lim[d]),
                            dim_name(d)
                        ),
                        format!("team {} per-user limit {}", team.name, self.dim_key(d)),
                    ));
                }
            }
        }
        None
    }
}
