"""GPU-cluster traces read by their published layouts (detected from the header line),
by an explicit --columns mapping, Philly JSON, a trace's own node list, and
--compare-recorded. Every row below is made up for these tests in the published
layout of its trace; none is real data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotatop.cli import main
from quotatop.simulation.trace_simulate import job_outcomes, load_trace, simulate_trace
from quotatop.simulation.traces.gpu_csv import load_gpu_csv, load_nodes
from quotatop.simulation.traces.model import TraceError
from quotatop.simulation.traces.philly import load_philly
from quotatop.simulation.traces.swf import load_swf

# Made up, in the Helios/Venus cluster_log.csv layout (with its duration and queue).
HELIOS = ("job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
          "duration,queue\n") + """\
1,uA,vcX,8,32,1,COMPLETED,2020-06-09 18:00:00,2020-06-09 18:00:00,2020-06-09 19:00:00,3600,0
2,uB,vcY,8,32,1,FAILED,2020-06-09 18:10:00,2020-06-09 19:00:00,2020-06-09 19:30:00,1800,3000
3,uC,vcY,4,8,1,CANCELLED,2020-06-09 18:20:00,,,0,0
"""

# Made up, in the Alibaba 2023 openb_pod_list layout.
OPENB = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
         "deletion_time,scheduled_time\n") + """\
pod-a,88000,327680,8,1000,,Burstable,Succeeded,100,1100,100
pod-b,6000,12288,1,460,V100M16|V100M32,LS,Running,200,500,210
pod-c,20000,65536,0,0,,BE,Running,300,400,300
pod-d,11908,47104,1,1000,,BE,Pending,400,460,
"""

# Made up, in the Alibaba 2026 spot-GPU job_info_df and node_info_df layouts.
SPOT_JOBS = ("job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,"
             "duration,job_type\n") + """\
