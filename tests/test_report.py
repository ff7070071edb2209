"""`quotatop report` (docs/review.md): the pure computation on hand-derived numbers, a
recording of the bundled demo against the demo itself, and the real Slurm of
tests/harness against sacct's own AllocTRES × Elapsed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from quotatop.cli import main
from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Team
from quotatop.collectors.slurm.tres import parse_tres
from quotatop.recording.store import Recorder
from quotatop.review.report import JobRecord, Prices, build_report, parse_prices, percentile
from quotatop.simulation.scenario import load_scenario
from quotatop.simulation.scenario_source import ScenarioSource
from tests.harness import fixtures as _slurm_fixtures

# The same fixtures as tests/test_slurm_live.py: one cluster per session.
slurm_cluster = _slurm_fixtures.slurm_cluster
slurm_workload = _slurm_fixtures.slurm_workload

ROOT = Path(__file__).resolve().parent.parent
H = 3600.0

# lab (no guarantee) has two children: a (2 GPUs guaranteed) and b (4 GPUs).
TEAMS = [Team(name="lab"), Team(name="a", parent="lab", guarantee={"gpu": 2}),
         Team(name="b", parent="lab", guarantee={"gpu": 4})]
RECORDS = [
    # Crosses the period's start: only [0, 2 h) counts. Started before: no wait.
    JobRecord(job_id="a1", team="a", submit=-2 * H, start=-H, end=2 * H,
              alloc={"gpu": 2, "gpu:h100": 2, "cpu": 8}),
    # Still pending at the end: longest waits, not percentiles.
    JobRecord(job_id="a2", team="a", submit=30000.0),
    JobRecord(job_id="b1", team="b", submit=-600.0, start=0.0, end=H, alloc={"gpu:a100": 4}),
    # Preempted after 1 h, run again from 2 h and still running at the end (8 h).
    JobRecord(job_id="b2", team="b", submit=0.0, start=1800.0, end=5400.0,
              alloc={"gpu:a100": 4}, preempted=True),
    JobRecord(job_id="b2", team="b", submit=0.0, start=2 * H, end=None, alloc={"gpu:a100": 4}),
]
PRICES = Prices(currency="EUR", cpu_hour=0.5, gpu={"h100": 4.0, "a100": 2.0})


def _rows(**kw: object) -> dict:
    rep = build_report(RECORDS, TEAMS, since=0.0, until=10 * H, prices=PRICES, **kw)
    return {r.team: r for r in rep.teams} | {"(all)": rep.total}


def test_usage_is_the_inside_part_and_parents_count_children_once() -> None:
    rows = _rows()
    a, b, lab, total = rows["a"], rows["b"], rows["lab"], rows["(all)"]
    assert a.gpu_hours == pytest.approx(4.0)  # 2 GPUs × 2 h inside, not 3 h
    assert a.gpu_hours_by_type == {"h100": pytest.approx(4.0)}
    assert a.cpu_hours == pytest.approx(16.0)
    assert b.gpu_hours == pytest.approx(4 + 4 + 32)  # 1 h + 1 h + 8 h, × 4
    assert lab.gpu_hours == pytest.approx(44.0) == total.gpu_hours
    assert (a.jobs, b.jobs, lab.jobs) == (2, 2, 4)
    assert (a.preemptions, b.preemptions, lab.preemptions) == (0, 1, 1)
    assert lab.children == ["a", "b"] and (a.depth, lab.depth) == (1, 0)


def test_cost_with_two_gpu_types() -> None:
    rows = _rows()
    assert rows["a"].cost == pytest.approx(4 * 4.0 + 16 * 0.5)  # h100-hours, CPU-hours
    assert rows["b"].cost == pytest.approx(40 * 2.0)
    assert rows["lab"].cost == pytest.approx(24.0 + 80.0)
    assert rows["lab"].unpriced_gpu_hours == 0
    cheap = build_report(RECORDS, TEAMS, since=0.0, until=10 * H, prices=Prices(gpu={"a100": 1}))
    assert {r.team: r.unpriced_gpu_hours for r in cheap.teams}["a"] == pytest.approx(4.0)


def test_guarantee_hours_and_idle_guarantee() -> None:
    rows = _rows()
    a, b, lab = rows["a"], rows["b"], rows["lab"]
    assert a.guarantee_gpu_hours == pytest.approx(20.0)  # 2 GPUs × 10 h
    assert a.used_gpu_hours_within_guarantee == pytest.approx(4.0)
    assert a.idle_guarantee_gpu_hours == pytest.approx(16.0)
    # b: 4 (b1) for 0.5 h, 8 capped at 4 for 0.5 h, 4 for 0.5 h, 0 for 0.5 h, 4 for 8 h.
    assert b.used_gpu_hours_within_guarantee == pytest.approx(2 + 2 + 2 + 32)
    assert b.idle_guarantee_gpu_hours == pytest.approx(2.0)
    assert (lab.guarantee_gpu_hours, lab.idle_guarantee_gpu_hours) == (
        pytest.approx(60.0), pytest.approx(18.0))
    assert a.guarantee_cpu_hours is None  # no CPU guarantee: None, not 0


def test_waits_per_job() -> None:
    rows = _rows()
    b, lab = rows["b"], rows["lab"]
    # b1 waited 600 s; b2 1800 s to its first start and 1800 s more from its preemption
    # (1.5 h) to its second start (2 h): 3600 s, not only the first 1800.
    assert (b.wait_p50, b.wait_p90) == (pytest.approx(2100.0), pytest.approx(3300.0))
    # a1 started before the period; a2 never started and has waited 6000 s by the end:
    # it counts (a job that never started has waited).
    assert (rows["a"].wait_p50, rows["a"].wait_p90) == (6000.0, 6000.0)
    longest = [(w.job_id, w.wait, w.started) for w in lab.longest_waits]
    assert longest == [("a2", 6000.0, False), ("b2", 3600.0, True), ("b1", 600.0, True)]
    assert percentile([10, 20, 30], 0.5) == 20 and percentile([10, 20, 30], 0.9) == 28


def test_a_wait_is_every_pending_span() -> None:
    recs = [
        # Preempted at 500 and pending again until the end (2000): 100 + 1500.
        JobRecord(job_id="p", team="t", submit=0.0, start=100.0, end=500.0, preempted=True),
        JobRecord(job_id="p", team="t", submit=0.0),
        # Requeued with its own submit (as Slurm resets it): pending 0-100, then 600-900.
        JobRecord(job_id="q", team="t", submit=0.0, start=100.0, end=500.0, preempted=True),
        JobRecord(job_id="q", team="t", submit=600.0, start=900.0, end=1000.0),
        # Submitted before the period and still pending: the part inside it, 2000 - 300.
        JobRecord(job_id="r", team="t", submit=-5000.0),
        # Ran and ended before the period: not in it.
        JobRecord(job_id="s", team="t", submit=-900.0, start=-800.0, end=-700.0),
    ]
    rep = build_report(recs, [Team(name="t")], since=300.0, until=2000.0)
    waits = {w.job_id: (w.wait, w.started) for w in rep.total.longest_waits}
    # p's and q's first spans end before the period (at 100): only the later span counts.
    assert waits == {"p": (1500.0, False), "q": (300.0, True), "r": (1700.0, False)}
    assert rep.total.wait_p50 == pytest.approx(1500.0)
    assert rep.total.wait_p90 == pytest.approx(1500.0 + 0.8 * 200.0)
    full = build_report(recs, [Team(name="t")], since=0.0, until=2000.0)
    waits = {w.job_id: w.wait for w in full.total.longest_waits}
    assert waits == {"p": 1600.0, "q": 400.0, "r": 2000.0}


def test_the_demo_counts_the_wait_after_a_preemption(
        capsys: pytest.CaptureFixture[str]) -> None:
    """el-9 is preempted 5 min in and starts again at 70 min (the starvation incident
    says it pending an hour): its wait is that hour and more, not the 0 s before its first
    start."""
    rep = _json(capsys, "--source", "demo")
    elastic = next(t for t in rep["teams"] if t["team"] == "elastic")
    el9 = next(w for w in elastic["longest_waits"] if w["job_id"] == "el-9")
    assert el9["wait"] >= H
    assert elastic["wait_p90"] >= H
    from quotatop.collectors.human import human_duration

    # The incident says the hour in the one human format ("pending 60m").
    assert any("el-9" in i["summary"] and f"pending {human_duration(H)}" in i["summary"]
               for i in rep["incidents"])


def test_a_parent_cycle_counts_each_team_once() -> None:
    teams = [Team(name="x", parent="y"), Team(name="y", parent="x")]
    recs = [JobRecord(job_id="1", team="x", submit=0, start=0, end=H, alloc={"gpu": 1}),
            JobRecord(job_id="2", team="y", submit=0, start=0, end=H, alloc={"gpu": 1})]
    rep = build_report(recs, teams, since=0, until=H)
    assert rep.total.gpu_hours == pytest.approx(2.0)
    assert sum(r.gpu_hours for r in rep.teams if r.depth == 0) == pytest.approx(2.0)


def test_bad_prices_are_one_line_exit_2(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UserError, match=r"at prices.gpu.h100: expected a price"):
        parse_prices({"gpu": {"h100": -1}}, "cfg")
    with pytest.raises(UserError, match=r"at prices.gpu_hours: unknown key"):
        parse_prices({"gpu_hours": 1}, "cfg")
    cfg = tmp_path / "c.toml"
    cfg.write_text('[prices]\ncpu_hour = "cheap"\n')
    assert main(["report", "--config", str(cfg), "--source", "demo"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "at prices.cpu_hour" in err, err


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["report", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_recording_of_the_demo_reports_what_the_demo_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = ROOT / "demo_data" / "split_60_30_10.toml"
    src = ScenarioSource(load_scenario(scenario), loop=False)
    rec = tmp_path / "demo.qtr"
    with Recorder(rec, source="demo") as r:
        for _ in range(src.total_steps):
            r.append(src.collect())
    replay = _json(capsys, "--source", "replay", str(rec))
    demo = _json(capsys, "--source", "demo", str(scenario))
    got = {t["team"]: t["gpu_hours"] for t in replay["teams"]}
    assert got == pytest.approx({t["team"]: t["gpu_hours"] for t in demo["teams"]})
    # prod: 15 jobs × 4 GPUs × 1 h, never preempted (it is the team that reclaims).
    assert got["prod"] == pytest.approx(60.0)
    # exp and elastic borrowed and were preempted when prod came back.
    pre = {t["team"]: t["preemptions"] for t in replay["teams"]}
    assert pre["prod"] == 0 and pre["exp"] > 0
    assert replay["incidents"] is not None
    for fmt, needle in (("md", "## Usage"), ("csv", "team,parent,depth"),
                        ("html", "<table>")):
        assert main(["report", "--source", "replay", str(rec), "--format", fmt]) == 0
        assert needle in capsys.readouterr().out


# ---- the real Slurm -----------------------------------------------------------------

def _sacct_gpu_hours(env: dict[str, str]) -> tuple[dict[str, float], int]:
    """GPU-hours per account as sacct itself gives them: AllocTRES gres/gpu × ElapsedRaw
    of every run (-D) in the last day, and how many GPUs are still running."""
    out = subprocess.run(
        ["sacct", "-X", "-P", "-n", "-D", "-a", "--starttime=now-1days",
         "--format=Account,AllocTRES,ElapsedRaw,State"],
        env=env, capture_output=True, text=True, timeout=60, check=True).stdout
    per: dict[str, float] = {}
    running = 0
    for line in out.splitlines():
        account, tres, elapsed, state = line.split("|")
        gpus = parse_tres(tres).get("gpu", 0.0)
        per[account] = per.get(account, 0.0) + gpus * float(elapsed or 0) / 3600.0
        running += int(gpus) if state.startswith("RUNNING") else 0
    return per, running


@pytest.mark.timeout(600)
def test_gpu_hours_per_account_equal_sacct_on_the_real_slurm(
        slurm_cluster: _slurm_fixtures.SlurmCluster,
        slurm_workload: _slurm_fixtures.Workload) -> None:
    env = dict(slurm_cluster.env)
    before, _ = _sacct_gpu_hours(env)
    t0 = time.time()
    proc = subprocess.run(
        [sys.executable, "-m", "quotatop", "report", "--source", "slurm", "--since", "1d",
         "--format", "json"], env=env, capture_output=True, text=True, timeout=300,
        cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    after, running = _sacct_gpu_hours(env)
    slack = running * (time.time() - t0 + 2) / 3600.0  # running jobs accrue meanwhile
    got = {t["team"]: t["gpu_hours"] for t in json.loads(proc.stdout)["teams"]}
    assert any(v > 0 for v in after.values()), after
    for account in set(after) | {k for k, v in got.items() if v > 0}:
        lo, hi = before.get(account, 0.0), after.get(account, 0.0)
        own = got.get(account, 0.0)
        # A row is a subtree: take the account's own part by subtracting its children.
        kids = [t for t in json.loads(proc.stdout)["teams"] if t["parent"] == account]
        own -= sum(k["gpu_hours"] for k in kids)
        assert lo - 1e-3 <= own <= hi + 1e-3, (account, lo, own, hi)
        assert hi - lo <= slack + 1e-3
    assert json.loads(proc.stdout)["incidents"] is None  # live Slurm: needs a recording


def test_a_prices_file_nested_too_deeply_is_one_line(tmp_path: Path) -> None:
    """--prices reads through the same TOML reader as scenarios and the config, so a file
    that makes tomllib recurse past Python's limit is one UserError, not a traceback."""
    from quotatop.commands.report import load_prices

    p = tmp_path / "p.toml"
    p.write_text("x = " + "[" * 3000 + "]" * 3000 + "\n")
    with pytest.raises(UserError, match="not TOML: nested too deeply"):
        load_prices(str(p), None)
