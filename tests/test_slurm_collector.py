"""SlurmCollector on the captured 22.05 output: the whole snapshot, polling cadence,
outages (last good data kept, stale with a one-line reason) and recovery."""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slurm_fixture_runner import FILES, V2205, FixtureRunner

from quotatop.collectors.base import Collector
from quotatop.collectors.errors import UserError
from quotatop.collectors.model import from_json
from quotatop.collectors.slurm import commands as cmd
from quotatop.collectors.slurm.collector import SlurmCollector
from quotatop.collectors.slurm.mapping import NO_GUARANTEE
from quotatop.collectors.slurm.runner import CommandError
from quotatop.review.sacct import sacct_argv

ROOT = Path(__file__).resolve().parent.parent


def _workload() -> dict[str, tuple[str, str | None]]:
    """job id -> (state, reason) from the workload table the harness wrote in COMMANDS.md."""
    out = {}
    for line in (V2205 / "COMMANDS.md").read_text().splitlines():
        m = re.match(r"\| \w+ \| (\d+) \| \w+ \| [\w-]+ \| \w+ \| (\w+) \| (\w*) \|", line)
        if m:
            out[m.group(1)] = (m.group(2).lower(), m.group(3) or None)
    return out


class Clock:
    def __init__(self) -> None:
        self.now = 1_796_229_000.0

    def __call__(self) -> float:
        return self.now


def _collector(
    runner: FixtureRunner | None = None, **kw: object
) -> tuple[SlurmCollector, FixtureRunner, Clock]:
    runner = runner or FixtureRunner()
    clock = Clock()
    return SlurmCollector(runner, clock=clock, **kw), runner, clock  # type: ignore[arg-type]


def test_is_a_collector() -> None:
    c, _, _ = _collector()
    assert isinstance(c, Collector)


def test_every_job_state_and_reason_matches_the_workload() -> None:
    snap = _collector()[0].collect()
    assert not snap.stale and snap.stale_reason is None
    expected = _workload()
    assert len(expected) == 19
    jobs = {j.id: j for j in snap.jobs}
    for job_id, (state, reason) in expected.items():
        assert jobs[job_id].state == state, job_id
        if state == "pending":
            assert jobs[job_id].reason == reason, job_id


def test_jobs_carry_priority_factors_estimates_arrays_and_deps() -> None:
    jobs = {j.id: j for j in _collector()[0].collect().jobs}
    j21 = jobs["21"]
    assert j21.priority == 5170 and j21.factors is not None and j21.factors.qos == 5000
    assert jobs["14"].factors is not None and jobs["14"].factors.nice == -100000
    assert jobs["13"].estimated_start is not None  # backfill's own estimate
    assert jobs["15"].dependency == "afterok:10(unfulfilled)"
    assert (jobs["17"].array_parent, jobs["17"].array_task) == ("17", "4-7%2")
    assert jobs["16"].eligible_time is not None and jobs["16"].reason == "BeginTime"
    assert jobs["1"].state == "completed" and jobs["1"].end_time is not None