1,13,A100-SXM4-80GB,16,8,2,0,1000,Spot
2,57,A100-SXM4-80GB,8,8,1,100,500,HP
3,13,A10,4,1,1,100,300,HP
4,57,H800,8,1,1,50,10,HP
"""
SPOT_NODES = """node_name,gpu_model,gpu_capacity_num,cpu_num
0,A10,1,128
1,A100-SXM4-80GB,8,128
2,A100-SXM4-80GB,8,128
"""

# Made up, in the Alibaba PAI 2020 pai_job_table layout (its header in a .header file).
PAI_HEADER = "job_name,inst_id,user,status,start_time,end_time\n"
PAI_ROWS = "4b3f,8cb3,5854,Terminated,4550879.0,4551416.0\n"

# Made up, in the Philly cluster_job_log layout.
PHILLY = [
    {"status": "Pass", "vc": "ee9e8c", "jobid": "application_1", "user": "ce2f4c",
     "submitted_time": "2017-10-07 01:11:39",
     "attempts": [
         {"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23",
          "detail": [{"ip": "m47", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3"]}]},
         {"start_time": "2017-10-07 01:13:30", "end_time": "2017-10-07 02:13:30",
          "detail": [{"ip": "m41", "gpus": ["gpu0", "gpu1"]},
                     {"ip": "m42", "gpus": ["gpu0", "gpu1", "gpu2", "gpu3"]}]}]},
    {"status": "Killed", "vc": "11cb48", "jobid": "application_2", "user": "a1",
     "submitted_time": "2017-10-07 01:20:00", "attempts": []},
    {"status": "Pass", "vc": "11cb48", "jobid": "application_3", "user": "a2",
     "submitted_time": "2017-10-07 01:30:00",
     "attempts": [{"start_time": "2017-10-07 01:40:00", "end_time": None,
                   "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}]},
]


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_helios_layout_vc_is_the_team(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, "cluster_log.csv", HELIOS)
    t = load_gpu_csv(p)
    assert t.layout == "Helios/Venus cluster_log"
    assert [(j.id, j.team, j.user, j.request["gpu"]) for j in t.jobs] == [
        ("1", "vcX", "uA", 8.0), ("2", "vcY", "uB", 8.0)]
    assert t.jobs[1].duration == 1800.0  # end - start
    assert t.jobs[1].recorded_start - t.jobs[1].submit_time == 3000.0
    assert t.skipped == 1 and "never started" in t.warnings[0]  # job 3: no start time
    assert "GPU type" in t.missing and "time limit" in t.missing
    assert main(["simulate", str(p), "--policy", "recorded"]) == 0  # format from .csv
    out = capsys.readouterr().out
    assert "Helios/Venus cluster_log" in out
    assert "fields not in this trace: GPU type; QoS; time limit" in out


def test_openb_layout_gpu_milli_and_unscheduled_pods(tmp_path: Path) -> None:
    t = load_gpu_csv(write(tmp_path, "openb_pod_list_default.csv", OPENB))
    assert t.layout == "Alibaba 2023 openb_pod_list"
    assert {j.id: j.request["gpu"] for j in t.jobs} == {"pod-a": 8.0, "pod-b": 0.46,
                                                        "pod-c": 0.0}
    assert {j.team for j in t.jobs} == {"all"}  # the trace has no team
    pod_b = t.jobs[1]
    assert (pod_b.submit_time, pod_b.recorded_start, pod_b.duration) == (200, 210, 290)
    assert (pod_b.qos, pod_b.status) == ("LS", "running")
    assert t.qos == {"BE": [], "Burstable": [], "LS": []}  # no spot class: no preemption
    assert t.skipped == 1 and "line 5" in t.warnings[0]  # pod-d was never scheduled
    assert any(m.startswith("team") for m in t.missing)
    assert any("gpu_spec" in u for u in t.unused)


def test_pai_job_table_is_recognised_and_refused_naming_what_is_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, "pai_job_table.csv", PAI_ROWS)  # the file has no header line
    write(tmp_path, "pai_job_table.header", PAI_HEADER)
    with pytest.raises(TraceError, match="Alibaba PAI 2020 pai_job_table: it has no GPU "
                                         r"request; fields not in this trace: GPU request "
                                         r"\(pai_task_table"):
        load_gpu_csv(p)
    with_header = write(tmp_path, "jobs.csv", PAI_HEADER + PAI_ROWS)
    assert main(["simulate", str(with_header)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pai_job_table" in err and "no GPU request" in err


def test_spot_layout_with_its_node_list_typed_gang_and_preemption(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = write(tmp_path, "job_info_df.csv", SPOT_JOBS)
    nodes = write(tmp_path, "node_info_df.csv", SPOT_NODES)
    t = load_trace(str(jobs), "csv", nodes_file=str(nodes))
    assert t.layout == "Alibaba 2026 spot-GPU job_info_df"
    j1 = t.jobs[0]
    assert (j1.team, j1.request, j1.workers, j1.gpu_type, j1.qos) == (
        "13", {"gpu": 16.0}, 2, "A100-SXM4-80GB", "Spot")
    assert t.qos == {"HP": ["Spot"], "Spot": []}
    assert t.capacity == {"gpu": 17.0} and [n.gpus for n in load_nodes(nodes)] == [1, 8, 8]
    r = simulate_trace(t, "fifo")
    by_id = {o.job_id: o for o in r.jobs}
    # Job 1's two 8-GPU workers (a gang) hold both A100 nodes; HP job 2 preempts the
    # whole gang at 100 (Spot is preemptible), which restarts when job 2 ends at 600.
    assert {m: (by_id[m].start, by_id[m].end) for m in ("1/w0", "1/w1")} == {
        "1/w0": (0.0, 1600.0), "1/w1": (0.0, 1600.0)}
    assert (by_id["2"].start, by_id["2"].end) == (100.0, 600.0)
    started_on = {e.job_id: e.nodes for e in r.events if e.kind == "start"}
    assert by_id["3"].start == 100.0 and started_on["3"] == ["0"]  # the A10 node
    assert by_id["4"].state == "rejected"  # no H800 node: typed GPUs stay typed
    assert r.metrics.preemptions == 2
    assert job_outcomes(t, r)[0] == (0.0, 1600.0, False)
    assert main(["simulate", str(jobs), "--nodes-file", str(nodes), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["jobs"], out["started"], out["rejected"]) == (4, 3, 1)  # per job, not worker
    assert out["missing_fields"][0] == "start time (no recorded waits)"
    assert main(["simulate", str(jobs)]) == 0  # without the node list: untyped nodes
    text = capsys.readouterr().out
    assert "fields not in this trace: start time (no recorded waits); user; status" in text
    assert "GPU type (untyped nodes; pass --nodes-file to keep it)" in text
    assert "largest job: no recorded starts" in text


def test_columns_map_a_layout_of_any_names(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, "mine.csv", "jname,org,ngpu,t_submit,secs\nx,o1,2,0,100\ny,o2,2,10,50\n")
    with pytest.raises(TraceError, match=r"no column for id, team, gpus, submit.*--columns"):
        load_gpu_csv(p)
    t = load_gpu_csv(p, columns={"id": "jname", "team": "org", "gpus": "ngpu",
                                 "submit": "t_submit", "duration": "secs"})
    assert [(j.id, j.team, j.request["gpu"], j.duration) for j in t.jobs] == [
        ("x", "o1", 2.0, 100.0), ("y", "o2", 2.0, 50.0)]
    argv = ["simulate", str(p), "--gpus", "2", "--policy", "fifo", "--json", "--columns",
            "id=jname,team=org,gpus=ngpu,submit=t_submit,duration=secs"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mean_wait"] == pytest.approx((0 + 90) / 2)  # y waits for x on 2 GPUs
    assert main([*argv[:-1], "id=jname,team=nope"]) == 2
    assert main([*argv[:-1], "colour=jname"]) == 2
    err = capsys.readouterr().err
    assert "team=nope" in err and "unknown field 'colour'" in err


def test_philly_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, "cluster_job_log", json.dumps(PHILLY))
    t = load_philly(p)
    (j,) = t.jobs
    assert (j.id, j.team, j.user, j.status) == ("application_1", "ee9e8c", "ce2f4c", "pass")
    assert j.request == {"gpu": 6.0}  # the most any attempt held (2 + 4)
    assert j.duration == 74.0 + 3600.0  # the attempts' own spans
    assert j.recorded_start - j.submit_time == 30.0
    assert t.skipped == 2 and "never ran" in t.warnings[0] and "still running" in t.warnings[1]
    assert main(["simulate", str(p), "--format", "philly", "--policy", "recorded"]) == 0
    assert "Philly cluster_job_log" in capsys.readouterr().out
    assert main(["simulate", str(p), "--format", "csv", "--json"]) == 0  # JSON sniffed
    assert json.loads(capsys.readouterr().out)["format"] == "philly"


# Made up, in the SWF layout: recorded waits 0, 90, 200; job 4's run time is unknown.
SWF_WAITS = """; MaxProcs: 4
1 0 0 100 4 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 -1
2 10 90 50 4 -1 -1 4 -1 -1 1 2 1 -1 1 -1 -1 -1
3 20 200 10 2 -1 -1 2 -1 -1 1 3 2 -1 1 -1 -1 -1
4 30 5 -1 2 -1 -1 2 -1 -1 0 3 2 -1 1 -1 -1 -1
"""


def test_compare_recorded_against_naive_predictors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = write(tmp_path, "waits.swf", SWF_WAITS)
    assert load_swf(p).unknown_runtime == 1
    assert main(["simulate", str(p), "--policy", "fifo", "--compare-recorded", "--json"]) == 0
    c = json.loads(capsys.readouterr().out)["compare_recorded"]
    # FIFO on 4 processors: simulated waits 0, 90 (behind job 1), 130 (behind job 2).
    # Errors: simulated 0, 0, 70; zero wait 0, 90, 200; median wait (90): 90, 0, 110.
    assert (c["jobs"], c["unknown_runtime"], c["median_recorded_wait"]) == (3, 1, 90)
    assert (c["simulated_median_abs"], c["simulated_p90_abs"]) == (0, 70)
    assert (c["zero_wait_median_abs"], c["zero_wait_p90_abs"]) == (90, 200)
    assert (c["median_recorded_median_abs"], c["median_recorded_p90_abs"]) == (90, 110)
    assert main(["simulate", str(p), "--compare-recorded"]) == 0
    text = capsys.readouterr().out
    assert "  simulated: 0s / 70s" in text and "  zero wait: 90s / 3m20s" in text
    assert "unknown run time (-1): 1 jobs ran on the real machine but are not simulated" in text
