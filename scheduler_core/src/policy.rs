//! The scheduling policy: a serde mirror of `scheduler_core/policy.py`
//! (documented setting by setting in docs/policy.md).

use serde::Deserialize;

fn d_age() -> f64 {
    1000.0
}
fn d_fs() -> f64 {
    10000.0
}
fn d_qos() -> f64 {
    1000.0
}
fn d_max_age() -> f64 {
    7.0 * 86400.0
}
fn d_half_life() -> f64 {
    7.0 * 86400.0
}
fn d_window() -> f64 {
    86400.0
}
fn d_res() -> f64 {
    60.0
}
fn d_test() -> i64 {
    100
}
fn d_true() -> bool {
    true
}
fn s_classic() -> String {
    "classic".into()
}
fn s_easy() -> String {
    "easy".into()
}
fn s_best() -> String {
    "best_fit".into()
}
fn s_requeue() -> String {
    "requeue".into()
}
fn s_enforce() -> String {
    "enforce".into()
}
fn s_grid() -> String {
    "grid".into()
}
fn s_computed() -> String {
    "computed".into()
}
fn s_estimate() -> String {
    "estimate".into()
}

#[derive(Debug, Clone, Deserialize)]
pub struct Weights {
    #[serde(default = "d_age")]
    pub age: f64,
    #[serde(default = "d_fs")]
    pub fairshare: f64,
    #[serde(default = "d_qos")]
    pub qos: f64,
    #[serde(default)]
    pub job_size: f64,
    #[serde(default)]
    pub partition: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            age: d_age(),
            fairshare: d_fs(),
            qos: d_qos(),
            job_size: 0.0,
            partition: 0.0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FairShareMode {
    Classic,
    FairTree,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backfill {
    None,
    Easy,
    Conservative,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    BestFit,
    Spread,
    /// Runs of consecutive eligible nodes: the tightest run that holds the job,
    /// best fit by free CPUs within it (Slurm's select/cons_tres `_eval_nodes`).
    Consecutive,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreemptMode {
    Requeue,
    Suspend,
    Cancel,
}
/// When passes run: on the `bf_resolution` grid after each event, or at each event's own time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passes {
    Grid,
    Events,
}
/// Whose priority orders the queue: the core's multifactor, or the source's own number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriorityMode {
    Computed,
    Source,
}
/// How long a job runs in a prediction: its time limit, or its runtime estimate when it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtimes {
    Limit,
    Estimate,
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaMode {
    Enforce,
    MaxOnly,
    Off,
}

impl PreemptMode {
    pub fn name(self) -> &'static str {
        match self {
            PreemptMode::Requeue => "requeue",
            PreemptMode::Suspend => "suspend",
            PreemptMode::Cancel => "cancel",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct RawPolicy {
    #[serde(default)]
    pub weights: Weights,
    #[serde(default = "d_max_age")]
    pub max_age: f64,
    #[serde(default)]
    pub favor_small: bool,
    #[serde(default = "s_classic")]
    pub fairshare: String,
    #[serde(default = "d_half_life")]
    pub usage_half_life: f64,
    #[serde(default = "s_easy")]
    pub backfill: String,
    #[serde(default = "d_window")]
    pub bf_window: f64,
    #[serde(default = "d_res")]
    pub bf_resolution: f64,
    #[serde(default = "d_test")]
    pub bf_max_job_test: i64,
    #[serde(default = "s_best")]
    pub placement: String,
    #[serde(default = "d_true")]
    pub preemption: bool,
    #[serde(default = "s_requeue")]
    pub preempt_mode: String,
    #[serde(default)]
    pub strict_team_fifo: bool,
    #[serde(default = "s_enforce")]
    pub quota: String,
    #[serde(default = "s_grid")]
    pub passes: String,
    #[serde(default)]
    pub main_pass: bool,
    #[serde(default)]
    pub pass_delay: f64,
    #[serde(default = "s_computed")]
    pub priority: String,
    #[serde(default = "s_estimate")]
    pub runtimes: String,
    #[serde(default)]
    pub fairshare_period: f64,
    #[serde(default)]
    pub reserve_busy_first: bool,
    #[serde(default)]
    pub reserve_whole_nodes: bool,
    #[serde(default)]
    pub floor_to_grid: bool,
    #[serde(default)]
    pub requeue_delay: f64,
}

/// The validated policy the engine runs with.
#[derive(Debug, Clone)]
pub struct Policy {
    pub w: Weights,
    pub max_age: f64,
    pub favor_small: bool,
    pub fairshare: FairShareMode,
    pub half_life: f64,
    pub backfill: Backfill,
    pub bf_window: f64,
    pub bf_resolution: f64,
    pub bf_max_job_test: usize,
    pub placement: Placement,
    pub preemption: bool,
    pub preempt_mode: PreemptMode,
    pub strict_team_fifo: bool,
    pub quota: QuotaMode,
    pub passes: Passes,
    pub main_pass: bool,
    /// Seconds from an event to the pass that answers it under `passes = events`.
    /// A scheduler answers a job's end a moment later, not at once, and whatever
    /// else ended in that moment it sees together, starting the successors in
    /// priority order; with no delay the first end would decide alone.
    pub pass_delay: f64,
    pub priority: PriorityMode,
    pub runtimes: Runtimes,
    /// Seconds between fair-share recalculations over a prediction's horizon
    /// (with `priority = source` and Fair Tree); 0: the factors stay as reported.
    pub fairshare_period: f64,
    /// A reservation takes the capacity that frees up by its start before capacity
    /// that is idle now, leaving the idle capacity to backfill (textbook EASY).
    pub reserve_busy_first: bool,
    /// A backfill reservation holds its nodes whole over its span, not just the
    /// job's share of them: no later job may start on them if it would still run
    /// when the reservation begins (Slurm's backfill: "for performance reasons,
    /// the backfill scheduler reserves whole nodes for jobs, not partial nodes").
    pub reserve_whole_nodes: bool,
    /// A reservation starts when its job first fits (a running job's planned end),
    /// and the span it holds is rounded down to the `bf_resolution` grid at both
    /// ends (Slurm's backfill: `start_time / backfill_resolution * backfill_resolution`);
    /// otherwise candidate starts snap up to the grid from the pass.
    pub floor_to_grid: bool,
    /// Not 0: each pass answers its event after a delay drawn from an exponential
    /// of mean `pass_delay` (this seeds the draws), not after `pass_delay`: when a
    /// scheduler answers an end is known only on average, and start windows say so.
    pub pass_jitter_seed: u64,
    /// Seconds a job requeued by preemption waits before it may start again (Slurm
    /// sets the job's begin time that far ahead: AuthInfo's cred_expire).
    pub requeue_delay: f64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::from_raw(rmp_serde::from_slice(&[0x80]).expect("empty map decodes"))
            .expect("defaults valid")
    }
}

fn bad(field: &str, v: &str, allowed: &str) -> String {
    format!("policy.{field}: unknown value {v:?} (allowed: {allowed})")
}

impl Policy {
    pub fn from_msgpack(bytes: &[u8]) -> Result<Policy, String> {
        let raw: RawPolicy =
            rmp_serde::from_slice(bytes).map_err(|e| format!("policy does not decode: {e}"))?;
        Policy::from_raw(raw)
    }

