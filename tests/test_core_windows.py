"""predict_windows(): each pending job's start over plans with sampled run times.

Small made-up clusters whose windows can be worked out by hand: one node, one running
job whose history says when it ends, and a queue behind it."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quotatop import scheduler_core
from quotatop.collectors.model import Job, Node, Snapshot

NOW = 1_800_000_000.0


def one_node(history: list[float], estimate: float | None, *, pending: int = 1,
             ran: float = 10.0, limit: float = 600.0) -> Snapshot:
    running = Job(id="r", team="t", state="running", request={"gpu": 8.0}, nodes=["n0"],
                  start_time=NOW - ran, time_limit=limit, runtime_estimate=estimate,
                  runtime_basis="test" if estimate is not None else None,
                  runtime_history=history)
    queue = [Job(id=f"p{k}", team="t", request={"gpu": 8.0}, time_limit=60.0,
                 runtime_estimate=60.0, runtime_basis="test", runtime_history=[60.0] * 4,
                 submit_time=NOW - 100 + k) for k in range(pending)]
    return Snapshot(taken_at=NOW, nodes=[Node(name="n0", capacity={"gpu": 8.0})],
                    jobs=[running, *queue])


def windows(snap: Snapshot, runtimes: str = "estimate", samples: int = 200,
            seed: int = 1) -> dict[str, scheduler_core.StartWindow]:
    pol = scheduler_core.Policy(bf_resolution=1, runtimes=runtimes)  # type: ignore[arg-type]
    return {w.job_id: w for w in scheduler_core.predict_windows(snap, pol, 86400.0,
                                                                samples, seed)}


def test_the_window_spans_the_running_jobs_past_runs() -> None:
    # Past runs of 100 s and 300 s: the queued job starts when r ends (it ran 10 s), so
    # each run ends a quarter or more of the draws below 100 s, or past 290 s (a kernel
    # of bandwidth 0.61 in log about each: P(N < -1.8) + 1/2 and 1/2 + P(N > -0.05)).
    w = windows(one_node([100.0, 300.0], 200.0))["p0"]
    assert w.p10 is not None and w.p50 is not None and w.p90 is not None
    assert NOW < w.p10 < NOW + 100 - 10 < w.p50 < NOW + 300 - 10 < w.p90
    assert w.p90 <= NOW + 600 - 10  # capped by r's limit


def test_alike_runs_give_a_narrow_window_and_one_run_a_wider_one() -> None:
    alike = windows(one_node([200.0] * 8, 200.0))["p0"]
    one = windows(one_node([200.0], 200.0))["p0"]
    assert alike.p90 - alike.p10 < one.p90 - one.p10  # type: ignore[operator]
    assert abs(alike.p50 - (NOW + 190)) <= 5  # type: ignore[operator]


def test_runs_of_other_work_give_a_window_reaching_down_to_the_prior() -> None:
    # r's history is one 200 s run of another request (weak): half the draws are the
    # prior's (uniform 30-600 s), so the window reaches towards r's limit (p90: half of
    # the prior's mass above 486 s is 10 %, less the 10 s r has run), where a history of
    # the same request keeps it near 200 s (single-run spread 0.15: p90 1.21 x 200).
    strong = windows(one_node([200.0], 200.0), samples=400)["p0"]
    snap = one_node([200.0], 200.0)
    r = next(j for j in snap.jobs if j.id == "r")
    weak_snap = msgspec.structs.replace(snap, jobs=[
        msgspec.structs.replace(r, runtime_history_weak=True),
        *[j for j in snap.jobs if j.id != "r"]])
    weak = windows(weak_snap, samples=400)["p0"]
    assert strong.p90 < NOW + 300 < NOW + 400 < weak.p90  # type: ignore[operator]
    assert weak.p90 - weak.p10 > 2 * (strong.p90 - strong.p10)  # type: ignore[operator]


def test_no_history_is_the_prior_up_to_the_limit() -> None:
    # Nothing known of r: uniform from 5 % of its 600 s limit to the limit, less the 10 s
    # it has run (draws below that are drawn again).
    w = windows(one_node([], None), samples=400)["p0"]
    assert NOW < w.p10 < NOW + 150  # type: ignore[operator]
    assert NOW + 450 < w.p90 <= NOW + 590  # type: ignore[operator]


def test_time_limits_leave_nothing_to_sample() -> None:
    snap = one_node([100.0, 300.0], 200.0, pending=3)
    w = windows(snap, runtimes="limit")
    point = {p.job_id: p.start for p in scheduler_core.predict(
        snap, scheduler_core.Policy(bf_resolution=1, runtimes="limit"), 86400.0)}
    for job_id, win in w.items():
        assert win.p10 == win.p50 == win.p90 == point[job_id]


def test_the_same_seed_gives_the_same_windows_and_another_may_not() -> None:
    snap = one_node([100.0, 150.0, 300.0], 180.0, pending=4)
    assert windows(snap, seed=5) == windows(snap, seed=5)
    assert list(windows(snap)) == ["p0", "p1", "p2", "p3"]  # queue order


def test_a_job_behind_another_waits_its_run_too() -> None:
    w = windows(one_node([200.0] * 4, 200.0, pending=2))
    assert w["p1"].p50 - w["p0"].p50 == pytest.approx(60.0, abs=5.0)  # type: ignore[operator]


@pytest.mark.parametrize(("samples", "horizon"), [(0, 100.0), (1, -1.0), (1, float("nan"))])
def test_bad_arguments_are_refused(samples: int, horizon: float) -> None:
    with pytest.raises(ValueError):
        scheduler_core.predict_windows(one_node([1.0], 1.0), None, horizon, samples)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(1.0, 5000.0), max_size=6), st.integers(0, 2**63),
       st.floats(0.0, 500.0))
def test_windows_are_ordered_and_never_before_now(history: list[float], seed: int,
                                                  ran: float) -> None:
    snap = one_node(history, sum(history) / len(history) if history else None, pending=3,
                    ran=ran)
    for w in windows(snap, samples=16, seed=seed).values():
        assert w.p10 is not None and w.p50 is not None and w.p90 is not None
        assert NOW <= w.p10 <= w.p50 <= w.p90
