"""`quotatop advise --history 30d --source slurm` (docs/review.md): the period's jobs from
sacct folded into a trace on the cluster's own nodes, against its GrpTRES maxes — the
pure folding on hand-made runs, and the whole command on the real Slurm of tests/harness,
its jobs counted against sacct's own listing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from quotatop.cli import main
from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Node, Team
from quotatop.collectors.slurm.tres import parse_tres
from quotatop.review.period_trace import current_quotas, period_trace
from quotatop.review.report import JobRecord
from tests.harness import fixtures as _slurm_fixtures

slurm_cluster = _slurm_fixtures.slurm_cluster
slurm_workload = _slurm_fixtures.slurm_workload

ROOT = Path(__file__).resolve().parent.parent
H = 3600.0
NODES = [Node(name="g1", gpu_type="h100", capacity={"gpu": 4.0, "cpu": 32.0}),
         Node(name="g2", gpu_type="h100", capacity={"gpu": 4.0, "cpu": 32.0}),
         Node(name="c1", capacity={"cpu": 64.0})]


def test_runs_fold_into_one_job_each_on_the_snapshots_nodes() -> None:
    records = [
        # Preempted once, then ran 2 h to the end: one job, submitted first, 2 h long.
        JobRecord(job_id="1", team="a", submit=0.0, start=H, end=1.5 * H,
                  alloc={"gpu": 2, "cpu": 8}, preempted=True),
        JobRecord(job_id="1", team="a", submit=0.0, start=3 * H, end=5 * H,
                  alloc={"gpu": 2, "cpu": 8}),
        # Still running at the end of the period (10 h): its run so far.
        JobRecord(job_id="2", team="b", submit=8 * H, start=9 * H, end=None,
                  alloc={"gpu:h100": 4, "cpu": 4}),
        # Never started: no run time, left out and counted.
        JobRecord(job_id="3", team="b", submit=9 * H),
        # CPU only: holds none of the GPUs the quotas are on.
        JobRecord(job_id="4", team="a", submit=0.0, start=0.0, end=H, alloc={"cpu": 16}),
    ]
    trace = period_trace(records, NODES, since=0.0, until=10 * H, name="t")
    assert trace.capacity == {"gpu": 8.0}
    assert [(n.name, n.gpus) for n in trace.nodes or []] == [("g1", 4.0), ("g2", 4.0)]
    by_id = {j.id: j for j in trace.jobs}
    assert set(by_id) == {"1", "2"}
    assert (by_id["1"].submit_time, by_id["1"].duration, by_id["1"].recorded_start) == \
        (0.0, 2 * H, H)
    assert by_id["1"].request == {"gpu": 2}
    assert (by_id["2"].duration, by_id["2"].request) == (H, {"gpu": 4})
    assert trace.skipped == 1 and "1 job(s) never started" in trace.warnings[0]


def test_a_period_with_no_job_that_ran_is_one_line() -> None:
    with pytest.raises(UserError, match="no job ran"):
        period_trace([JobRecord(job_id="1", team="a", submit=0.0)], NODES, since=0.0,
                     until=H, name="slurm x last 1h")


def test_slurm_maxes_are_caps_without_a_guarantee() -> None:
    teams = [Team(name="a", max={"gpu": 8.0}), Team(name="b", guarantee={"gpu": 2.0},
                                                    max={"gpu": 6.0}),
             Team(name="c"), Team(name="d", max={"gpu": 4.0})]
    assert current_quotas(teams, "gpu", ["a", "b", "c"]) == {"a": (None, 8.0), "b": (2.0, 6.0)}


def test_history_needs_slurm_and_excludes_trace(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--history", "30d", "--source", "demo"]) == 2
    assert "takes --source slurm" in capsys.readouterr().err
    assert main(["advise", "--history", "30d", "--trace", "nasa-ipsc"]) == 2
    assert "one of them" in capsys.readouterr().err
    assert main(["advise", "--history", "soon", "--source", "slurm"]) == 2
    assert "--history: bad duration" in capsys.readouterr().err


def _sacct_gpu_jobs(env: dict[str, str]) -> set[str]:
    out = subprocess.run(["sacct", "-X", "-P", "-n", "-a", "-D", "--starttime=now-1days",
                          "--endtime=now", "--format=JobIDRaw,Start,AllocTRES"],
                         env=env, capture_output=True, text=True, timeout=60, check=True)
    ids = set()
    for line in out.stdout.splitlines():
        job_id, start, tres = line.split("|")
        if start not in ("", "Unknown", "None") and parse_tres(tres).get("gpu", 0) > 0:
            ids.add(job_id)
    return ids


@pytest.mark.timeout(600)
def test_advise_history_on_the_real_slurm(slurm_cluster: _slurm_fixtures.SlurmCluster,
                                          slurm_workload: _slurm_fixtures.Workload) -> None:
    env = dict(slurm_cluster.env)
    before = _sacct_gpu_jobs(env)
    proc = subprocess.run(
        [sys.executable, "-m", "quotatop", "advise", "--history", "1d", "--source", "slurm",
         "--candidates", "4", "--workers", "0", "--json"],
        env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    after = _sacct_gpu_jobs(env)
    out = json.loads(proc.stdout)
    # Every job sacct shows started with GPUs in the period, once (one may start meanwhile).
    assert len(before) <= out["jobs"] <= len(after) and out["jobs"] > 0
    assert out["resource"] == "gpu" and out["format"] == "sacct"
    assert out["capacity"] == 64 and out["nodes"] == 8  # gpu01-08, 8 GPUs each
    current = out["candidates"][0]["candidate"]
    # The harness's GrpTRES: vision-prod 32, vision-exp 8, elastic-pool 24; no guarantees.
    for account, cap in (("vision-prod", 32), ("vision-exp", 8), ("elastic-pool", 24)):
        if account in out["teams"]:
            assert current["max"][account] == cap and account not in current["guarantee"]
    # The current quotas first, then the splits (one team: one split, its duplicates gone).
    assert out["candidates"][0]["name"] == "current" and len(out["candidates"]) >= 2
    assert out["candidates"][0]["started"] + out["candidates"][0]["unstarted"] == out["jobs"]
