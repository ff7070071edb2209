"""Hostile Slurm commands (fake executables first on PATH): a flood of output, a
grandchild that keeps stdout open, a terminal that closes, a controller that never
answers, a number too large to record, a source that never answers at all. Each ends
in bounded time and memory with one line naming the command, and no process stays."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import psutil
import pytest
from slurm_fixture_runner import FixtureRunner

from quotatop.collectors.model import to_msgpack
from quotatop.collectors.slurm import commands as cmd
from quotatop.collectors.slurm import runner as runner_mod
from quotatop.collectors.slurm.collector import SlurmCollector
from quotatop.collectors.slurm.errors import ParseError
from quotatop.collectors.slurm.runner import CommandError, Runner
from quotatop.collectors.slurm.sacctmgr import parse_qos
from quotatop.collectors.slurm.table import to_int

ROOT = Path(__file__).resolve().parent.parent
SLURM = ("squeue", "sinfo", "sprio", "sshare", "sacctmgr", "scontrol", "sacct")


def _script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _env(bindir: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '')}"}


def _hanging(bindir: Path, pids: Path) -> None:
    """Every Slurm command prints nothing and sleeps, as with a controller that never
    answers; each writes its pid to ``pids``."""
    for name in SLURM:
        _script(bindir, name, f"echo $$ >> {pids}\nexec sleep 300\n")


def _within(seconds: float, fn: Callable[[], Any]) -> Any:
    """fn()'s answer, or a failure (not a hung test) when it takes longer."""
    box: dict[str, Any] = {}

    def go() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test thread
            box["error"] = exc

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


def _gone(pid: int, wait: float = 5.0) -> bool:
    end = time.monotonic() + wait
    while time.monotonic() < end:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def _pids(path: Path, want: int, wait: float = 10.0) -> list[int]:
    end = time.monotonic() + wait
    while time.monotonic() < end:
        found = [int(p) for p in path.read_text().split()] if path.exists() else []
        if len(found) >= want:
            return found
        time.sleep(0.05)
    raise AssertionError(f"only {path.read_text() if path.exists() else ''!r} in {path}")


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


