//! Explanations: a `Block` in words for people and its binding limit in short words, and the amounts and clock times they quote.

use super::*;

/// A duration in seconds as people on these clusters read it: Kubernetes'
/// `duration.HumanDuration` (kubectl's AGE column, k9s): 45s, 5m30s, 25m, 7h59m, 3d4h,
/// 400d, 2y10d, 9y. Upstream: kubernetes/kubernetes
/// `staging/src/k8s.io/apimachinery/pkg/util/duration/duration.go` (k8s.io/apimachinery
/// `pkg/util/duration`). The same thresholds as there, whole units, truncated; the one
/// difference is that any negative duration is "0s" (upstream writes "<invalid>" below
/// -1 s), as a wait already over is nothing left to wait. Python has the same function
/// (collectors/human.py `human_duration`) for the tables beside these reasons, and
/// tests/test_human_duration.py holds the two to one table.
pub fn human_duration(seconds: f64) -> String {
    if seconds.is_nan() || seconds < 0.0 {
        return "0s".into();
    }
    if seconds.is_infinite() {
        return "∞".into();
    }
    let s = seconds as i64; // truncates toward zero, as upstream's int(d.Seconds())
    if s < 120 {
        return format!("{s}s");
    }
    let minutes = s / 60;
    if minutes < 10 {
        return two(minutes, "m", s % 60, "s");
    }
    if minutes < 3 * 60 {
        return format!("{minutes}m");
    }
    let hours = s / 3600;
    if hours < 8 {
        return two(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        return two(days, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        return two(years, "y", days % 365, "d");
    }
    format!("{years}y")
}

/// `big` of `unit`, then `rest` of the smaller unit unless it is 0: "5m30s", "5m".
fn two(big: i64, unit: &str, rest: i64, rest_unit: &str) -> String {
    if rest == 0 {
        format!("{big}{unit}")
    } else {
        format!("{big}{unit}{rest}{rest_unit}")
    }
}

/// A moment in a reason: its clock in UTC and how far ahead it is, "14:05 UTC (in 25m)",
/// the relative part in the one human format the tables beside the reason use.
pub fn fmt_clock(t: f64, now: f64) -> String {
    let s = t.floor() as i64;
    let (h, m) = ((s.rem_euclid(86400)) / 3600, (s.rem_euclid(3600)) / 60);
    format!("{h:02}:{m:02} UTC (in {})", human_duration(t - now))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Kubernetes' HumanDuration at each of its boundaries and either side of them
    /// (tests/test_human_duration.py checks Python against the same values).
    #[test]
    fn human_duration_follows_kubernetes_at_every_boundary() {
        const H: f64 = 3600.0;
        const D: f64 = 86400.0;
        const Y: f64 = 365.0 * D;
        let table: &[(f64, &str)] = &[
            (-5.0, "0s"),
            (f64::NAN, "0s"),
            (0.0, "0s"),
            (0.9, "0s"),
            (59.0, "59s"),
            (119.0, "119s"),
            (119.9, "119s"),
            (120.0, "2m"),
            (121.0, "2m1s"),
            (599.0, "9m59s"),
            (600.0, "10m"),
            (601.0, "10m"),
            (1500.0, "25m"),
            (10799.0, "179m"),
            (10800.0, "3h"),
            (10860.0, "3h1m"),
            (8.0 * H - 1.0, "7h59m"),
            (8.0 * H, "8h"),
            (48.0 * H - 1.0, "47h"),
            (48.0 * H, "2d"),
            (49.0 * H, "2d1h"),
            (8.0 * D - 1.0, "7d23h"),
            (8.0 * D, "8d"),
            (2.0 * Y - 1.0, "729d"),
            (2.0 * Y, "2y"),
            (2.0 * Y + D, "2y1d"),
            (8.0 * Y - 1.0, "7y364d"),
            (8.0 * Y, "8y"),
            (8.0 * Y + 200.0 * D, "8y"),
            (f64::INFINITY, "∞"),
        ];
        for &(secs, want) in table {
            assert_eq!(human_duration(secs), want, "human_duration({secs})");
        }
    }

    #[test]
    fn fmt_clock_quotes_the_clock_and_the_wait_in_the_human_format() {
        // 1_000_000 s is 13:46:40 UTC; 1500 s on is 14:11:40.
        assert_eq!(fmt_clock(1_001_500.0, 1_000_000.0), "14:11 UTC (in 25m)");
        assert_eq!(fmt_clock(999_000.0, 1_000_000.0), "13:30 UTC (in 0s)");
    }
}
