"""Predicted start, nodes and binding constraint per pending job.

The scheduling core's ``predict`` is being built alongside the UI; this adapter
calls it only when ``scheduler_core`` has it, and otherwise (or if it fails)
falls back to what the source itself says: ``Job.estimated_start`` and the
pending reason. Views never import the core directly.
"""

from __future__ import annotations

import inspect
import weakref
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from quotatop.collectors.model import Job, Snapshot, to_msgpack
from quotatop.tui.reasons import in_words

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
    runtime: float | None = None  # the run time the prediction let the job run
    runtime_basis: str = ""  # "estimate: …" or "time limit"


def core_predict() -> Any | None:
    try:
        from quotatop import scheduler_core
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
    # The core's rows carry the reason in words and, since it grew one, a short
    # ``binding`` ("nodes", "QoS high GrpTRES gpu"): the view shows the words.
    words = _field(entry, "reason") if isinstance(entry, msgspec.Struct) else None
    return Prediction(
        start=float(start) if start is not None else None,
        nodes=tuple(str(n) for n in (_field(entry, "nodes") or ())),
        binding=str(words or _field(entry, "binding", "constraint", "binding_constraint", "reason")
                    or ""),
        preempts=tuple(str(p) for p in preempts if p is not None),
        factors={k: float(v) for k, v in factors.items() if isinstance(v, int | float)},
        origin=CORE,
        runtime=_number(_field(entry, "runtime")),
        runtime_basis=str(_field(entry, "runtime_basis") or ""))


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