# ---- 1. output read with a cap ------------------------------------------------------
def test_the_caps_are_the_documented_ones() -> None:
    assert runner_mod.output_cap("squeue") == runner_mod.output_cap("sacct") == 1 << 30
    for name in ("sinfo", "sprio", "sshare", "sacctmgr", "scontrol"):
        assert runner_mod.output_cap(name) == 64 << 20
    assert runner_mod.STDERR_CAP == 1 << 20
    assert "1 GiB" in (ROOT / "docs" / "slurm.md").read_text()


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_flooding_command_is_killed_at_its_cap(
    stream: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(runner_mod.OUTPUT_CAPS, "sprio", 1 << 20)
    monkeypatch.setattr(runner_mod, "STDERR_CAP", 1 << 20)
    redirect = "" if stream == "stdout" else " >&2"
    _script(tmp_path, "sprio", f"echo $$ > {tmp_path / 'pid'}\nexec cat /dev/zero{redirect}\n")
    runner = Runner(env=_env(tmp_path), timeout=60.0)
    started = time.monotonic()
    with pytest.raises(CommandError) as info:
        _within(30, lambda: runner.run("sprio", cmd.SPRIO))
    what = "output" if stream == "stdout" else "stderr"
    assert str(info.value) == f"sprio: {what} over 1 MiB (killed)"
    assert time.monotonic() - started < 20  # killed at the cap, not at the 60 s timeout
    assert _gone(_pids(tmp_path / "pid", 1)[0])
    assert runner.status["sprio"].error == str(info.value)


# ---- 2. own process group, killed at the deadline, EOF never awaited past it --------
def test_a_grandchild_holding_stdout_open_does_not_hold_the_command(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # squeue answers and exits, but a background child inherited its stdout.
    _script(
        tmp_path,
        "squeue",
        f"sh -c 'echo $$ >> {pids}; exec sleep 300' &\necho '{{}}'\nexit 0\n",
    )
    runner = Runner(env=_env(tmp_path), timeout=1.0)
    started = time.monotonic()
    with pytest.raises(CommandError, match=r"^squeue: no answer after 1(\.\d)? s \(killed\)$"):
        _within(30, lambda: runner.run("squeue", cmd.SQUEUE_JSON))
    assert time.monotonic() - started < 10
    grandchild = _pids(pids, 1)[0]
    assert _gone(grandchild)  # killed with the whole group


def test_a_grandchild_that_left_the_group_cannot_hold_the_command_either(
    tmp_path: Path,
) -> None:
    pids = tmp_path / "pids"
    # setsid: out of reach of the group kill; the read still stops at the deadline.
    py = (
        f"import os,time; open({str(pids)!r},'a').write(f'{{os.getpid()}}\\n'); time.sleep(300)"
    )
    _script(
        tmp_path,
        "squeue",
        f"setsid {sys.executable} -c \"{py}\" &\nsleep 300\n",
    )
    runner = Runner(env=_env(tmp_path), timeout=1.0)
    started = time.monotonic()
    try:
        with pytest.raises(CommandError, match="no answer after"):
            _within(30, lambda: runner.run("squeue", cmd.SQUEUE_JSON))
        assert time.monotonic() - started < 10
    finally:
        _kill(_pids(pids, 1))


def test_each_command_runs_in_its_own_session(tmp_path: Path) -> None:
    _script(tmp_path, "sinfo", "ps -o pid=,pgid=,sid= -p $$\n")
    out = Runner(env=_env(tmp_path)).run("sinfo", cmd.SINFO_JSON).stdout.split()
    pid, pgid, sid = (int(x) for x in out)
    assert pid == pgid == sid != os.getpgrp()


# ---- 3. SIGHUP / SIGTERM / exit kill the groups still running -----------------------
_CHILD = """
import signal, sys, threading
# As in a terminal, whatever this test run inherited: under nohup SIGHUP comes in
# ignored, and quotatop rightly keeps it ignored (the process would then exit 0).
for s in (signal.SIGHUP, signal.SIGTERM):
    signal.signal(s, signal.SIG_DFL)
before = signal.getsignal(signal.SIGHUP)
from quotatop.collectors.slurm import commands as cmd
from quotatop.collectors.slurm.runner import Runner
assert signal.getsignal(signal.SIGHUP) == before, "a handler installed at import"
r = Runner(timeout=120)
t = threading.Thread(target=r.run, args=("squeue", cmd.SQUEUE_JSON), daemon=True)
t.start()
print("started", flush=True)
if sys.argv[1] == "exit":
    import time
    while not r.progress():
        time.sleep(0.05)
    time.sleep(0.5)
    sys.exit(0)
from quotatop.collectors import procgroups
with procgroups.killing_on_signals():
    t.join()
"""


@pytest.mark.parametrize("how", ["SIGHUP", "SIGTERM", "exit"])
def test_closing_the_terminal_or_exiting_leaves_no_command_behind(
    how: str, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    _script(tmp_path, "squeue", f"sleep 300 &\necho $! >> {pids}\necho $$ >> {pids}\nwait\n")
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, how],
        cwd=ROOT,
        env={**_env(tmp_path), "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        found = _pids(pids, 2, wait=30)
        if how != "exit":
            time.sleep(0.3)
            proc.send_signal(getattr(signal, how))
        _, err = proc.communicate(timeout=30)
        if how == "exit":
            assert proc.returncode == 0, err
        else:  # then the process ends of the signal, as it would have without us
            assert proc.returncode == -getattr(signal, how), err
        for pid in found:
            assert _gone(pid), f"{pid} outlived quotatop"
    finally:
        proc.kill()
        _kill(_pids(pids, 0))


def test_the_cli_installs_the_handlers_and_puts_the_old_ones_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from quotatop.cli import main

    seen: dict[str, object] = {}
    before = signal.getsignal(signal.SIGHUP)

    def fake_snapshot(args: object) -> int:
        seen["hup"] = signal.getsignal(signal.SIGHUP)
        return 0

    import quotatop.commands.snapshot as snapshot_cmd

    monkeypatch.setattr(snapshot_cmd, "run", fake_snapshot)
    assert main(["snapshot", "--source", "demo"]) == 0
    assert callable(seen["hup"]) and seen["hup"] is not before
    assert signal.getsignal(signal.SIGHUP) == before


# ---- 4. one deadline for the whole round --------------------------------------------
def test_a_round_of_hanging_commands_takes_one_timeout_not_one_per_command(
    tmp_path: Path,
) -> None:
    pids = tmp_path / "pids"
    _hanging(tmp_path, pids)
    collector = SlurmCollector(env=_env(tmp_path), timeout=2.0)
    started = time.monotonic()
    snap = _within(60, collector.collect)
    took = time.monotonic() - started
    collector.close()
    # 10 commands one after another would take 20 s.
    assert took < 8, took
    assert snap.stale and snap.stale_reason.startswith("squeue: no answer after 2")
    failed = {s.name for s in snap.status if not s.ok}
    assert {"squeue", "sinfo", "sprio", "sshare", "sacct", "sacctmgr qos"} <= failed
    found = _pids(pids, 10)
    assert all(_gone(p) for p in found)


def test_run_many_runs_each_command_in_its_own_process_at_once(tmp_path: Path) -> None:
    log = tmp_path / "log"
    for name in ("squeue", "sinfo", "sprio", "sshare"):
        _script(tmp_path, name, f"echo \"$$ {name}\" >> {log}\nsleep 1\necho {name}\n")
    runner = Runner(env=_env(tmp_path), timeout=30)
    commands = [
        ("squeue", cmd.SQUEUE_JSON),
        ("sinfo", cmd.SINFO_JSON),
        ("sprio", cmd.SPRIO),
        ("sshare", cmd.SSHARE),
    ]
    started = time.monotonic()
    got = runner.run_many(commands)
    assert time.monotonic() - started < 3.5  # not 4 x 1 s
    assert {n: r.stdout.strip() for n, r in got.items()} == {  # type: ignore[union-attr]
        n: n.encode() for n, _ in commands
    }
    assert len({line.split()[0] for line in log.read_text().splitlines()}) == 4


def test_run_many_over_ssh_is_one_batchmode_ssh_per_command(tmp_path: Path) -> None:
    log = tmp_path / "ssh.log"
    remote = tmp_path / "remote"
    remote.mkdir()
    for name in ("squeue", "sinfo", "sprio", "sshare", "sacct"):
        _script(remote, name, f"echo {name}\n")
    _script(
        tmp_path,
        "ssh",
        f'echo "$$ $*" >> {log}\nfor last; do :; done\nPATH={remote}:$PATH exec sh -c "$last"\n',
    )
    runner = Runner(ssh_host="login.example", env=_env(tmp_path))
    commands = [
        ("squeue", cmd.SQUEUE_JSON),
        ("sinfo", cmd.SINFO_JSON),
        ("sprio", cmd.SPRIO),
        ("sshare", cmd.SSHARE),
        ("sacct", cmd.SACCT_JSON),
    ]
    got = runner.run_many(commands)
    runner.close()
    assert {n: r.stdout.strip() for n, r in got.items()} == {  # type: ignore[union-attr]
        n: n.encode() for n, _ in commands
    }
    lines = [ln for ln in log.read_text().splitlines() if " -- " in ln]  # not close()'s -O exit
    assert len(lines) == 5 and len({ln.split()[0] for ln in lines}) == 5
    assert all("BatchMode=yes" in ln for ln in lines)


def test_a_round_never_starts_anything_outside_the_allowlist(tmp_path: Path) -> None:
    from quotatop.collectors.slurm.runner import NotAllowed

    _script(tmp_path, "squeue", f"touch {tmp_path / 'ran'}\n")
    runner = Runner(env=_env(tmp_path))
    with pytest.raises(NotAllowed):
        runner.run_many([("squeue", cmd.SQUEUE_JSON), ("x", ["scancel", "1"])])
    assert not (tmp_path / "ran").exists()


# ---- 5. which commands are in flight ------------------------------------------------
def test_progress_names_the_commands_in_flight_from_another_thread(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    _hanging(tmp_path, pids)
    collector = SlurmCollector(env=_env(tmp_path), timeout=3.0)
    assert collector.progress() == []
    seen: list[list[tuple[str, float]]] = []
    t = threading.Thread(target=collector.collect, daemon=True)
    t.start()
    _pids(pids, 10)
    time.sleep(0.3)
    seen.append(collector.progress())
    t.join(20)
    collector.close()
    names = [n for n, _ in seen[0]]
    assert {"squeue", "sinfo", "sprio", "sshare", "sacct"} <= set(names)
    assert all(0 < s < 5 for _, s in seen[0])
    assert collector.progress() == []


def test_snapshot_says_what_it_is_waiting_for(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    _hanging(tmp_path, pids)
    proc = subprocess.run(
        [sys.executable, "-m", "quotatop", "snapshot", "--source", "slurm", "--timeout", "3"],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2, proc.stderr
    assert lines[0].startswith("connecting to slurm: squeue, squeue text, sinfo")
    assert re.search(r" \(\d+s\)$", lines[0]), lines[0]
    assert lines[1].startswith("quotatop: slurm: no data: squeue: no answer after 3")
    assert all(_gone(p) for p in _pids(pids, 10))


def test_progress_line_shape() -> None:
    from quotatop.commands.snapshot import progress_line

    line = progress_line("slurm", [("squeue", 3.2), ("sinfo", 3.1), ("sprio", 3.0), ("x", 1)])
    assert line == "connecting to slurm: squeue, sinfo, sprio … (3s)"


# ---- 6. record without one good frame -----------------------------------------------
def test_record_that_never_got_data_exits_2_with_the_reason(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()  # no Slurm commands at all
    out = tmp_path / "rec.sqlite"
    proc = subprocess.run(
        [sys.executable, "-m", "quotatop", "record", "--source", "slurm", "--out", str(out),
         "--frames", "2", "--interval", "0.1"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(empty)},
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("quotatop: slurm: no data in 2 frame(s) recorded to ")
    assert lines[0].endswith("squeue: command not found (+10 more failing)")


# ---- 7. numbers from Slurm text bounded ---------------------------------------------
@pytest.mark.parametrize(
    "text",
    [str(2**64 + 1), str(2**53 + 1), "-" + str(2**60), "9" * 5000],
    ids=["2^64+1", "2^53+1", "-2^60", "5000 digits"],
)
def test_integers_out_of_range_are_a_parse_error_naming_the_field(text: str) -> None:
    with pytest.raises(ParseError, match=r"QoS Priority .*out of range"):
        to_int(text, "QoS Priority")


def test_int_edge_values_still_parse() -> None:
    assert to_int(str(2**53), "x") == 2**53 and to_int("4294967295", "x") == 4294967295
    assert to_int("-1", "x") == -1
    with pytest.raises(ParseError, match="not an integer"):
        to_int("--5", "x")


def test_a_huge_qos_priority_is_a_source_error_and_the_frame_still_records() -> None:
    good = (FixtureRunner().directory / "sacctmgr_qos.txt").read_bytes()
    huge = good.replace(b"|normal|100|", b"|normal|" + str(2**70).encode() + b"|", 1)
    assert huge != good
    with pytest.raises(ParseError, match="QoS Priority"):
        parse_qos(huge.decode())
    runner = FixtureRunner()
    clock = [1_796_229_000.0]
    c = SlurmCollector(runner, refresh=0, slow_every=0, clock=lambda: clock[0])
    first = c.collect()
    assert not first.stale
    runner.override["sacctmgr_qos.txt"] = huge
    clock[0] += 5
    snap = c.collect()
    assert snap.stale and "sacctmgr qos: cannot parse QoS Priority" in (snap.stale_reason or "")
    assert [q.priority for q in snap.qos] == [q.priority for q in first.qos]  # last good kept
    msgspec.msgpack.decode(to_msgpack(snap))  # a recording can hold it
