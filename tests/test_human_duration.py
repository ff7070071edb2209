"""One human format for durations (issue #32): Kubernetes' HumanDuration, in Python
(collectors/human.py) and in the core's reasons (explain.rs `human_duration`), held to
one table at every boundary upstream has, so a table's "in 25m" and the reason beside it
never disagree."""

from __future__ import annotations

import re

import pytest

from quotatop import scheduler_core
from quotatop.collectors.human import human_duration
from quotatop.collectors.model import Job, Node, Snapshot
from quotatop.scheduler_core import Policy
from quotatop.tui.format import DASH, duration, until

H, D = 3600, 86400
Y = 365 * D

# Seconds -> what kubectl's AGE column writes. Whole seconds only: the core's reason
# measures from a clock time, where a fraction is not what is under test.
TABLE: list[tuple[int, str]] = [
    (0, "0s"), (1, "1s"), (59, "59s"), (60, "60s"),
    (119, "119s"), (120, "2m"), (121, "2m1s"), (300, "5m"),
    (599, "9m59s"), (600, "10m"), (601, "10m"), (1500, "25m"),
    (10799, "179m"), (10800, "3h"), (10860, "3h1m"),
    (8 * H - 1, "7h59m"), (8 * H, "8h"), (8 * H + 59, "8h"),
    (48 * H - 1, "47h"), (48 * H, "2d"), (49 * H, "2d1h"),
    (8 * D - 1, "7d23h"), (8 * D, "8d"), (400 * D, "400d"),
    (2 * Y - 1, "729d"), (2 * Y, "2y"), (2 * Y + D, "2y1d"),
    (8 * Y - 1, "7y364d"), (8 * Y, "8y"), (9 * Y + 100 * D, "9y"),
]


@pytest.mark.parametrize(("seconds", "want"), TABLE)
def test_python_writes_kubernetes_human_duration(seconds: int, want: str) -> None:
    assert human_duration(seconds) == want


@pytest.mark.parametrize(("seconds", "want"), [
    (-0.5, "0s"), (-3600, "0s"), (float("nan"), "0s"), (0.9, "0s"), (119.9, "119s"),
    (599.99, "9m59s"), (float("inf"), "∞"),
])
def test_fractions_truncate_and_nothing_left_to_wait_is_zero(seconds: float, want: str) -> None:
    assert human_duration(seconds) == want


def test_the_tui_formatters_use_it() -> None:
    assert duration(1500) == "25m" and duration(8 * H - 1) == "7h59m"
    assert duration(None) == DASH
    assert until(1_000_000.0 + 599, 1_000_000.0) == "in 9m59s"
    assert until(1_000_000.0, 1_000_000.0) == "now"


NOW = 1_000_000.0
_IN = re.compile(r"not eligible before its begin time, \d\d:\d\d UTC \(in ([^)]*)\)")


def core_says(waits: list[int]) -> dict[int, str]:
    """The core's words for each wait: a job not eligible before NOW + wait (Slurm's
    begin time) is told "not eligible before its begin time, HH:MM UTC (in <wait>)";
    one snapshot, one node each so no job stands behind another."""
    jobs = [Job(id=f"j{i}", request={"gpu": 1}, submit_time=NOW - 10,
                eligible_time=NOW + w, time_limit=60) for i, w in enumerate(waits)]
    nodes = [Node(name=f"n{i}", capacity={"cpu": 8.0, "memory": 1000.0, "gpu": 1.0})
             for i in range(len(waits))]
    preds = scheduler_core.predict(Snapshot(taken_at=NOW, nodes=nodes, jobs=jobs),
                                   Policy(), 3600)
    said: dict[int, str] = {}
    for p in preds:
        m = _IN.search(p.reason)
        assert m, p.reason
        said[waits[int(p.job_id[1:])]] = m.group(1)
    return said


def test_the_core_reasons_agree_with_python_on_the_whole_table() -> None:
    waits = [s for s, _ in TABLE if s > 0]  # a begin time of now is no wait to explain
    said = core_says(waits)
    assert said == {s: human_duration(s) for s in waits}
    assert said == {s: want for s, want in TABLE if s > 0}


def test_the_core_quotes_its_horizon_in_the_same_format() -> None:
    """A begin time beyond the horizon: no start within it, said in the human format."""
    p, = scheduler_core.predict(
        Snapshot(taken_at=NOW, nodes=[Node(name="n0", capacity={"gpu": 1.0})],
                 jobs=[Job(id="j", request={"gpu": 1}, submit_time=NOW - 10,
                           eligible_time=NOW + 3 * D, time_limit=60)]),
        Policy(), 86400)
    assert p.reason.endswith(f"; no start within the {human_duration(86400)} horizon")
    assert "(in 3d)" in p.reason