def test_nodes_partitions_teams_qos() -> None:
    snap = _collector()[0].collect()
    assert len(snap.nodes) == 8
    assert {n.gpu_type for n in snap.nodes} == {"h100", "a100"}
    assert sum(n.allocated.get("gpu", 0) for n in snap.nodes) == 64
    assert {p.name for p in snap.partitions} == {"gpu", "interactive"}
    teams = {t.name: t for t in snap.teams}
    assert "root" not in teams
    assert teams["vision-prod"].parent == "prod" and teams["prod"].parent is None
    assert (teams["prod"].shares, teams["exp"].shares, teams["elastic"].shares) == (60, 30, 10)
    assert teams["vision-prod"].max == {"gpu": 32} and teams["prod"].max is None
    for t in teams.values():
        assert t.guarantee is None and NO_GUARANTEE in t.source_notes
        assert t.fairshare is not None and t.fairshare.norm_shares is not None
    # QoS normal's MaxTRESPerUser is the QoS's limit, not any account's: it is in
    # snap.limits (scope qos), never copied onto the teams.
    assert all(t.per_user_limit is None for t in teams.values())
    # Usage: running jobs' requests, rolled up the tree.
    assert teams["vision-prod"].usage["gpu"] == 16
    assert (
        teams["prod"].usage["gpu"]
        == teams["vision-prod"].usage["gpu"] + teams["nlp-prod"].usage["gpu"]
    )
    qos = {q.name: q for q in snap.qos}
    assert qos["high"].preempts == ["low"] and qos["high"].grp_tres == {"gpu": 8}
    assert qos["high"].max_submit_jobs_per_user == 2 and qos["low"].max_wall == 86400
    assert qos["normal"].max_tres_per_user == {"gpu": 16}
    assert snap.meta["json_schema"] == "v0.0.38" and snap.meta["preempted_runs"] == "3:1"
    assert snap.cluster == "quotatop"


def test_status_has_latency_for_every_command() -> None:
    snap = _collector()[0].collect()
    names = {s.name for s in snap.status}
    assert {
        "squeue",
        "sinfo",
        "sprio",
        "sshare",
        "sacctmgr assoc",
        "sacctmgr qos",
        "sacct",
    } <= names
    assert all(s.ok and s.latency_ms is not None for s in snap.status)


def test_slow_commands_run_once_a_minute_fast_ones_every_refresh() -> None:
    """squeue and sinfo every refresh; sprio and sshare every 30 s (two slurmctld RPCs a
    round saved: Slurm recomputes them every PriorityCalcPeriod); the rest a minute."""
    c, runner, clock = _collector(refresh=2.0, slow_every=60.0)
    c.IDLE_ROUNDS = 10**6  # the fixture never moves: no idle back-off here (tested below)
    c.collect()
    first = len(runner.calls)
    c.collect()  # within the refresh period: cached, nothing runs
    assert len(runner.calls) == first
    for _ in range(5):
        clock.now += 2.0
        c.collect()
    ran = [FILES[w] for w in runner.calls[first:]]
    # squeue's text form every refresh; its JSON only when the text moves (below).
    assert ran.count("squeue.txt") == 5 and ran.count("sinfo.json") == 5
    assert "squeue.json" not in ran
    assert "sprio.txt" not in ran and "sshare.txt" not in ran
    assert "sacctmgr_assoc.txt" not in ran and "sacct.json" not in ran
    clock.now += 30
    before = len(runner.calls)
    c.collect()
    ran = [FILES[w] for w in runner.calls[before:]]
    assert ran.count("sprio.txt") == 1 and ran.count("sshare.txt") == 1
    assert "sacct.json" not in ran
    assert c.collect().jobs  # sprio's factors stay on the jobs between its runs
    clock.now += 60
    before = len(runner.calls)
    c.collect()  # the round's commands run at once: in no particular order
    assert "sacct.json" in [FILES[w] for w in runner.calls[before:]]


def test_squeue_json_runs_again_only_when_the_text_form_moves_or_a_minute_passed() -> None:
    """The text form is the change detector (15x cheaper for Slurm to answer); the
    JSON, read the first round, runs again in the same round the text's bytes change,
    when the JSON failed last, and a minute after its last run."""
    c, runner, clock = _collector(refresh=2.0)
    first = c.collect()
    ran = [FILES[w] for w in runner.calls]
    assert ran.count("squeue.json") == 1 and ran.count("squeue.txt") == 1

    def round_() -> list[str]:
        before = len(runner.calls)
        clock.now += 2.0
        c.collect()
        return [FILES[w] for w in runner.calls[before:]]

    assert "squeue.json" not in round_()
    assert c.collect().jobs == first.jobs  # the last JSON's jobs, kept
    text = (V2205 / "squeue.txt").read_bytes()
    runner.override["squeue.txt"] = text.replace(b"PENDING", b"RUNNING", 1)
    assert round_().count("squeue.json") == 1  # moved: the JSON in the same round
    assert "squeue.json" not in round_()  # the new text is the one compared now
    runner.override["squeue.json"] = CommandError("squeue: timed out")
    runner.override["squeue.txt"] = text
    assert round_().count("squeue.json") == 1
    assert c.collect().stale  # the JSON failed: said, and the last good jobs kept
    assert round_().count("squeue.json") == 1  # a failed JSON is tried every round
    del runner.override["squeue.json"]
    assert round_().count("squeue.json") == 1 and not c.collect().stale
    assert "squeue.json" not in round_()
    clock.now += SlurmCollector.JSON_EVERY
    assert round_().count("squeue.json") == 1  # a minute on: for what the text lacks


