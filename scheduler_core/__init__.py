"""quotatop's scheduling core (Rust, via PyO3). See ``_core.pyi`` for the raw API.

``predict`` and ``simulate`` take msgpack (or model Structs, encoded here) and
return typed msgspec Structs from ``scheduler_core.types``.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from scheduler_core._core import (
    __version__,
    check_policy,
    fifo_simulate,
    predict_msgpack,
    simulate_msgpack,
    snapshot_stats,
)
from scheduler_core.policy import Policy, PriorityWeights, encode_policy
from scheduler_core.types import (
    Factors,
    JobOutcome,
    Metrics,
    Prediction,
    Preemption,
    SimEvent,
    SimJob,
    SimResult,
    UsageSample,
)

__all__ = [
    "Factors",
    "JobOutcome",
    "Metrics",
    "Policy",
    "Prediction",
    "Preemption",
    "PriorityWeights",
    "SimEvent",
    "SimJob",
    "SimResult",
    "UsageSample",
    "__version__",
    "check_policy",
    "fifo_simulate",
    "predict",
    "simulate",
    "simulate_msgpack",
    "snapshot_stats",
]

_encoder = msgspec.msgpack.Encoder()
_predictions = msgspec.msgpack.Decoder(list[Prediction])
_sim_result = msgspec.msgpack.Decoder(SimResult)


def predict(snapshot: bytes | msgspec.Struct, policy: Policy | bytes | None = None,
            horizon: float = 86400.0) -> list[Prediction]:
    """For each pending job of the snapshot, in priority order: when and where it
    starts (None beyond ``horizon`` seconds), why it waits, whom it preempts.

    Raises ValueError naming the object for an inconsistent snapshot or policy."""
    data = snapshot if isinstance(snapshot, bytes) else _encoder.encode(snapshot)
    return _predictions.decode(predict_msgpack(data, encode_policy(policy), float(horizon)))


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
    return _sim_result.decode(simulate_msgpack(data, encode_policy(policy)))
