//! The whole snapshot as owned Rust values: a serde mirror of `collectors/model.py`.
//! The core schedules from the borrowed, lean decode of `wire.rs`; this allocating
//! decode is kept only as the baseline that bench/crossing.py compares it with
//! (`_core.snapshot_stats_owned`), so it lives with the Python binding, not in the library.
//!
//! Python encodes a `Snapshot` Struct with msgspec msgpack (fields by name,
//! defaults omitted); serde decodes it here in one pass, so a 50k-job snapshot
//! crosses into Rust without building Python objects per job.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// cpu (cores), memory (MiB), gpu, and typed GPUs such as `gpu:h100`.
pub type Resources = BTreeMap<String, f64>;

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Partition {
    pub name: String,
    pub nodes: Vec<String>,
    pub state: String,
    pub max_time: Option<f64>,
    pub priority_tier: i64,
    pub priority_job_factor: i64,
    pub default: bool,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Node {
    pub name: String,
    pub partitions: Vec<String>,
    pub state: String,
    pub capacity: Resources,
    pub allocated: Resources,
    pub gpu_type: Option<String>,
    pub gpus_used_indices: Vec<i64>,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<String>,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct FairShare {
    pub raw_shares: Option<f64>,
    pub norm_shares: Option<f64>,
    pub raw_usage: Option<f64>,
    pub effective_usage: Option<f64>,
    pub factor: Option<f64>,
    pub level_fs: Option<f64>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Team {
    pub name: String,
    pub parent: Option<String>,
    pub cohort: Option<String>,
    pub guarantee: Option<Resources>,
    pub max: Option<Resources>,
    pub lendable: Option<Resources>,
    pub weight: f64,
    pub preemptible: bool,
    pub shares: Option<f64>,
    pub fairshare: Option<FairShare>,
    pub usage: Resources,
    pub per_job_limit: Option<Resources>,
    pub per_user_limit: Option<Resources>,
    pub max_wall: Option<f64>,
    pub max_submit_jobs: Option<i64>,
    pub source_notes: Vec<String>,
}

impl Default for Team {
    fn default() -> Self {
        Team {
            name: String::new(),
            parent: None,
            cohort: None,
            guarantee: None,
            max: None,
            lendable: None,
            weight: 1.0,
            preemptible: true,
            shares: None,
            fairshare: None,
            usage: Resources::new(),
            per_job_limit: None,
            per_user_limit: None,
            max_wall: None,
            max_submit_jobs: None,
            source_notes: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct QoS {
    pub name: String,
    pub priority: i64,
    pub preempts: Vec<String>,
    pub preempt_mode: String,
    pub max_wall: Option<f64>,
    pub max_tres_per_user: Option<Resources>,
    pub max_tres_per_job: Option<Resources>,
    pub grp_tres: Option<Resources>,
    pub max_submit_jobs_per_user: Option<i64>,
    pub max_jobs_per_user: Option<i64>,
    pub usage_factor: f64,
}

impl Default for QoS {
    fn default() -> Self {
        QoS {
            name: String::new(),
            priority: 0,
            preempts: Vec::new(),
            preempt_mode: "requeue".into(),
            max_wall: None,
            max_tres_per_user: None,
            max_tres_per_job: None,
            grp_tres: None,
            max_submit_jobs_per_user: None,
            max_jobs_per_user: None,
            usage_factor: 1.0,
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct PriorityFactors {
    pub age: f64,
    pub fairshare: f64,
    pub qos: f64,
    pub job_size: f64,
    pub partition: f64,
    pub assoc: f64,
    pub nice: f64,
    pub tres: f64,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Job {
    pub id: String,
    pub name: String,
    pub array_parent: Option<String>,
    pub array_task: Option<String>,
    pub user: String,
    pub team: String,
    pub qos: String,
    pub partition: Option<String>,
    pub state: String,
    pub request: Resources,
    pub nodes_requested: i64,
    pub time_limit: Option<f64>,
    pub submit_time: f64,
    pub eligible_time: Option<f64>,
    pub start_time: Option<f64>,
    pub end_time: Option<f64>,
    pub priority: Option<f64>,
    pub factors: Option<PriorityFactors>,
    pub reason: Option<String>,
    pub nodes: Vec<String>,
    pub estimated_start: Option<f64>,
    pub dependency: Option<String>,
    pub qos_class: Option<String>,
    pub gang: Option<String>,
}

impl Default for Job {
    fn default() -> Self {
        Job {
            id: String::new(),
            name: String::new(),
            array_parent: None,
            array_task: None,
            user: String::new(),
            team: String::new(),
            qos: "normal".into(),
            partition: None,
            state: "pending".into(),
            request: Resources::new(),
            nodes_requested: 1,
            time_limit: None,
            submit_time: 0.0,
            eligible_time: None,
            start_time: None,
            end_time: None,
            priority: None,
            factors: None,
            reason: None,
            nodes: Vec::new(),
            estimated_start: None,
            dependency: None,
            qos_class: None,
            gang: None,
        }
    }
}

/// Only the parts of the snapshot the core schedules with; utilization series,
/// source status and warnings are ignored by serde (unknown fields are skipped).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(default)]
pub struct Snapshot {
    pub schema_version: i64,
    pub cluster: String,
    pub source: String,
    pub taken_at: f64,
    pub nodes: Vec<Node>,
    pub partitions: Vec<Partition>,
    pub teams: Vec<Team>,
    pub qos: Vec<QoS>,
    pub jobs: Vec<Job>,
}

impl Snapshot {
    pub fn from_msgpack(bytes: &[u8]) -> Result<Snapshot, String> {
        rmp_serde::from_slice(bytes).map_err(|e| format!("snapshot does not decode: {e}"))
    }
}