    pub fn from_raw(r: RawPolicy) -> Result<Policy, String> {
        let fairshare = match r.fairshare.as_str() {
            "classic" => FairShareMode::Classic,
            "fair_tree" => FairShareMode::FairTree,
            v => return Err(bad("fairshare", v, "classic, fair_tree")),
        };
        let backfill = match r.backfill.as_str() {
            "none" => Backfill::None,
            "easy" => Backfill::Easy,
            "conservative" => Backfill::Conservative,
            v => return Err(bad("backfill", v, "none, easy, conservative")),
        };
        let placement = match r.placement.as_str() {
            "best_fit" => Placement::BestFit,
            "spread" => Placement::Spread,
            "consecutive" => Placement::Consecutive,
            v => return Err(bad("placement", v, "best_fit, spread, consecutive")),
        };
        let preempt_mode = match r.preempt_mode.as_str() {
            "requeue" => PreemptMode::Requeue,
            "suspend" => PreemptMode::Suspend,
            "cancel" => PreemptMode::Cancel,
            v => return Err(bad("preempt_mode", v, "requeue, suspend, cancel")),
        };
        let quota = match r.quota.as_str() {
            "enforce" => QuotaMode::Enforce,
            "max_only" => QuotaMode::MaxOnly,
            "off" => QuotaMode::Off,
            v => return Err(bad("quota", v, "enforce, max_only, off")),
        };
        let passes = match r.passes.as_str() {
            "grid" => Passes::Grid,
            "events" => Passes::Events,
            v => return Err(bad("passes", v, "grid, events")),
        };
        let priority = match r.priority.as_str() {
            "computed" => PriorityMode::Computed,
            "source" => PriorityMode::Source,
            v => return Err(bad("priority", v, "computed, source")),
        };
        let runtimes = match r.runtimes.as_str() {
            "limit" => Runtimes::Limit,
            "estimate" => Runtimes::Estimate,
            v => return Err(bad("runtimes", v, "limit, estimate")),
        };
        let w = &r.weights;
        for (name, x) in [
            ("weights.age", w.age),
            ("weights.fairshare", w.fairshare),
            ("weights.qos", w.qos),
            ("weights.job_size", w.job_size),
            ("weights.partition", w.partition),
        ] {
            if !x.is_finite() || x < 0.0 {
                return Err(format!(
                    "policy.{name}: must be a finite number >= 0, not {x}"
                ));
            }
        }
        for (name, x) in [
            ("max_age", r.max_age),
            ("usage_half_life", r.usage_half_life),
            ("bf_window", r.bf_window),
            ("bf_resolution", r.bf_resolution),
        ] {
            if !x.is_finite() || x <= 0.0 {
                return Err(format!(
                    "policy.{name}: must be a finite number > 0, not {x}"
                ));
            }
        }
        if !r.fairshare_period.is_finite() || r.fairshare_period < 0.0 {
            return Err(format!(
                "policy.fairshare_period: must be a finite number >= 0, not {}",
                r.fairshare_period
            ));
        }
        for (name, x) in [
            ("pass_delay", r.pass_delay),
            ("requeue_delay", r.requeue_delay),
        ] {
            if !x.is_finite() || x < 0.0 {
                return Err(format!(
                    "policy.{name}: must be a finite number >= 0, not {x}"
                ));
            }
        }
        if r.bf_max_job_test < 1 {
            return Err(format!(
                "policy.bf_max_job_test: must be >= 1, not {}",
                r.bf_max_job_test
            ));
        }
        Ok(Policy {
            w: r.weights,
            max_age: r.max_age,
            favor_small: r.favor_small,
            fairshare,
            half_life: r.usage_half_life,
            backfill,
            bf_window: r.bf_window,
            bf_resolution: r.bf_resolution,
            bf_max_job_test: r.bf_max_job_test as usize,
            placement,
            preemption: r.preemption,
            preempt_mode,
            strict_team_fifo: r.strict_team_fifo,
            quota,
            passes,
            main_pass: r.main_pass,
            pass_delay: r.pass_delay,
            priority,
            runtimes,
            fairshare_period: r.fairshare_period,
            reserve_busy_first: r.reserve_busy_first,
            reserve_whole_nodes: r.reserve_whole_nodes,
            floor_to_grid: r.floor_to_grid,
            requeue_delay: r.requeue_delay,
            pass_jitter_seed: 0,
        })
    }
}