def test_an_idle_cluster_is_asked_less_often_until_something_moves() -> None:
    """Rounds whose jobs and nodes answer the same bytes, three in a row, double the
    poll, up to IDLE_MAX; the first round whose squeue moved brings it back."""
    c, runner, clock = _collector(refresh=2.0)
    c.collect()
    rounds_at: list[float] = []
    for _ in range(200):  # 400 s of 2 s ticks
        before = len(runner.calls)
        clock.now += 2.0
        c.collect()
        if any(FILES[w] == "squeue.txt" for w in runner.calls[before:]):
            rounds_at.append(clock.now)
    gaps = [b - a for a, b in itertools.pairwise(rounds_at)]
    # The refresh until three rounds answered as the one before; then doubling.
    assert gaps[:3] == [2.0, 2.0, 4.0]
    assert sorted(set(gaps)) == [2.0, 4.0, 8.0, 16.0, 30.0]  # doubling, capped
    assert gaps[-3:] == [30.0] * 3 and c.poll_every() == SlurmCollector.IDLE_MAX
    text = (V2205 / "squeue.txt").read_bytes()
    runner.override["squeue.txt"] = text.replace(b"PENDING", b"RUNNING", 1)
    clock.now += 30.0
    c.collect()  # the round that sees the change
    assert c.poll_every() == 2.0
    before = len(runner.calls)
    clock.now += 2.0
    c.collect()
    assert "squeue.txt" in [FILES[w] for w in runner.calls[before:]]


@pytest.mark.parametrize(
    ("file", "output"),
    [
        (
            "squeue.json",
            b'{"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "jobs": [{"job_id": 1,',
        ),
        (
            "squeue.json",
            CommandError("squeue: slurm_load_jobs error: Unable to contact slurm controller"),
        ),
        ("squeue.json", CommandError("squeue: no answer after 10 s (killed)")),
        ("sinfo.json", b"garbage\n"),
        ("sprio.txt", b"11|gpu|carol\n"),
        ("sshare.txt", CommandError("sshare: command not found")),
        ("sacctmgr_assoc.txt", b"quotatop|root|\n"),
        ("scontrol_reservation.txt", b"ReservationName=r StartTime=soon EndTime=later\n"),
    ],
)
def test_failing_command_keeps_last_good_data(file: str, output: bytes | Exception) -> None:
    c, runner, clock = _collector(refresh=0, slow_every=0)
    good = c.collect()
    runner.override[file] = output
    # squeue's JSON runs again once its text form moves or a minute has passed.
    clock.now += SlurmCollector.JSON_EVERY if file == "squeue.json" else 5
    bad = c.collect()
    assert bad.stale and bad.stale_reason and "\n" not in bad.stale_reason
    assert [j.id for j in bad.jobs] == [j.id for j in good.jobs]
    assert bad.nodes == good.nodes and bad.teams == good.teams
    failing = [s for s in bad.status if not s.ok]
    assert len(failing) == 1 and failing[0].error
    del runner.override[file]
    clock.now += 5
    again = c.collect()
    assert not again.stale and again.stale_reason is None


