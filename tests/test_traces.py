"""Trace importers and `simulate --format`, on small made-up files written here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from quotatop import __version__, scheduler_core
from quotatop.cli import main
from quotatop.recording.store import Recording
from quotatop.simulation.trace_simulate import cluster_shape, core_metrics, metrics, simulate_trace
from quotatop.simulation.traces.gpu_csv import load_gpu_csv
from quotatop.simulation.traces.model import TraceError
from quotatop.simulation.traces.swf import load_swf

# Made up for these tests, in the SWF layout; not from any real system.
SWF = """; Version: 2.2
; Note: made-up test trace
; MaxNodes: 4
; MaxProcs: 8
1 0 0 100 4 -1 -1 4 200 -1 1 1 10 -1 1 -1 -1 -1
2 10 90 100 4 -1 -1 -1 200 -1 1 2 10 -1 1 -1 -1 -1
3 20 180 50 8 -1 -1 8 100 -1 0 3 -1 -1 1 -1 -1 -1
this line is malformed
4 30 -1 -1 2 -1 -1 2 100 -1 5 1 11 -1 1 -1 -1 -1
5 40 x 10 1 -1 -1 1 100 -1 1 1 11 -1 1 -1 -1 -1
"""

CSV = """job_id,vc,gpu_num,submitted_time,start_time,end_time,status
a1,vc1,8,2020-01-01 00:00:00,2020-01-01 00:00:00,2020-01-01 01:00:00,Pass
a2,vc2,8,2020-01-01 00:10:00,2020-01-01 01:00:00,2020-01-01 01:30:00,Failed
a3,vc1,4,2020-01-01 00:20:00,2020-01-01 01:30:00,2020-01-01 01:40:00,Killed
bad,vc1,lots,2020-01-01 00:30:00,,,Pass
a4,vc2,2,not-a-time,,,Pass
"""


def test_swf_fields_header_and_malformed_lines(tmp_path: Path) -> None:
    p = tmp_path / "made_up.swf"
    p.write_text(SWF)
    t = load_swf(p)
    assert [j.job.id for j in t.jobs] == ["1", "2", "3"]
    assert t.capacity == {"cpu": 8.0} and t.capacity_from == "header maxprocs"
    j2 = t.jobs[1]
    assert j2.job.request == {"cpu": 4.0}  # requested -1: allocated processors
    assert (j2.job.submit_time, j2.recorded_start, j2.duration) == (10.0, 100.0, 100.0)
    assert j2.job.time_limit == 200.0
    assert t.jobs[0].job.team == "g10" and t.jobs[2].job.team == "u3"  # group -1: the user
    assert t.jobs[2].status == "failed"
    assert t.skipped == 3
    assert "line 8" in t.warnings[0] and "18" in t.warnings[0]
    assert load_swf(p, team_by="user").jobs[0].job.team == "u1"
    with pytest.raises(TraceError, match=r"made_up.swf:8:"):
        load_swf(p, strict=True)


@pytest.mark.parametrize(("field", "value", "named"), [
    (3, "1e12", "run time (field 4) 1e+12 is out of range"),
    (1, "nan", "submit time (field 2) nan is out of range"),
    (7, "inf", "requested processors (field 8) inf is out of range"),
    (2, "-5", "wait time (field 3) -5 is out of range"),
])
def test_swf_field_out_of_range_is_named(tmp_path: Path, field: int, value: str,
                                         named: str) -> None:
    good = SWF.splitlines()[4].split()  # job 1, within every range
    bad = list(good)
    bad[field] = value
    p = tmp_path / "range.swf"
    p.write_text("; MaxProcs: 8\n" + " ".join(good) + "\n" + " ".join(bad) + "\n")
    t = load_swf(p)
    assert len(t.jobs) == 1 and t.skipped == 1
    assert t.warnings == [f"line 3: {named} (0 to {'1e+07' if field == 7 else '1e+10'})"]
    with pytest.raises(TraceError, match=re.escape(f"range.swf:3: {named}")):
        load_swf(p, strict=True)


def test_swf_without_jobs_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "empty.swf"
    p.write_text("; MaxProcs: 4\nnot a job\n")
    with pytest.raises(TraceError, match="no usable SWF job lines"):
        load_swf(p)


def test_gpu_csv_columns_times_and_bad_rows(tmp_path: Path) -> None:
    p = tmp_path / "made_up.csv"
    p.write_text(CSV)
    t = load_gpu_csv(p)
    assert [j.job.id for j in t.jobs] == ["a1", "a2", "a3"]
    assert t.jobs[1].job.team == "vc2" and t.jobs[1].job.request == {"gpu": 8.0}
    assert t.jobs[1].duration == 1800.0
    assert t.jobs[1].recorded_start - t.jobs[1].job.submit_time == 3000.0
    assert t.capacity == {"gpu": 8.0}  # peak concurrent use, said so
    assert "peak" in t.capacity_from
    assert t.skipped == 2 and "line 5" in t.warnings[0]
    assert load_gpu_csv(p, gpus=16).capacity == {"gpu": 16.0}


def test_gpu_csv_missing_columns_names_them(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    p.write_text("name,when\nx,1\n")
    with pytest.raises(TraceError, match="no column for id, team, gpus, submit"):
        load_gpu_csv(p)


def test_core_fifo_and_metrics_by_hand(tmp_path: Path) -> None:
    p = tmp_path / "made_up.swf"
    p.write_text(SWF)
    t = load_swf(p)
    assert cluster_shape(t) == (4, 2.0)  # MaxNodes 4, MaxProcs 8: 2 processors a node
    r = simulate_trace(t, "fifo")
    starts = {o.job_id: o.start for o in r.jobs}
    # 8 CPUs: jobs 1 and 2 (4 each) run at once; job 3 (8) waits for both to end.
    assert starts == {"1": 0.0, "2": 10.0, "3": 110.0}
    m = core_metrics(r)
    assert m["mean_wait"] == pytest.approx((0 + 0 + 90) / 3)
    assert m["median_wait"] == 0.0
    assert m["mean_bounded_slowdown"] == pytest.approx((1 + 1 + 140 / 50) / 3)
    assert m["utilization"] == pytest.approx((400 + 400 + 400) / (8 * 160))
    # Teams g10 (jobs 1, 2: 800 cpu-s) and u3 (job 3: 400): Jain = 1200² / (2 (800² + 400²)).
    assert m["jain_index_teams"] == pytest.approx(1200**2 / (2 * (800**2 + 400**2)))
    # The recorded policy's metrics, computed the same way from the given starts.
    by_hand = metrics(t, [0.0, 10.0, 110.0])
    for k in ("mean_wait", "median_wait", "mean_bounded_slowdown", "utilization",
              "jain_index_teams"):
        assert by_hand[k] == pytest.approx(m[k])


# Made up: a long narrow job behind a wide one; EASY backfill starts it at once.
BACKFILL = """; MaxProcs: 8
1 0 -1 100 6 -1 -1 6 100 -1 1 1 1 -1 1 -1 -1 -1
2 1 -1 100 8 -1 -1 8 100 -1 1 2 2 -1 1 -1 -1 -1
3 2 -1 50 2 -1 -1 2 50 -1 1 3 3 -1 1 -1 -1 -1
"""


@pytest.mark.parametrize(("policy", "start_of_3"), [("fifo", 200.0), ("easy", 2.0),
                                                     ("conservative", 2.0)])
def test_policies_differ_where_backfill_matters(tmp_path: Path, policy: str,
                                                start_of_3: float) -> None:
    p = tmp_path / "backfill.swf"
    p.write_text(BACKFILL)
    r = simulate_trace(load_swf(p), policy)
    assert {o.job_id: o.start for o in r.jobs}["3"] == start_of_3


def test_core_failure_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "made_up.swf"
    p.write_text(SWF)

    def broken(*_a: object, **_k: object) -> None:
        raise ValueError('job "1": broken on purpose')

    monkeypatch.setattr(scheduler_core, "simulate", broken)
    assert main(["simulate", str(p), "--format", "swf", "--policy", "fifo"]) == 2
    out = capsys.readouterr()
    assert out.out == ""  # no result from some other engine
    assert out.err.count("\n") == 1 and "scheduling core failed" in out.err


def test_simulate_trace_prints_metrics_and_records(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "made_up.csv"
    p.write_text(CSV)
    rec = tmp_path / "trace.qtrec"
    assert main(["simulate", str(p), "--format", "csv", "--policy", "recorded", "--json",
                 "--record", str(rec), "--frames", "20"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mean_wait"] == pytest.approx((0 + 3000 + 4200) / 3)
    assert out["recorded_frames"] == 20
    with Recording(rec) as r:
        assert len(r) == 20
        # The store sits below the roof: the command hands it the version it states.
        assert r.meta["quotatop_version"] == __version__
        assert any(j.state == "pending" for i in range(20) for j in r.frame(i).jobs)
    fifo = tmp_path / "fifo.qtrec"
    assert main(["simulate", str(p), "--format", "csv", "--policy", "fifo", "--json",
                 "--gpus-per-node", "8", "--record", str(fifo), "--frames", "10"]) == 0
    out = json.loads(capsys.readouterr().out)
    # One 8-GPU node, FIFO: a2 waits for a1 (3000 s), a3 for a2 (3000 + 1800 − 600).
    assert (out["nodes"], out["engine"]) == (1, "scheduler_core.simulate (fifo)")
    assert out["mean_wait"] == pytest.approx((0 + 3000 + 4200) / 3)
    assert main(["replay", str(fifo), "--at", "+4100", "--json"]) == 0
    frame = json.loads(capsys.readouterr().out)
    # At the frame of 01:06:40 a1 has ended, a2 runs (started at 01:00), a3 waits for it.
    states = {j["id"]: j.get("state", "pending") for j in frame["snapshot"]["jobs"]}
    assert states == {"a2": "running", "a3": "pending"}
    assert main(["simulate", str(p), "--format", "csv", "--policy", "nonsense"]) == 2
    assert main(["simulate", str(tmp_path / "none.csv"), "--format", "csv"]) == 2
    err = capsys.readouterr().err
    assert "--policy" in err and "cannot read" in err


def test_without_requested_times_backfilling_plans_with_the_run_time(tmp_path: Path) -> None:
    """An SWF log without requested times (field 9 = -1, as the NASA log) is planned
    with each job's recorded run time. Four 1-processor nodes: job 1 (2 procs, 100 s)
    runs; job 2 (3 procs) is the head, reserved at 100; job 3 (4 procs) waits behind
    it; job 4 (1 proc, 500 s) arrives at 3. EASY backfills job 4 at once (it uses the
    node the head leaves spare) and job 3 waits until 503; conservative keeps job 3's
    reservation at 200, so job 4 waits until 300. Without a limit no reservation could
    be placed and both would be greedy first fit."""
    from quotatop.simulation.trace_simulate import load_trace, simulate_trace

    p = tmp_path / "no_reqtime.swf"
    p.write_text("; MaxNodes: 4\n; MaxProcs: 4\n" + "".join(
        f"{i} {sub} -1 {run} {procs} -1 -1 {procs} -1 -1 1 1 1 -1 -1 -1 -1 -1\n"
        for i, sub, run, procs in [(1, 0, 100, 2), (2, 1, 100, 3), (3, 2, 100, 4),
                                   (4, 3, 500, 1)]))
    trace = load_trace(str(p), "swf")
    got = {pol: {j.job_id: j.start for j in simulate_trace(trace, pol, nodes=4,
                                                            per_node=1.0).jobs}
           for pol in ("easy", "conservative")}
    assert got["easy"] == {"1": 0.0, "2": 100.0, "3": 503.0, "4": 3.0}
    assert got["conservative"] == {"1": 0.0, "2": 100.0, "3": 200.0, "4": 300.0}
