//! The lean decode of a snapshot: only the fields the core schedules with,
//! names borrowed from the msgpack buffer (no per-job String), resources folded
//! into a fixed vector (cpu, memory, gpu) plus one typed GPU name.
//! Unknown fields are skipped, so the wire stays compatible with
//! `collectors/model.py` as it grows.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::marker::PhantomData;

pub const CPU: usize = 0;
pub const MEM: usize = 1;
pub const GPU: usize = 2;
pub type V3 = [f64; 3];

/// A resource map as the core sees it. `bad` keeps the first negative or
/// non-finite amount so validation can name it.
#[derive(Debug, Clone, Copy, Default)]
pub struct WRes<'a> {
    pub v: [Option<f64>; 3],
    pub typed: Option<(&'a str, f64)>,
    pub bad: Option<(&'a str, f64)>,
}

impl<'a> WRes<'a> {
    /// Amounts with absent keys as zero; a typed GPU counts as GPUs.
    pub fn amounts(&self) -> V3 {
        let mut a = [
            self.v[CPU].unwrap_or(0.0),
            self.v[MEM].unwrap_or(0.0),
            self.v[GPU].unwrap_or(0.0),
        ];
        if let Some((_, n)) = self.typed {
            a[GPU] = a[GPU].max(n);
        }
        a
    }
    /// Amounts with absent keys as `missing` (e.g. infinity for a limit).
    pub fn limits(&self, missing: f64) -> V3 {
        let mut a = [missing; 3];
        for (d, x) in a.iter_mut().enumerate() {
            if let Some(v) = self.v[d] {
                *x = v;
            }
        }
        if let Some((_, n)) = self.typed {
            a[GPU] = if self.v[GPU].is_some() {
                a[GPU].max(n)
            } else {
                n
            };
        }
        a
    }
    pub fn has(&self, d: usize) -> bool {
        self.v[d].is_some() || (d == GPU && self.typed.is_some())
    }
}

/// A map of resource name to amount, as all three shapes read it (`WRes`, `WQuota`,
/// `WReq`): cpu, memory and gpu into `res()`, the first impossible amount (not finite,
/// negative) kept in its `bad` to be refused by name, and every other key to `rest`.
trait FromAmounts<'a>: Default {
    fn res(&mut self) -> &mut WRes<'a>;
    fn rest(&mut self, key: &'a str, amount: f64);
}

struct Amounts<'a, T>(PhantomData<(&'a (), T)>);

impl<'de: 'a, 'a, T: FromAmounts<'a>> Visitor<'de> for Amounts<'a, T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of resource name to amount")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<T, M::Error> {
        let mut out = T::default();
        while let Some(k) = m.next_key::<&'de str>()? {
            let x: f64 = m.next_value()?;
            let r = out.res();
            if !x.is_finite() || x < 0.0 {
                if r.bad.is_none() {
                    r.bad = Some((k, x));
                }
                continue;
            }
            match k {
                "cpu" => r.v[CPU] = Some(x),
                "memory" => r.v[MEM] = Some(x),
                "gpu" => r.v[GPU] = Some(x),
                _ => out.rest(k, x),
            }
        }
        Ok(out)
    }
}

impl<'a> FromAmounts<'a> for WRes<'a> {
    fn res(&mut self) -> &mut WRes<'a> {
        self
    }
    fn rest(&mut self, k: &'a str, x: f64) {
        if let Some(t) = k.strip_prefix("gpu:") {
            self.typed = Some((t, x));
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for WRes<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(Amounts::<WRes>(PhantomData))
    }
}

/// A team quota (guarantee, max, lendable): the plain resources, with `gpu`
/// from the plain key only, plus every typed key `gpu:<type>`, each its own
/// quota dimension (a Kueue flavor, a Slurm GrpTRES gres/gpu:<type>).
#[derive(Debug, Clone, Default)]
pub struct WQuota<'a> {
    pub res: WRes<'a>,
    pub typed: Vec<(&'a str, f64)>,
    /// Other resources it names (not cpu, memory or a GPU), whatever their amount:
    /// what an exhaustive quota lets a job ask for beyond the counted dimensions.
    pub other: Vec<&'a str>,
}

impl<'a> FromAmounts<'a> for WQuota<'a> {
    fn res(&mut self) -> &mut WRes<'a> {
        &mut self.res
    }
    fn rest(&mut self, k: &'a str, x: f64) {
        match k.strip_prefix("gpu:") {
            Some(t) => self.typed.push((t, x)),
            None => self.other.push(k),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for WQuota<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(Amounts::<WQuota>(PhantomData))
    }
}

