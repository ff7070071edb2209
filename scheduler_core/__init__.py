"""quotatop's scheduling core (Rust, via PyO3). See ``_core.pyi`` for the raw API.

``predict`` and ``simulate`` take msgpack (or model Structs, encoded here) and
return typed msgspec Structs from ``quotatop.scheduler_core.types``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import overload

import msgspec

from quotatop.scheduler_core._core import (
    __version__,
    check_policy,
    fairshare_msgpack,
    fifo_simulate,
    predict_msgpack,
    predict_rows_msgpack,
    predict_windows_msgpack,
    simulate_msgpack,
    snapshot_stats,
)
from quotatop.scheduler_core.policy import Policy, PriorityWeights, encode_policy
from quotatop.scheduler_core.types import (
    Factors,
    FairShareRow,
    JobOutcome,
    Metrics,
    Prediction,
    Preemption,
    SimEvent,
    SimJob,
    SimResult,
    SimResultWire,
    StartWindow,
    UsageSample,
)

__all__ = [
    "Factors",
    "FairShareRow",
    "JobOutcome",
    "Metrics",
    "Policy",
    "Prediction",
    "PredictionBatch",
    "Preemption",
    "PriorityWeights",
    "SimEvent",
    "SimJob",
    "SimResult",
    "StartWindow",
    "UsageSample",
    "__version__",
    "auto_samples",
    "check_policy",
    "fairshare",
    "fifo_simulate",
    "predict",
    "predict_batch",
    "predict_windows",
    "simulate",
    "simulate_msgpack",
    "snapshot_stats",
]

_encoder = msgspec.msgpack.Encoder()
_predictions = msgspec.msgpack.Decoder(list[Prediction])
_sim_result = msgspec.msgpack.Decoder(SimResultWire)
_prediction = msgspec.msgpack.Decoder(Prediction)
_fairshare = msgspec.msgpack.Decoder(list[FairShareRow])
_windows = msgspec.msgpack.Decoder(list[StartWindow])


class PredictionBatch(Sequence[Prediction]):
    """predict's answer kept as the core's msgpack rows: crossing back costs one
    bytes object, and a Prediction is decoded only when it is read (50k rows
    decoded at once cost tens of ms; a view reads the few it shows)."""

    __slots__ = ("_buf", "_offsets")

    def __init__(self, rows: bytes, offsets: bytes):
        self._buf = memoryview(rows)
        self._offsets = memoryview(offsets).cast("Q")  # little-endian u64, as the core writes

    def __len__(self) -> int:
        return max(len(self._offsets) - 1, 0)

    @overload
    def __getitem__(self, i: int) -> Prediction: ...
    @overload
    def __getitem__(self, i: slice) -> list[Prediction]: ...
    def __getitem__(self, i: int | slice) -> Prediction | list[Prediction]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("prediction index out of range")
        return _prediction.decode(self._buf[self._offsets[i]:self._offsets[i + 1]])

    def __iter__(self) -> Iterator[Prediction]:
        buf, off, dec = self._buf, self._offsets, _prediction.decode
        for k in range(len(self)):
            yield dec(buf[off[k]:off[k + 1]])

    def to_list(self) -> list[Prediction]:
        return list(self)


@contextlib.contextmanager
def _one_line_errors() -> Iterator[None]:
    """The core's ValueError with control characters escaped. Found by tests/fuzz: its
    messages quote names as they are ("node \"a<newline>b\": ..."), and a name with a
    line break (a Prometheus label, an escaped JSON string) made a message of two lines
    where the TUI's banner and the CLI want one."""
    try:
        yield
    except ValueError as exc:
        text = str(exc)
        if text.isprintable():
            raise
        raise ValueError("".join(c if c.isprintable() else repr(c)[1:-1] for c in text)) from None


def predict(snapshot: bytes | msgspec.Struct, policy: Policy | bytes | None = None,
            horizon: float = 86400.0) -> list[Prediction]:
    """For each pending job of the snapshot, in priority order: when and where it
    starts (None beyond ``horizon`` seconds), why it waits, whom it preempts.

    Raises ValueError naming the object for an inconsistent snapshot or policy."""
    data = snapshot if isinstance(snapshot, bytes) else _encoder.encode(snapshot)
    with _one_line_errors():
        return _predictions.decode(predict_msgpack(data, encode_policy(policy), float(horizon)))


