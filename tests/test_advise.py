"""The quota advisor (review/advise.py, `quotatop advise`): a small sweep over a
slice of the bundled NASA Ames trace, its metrics recomputed independently from the
core's events and usage samples, Jain's index on hand examples, the frontier, and the
same sweep on a local two-worker Dask cluster giving identical results.

The slice: the bundled NASA-iPSC-1993-3.1-cln.swf cut to its header and its first 3,000
job lines (a contiguous run, no record changed), teams by user (40 of them there), so
quotas bite and the sweep stays a few seconds.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import DEMO, skip_or_fail
from quotatop.cli import main
from quotatop.review import advise as adv
from quotatop.simulation.trace_simulate import cluster_shape, load_trace

NASA = DEMO / "traces" / "NASA-iPSC-1993-3.1-cln.swf"
SLICE_JOBS = 3000
CANDIDATES = 10


@pytest.fixture(scope="module")
def nasa_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    lines = NASA.read_text().splitlines(keepends=True)
    header = [ln for ln in lines if ln.startswith(";")]
    jobs = [ln for ln in lines if ln.strip() and not ln.startswith(";")][:SLICE_JOBS]
    path = tmp_path_factory.mktemp("advise") / "nasa-slice.swf"
    path.write_text("".join(header + jobs))
    return path


@pytest.fixture(scope="module")
def workload(nasa_slice: Path) -> adv.Workload:
    trace = load_trace(str(nasa_slice), "swf", team_by="user")
    assert len(trace.jobs) == SLICE_JOBS
    nodes, per = cluster_shape(trace)
    return adv.build_workload(trace, nodes, per, "multifactor", 1.0)


@pytest.fixture(scope="module")
def sweep(workload: adv.Workload) -> tuple[list[adv.Candidate], list[adv.Result]]:
    cands = adv.candidates(workload, limit=CANDIDATES)
    return cands, adv.sweep_local(workload, cands, 0)


def test_candidates_cover_the_kinds(workload: adv.Workload,
                                    sweep: tuple[list[adv.Candidate], list[adv.Result]]) -> None:
    cands, _ = sweep
    assert cands[0].name == "current" and cands[0].guarantee is None
    assert len(cands) == CANDIDATES
    assert {c.kind for c in cands} >= {"current", "split", "percentile"}
    split = next(c for c in cands if c.kind == "split")
    assert split.guarantee is not None
    # Guarantees are whole processors and add up to the machine.
    assert sum(split.guarantee.values()) == workload.capacity
    top = workload.teams[:2]
    # Largest remainder rounding: each within one processor of its exact share.
    assert abs(split.guarantee[top[0]] - 0.6 * workload.capacity) < 1
    assert abs(split.guarantee[top[1]] - 0.3 * workload.capacity) < 1
    # A max never falls below a team's largest job (that job would be rejected).
    for c in cands[1:]:
        for t, m in (c.max or {}).items():
            assert m is None or m >= workload.largest[t]


def test_metrics_match_an_independent_recomputation(
        workload: adv.Workload, sweep: tuple[list[adv.Candidate], list[adv.Result]]) -> None:
    cands, results = sweep
    # A candidate with hard caps, so some jobs wait: the check means something.
    i = next(k for k, r in enumerate(results) if r.mean_wait > 0 and r.unstarted == 0)
    c, r = cands[i], results[i]
    sim = adv.simulate(workload, c)
    trace = load_trace(workload.path, "swf", team_by="user")
    # Waits from the core's events: a job's last start (a requeued job starts again).
    start: dict[str, float] = {}
    for ev in sim.events:
        if ev.kind == "start":
            start[ev.job_id] = ev.time
    by_team: dict[str, list[float]] = {}
    for j in trace.jobs:
        by_team.setdefault(j.team, []).append(start[j.id] - j.submit_time)
    every = [w for ws in by_team.values() for w in ws]
    assert r.mean_wait == pytest.approx(sum(every) / len(every), abs=1e-6)
    for team, ws in by_team.items():
        ws.sort()
        p95 = ws[math.ceil(0.95 * len(ws)) - 1]
        assert r.team_p95_wait[team] == pytest.approx(p95, abs=1e-6)
        assert r.team_mean_wait[team] == pytest.approx(sum(ws) / len(ws), abs=1e-6)
    assert r.preemptions == sim.metrics.preemptions
    # Utilisation by integrating the core's usage samples (a step function per team)
    # from the first submit to the last end, over the capacity.
    samples = sim.usage
    t0 = min(j.submit_time for j in trace.jobs)
    t1 = max(o.end for o in sim.jobs if o.end is not None)
    area = 0.0
    for a, b in zip(samples, [*samples[1:], None], strict=True):
        until = t1 if b is None else b.time
        area += sum(a.usage) * max(0.0, min(until, t1) - max(a.time, t0))
    if r.preemptions == 0:  # requeued work counts in the samples, not in useful work
        assert r.utilization == pytest.approx(area / (workload.capacity * (t1 - t0)), rel=1e-6)
        assert r.utilization == pytest.approx(sim.metrics.utilization, rel=1e-6)
    # Normalised service and Jain's index over it, by hand.
    service = []
    for team in workload.teams:
        jobs = [j for j in trace.jobs if j.team == team]
        work = sum(j.request["cpu"] * j.duration for j in jobs)
        held = sum(j.request["cpu"] * (start[j.id] - j.submit_time + j.duration) for j in jobs)
        service.append(work / held if held else 1.0)
        assert r.service[team] == pytest.approx(service[-1], rel=1e-9)
    assert r.jain == pytest.approx(sum(service) ** 2 / (len(service) * sum(
        x * x for x in service)), rel=1e-9)


def test_jain_on_hand_examples() -> None:
    assert adv.jain([1.0, 1.0, 1.0, 1.0]) == pytest.approx(1.0)
    assert adv.jain([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)  # one holds all: 1/n
    assert adv.jain([1.0, 2.0, 3.0]) == pytest.approx(36 / 42)  # 6² / (3 × 14)
    assert adv.jain([0.5, 0.5]) == pytest.approx(1.0)  # scale does not matter
    assert adv.jain([]) == 1.0 and adv.jain([0.0, 0.0]) == 1.0


def test_frontier_is_non_dominated(sweep: tuple[list[adv.Candidate], list[adv.Result]]) -> None:
    _, results = sweep
    front = adv.frontier(results)
    assert front

    def beats(a: adv.Result, b: adv.Result) -> bool:
        return (a.mean_wait <= b.mean_wait and a.jain >= b.jain
                and a.utilization >= b.utilization
                and (a.mean_wait, -a.jain, -a.utilization)
                != (b.mean_wait, -b.jain, -b.utilization))

    comparable = [i for i, r in enumerate(results) if r.unstarted == 0]
    for i in front:
        assert not any(beats(results[j], results[i]) for j in comparable)
    for i in set(comparable) - set(front):  # everything else is beaten by someone
        assert any(beats(results[j], results[i]) for j in comparable)
    rec = adv.recommend(results, front)
    assert rec in front


def test_a_tiny_frontier_by_hand(workload: adv.Workload) -> None:
    c = adv.Candidate(name="x", kind="split", guarantee={}, max={}, borrow="as given")

    def res(name: str, wait: float, jain: float, util: float) -> adv.Result:
        return adv.Result(name=name, candidate=c, mean_wait=wait, p95_wait=wait,
                          team_mean_wait={"a": wait}, team_p95_wait={"a": wait},
                          service={"a": 1.0}, utilization=util, jain=jain, preemptions=0,
                          started=1, unstarted=0)

    rs = [res("cur", 10000, 0.8, 0.5), res("better", 5000, 0.9, 0.5),
          res("fair", 8000, 0.95, 0.5), res("worse", 20000, 0.7, 0.4)]
    assert adv.frontier(rs) == [1, 2]
    assert adv.recommend(rs, [1, 2]) == 1  # lower worst p95 wins before Jain
    why = adv.reasons(rs[0], rs[1])
    assert why[0] == "cuts a p95 wait from 166m to 83m"
    assert "Jain 0.80 → 0.90" in why


def _advise_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_dask_cluster_gives_the_local_results(nasa_slice: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    try:
        from distributed import LocalCluster
    except ImportError:
        skip_or_fail("dask.distributed is not installed (pip install quotatop[distributed])")
    argv = ["advise", "--trace", str(nasa_slice), "--team-by", "user",
            "--candidates", str(CANDIDATES), "--json"]
    local = _advise_json([*argv, "--workers", "2"], capsys)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        dist = _advise_json([*argv, "--scheduler-address", cluster.scheduler_address], capsys)
    assert dist["executor"] == "dask" and dist["workers"] == 2
    assert local["executor"] == "local"
    assert dist["candidates"] == local["candidates"]
    assert (dist["frontier"], dist["recommended"], dist["reasons"]) == (
        local["frontier"], local["recommended"], local["reasons"])


def test_printed_report(nasa_slice: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["advise", "--trace", str(nasa_slice), "--team-by", "user", "--candidates", "4",
            "--workers", "0", "--current", "u4=32:32"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "frontier" in out and "current" in out
    assert "recommendation: " in out and "p95 wait from" in out


def test_bad_current_is_one_line_exit_2(nasa_slice: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["advise", "--trace", str(nasa_slice), "--team-by", "user", "--workers", "0",
            "--current", "nobody=3"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no team 'nobody'" in err


def test_unreachable_scheduler_is_one_line_exit_2(nasa_slice: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        skip_or_fail("dask.distributed is not installed (pip install quotatop[distributed])")
    argv = ["advise", "--trace", str(nasa_slice), "--candidates", "2",
            "--scheduler-address", "tcp://127.0.0.1:1", "--connect-timeout", "1"]
    assert main(argv) == 2
    assert "cannot reach the Dask scheduler" in capsys.readouterr().err


def test_missing_dask_says_how_to_install(nasa_slice: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import fails as if absent
    argv = ["advise", "--trace", str(nasa_slice), "--scheduler-address", "tcp://127.0.0.1:1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install quotatop[distributed]" in err
