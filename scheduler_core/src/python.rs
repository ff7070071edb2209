//! The thin PyO3 layer: argument conversion and error mapping only. Every error
//! becomes a Python `ValueError` with one line naming the object; every entry
//! point runs under `catch_unwind`, so no panic reaches Python.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::fifo;
use crate::policy::Policy;
use crate::{api, windows, wire};

// The owned serde mirror of the snapshot, no part of scheduling: only
// `snapshot_stats_owned` decodes with it, as bench/crossing.py's baseline.
mod owned_snapshot;
use owned_snapshot::Snapshot;

fn value_error(msg: String) -> PyErr {
    PyValueError::new_err(msg)
}

/// Runs `f` with the GIL released; a panic becomes a ValueError, not a crash.
fn guarded<T: Send>(
    py: Python<'_>,
    what: &str,
    f: impl FnOnce() -> Result<T, String> + Send,
) -> PyResult<T> {
    let r = py.detach(|| catch_unwind(AssertUnwindSafe(f)));
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(msg)) => Err(value_error(msg)),
        Err(p) => {
            let detail = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(value_error(format!(
                "{what}: internal error in the scheduling core: {detail}"
            )))
        }
    }
}

fn quiet_panics() {
    // The default hook prints a backtrace note to stderr; the ValueError says it all.
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::env::var_os("QUOTATOP_CORE_PANIC_TRACE").is_some() {
                prev(info);
            }
        }));
    });
}

/// Predictions for every pending job, msgpack-encoded (see types.py).
#[pyfunction]
fn predict_msgpack<'py>(
    py: Python<'py>,
    snapshot: &[u8],
    policy: &[u8],
    horizon: f64,
) -> PyResult<Bound<'py, PyBytes>> {
    let out = guarded(py, "predict", || {
        let p = Policy::from_msgpack(policy)?;
        api::predict(snapshot, &p, horizon)
    })?;
    Ok(PyBytes::new(py, &out))
}

/// Start windows of every pending job, msgpack rows (id, p10, p50, p90): the plan made
/// `samples` times with run times drawn from each job's history (src/windows.rs).
#[pyfunction]
fn predict_windows_msgpack<'py>(
    py: Python<'py>,
    snapshot: &[u8],
    policy: &[u8],
    horizon: f64,
    samples: u32,
    seed: u64,
) -> PyResult<Bound<'py, PyBytes>> {
    let out = guarded(py, "predict", || {
        let p = Policy::from_msgpack(policy)?;
        windows::predict_windows(snapshot, &p, horizon, samples, seed)
    })?;
    Ok(PyBytes::new(py, &out))
}

/// Every team's fair-share at the snapshot, msgpack rows (see types.py FairShareRow).
#[pyfunction]
fn fairshare_msgpack<'py>(
    py: Python<'py>,
    snapshot: &[u8],
    policy: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let out = guarded(py, "fairshare", || {
        let p = Policy::from_msgpack(policy)?;
        api::fairshare(snapshot, &p)
    })?;
    Ok(PyBytes::new(py, &out))
}

/// Predictions as (concatenated msgpack rows, little-endian u64 row offsets):
/// Python decodes a row only when it is read (scheduler_core.PredictionBatch).
#[pyfunction]
fn predict_rows_msgpack<'py>(
    py: Python<'py>,
    snapshot: &[u8],
    policy: &[u8],
    horizon: f64,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let (buf, offsets) = guarded(py, "predict", || {
        let p = Policy::from_msgpack(policy)?;
        api::predict_rows(snapshot, &p, horizon)
    })?;
    let off: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
    Ok((PyBytes::new(py, &buf), PyBytes::new(py, &off)))
}

/// A simulation result, msgpack-encoded (see types.py).
#[pyfunction]
fn simulate_msgpack<'py>(
    py: Python<'py>,
    input: &[u8],
    policy: &[u8],
) -> PyResult<Bound<'py, PyBytes>> {
    let out = guarded(py, "simulate", || {
        let p = Policy::from_msgpack(policy)?;
        api::simulate(input, &p)
    })?;
    Ok(PyBytes::new(py, &out))
}

/// Checks a policy the way predict and simulate do; raises ValueError naming the setting.
#[pyfunction]
fn check_policy(py: Python<'_>, policy: &[u8]) -> PyResult<()> {
    guarded(py, "policy", || Policy::from_msgpack(policy).map(|_| ()))
}

/// Panics inside the guard: proves that a panic surfaces as ValueError.
#[pyfunction]
fn _panic_for_test(py: Python<'_>) -> PyResult<()> {
    guarded(py, "_panic_for_test", || -> Result<(), String> {
        let v: Vec<u8> = Vec::new();
        let i = v.len() + 3;
        Err(format!("{}", v[i]))
    })
}

