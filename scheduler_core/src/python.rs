//! The thin PyO3 layer: argument conversion and error mapping only. Every error
//! becomes a Python `ValueError` with one line naming the object; no panic may
//! reach Python.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::fifo;
use crate::model::Snapshot;

fn value_error(msg: String) -> PyErr {
    PyValueError::new_err(msg)
}

/// Runs the seed article's per-team FIFO over a timeline.
///
/// `caps` lists (team, cap) in display order; `events` lists (op, team,
/// amount) with op "submit" or "finish". Returns (steps, granted) where each
/// step is (result, [(team, used, queued), ...]) and result is "running",
/// "queued" or the number of jobs a finish started.
#[pyfunction]
#[allow(clippy::type_complexity)]
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
    let (steps, granted) = fifo::run(&caps, &parsed).map_err(value_error)?;
    let mut out = Vec::with_capacity(steps.len());
    for step in steps {
        let result: Py<PyAny> = match step.outcome {
            fifo::Outcome::Running => "running".into_pyobject(py)?.into_any().unbind(),
            fifo::Outcome::Queued => "queued".into_pyobject(py)?.into_any().unbind(),
            fifo::Outcome::Started(n) => n.into_pyobject(py)?.into_any().unbind(),
        };
        let teams = step.teams.into_iter().map(|(t, s)| (t, s.used, s.queued)).collect();
        out.push((result, teams));
    }
    Ok((out, granted))
}

/// Decodes a msgpack snapshot and returns counts; used to measure the crossing.
#[pyfunction]
fn snapshot_stats<'py>(py: Python<'py>, data: &Bound<'py, PyBytes>) -> PyResult<Bound<'py, PyDict>> {
    let snap = Snapshot::from_msgpack(data.as_bytes()).map_err(value_error)?;
    let d = PyDict::new(py);
    d.set_item("nodes", snap.nodes.len())?;
    d.set_item("jobs", snap.jobs.len())?;
    d.set_item("teams", snap.teams.len())?;
    d.set_item("pending", snap.jobs.iter().filter(|j| j.state == "pending").count())?;
    let gpus: f64 = snap.jobs.iter().filter_map(|j| j.request.get("gpu")).sum();
    d.set_item("requested_gpus", gpus)?;
    Ok(d)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(fifo_simulate, m)?)?;
    m.add_function(wrap_pyfunction!(snapshot_stats, m)?)?;
    Ok(())
}