/// A job's request: the counted resources (`res`) and the names of the others it asks
/// a positive amount of (not cpu, memory or a GPU): the core does not count those, but
/// a team whose quota is exhaustive admits no job asking for one its quota does not name.
#[derive(Debug, Clone, Default)]
pub struct WReq<'a> {
    pub res: WRes<'a>,
    pub other: Vec<&'a str>,
}

impl<'a> FromAmounts<'a> for WReq<'a> {
    fn res(&mut self) -> &mut WRes<'a> {
        &mut self.res
    }
    fn rest(&mut self, k: &'a str, x: f64) {
        if let Some(t) = k.strip_prefix("gpu:") {
            self.res.typed = Some((t, x));
        } else if x > 0.0 {
            self.other.push(k);
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for WReq<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(Amounts::<WReq>(PhantomData))
    }
}

/// A team's stated preemption policy (collectors/model.py `TeamPreemption`).
#[derive(Debug, Deserialize)]
pub struct WTeamPreemption<'a> {
    #[serde(default)]
    pub within: Option<&'a str>,
    #[serde(default)]
    pub reclaim: Option<&'a str>,
    #[serde(default)]
    pub borrow_within: Option<&'a str>,
    #[serde(default)]
    pub borrow_max_priority: Option<f64>,
}

fn normal<'a>() -> &'a str {
    "normal"
}
fn pending<'a>() -> &'a str {
    "pending"
}
fn group<'a>() -> &'a str {
    "group"
}
fn one_f() -> f64 {
    1.0
}
fn one_i() -> i64 {
    1
}
fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
pub struct WNode<'a> {
    pub name: &'a str,
    #[serde(default, borrow)]
    pub partitions: Vec<&'a str>,
    #[serde(default)]
    pub state: Option<&'a str>,
    #[serde(default, borrow)]
    pub capacity: Option<WRes<'a>>,
    #[serde(default, borrow)]
    pub allocated: Option<WRes<'a>>,
    #[serde(default)]
    pub gpu_type: Option<&'a str>,
    /// What a job's constraint can ask for.
    #[serde(default, borrow)]
    pub features: Vec<&'a str>,
}

#[derive(Debug, Deserialize)]
pub struct WPartition<'a> {
    pub name: &'a str,
    #[serde(default, borrow)]
    pub nodes: Vec<&'a str>,
    #[serde(default)]
    pub priority_job_factor: i64,
    /// The partition's own QoS: limits set on it apply to every job in the partition.
    #[serde(default)]
    pub qos: Option<&'a str>,
}

/// An advanced reservation: its nodes are closed over [start, end) to every
/// job that does not request it, and a job that does runs only there, then.
#[derive(Debug, Deserialize)]
pub struct WReservation<'a> {
    pub name: &'a str,
    #[serde(default, borrow)]
    pub nodes: Vec<&'a str>,
    #[serde(default)]
    pub start: f64,
    /// None: no end.
    #[serde(default)]
    pub end: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
pub struct WFairShare {
    #[serde(default)]
    pub raw_usage: Option<f64>,
}

#[derive(Debug, Deserialize)]
pub struct WTeam<'a> {
    pub name: &'a str,
    #[serde(default)]
    pub parent: Option<&'a str>,
    #[serde(default)]
    pub cohort: Option<&'a str>,
    #[serde(default, borrow)]
    pub guarantee: Option<WQuota<'a>>,
    #[serde(default, borrow)]
    pub max: Option<WQuota<'a>>,
    #[serde(default, borrow)]
    pub lendable: Option<WQuota<'a>>,
    #[serde(default = "one_f")]
    pub weight: f64,
    #[serde(default = "yes")]
    pub preemptible: bool,
    #[serde(default)]
    pub shares: Option<f64>,
    #[serde(default)]
    pub fairshare: Option<WFairShare>,
    #[serde(default, borrow)]
    pub per_job_limit: Option<WRes<'a>>,
    #[serde(default, borrow)]
    pub per_user_limit: Option<WRes<'a>>,
    #[serde(default)]
    pub max_wall: Option<f64>,
    #[serde(default)]
    pub max_submit_jobs: Option<i64>,
    /// Quota the source's scheduler counts against the team that no job of the
    /// snapshot holds (Kueue: admitted workloads this reader cannot list); held
    /// for the whole horizon, as nothing says when it ends.
    #[serde(default, borrow)]
    pub unseen_usage: Option<WQuota<'a>>,
    /// Whom its jobs may preempt, as the source states it (None: QoS and reclaim rules).
    #[serde(default, borrow)]
    pub preemption: Option<WTeamPreemption<'a>>,
    /// Its quotas name every resource its jobs may use.
    #[serde(default)]
    pub quota_exhaustive: bool,
}

