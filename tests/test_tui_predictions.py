"""The adapter over the core's predict: its answer stays as msgpack rows and is
decoded per job looked up; a test double's list is read as it is."""

from __future__ import annotations

import msgspec
import pytest
from tui_fixtures import NOW, snapshot

from quotatop.tui.predictions import CORE, CoreAnswers, Predictions, predict


def rows_of(entries: list[object]) -> tuple[bytes, bytes]:
    """(concatenated rows, little-endian u64 offsets), as predict_rows_msgpack."""
    rows = [msgspec.msgpack.encode(e) for e in entries]
    offsets = [0]
    for r in rows:
        offsets.append(offsets[-1] + len(r))
    return b"".join(rows), b"".join(o.to_bytes(8, "little") for o in offsets)


def test_rows_are_indexed_and_decoded_on_lookup() -> None:
    from quotatop.scheduler_core import Factors, Prediction, Preemption

    def pred(job_id: str, start: float | None) -> Prediction:
        return Prediction(job_id=job_id, state="planned", start=start, end=None,
                          nodes=["gpu04"], reason="exp at its guarantee", priority=1.0,
                          preempts=[Preemption(job_id="1010", mode="requeue")],
                          factors=Factors(age=1, fairshare=2, qos=3, job_size=4, partition=5))

    answers = CoreAnswers.from_rows(*rows_of([pred("b", NOW + 60), pred("a", None)]))
    assert list(answers) == ["b", "a"] and len(answers) == 2 and "a" in answers
    assert answers.rank("a") == 1 and answers.rank("zz") is None
    assert answers.start_of("b") == NOW + 60 and answers.start_of("a") is None
    p = answers["b"]
    assert (p.start, p.nodes, p.binding, p.preempts, p.origin) == \
        (NOW + 60, ("gpu04",), "exp at its guarantee", ("1010",), CORE)
    assert p.factors == {"age": 1, "fairshare": 2, "qos": 3, "job_size": 4, "partition": 5}
    assert answers.get("zz") is None


def test_the_cores_own_predict_answers_lazily() -> None:
    from quotatop import scheduler_core

    if not hasattr(scheduler_core, "predict_rows_msgpack"):
        pytest.skip("this build of the core has no row-wise predict")
    preds = predict(snapshot())
    assert preds.from_core and preds.error is None
    batch = preds.by_id._entries  # type: ignore[attr-defined]
    assert isinstance(batch, scheduler_core.PredictionBatch)  # rows, not decoded objects
    whole = {p.job_id: p for p in scheduler_core.predict(msgspec.msgpack.encode(snapshot()))}
    assert list(preds.by_id) == list(whole)  # the core's order
    for job_id, p in whole.items():
        assert preds.by_id.start_of(job_id) == p.start  # type: ignore[attr-defined]
        assert preds.by_id[job_id].binding == p.reason


def test_a_replaced_predict_is_called_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    from quotatop import scheduler_core

    monkeypatch.setattr(scheduler_core, "predict", lambda data: {
        "2002": {"start": NOW + 600, "nodes": ["gpu04"]}, "2003": {"start": None}},
        raising=False)
    preds = predict(snapshot())
    assert list(preds.by_id) == ["2002", "2003"]
    job = next(j for j in snapshot().jobs if j.id == "2003")
    assert preds.start(job) is None and preds.by_id["2002"].nodes == ("gpu04",)
    assert Predictions().start(job) == job.estimated_start


def test_job_detail_shows_the_estimate_beside_the_limit_and_which_was_used() -> None:
    from quotatop.collectors.model import Job
    from quotatop.scheduler_core.types import Factors
    from quotatop.scheduler_core.types import Prediction as CorePrediction
    from quotatop.tui.modals import detail_text
    from quotatop.tui.predictions import parse_entry

    row = CorePrediction("7", "planned", 1090.0, 1135.0, ["n1"], "waits for 8 free GPUs",
                         [], 1.0, Factors(0, 0, 0, 0, 0), "nodes", 45.0,
                         "estimate: mean of u's last 2 runs")
    pred = parse_entry(row)
    assert (pred.runtime, pred.runtime_basis) == (45.0, "estimate: mean of u's last 2 runs")
    job = Job(id="7", user="u", team="t", time_limit=300.0, submit_time=1000.0,
              runtime_estimate=45.0, runtime_basis="mean of u's last 2 runs")
    text = detail_text(job, pred, "gpu", 1000.0).plain
    assert "time limit      5m" in text
    assert "run estimate    45s  (mean of u's last 2 runs)" in text
    assert "run time        45s used: estimate: mean of u's last 2 runs" in text
