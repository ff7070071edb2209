"""Predicted start, nodes and binding constraint per pending job.

The scheduling core's ``predict`` is being built alongside the UI; this adapter
calls it only when ``scheduler_core`` has it, and otherwise (or if it fails)
falls back to what the source itself says: ``Job.estimated_start`` and the
pending reason. Views never import the core directly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from collectors.model import Job, Snapshot, to_msgpack
from tui.reasons import in_words

CORE = "core"
SOURCE = "source estimate"


@dataclass(frozen=True, slots=True)
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


def job_id_of(entry: Any) -> str | None:
    job_id = _field(entry, "job_id", "id", "job")
    return None if job_id is None else str(job_id)


def parse_entry(entry: Any) -> Prediction:
    start = _field(entry, "start", "predicted_start", "start_time")
    factors = _field(entry, "factors", "priority_factors") or {}
    if isinstance(factors, msgspec.Struct):
        factors = msgspec.structs.asdict(factors)
    elif not isinstance(factors, Mapping):
        factors = {}
    preempts = [p if isinstance(p, str) else _field(p, "job_id", "id")
                for p in (_field(entry, "preemptions", "preempts") or ())]
    return Prediction(
        start=float(start) if start is not None else None,
        nodes=tuple(str(n) for n in (_field(entry, "nodes") or ())),
        binding=str(_field(entry, "binding", "constraint", "binding_constraint", "reason") or ""),
        preempts=tuple(str(p) for p in preempts if p is not None),
        factors={k: float(v) for k, v in factors.items() if isinstance(v, int | float)},
        origin=CORE)


class CoreAnswers(Mapping[str, Prediction]):
    """The core's entries by job id, in its order, converted on lookup: at 100k
    pending jobs a converted copy of every entry would cost tens of MB, and the
    views only look up the rows on screen."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self._raw = raw

    def __getitem__(self, job_id: str) -> Prediction:
        return parse_entry(self._raw[job_id])

    def get(self, job_id: str, default: Any = None) -> Any:  # type: ignore[override]
        entry = self._raw.get(job_id)
        return default if entry is None else parse_entry(entry)

    def start_of(self, job_id: str) -> float | None:
        entry = self._raw[job_id]
        # The core's Struct has .start: skip the generic lookup (sorting 100k rows).
        start = getattr(entry, "start", None) if not isinstance(entry, Mapping) else \
            _field(entry, "start", "predicted_start", "start_time")
        return float(start) if start is not None else None

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def from_source(job: Job) -> Prediction:
    return Prediction(start=job.estimated_start, nodes=tuple(job.nodes),
                      binding=in_words(job.reason), origin=SOURCE)


class Predictions:
    """Lookup per job: the core's answer when it gave one, else the source's.

    ``taken_at`` is the time of the snapshot the core answered for: at 100k
    pending jobs its answer may arrive a few refreshes later and is still shown
    (matched by job id) until a newer one lands."""

    def __init__(self, by_id: Mapping[str, Prediction] | None = None, error: str | None = None,
                 pending: bool = False, taken_at: float | None = None):
        self.by_id: Mapping[str, Prediction] = by_id or {}  # in the core's order
        self.error = error
        self.pending = pending  # the core is computing; older answers or source estimates
        self.taken_at = taken_at

    @property
    def from_core(self) -> bool:
        return bool(self.by_id)

    def updating(self) -> Predictions:
        """The same answers, marked as being recomputed for a newer snapshot."""
        return Predictions(self.by_id, error=self.error, pending=True, taken_at=self.taken_at)

    def get(self, job: Job) -> Prediction:
        p = self.by_id.get(job.id)
        return p if p is not None else from_source(job)

    def start(self, job: Job) -> float | None:
        """Just the predicted start (sorting 100k rows needs nothing else)."""
        if isinstance(self.by_id, CoreAnswers):
            try:
                return self.by_id.start_of(job.id)
            except KeyError:
                return job.estimated_start
        return self.get(job).start


def core_available() -> bool:
    return core_predict() is not None


def predict(snap: Snapshot) -> Predictions:
    """Ask the core (when it has ``predict``); never raises — a failure is a note.

    No size cutoff: the core releases the GIL while it computes, so even a
    minute-long answer at 100k pending jobs runs beside a responsive UI in its
    own worker (re-measure with ``bench/tui.py``)."""
    fn = core_predict()
    if fn is None:
        return Predictions()
    try:
        result = fn(to_msgpack(snap))
    except Exception as e:  # the core is optional here; its failure must not stop the view
        return Predictions(error=f"core prediction failed: {e}", taken_at=snap.taken_at)
    if isinstance(result, Mapping):
        result = [dict(v, job_id=k) if isinstance(v, Mapping) else v for k, v in result.items()]
    raw: dict[str, Any] = {}
    for entry in result or ():
        job_id = job_id_of(entry)
        if job_id is not None:
            raw[job_id] = entry
    return Predictions(CoreAnswers(raw), taken_at=snap.taken_at)
