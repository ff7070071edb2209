"""Predicted start, nodes and binding constraint per pending job.

The scheduling core's ``predict`` is being built alongside the UI; this adapter
calls it only when ``scheduler_core`` has it, and otherwise (or if it fails)
falls back to what the source itself says: ``Job.estimated_start`` and the
pending reason. Views never import the core directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from collectors.model import PENDING, Job, Snapshot, to_msgpack
from tui.reasons import in_words

CORE = "core"
SOURCE = "source estimate"


@dataclass(frozen=True)
class Prediction:
    start: float | None
    nodes: tuple[str, ...] = ()
    binding: str = ""  # the constraint that decides the start, in words
    preempts: tuple[str, ...] = ()
    factors: Mapping[str, float] = field(default_factory=dict)
    origin: str = SOURCE


def core_predict() -> Any | None:
    try:
        import scheduler_core
    except ImportError:
        return None
    return getattr(scheduler_core, "predict", None)


def _field(entry: Any, *names: str) -> Any:
    for n in names:
        if isinstance(entry, Mapping):
            if n in entry:
                return entry[n]
        elif hasattr(entry, n):
            return getattr(entry, n)
    return None


def _parse(entry: Any) -> tuple[str, Prediction] | None:
    job_id = _field(entry, "job_id", "id", "job")
    if job_id is None:
        return None
    start = _field(entry, "start", "predicted_start", "start_time")
    factors = _field(entry, "factors", "priority_factors") or {}
    if isinstance(factors, msgspec.Struct):
        factors = msgspec.structs.asdict(factors)
    elif not isinstance(factors, Mapping):
        factors = {}
    preempts = [p if isinstance(p, str) else _field(p, "job_id", "id")
                for p in (_field(entry, "preemptions", "preempts") or ())]
    return str(job_id), Prediction(
        start=float(start) if start is not None else None,
        nodes=tuple(str(n) for n in (_field(entry, "nodes") or ())),
        binding=str(_field(entry, "binding", "constraint", "binding_constraint", "reason") or ""),
        preempts=tuple(str(p) for p in preempts if p is not None),
        factors={k: float(v) for k, v in factors.items() if isinstance(v, int | float)},
        origin=CORE)


def from_source(job: Job) -> Prediction:
    return Prediction(start=job.estimated_start, nodes=tuple(job.nodes),
                      binding=in_words(job.reason), origin=SOURCE)


class Predictions:
    """Lookup per job: the core's answer when it gave one, else the source's."""

    def __init__(self, by_id: dict[str, Prediction] | None = None, error: str | None = None,
                 pending: bool = False):
        self.by_id = by_id or {}  # in the core's order: the order it will start them
        self.error = error
        self.pending = pending  # the core is still computing; source estimates meanwhile

    @property
    def from_core(self) -> bool:
        return bool(self.by_id)

    def get(self, job: Job) -> Prediction:
        p = self.by_id.get(job.id)
        return p if p is not None else from_source(job)


# Above this many pending jobs the core is not asked: at 100k it currently takes
# over a minute and holds the GIL, which would freeze the UI thread meanwhile.
MAX_PENDING_FOR_CORE = 20_000


def core_available() -> bool:
    return core_predict() is not None


def predict(snap: Snapshot) -> Predictions:
    """Ask the core (when it has ``predict``); never raises — a failure is a note."""
    fn = core_predict()
    if fn is None:
        return Predictions()
    pending = sum(1 for j in snap.jobs if j.state == PENDING)
    if pending > MAX_PENDING_FOR_CORE:
        return Predictions(error=f"core prediction skipped: {pending:,} pending jobs "
                                 f"> {MAX_PENDING_FOR_CORE:,}")
    try:
        result = fn(to_msgpack(snap))
    except Exception as e:  # the core is optional here; its failure must not stop the view
        return Predictions(error=f"core prediction failed: {e}")
    if isinstance(result, Mapping):
        result = [dict(v, job_id=k) if isinstance(v, Mapping) else v for k, v in result.items()]
    out: dict[str, Prediction] = {}
    for entry in result or ():
        parsed = _parse(entry)
        if parsed:
            out[parsed[0]] = parsed[1]
    return Predictions(out)
