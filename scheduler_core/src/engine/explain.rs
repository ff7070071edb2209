//! Explanations: a `Block` in words for people and its binding limit in short words, and the amounts and clock times they quote.

use super::*;

pub fn fmt_clock(t: f64, now: f64) -> String {
    let s = t.floor() as i64;
    let (h, m) = ((s.rem_euclid(86400)) / 3600, (s.rem_euclid(3600)) / 60);
    let d = (t - now).max(0.0) as i64;
    let rel = if d >= 86400 {
        format!("{}d{}h", d / 86400, (d % 86400) / 3600)
    } else if d >= 3600 {
        format!("{}h{:02}m", d / 3600, (d % 3600) / 60)
    } else {
        format!("{}m", d / 60)
    };
    format!("{h:02}:{m:02} UTC (in {rel})")
}

impl<'a, 'p> Engine<'a, 'p> {
    /// "gpu", "cpu", "mem" or the typed key, e.g. "gpu:h100".
    pub(super) fn dim_key(&self, d: usize) -> String {
        match d {
            CPU => "cpu".into(),
            MEM => "mem".into(),
            GPU => "gpu".into(),
            _ => format!("gpu:{}", self.cluster.quota_gpu_types[d - 3]),
        }
    }

    /// "GPUs", "CPUs", … or the typed key, e.g. "gpu:h100 GPUs".
    pub(super) fn dim_label(&self, d: usize) -> String {
        if d < 3 {
            dim_name(d).to_string()
        } else {
            format!("gpu:{} GPUs", self.cluster.quota_gpu_types[d - 3])
        }
    }

    /// The job's advanced reservation when its start is what `at` waits for.
    /// (One the snapshot does not list never gets here: admission rejects its jobs.)
    fn own_resv_start(&self, j: usize, at: f64) -> Option<&crate::cluster::AdvResv<'a>> {
        let r = &self.cluster.resvs[self.cluster.jobs[j].resv? as usize];
        (r.start >= at).then_some(r)
    }

    pub fn words(&self, b: &Block, j: usize) -> String {
        let job = &self.cluster.jobs[j];
        let team = &self.cluster.teams[job.team];
        match b {
            Block::Max { dim, max, used } => format!(
                "waits for team {}'s max of {} {} (holds {}, asks {})",
                team.name,
                fmt_amount(*max),
                self.dim_label(*dim),
                fmt_amount(*used),
                fmt_amount(need_in(&job.total, *dim))
            ),
            Block::Cohort {
                dim,
                guarantee,
                avail,
            } => {
                let c = self.cluster.cohorts[team.cohort];
                let c = if c.is_empty() {
                    "the cluster".to_string()
                } else {
                    format!("cohort {c}")
                };
                format!(
                    "waits for idle {} to borrow in {}: team {} is over its guarantee of {}, {} lendable now",
                    self.dim_label(*dim), c, team.name, fmt_amount(*guarantee), fmt_amount(*avail)
                )
            }
            Block::Nodes => {
                let d = if job.per_node[GPU] > 0.0 {
                    GPU
                } else if job.per_node[CPU] > 0.0 {
                    CPU
                } else {
                    MEM
                };
                let kind = match (d, job.gpu_type) {
                    (GPU, Some(t)) => format!("{t} GPUs"),
                    _ => dim_name(d).to_string(),
                };
                if job.nodes_wanted == 1 {
                    format!(
                        "waits for {} free {} on one node",
                        fmt_amount(job.per_node[d]),
                        kind
                    )
                } else {
                    format!(
                        "waits for {} nodes with {} free {} each",
                        job.nodes_wanted,
                        fmt_amount(job.per_node[d]),
                        kind
                    )
                }
            }
            Block::Reservation { holder, at } => format!(
                "waits: starting now would delay job {}'s reservation at {}",
                self.cluster.jobs[*holder].id,
                fmt_clock(*at, self.t0)
            ),
            Block::Behind { head } => format!(
                "waits behind higher-priority job {} (backfill off)",
                self.cluster.jobs[*head].id
            ),
            Block::Fifo { head } => format!(
                "waits behind job {} (strict FIFO in team {})",
                self.cluster.jobs[*head].id, team.name
            ),
            Block::Gang => format!(
                "waits for all members of gang {} to fit together",
                job.gang.map_or("?", |g| self.cluster.gangs[g])
            ),
            Block::Begin { at } => match self.own_resv_start(j, *at) {
                Some(r) => format!(
                    "waits for its reservation {}, which starts {}",
                    r.name,
                    fmt_clock(*at, self.t0)
                ),
                None => format!(
                    "not eligible before its begin time, {}",
                    fmt_clock(*at, self.t0)
                ),
            },
            Block::AdvResv { resv, from, to } => {
                let r = &self.cluster.resvs[*resv as usize];
                let until = if to.is_finite() {
                    format!("until {}", fmt_clock(*to, self.t0))
                } else {
                    "with no end".into()
                };
                let from = if *from > self.t0 {
                    format!("from {}, ", fmt_clock(*from, self.t0))
                } else {
                    String::new()
                };
                format!(
                    "waits: the nodes it would fit on are held by reservation {} ({from}{until}), which it is not in",
                    r.name
                )
            }
            Block::Hold(s, _) => s.clone(),
            Block::Limit(b) => self.cluster.limits.words(b, job.user, team.name),
        }
    }

    /// The binding limit or resource in short words: "nodes", "QoS high GrpTRES gpu",
    /// "reservation of job 12".
    pub fn binding(&self, b: &Block, j: usize) -> String {
        let job = &self.cluster.jobs[j];
        match b {
            Block::Max { dim, .. } => format!(
                "team {} max {}",
                self.cluster.teams[job.team].name,
                self.dim_key(*dim)
            ),
            Block::Cohort { dim, .. } => format!(
                "team {} guarantee {}",
                self.cluster.teams[job.team].name,
                self.dim_key(*dim)
            ),
            Block::Nodes => "nodes".into(),
            Block::Reservation { holder, .. } => {
                format!("reservation of job {}", self.cluster.jobs[*holder].id)
            }
            Block::Behind { head } => format!("job {} ahead", self.cluster.jobs[*head].id),
            Block::Fifo { head } => format!("job {} ahead in team", self.cluster.jobs[*head].id),
            Block::Gang => "gang".into(),
            Block::Begin { at } => match self.own_resv_start(j, *at) {
                Some(r) => r.binding(),
                None => "begin time".into(),
            },
            Block::AdvResv { resv, .. } => self.cluster.resvs[*resv as usize].binding(),
            Block::Hold(_, b) => b.clone(),
            Block::Limit(b) => self.cluster.limits.binding(b),
        }
    }
}