/// Runs the seed article's per-team FIFO over a timeline.
///
/// `caps` lists (team, cap) in display order; `events` lists (op, team,
/// amount) with op "submit" or "finish". Returns (steps, granted) where each
/// step is (result, [(team, used, queued), ...]) and result is "running",
/// "queued" or the number of jobs a finish started.
#[pyfunction]
fn fifo_simulate(
    py: Python<'_>,
    caps: Vec<(String, f64)>,
    events: Vec<(String, String, f64)>,
) -> PyResult<(Vec<(Py<PyAny>, Vec<(String, f64, usize)>)>, u64)> {
    let mut parsed = Vec::with_capacity(events.len());
    for (i, (op, team, amount)) in events.into_iter().enumerate() {
        parsed.push(match op.as_str() {
            "submit" => fifo::Event::Submit { team, amount },
            "finish" => fifo::Event::Finish { team, amount },
            other => return Err(value_error(format!("step {}: unknown op {other:?}", i + 1))),
        });
    }
    let (steps, granted) = guarded(py, "fifo_simulate", || fifo::run(&caps, &parsed))?;
    let mut out = Vec::with_capacity(steps.len());
    for step in steps {
        let result: Py<PyAny> = match step.outcome {
            fifo::Outcome::Running => "running".into_pyobject(py)?.into_any().unbind(),
            fifo::Outcome::Queued => "queued".into_pyobject(py)?.into_any().unbind(),
            fifo::Outcome::Started(n) => n.into_pyobject(py)?.into_any().unbind(),
        };
        let teams = step
            .teams
            .into_iter()
            .map(|(t, s)| (t, s.used, s.queued))
            .collect();
        out.push((result, teams));
    }
    Ok((out, granted))
}

/// Decodes a msgpack snapshot the lean way the core does and returns counts;
/// used to measure the crossing.
#[pyfunction]
fn snapshot_stats<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
) -> PyResult<Bound<'py, PyDict>> {
    let bytes = data.as_bytes();
    let (nodes, jobs, teams, pending, gpus) = guarded(py, "snapshot_stats", || {
        let snap = wire::decode_snapshot(bytes)?;
        let gpus: f64 = snap
            .jobs
            .iter()
            .filter_map(|j| j.request.as_ref().and_then(|r| r.res.v[wire::GPU]))
            .sum();
        let pending = snap.jobs.iter().filter(|j| j.state == "pending").count();
        Ok((
            snap.nodes.len(),
            snap.jobs.len(),
            snap.teams.len(),
            pending,
            gpus,
        ))
    })?;
    let d = PyDict::new(py);
    d.set_item("nodes", nodes)?;
    d.set_item("jobs", jobs)?;
    d.set_item("teams", teams)?;
    d.set_item("pending", pending)?;
    d.set_item("requested_gpus", gpus)?;
    Ok(d)
}

/// The same counts through the full owned serde mirror (python/owned_snapshot.rs): the
/// allocation-heavy decode, kept as the crossing benchmark's baseline.
#[pyfunction]
fn snapshot_stats_owned<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
) -> PyResult<Bound<'py, PyDict>> {
    let bytes = data.as_bytes();
    let (nodes, jobs) = guarded(py, "snapshot_stats_owned", || {
        let snap = Snapshot::from_msgpack(bytes)?;
        Ok((snap.nodes.len(), snap.jobs.len()))
    })?;
    let d = PyDict::new(py);
    d.set_item("nodes", nodes)?;
    d.set_item("jobs", jobs)?;
    Ok(d)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    quiet_panics();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(fifo_simulate, m)?)?;
    m.add_function(wrap_pyfunction!(snapshot_stats, m)?)?;
    m.add_function(wrap_pyfunction!(snapshot_stats_owned, m)?)?;
    m.add_function(wrap_pyfunction!(predict_msgpack, m)?)?;
    m.add_function(wrap_pyfunction!(fairshare_msgpack, m)?)?;
    m.add_function(wrap_pyfunction!(predict_windows_msgpack, m)?)?;
    m.add_function(wrap_pyfunction!(predict_rows_msgpack, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_msgpack, m)?)?;
    m.add_function(wrap_pyfunction!(check_policy, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    // Generic JSON key pruning (json_prune/: keep only the listed keys in the objects
    // of one top-level array), no part of scheduling: it rides in this extension so that
    // the one build of the Python package gives it, and a Python caller that decodes
    // large JSON documents imports it from here.
    m.add_function(wrap_pyfunction!(json_prune::python::prune_json_keys, m)?)?;
    Ok(())
}