class _Head(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """The leading fields of the core's Prediction row: all an index needs."""

    job_id: str
    state: str
    start: float | None


HEAD_FIELDS = _Head.__struct_fields__
_decode_head = msgspec.msgpack.Decoder(_Head).decode
NO_START = float("nan")  # in CoreAnswers' start column: the core gave no start


class CoreAnswers(Mapping[str, Prediction]):
    """The core's entries by job id, in its order, converted on lookup.

    From the core itself the entries are its msgpack rows, kept as the one bytes
    object they crossed in (``PredictionBatch``): 100k decoded Predictions would
    hold ~65 MB, the rows ~18 MB, and the views only ever show a screenful. The
    index (job id → row) and the start column (for sorting by start) are built
    once, in the predict worker, from each row's first fields."""

    def __init__(self, entries: Sequence[Any], index: dict[str, int], starts: array[float]):
        self._entries = entries
        self._index = index
        self._starts = starts

    @classmethod
    def from_entries(cls, entries: Sequence[Any]) -> CoreAnswers:
        """Any list of entries (dicts or attribute objects), e.g. a test double's."""
        kept, index, starts = [], {}, array("d")
        for entry in entries:
            job_id = job_id_of(entry)
            if job_id is None:
                continue
            start = _field(entry, "start", "predicted_start", "start_time")
            index[job_id] = len(kept)
            kept.append(entry)
            starts.append(NO_START if start is None else float(start))
        return cls(kept, index, starts)

    @classmethod
    def from_rows(cls, rows: bytes, offsets: bytes) -> CoreAnswers:
        """The core's rows (``predict_rows_msgpack``), decoded when looked up."""
        from quotatop import scheduler_core

        batch = scheduler_core.PredictionBatch(rows, offsets)
        fields = scheduler_core.Prediction.__struct_fields__
        if fields[:len(HEAD_FIELDS)] != HEAD_FIELDS:  # another row layout: read it whole
            return cls(batch, {p.job_id: k for k, p in enumerate(batch)},
                       array("d", (NO_START if p.start is None else p.start for p in batch)))
        buf, off = memoryview(rows), memoryview(offsets).cast("Q")
        index: dict[str, int] = {}
        starts = array("d", bytes(8 * len(batch)))
        for k in range(len(batch)):
            head = _decode_head(buf[off[k]:off[k + 1]])
            index[head.job_id] = k
            starts[k] = NO_START if head.start is None else head.start
        return cls(batch, index, starts)

    def __getitem__(self, job_id: str) -> Prediction:
        return parse_entry(self._entries[self._index[job_id]])

    def get(self, job_id: str, default: Any = None) -> Any:  # type: ignore[override]
        k = self._index.get(job_id)
        return default if k is None else parse_entry(self._entries[k])

    def start_of(self, job_id: str) -> float | None:
        """Just the start, from the start column (sorting 100k rows decodes none)."""
        start = self._starts[self._index[job_id]]
        return None if start != start else start  # NaN: no start

    def rank(self, job_id: str) -> int | None:
        """The job's place in the core's order (the scheduler's order)."""
        return self._index.get(job_id)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


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
        p = self.by_id.get(job.id)
        return p.start if p is not None else job.estimated_start  # no Prediction built

    def rank(self, job: Job) -> int | None:
        """The job's place in the core's order, if the core answered for it."""
        return self.by_id.rank(job.id) if isinstance(self.by_id, CoreAnswers) else None


def core_available() -> bool:
    return core_predict() is not None


def predict(snap: Snapshot) -> Predictions:
    """Ask the core (when it has ``predict``); never raises — a failure is a note."""
    return predict_taken([snap])


def predict_taken(box: list[Snapshot]) -> Predictions:
    """``predict`` on the snapshot in ``box``, which it empties and lets go of
    once encoded: a newer snapshot may replace it on screen while the core
    computes, and then it need not stay alive (100k jobs: ~100 MB).

    No size cutoff: the core releases the GIL while it computes, so even a
    minute-long answer at 100k pending jobs runs beside a responsive UI in its
    own worker (re-measure with ``bench/tui.py``)."""
    fn = core_predict()
    snap = box.pop()
    taken_at = snap.taken_at
    if fn is None:
        return Predictions()
    try:
        policy = _site_policy(snap)
        data = to_msgpack(snap)
        del snap
        rows = _core_rows(fn, data, policy)
        if rows is not None:
            del data  # the core is done with it: not held while the index is built
            answers = CoreAnswers.from_rows(*rows)
        else:
            result = fn(data)
            if isinstance(result, Mapping):
                result = [dict(v, job_id=k) if isinstance(v, Mapping) else v
                          for k, v in result.items()]
            answers = CoreAnswers.from_entries(list(result or ()))
    except Exception as e:  # the core is optional here; its failure must not stop the view
        return Predictions(error=f"core prediction failed: {e}", taken_at=taken_at)
    return Predictions(answers, taken_at=taken_at)


def _site_policy(snap: Snapshot) -> bytes | None:
    """The policy of the snapshot's own scheduler (its weights, backfill and
    preemption settings), so that the view predicts what *this* scheduler does."""
    try:
        from quotatop.scheduler_core.policy import Policy, encode_policy
        from quotatop.scheduler_core.site import site_policy
    except ImportError:  # a core without the site mapping: its defaults
        return None
    stated = snap.meta.get("core_policy")
    if stated:  # a demo: the core itself is the scheduler, under this policy
        try:
            return encode_policy(msgspec.json.decode(stated, type=Policy))
        except msgspec.MsgspecError:  # a recording from another version: the site's
            pass
    return encode_policy(site_policy(snap))


def _core_rows(fn: Any, data: bytes, policy: bytes | None = None) -> tuple[bytes, bytes] | None:
    """The core's own ``predict`` has a twin that leaves the answer as msgpack
    rows; anything else in its place (a test double, an older build) is called
    as it is."""
    from quotatop import scheduler_core

    rows_fn = getattr(scheduler_core, "predict_rows_msgpack", None)
    if rows_fn is None or getattr(fn, "__module__", None) != scheduler_core.__name__ \
            or not hasattr(scheduler_core, "PredictionBatch"):
        return None
    from quotatop.scheduler_core.policy import encode_policy

    horizon = inspect.signature(fn).parameters["horizon"].default  # predict's own default
    return rows_fn(data, policy if policy is not None else encode_policy(None), float(horizon))


@dataclass(frozen=True, slots=True)
class StartWindow:
    """A job's start over many plans with sampled run times (epoch seconds; None:
    beyond the horizon in that share of them)."""

    p10: float | None
    p50: float | None
    p90: float | None


def start_windows(snap: Snapshot, samples: int | None = None) -> dict[str, StartWindow]:
    """Every pending job's start window under the policy the view predicts with. Made
    on demand (the job detail asks, in a worker): samples times one plan is too much to
    spend on every refresh of a shared login node. Empty when the core cannot. Plans:
    as many as quotatop predict's default gives the queue (scheduler_core.auto_samples)."""
    try:
        from quotatop import scheduler_core

        if samples is None:
            samples = scheduler_core.auto_samples(
                sum(1 for j in snap.jobs if j.state in ("pending", "running")))
        windows = scheduler_core.predict_windows(
            to_msgpack(snap), _site_policy(snap), samples=samples)
    except (ImportError, AttributeError, ValueError):
        return {}
    return {w.job_id: StartWindow(w.p10, w.p50, w.p90) for w in windows}


# The priority factors the core reports, in the order the Priority view draws them.
FACTOR_KEYS = ("age", "fairshare", "qos", "job_size", "partition")

# The largest sum of the core's factors, per answer: a repaint (a cursor move, a resize)
# must not decode 100k rows again. Held weakly: the answer it was read from may go.
_core_tops: dict[int, tuple[weakref.ref[Any], float]] = {}


def core_top(preds: Predictions) -> float:
    """The largest sum of the core's factors over every job it answered for."""
    if not preds.from_core:
        return 0.0
    by_id = preds.by_id
    cached = _core_tops.get(id(by_id))
    if cached is not None and cached[0]() is by_id:
        return cached[1]
    top = max((sum(max(0.0, float(f.get(k, 0.0))) for k in FACTOR_KEYS)
               for f in (by_id[i].factors for i in by_id)), default=0.0)
    try:
        ref = weakref.ref(by_id)
    except TypeError:  # a plain dict (a test double's answer): small, not cached
        return top
    _core_tops.clear()
    _core_tops[id(by_id)] = (ref, top)
    return top