#[derive(Debug, Deserialize)]
pub struct WQoS<'a> {
    pub name: &'a str,
    #[serde(default)]
    pub priority: i64,
    #[serde(default, borrow)]
    pub preempts: Vec<&'a str>,
    #[serde(default)]
    pub preempt_mode: Option<&'a str>,
    #[serde(default)]
    pub max_wall: Option<f64>,
    #[serde(default, borrow)]
    pub max_tres_per_user: Option<WRes<'a>>,
    #[serde(default, borrow)]
    pub max_tres_per_job: Option<WRes<'a>>,
    #[serde(default)]
    pub max_submit_jobs_per_user: Option<i64>,
    #[serde(default)]
    pub max_jobs_per_user: Option<i64>,
    /// Seconds a job runs before it may be preempted.
    #[serde(default)]
    pub preempt_exempt_time: Option<f64>,
    /// Seconds a victim is given to end after the preemption decision.
    #[serde(default)]
    pub grace_time: Option<f64>,
}

/// Weighted priority factors as the source reports them.
#[derive(Debug, Default, Deserialize)]
pub struct WFactors {
    #[serde(default)]
    pub age: f64,
    #[serde(default)]
    pub fairshare: f64,
    #[serde(default)]
    pub qos: f64,
    #[serde(default)]
    pub job_size: f64,
    #[serde(default)]
    pub partition: f64,
}

/// One scoped limit (collectors/model.py `Limit`).
#[derive(Debug, Deserialize)]
pub struct WLimit<'a> {
    pub scope: &'a str,
    pub owner: &'a str,
    #[serde(default = "group")]
    pub per: &'a str,
    #[serde(default, borrow)]
    pub tres: Option<WQuota<'a>>,
    #[serde(default)]
    pub jobs: Option<i64>,
    #[serde(default)]
    pub submit: Option<i64>,
    #[serde(default)]
    pub wall: Option<f64>,
    #[serde(default)]
    pub rank: i64,
}

/// One association of the fair-share tree (collectors/model.py `ShareNode`).
#[derive(Debug, Deserialize)]
pub struct WShare<'a> {
    pub account: &'a str,
    #[serde(default)]
    pub user: Option<&'a str>,
    #[serde(default)]
    pub parent: Option<&'a str>,
    #[serde(default = "one_f")]
    pub raw_shares: f64,
    #[serde(default)]
    pub raw_usage: f64,
}

#[derive(Debug, Deserialize)]
pub struct WJob<'a> {
    pub id: &'a str,
    #[serde(default)]
    pub user: &'a str,
    #[serde(default)]
    pub team: &'a str,
    #[serde(default = "normal")]
    pub qos: &'a str,
    #[serde(default)]
    pub partition: Option<&'a str>,
    #[serde(default = "pending")]
    pub state: &'a str,
    #[serde(default, borrow)]
    pub request: Option<WReq<'a>>,
    #[serde(default = "one_i")]
    pub nodes_requested: i64,
    #[serde(default)]
    pub time_limit: Option<f64>,
    #[serde(default)]
    pub submit_time: f64,
    #[serde(default)]
    pub eligible_time: Option<f64>,
    #[serde(default)]
    pub start_time: Option<f64>,
    #[serde(default, borrow)]
    pub nodes: Vec<&'a str>,
    #[serde(default)]
    pub qos_class: Option<&'a str>,
    #[serde(default)]
    pub gang: Option<&'a str>,
    /// Actual run time; only simulation inputs carry it.
    #[serde(default)]
    pub duration: Option<f64>,
    /// Node features the job needs ("a", "a&b", "a|b", "[a|b]").
    #[serde(default)]
    pub constraint: Option<&'a str>,
    #[serde(default)]
    pub exclusive: bool,
    #[serde(default)]
    pub runtime_estimate: Option<f64>,
    #[serde(default)]
    pub runtime_basis: Option<&'a str>,
    /// Past run times the estimate came from (seconds, newest first): sampled for
    /// start windows.
    #[serde(default)]
    pub runtime_history: Vec<f64>,
    /// The history is of other work of the same user (not the same request): the
    /// windows trust it less.
    #[serde(default)]
    pub runtime_history_weak: bool,
    /// The priority and factors the source reports.
    #[serde(default)]
    pub priority: Option<f64>,
    #[serde(default)]
    pub factors: Option<WFactors>,
    /// The job's place in its queue as the source states it (0 = next).
    #[serde(default)]
    pub queue_position: Option<i64>,
    /// The advanced reservation the job runs in.
    #[serde(default)]
    pub reservation: Option<&'a str>,
    /// The source will not start it as things stand, in its words.
    #[serde(default)]
    pub held: Option<&'a str>,
}