def fairshare(snapshot: bytes | msgspec.Struct,
              policy: Policy | bytes | None = None) -> list[FairShareRow]:
    """Every team's fair-share at the snapshot under ``policy``: the factor its
    jobs get and the shares and usage it comes from, in the snapshot's team order."""
    data = snapshot if isinstance(snapshot, bytes) else _encoder.encode(snapshot)
    with _one_line_errors():
        return _fairshare.decode(fairshare_msgpack(data, encode_policy(policy)))


def predict_batch(snapshot: bytes | msgspec.Struct, policy: Policy | bytes | None = None,
                  horizon: float = 86400.0) -> PredictionBatch:
    """``predict`` with the answer decoded lazily, row by row, as it is read."""
    data = snapshot if isinstance(snapshot, bytes) else _encoder.encode(snapshot)
    with _one_line_errors():
        return PredictionBatch(*predict_rows_msgpack(data, encode_policy(policy), float(horizon)))


# Start windows are quantiles of sampled plans: with 16 plans the p10 and p90 of one
# job move by a fifth of the window from one draw of the samples to the next (the
# fidelity dumps, re-scored at 16 and 200 samples, held 79 % and 77-92 % of the actual
# starts, job by job in different places). A plan costs about linearly in the jobs, and
# a 5k-job queue's 16 plans take ~0.9 s (bench/core.py), so a queue of n jobs gets as
# many plans as the same budget buys, from 16 up to 256.
SAMPLES_MIN, SAMPLES_MAX, SAMPLES_BUDGET = 16, 256, 80_000


def auto_samples(jobs: int) -> int:
    """How many sampled plans a queue of ``jobs`` (pending and running) gets for its
    start windows by default: SAMPLES_BUDGET / jobs, within [SAMPLES_MIN, SAMPLES_MAX]."""
    return max(SAMPLES_MIN, min(SAMPLES_MAX, SAMPLES_BUDGET // max(jobs, 1)))


def predict_windows(snapshot: bytes | msgspec.Struct, policy: Policy | bytes | None = None,
                    horizon: float = 86400.0, samples: int = 32,
                    seed: int = 0) -> list[StartWindow]:
    """Each pending job's start window, in queue order: the plan made ``samples`` times
    with every job's run time drawn from its history (src/windows.rs says how), and the
    10th, 50th and 90th percentile of its start over those plans (None where that share
    of the plans starts it beyond ``horizon``). The same seed gives the same windows."""
    data = snapshot if isinstance(snapshot, bytes) else _encoder.encode(snapshot)
    if not 1 <= samples <= 100_000:
        raise ValueError(f"samples {samples} must be between 1 and 100000")
    with _one_line_errors():
        return _windows.decode(predict_windows_msgpack(
            data, encode_policy(policy), float(horizon), int(samples),
            int(seed) & 0xFFFF_FFFF_FFFF_FFFF))


def simulate(jobs: Sequence[SimJob] | bytes, policy: Policy | bytes | None = None, *,
             cluster: msgspec.Struct | None = None, start: float | None = None,
             until: float | None = None) -> SimResult:
    """Event-driven run of ``jobs`` (arrivals with submit_time and duration) on
    ``cluster`` (a Snapshot: nodes, teams, QoS, partitions and the jobs already
    there). ``jobs`` may instead be the msgpack of
    ``{"cluster": Snapshot, "jobs": [SimJob...], "start": t?, "until": t?}``."""
    if isinstance(jobs, bytes):
        data = jobs
    else:
        payload: dict[str, object] = {"jobs": list(jobs)}
        if cluster is not None:
            payload["cluster"] = cluster
        if start is not None:
            payload["start"] = start
        if until is not None:
            payload["until"] = until
        data = _encoder.encode(payload)
    with _one_line_errors():
        return SimResult(_sim_result.decode(simulate_msgpack(data, encode_policy(policy))))
