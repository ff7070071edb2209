//! `prune_json_keys(data, member, keep) -> bytes`, the GIL released while it scans.
//!
//! There is no module of its own here: scheduler_core's extension registers this
//! function (`quotatop.scheduler_core._core.prune_json_keys`), so the one build of the Python
//! package (`pip install .` or `make build`) gives it.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Keep only `keep` in each object of the top-level array `member`; ValueError with
/// the byte offset when `data` is not JSON.
#[pyfunction]
pub fn prune_json_keys<'py>(
    py: Python<'py>,
    data: &[u8],
    member: &str,
    keep: Vec<String>,
) -> PyResult<Bound<'py, PyBytes>> {
    let keys: Vec<&[u8]> = keep.iter().map(|k| k.as_bytes()).collect();
    let parts = py
        .detach(|| crate::prune_parts(data, member.as_bytes(), &keys))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let len = parts.iter().map(Vec::len).sum();
    PyBytes::new_with(py, len, |buf| {
        let mut at = 0;
        for part in &parts {
            buf[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
        Ok(())
    })
}