#[derive(Debug, Default, Deserialize)]
pub struct WSnapshot<'a> {
    #[serde(default)]
    pub taken_at: f64,
    #[serde(default, borrow, deserialize_with = "whole_vec")]
    pub nodes: Vec<WNode<'a>>,
    #[serde(default, borrow)]
    pub partitions: Vec<WPartition<'a>>,
    #[serde(default, borrow)]
    pub teams: Vec<WTeam<'a>>,
    #[serde(default, borrow)]
    pub qos: Vec<WQoS<'a>>,
    #[serde(default, borrow, deserialize_with = "whole_vec")]
    pub jobs: Vec<WJob<'a>>,
    #[serde(default, borrow)]
    pub limits: Vec<WLimit<'a>>,
    #[serde(default, borrow)]
    pub shares: Vec<WShare<'a>>,
    #[serde(default, borrow)]
    pub reservations: Vec<WReservation<'a>>,
}

/// Input of `simulate`: a cluster (its running and pending jobs included) and
/// the jobs that arrive later, each with submit_time and duration.
#[derive(Debug, Deserialize)]
pub struct WSimInput<'a> {
    #[serde(default, borrow)]
    pub cluster: WSnapshot<'a>,
    #[serde(default, borrow, deserialize_with = "whole_vec")]
    pub jobs: Vec<WJob<'a>>,
    #[serde(default)]
    pub start: Option<f64>,
    #[serde(default)]
    pub until: Option<f64>,
}

/// A Vec decoded at the length msgpack announces. serde's own Vec stops trusting
/// a length hint at 1 MiB of elements and doubles from there: at 50k jobs that
/// copied the jobs four times into fresh pages (a quarter of predict's page faults).
/// The hint is still capped, so a forged length cannot reserve more than
/// `MAX_RESERVE` elements up front; past it the Vec grows as usual.
fn whole_vec<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct V<T>(PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an array")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(MAX_RESERVE));
            while let Some(x) = seq.next_element()? {
                out.push(x);
            }
            Ok(out)
        }
    }
    d.deserialize_seq(V(PhantomData))
}

// 262k elements: a 100k-job queue and then some, ~70 MB of address space at most.
const MAX_RESERVE: usize = 1 << 18;

pub fn decode_snapshot(bytes: &[u8]) -> Result<WSnapshot<'_>, String> {
    rmp_serde::from_slice(bytes).map_err(|e| format!("snapshot does not decode: {e}"))
}

pub fn decode_sim_input(bytes: &[u8]) -> Result<WSimInput<'_>, String> {
    rmp_serde::from_slice(bytes).map_err(|e| format!("simulation input does not decode: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forged_array_length_is_a_decode_error_not_an_allocation() {
        // {"jobs": [<claims 4 billion jobs, holds none>]}
        let mut doc = vec![0x81, 0xa4];
        doc.extend_from_slice(b"jobs");
        doc.extend_from_slice(&[0xdd, 0xff, 0xff, 0xff, 0xff]);
        let err = decode_snapshot(&doc).expect_err("truncated");
        assert!(err.starts_with("snapshot does not decode"), "{err}");
    }

    #[test]
    fn jobs_decode_whole_at_their_announced_length() {
        let mut doc = vec![0x81, 0xa4];
        doc.extend_from_slice(b"jobs");
        doc.push(0x92);
        for id in ["a", "b"] {
            doc.extend_from_slice(&[0x81, 0xa2, b'i', b'd', 0xa1, id.as_bytes()[0]]);
        }
        let snap = decode_snapshot(&doc).expect("decodes");
        assert_eq!(
            snap.jobs.iter().map(|j| j.id).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert!(snap.jobs.capacity() == 2);
    }
}