def test_nothing_reachable_is_stale_and_empty() -> None:
    runner = FixtureRunner()
    for name in FILES.values():
        runner.override[name] = CommandError(
            "squeue: fatal: Could not establish a configuration source"
        )
    snap = _collector(runner)[0].collect()
    assert snap.stale and snap.jobs == [] and "configuration source" in (snap.stale_reason or "")


def test_text_fallback_when_squeue_has_no_json() -> None:
    runner = FixtureRunner()
    runner.override["squeue.json"] = CommandError("squeue: unrecognized option '--json'")
    snap = _collector(runner)[0].collect()
    assert not snap.stale
    assert snap.meta["json_schema"].startswith("none")
    expected = _workload()
    jobs = {j.id: j for j in snap.jobs}
    for job_id, (state, reason) in expected.items():
        assert jobs[job_id].state == state, job_id
        if state == "pending":
            assert jobs[job_id].reason == reason
    assert jobs["13"].request == {"cpu": 8, "memory": 65536, "gpu": 8, "gpu:h100": 8}


# ---- the CLI, with the real runner and fake Slurm binaries that print the fixtures ----
def _fake_slurm(bindir: Path) -> None:
    by_command: dict[str, list[tuple[list[str], str]]] = {}
    for argv, name in FILES.items():
        by_command.setdefault(argv[0], []).append((list(argv[1:]), name))
    for command, variants in by_command.items():
        table = {" ".join(a): str(V2205 / n) for a, n in variants}
        path = bindir / command
        path.write_text(
            f"#!{sys.executable}\nimport sys\nT = {table!r}\n"
            "f = T.get(' '.join(sys.argv[1:]))\n"
            "if f is None: sys.exit('unexpected argv: ' + ' '.join(sys.argv[1:]))\n"
            "sys.stdout.write(open(f).read())\n"
        )
        path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run_cli(args: list[str], bindir: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    return subprocess.run(
        [sys.executable, "-m", "quotatop", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def test_snapshot_cli_json(tmp_path: Path) -> None:
    _fake_slurm(tmp_path)
    proc = _run_cli(["snapshot", "--source", "slurm", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    snap = from_json(proc.stdout)
    assert len(snap.jobs) == 21 and len(snap.nodes) == 8 and not snap.stale
    assert json.loads(proc.stdout)["source"] == "slurm"


def test_snapshot_cli_unreachable_is_one_line_exit_2(tmp_path: Path) -> None:
    for name in ("squeue", "sinfo", "sprio", "sshare", "sacctmgr", "scontrol", "sacct"):
        p = tmp_path / name
        p.write_text(
            "#!/bin/sh\n"
            f"echo '{name}: error: Unable to contact slurm controller (connect failure)' >&2\n"
            "exit 1\n"
        )
        p.chmod(0o755)
    proc = _run_cli(["snapshot", "--source", "slurm", "--json"], tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Unable to contact slurm controller" in lines[0]


def test_snapshot_cli_rejects_bad_ssh_host(tmp_path: Path) -> None:
    proc = _run_cli(["snapshot", "--source", "slurm", "--ssh=-oProxyCommand=x"], tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_collector_commands_are_the_documented_ones() -> None:
    text = (V2205 / "COMMANDS.md").read_text()
    for argv in FILES:
        assert repr(list(argv)) in text.replace('"', "'") or repr(list(argv)) in text
    assert cmd.SQUEUE_JSON == ["squeue", "--all", "--json"]


def test_json_errors_with_exit_status_zero_are_a_failure() -> None:
    # 22.05 exits 0 with an "errors" entry and no jobs when slurmctld is down.
    runner = FixtureRunner()
    c, _, clock = _collector(runner, refresh=0)
    good = c.collect()
    runner.override["squeue.json"] = (
        b'{"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "errors": [{"error": '
        b'"Unable to contact slurm controller (connect failure)", "errno": 1007}], "jobs": []}'
    )
    # The text form, the change detector, fails then too; either makes the JSON run.
    runner.override["squeue.txt"] = CommandError(
        "squeue: slurm_load_jobs error: Unable to contact slurm controller")
    clock.now += 5
    snap = c.collect()
    assert snap.stale
    assert snap.stale_reason == "squeue: Unable to contact slurm controller (connect failure)"
    assert len(snap.jobs) == len(good.jobs)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_mutated_output_of_any_command_never_crashes_collect(data: st.DataObject) -> None:
    runner = FixtureRunner()
    c, _, clock = _collector(runner, refresh=0, slow_every=0)
    good = c.collect()
    name = data.draw(st.sampled_from(sorted(set(FILES.values()))))
    raw = bytearray((V2205 / name).read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at : at + data.draw(st.integers(0, 6))] = data.draw(st.binary(max_size=6))
    runner.override[name] = bytes(raw)
    clock.now += 5
    snap = c.collect()
    if snap.stale:
        # The one failing command's last good output is still in use: nothing changed.
        assert snap.stale_reason and "\n" not in snap.stale_reason
        assert (snap.jobs, snap.nodes, snap.teams, snap.qos, snap.partitions) == (
            good.jobs, good.nodes, good.teams, good.qos, good.partitions
        )
        assert sum(not s.ok for s in snap.status) == 1


def test_grouped_sinfo_of_2302_takes_per_node_allocation_from_scontrol() -> None:
    runner = FixtureRunner()
    groups = [
        {
            "nodes": {"nodes": [f"gpu{i:02d}" for i in range(1, 9)]},
            "node": {"state": ["MIXED"]},
            "partition": {"name": part},
            "gres": {"total": "gpu:8", "used": ""},
        }
        for part in ("gpu", "interactive")
    ]
    doc = {"meta": {"plugin": {"data_parser": "data_parser/v0.0.39"}}, "sinfo": groups}
    runner.override["sinfo.json"] = json.dumps(doc).encode()
    snap = _collector(runner)[0].collect()
    assert not snap.stale
    assert tuple(cmd.SCONTROL_NODE) in runner.calls
    nodes = {n.name: n for n in snap.nodes}
    assert nodes["gpu01"].partitions == ["gpu", "interactive"]
    assert nodes["gpu01"].gpus_used_indices == list(range(8))
    assert nodes["gpu08"].allocated["cpu"] == 12 and nodes["gpu05"].gpu_type == "a100"


def test_22_05_sinfo_needs_no_scontrol_node() -> None:
    c, runner, _ = _collector()
    c.collect()
    assert tuple(cmd.SCONTROL_NODE) not in runner.calls


def test_accounting_that_cannot_run_is_one_user_error_line(tmp_path: Path) -> None:
    # The TUI's Report screen reaches sacct only through the collector's accounting
    # capability (collectors/base.py) and knows no runner: a query that cannot run (no
    # sacct on this PATH) comes back as the one-line UserError the screen shows.
    c = SlurmCollector(env={"PATH": str(tmp_path)})
    with pytest.raises(UserError) as e:
        c.accounting(sacct_argv(0.0, 3600.0))
    assert str(e.value) == "slurm: sacct: command not found"
    assert c._accounting == []  # the runner of its own is gone


def test_the_same_answers_give_the_same_lists_and_a_changed_one_new_ones() -> None:
    """An idle cluster answers the same bytes: they are not parsed again, and the
    snapshot carries the last one's lists (the viewer then has nothing to escape,
    hash or paint); its moment and status are this round's."""
    c, runner, clock = _collector(refresh=2.0)
    first = c.collect()
    clock.now += 2.0
    second = c.collect()
    assert second.taken_at == first.taken_at + 2.0
    assert second.jobs is first.jobs and second.nodes is first.nodes
    assert second.teams is first.teams
    text = (V2205 / "sinfo.json").read_bytes()
    runner.override["sinfo.json"] = text.replace(b'"state": "mixed"', b'"state": "idle"', 1)
    clock.now += 2.0
    third = c.collect()
    assert third.nodes is not first.nodes and third.nodes != first.nodes
