"""The command runner: allowlist, timeouts that kill the whole tree, ssh wrapping."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from quotatop.collectors.slurm import commands as cmd
from quotatop.collectors.slurm.runner import CommandError, NotAllowed, Runner, check_argv

ALL_COMMANDS = [v for k, v in vars(cmd).items() if k.isupper() and isinstance(v, list)]


def _script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _env(bindir: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '')}"}


@pytest.mark.parametrize("argv", ALL_COMMANDS, ids=lambda a: " ".join(a[:3]))
def test_every_collector_command_is_allowed(argv: list[str]) -> None:
    assert check_argv(argv) == argv


FORBIDDEN = [
    ["scancel", "12"],
    ["sbatch", "--wrap", "true"],
    ["srun", "hostname"],
    ["sacctmgr", "modify", "qos", "normal", "set", "Priority=1"],
    ["sacctmgr", "-i", "delete", "account", "prod"],
    ["sacctmgr", "show", "assoc", "extra"],
    ["sacctmgr", "--noheader", "add", "user", "eve"],
    ["scontrol", "update", "NodeName=gpu01", "State=DRAIN"],
    ["scontrol", "shutdown"],
    ["scontrol", "requeue", "12"],
    ["scontrol", "show", "job", "1", "2"],
    ["squeue", "--json;", "rm", "-rf", "/"],
    ["squeue", "--format=%i;touch /tmp/x"],
    ["squeue", "-o", "$(reboot)"],
    ["squeue", "-o", "`id`"],
    ["sinfo", "--json", "&&", "halt"],
    ["sprio", "-o", "%i|%r"],  # a '|' value that is not one of the collector's formats
    ["sshare", "--format", "Account\nUser"],
    ["sacct", "--json", "--starttime", "now>/etc/passwd"],
    ["squeue", "--unknown-flag"],
    ["squeue", "-O"],
    ["/usr/bin/squeue", "--json"],
    ["sh", "-c", "squeue"],
    [],
]


@pytest.mark.parametrize("argv", FORBIDDEN, ids=lambda a: " ".join(a)[:40] or "empty")
def test_forbidden_argv_never_starts_a_process(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "ran"
    # Every name on PATH would leave a marker if it were ever executed.
    for name in {
        "scancel",
        "sbatch",
        "srun",
        "sacctmgr",
        "scontrol",
        "squeue",
        "sinfo",
        "sprio",
        "sshare",
        "sacct",
        "sh",
    }:
        _script(tmp_path, name, f'echo "$0 $*" >> {marker}\n')
    popen = subprocess.Popen

    def guarded(*a: object, **kw: object) -> subprocess.Popen[bytes]:
        raise AssertionError(f"a process was started for {argv}")

    monkeypatch.setattr(subprocess, "Popen", guarded)
    runner = Runner(env=_env(tmp_path))
    with pytest.raises(NotAllowed):
        runner.run("x", argv)
    ssh = Runner(ssh_host="login.example", env=_env(tmp_path))
    with pytest.raises(NotAllowed):
        ssh.run("x", argv)
    monkeypatch.setattr(subprocess, "Popen", popen)
    assert not marker.exists()


@pytest.mark.parametrize("host", ["-oProxyCommand=touch /tmp/x", "a b", "h;id", "", "$(id)"])
def test_ssh_host_must_be_a_plain_name(host: str) -> None:
    with pytest.raises(NotAllowed):
        Runner(ssh_host=host)


def test_local_run_records_latency(tmp_path: Path) -> None:
    _script(tmp_path, "squeue", 'echo "{\\"args\\": \\"$*\\"}"\n')
    runner = Runner(env=_env(tmp_path))
    out = runner.run("squeue", cmd.SQUEUE_JSON)
    assert out.stdout.strip() == b'{"args": "--all --json"}'
    st = runner.status["squeue"]
    assert st.ok and st.latency_ms is not None and st.latency_ms > 0


def test_nonzero_exit_is_one_line_from_stderr(tmp_path: Path) -> None:
    _script(
        tmp_path,
        "sinfo",
        "echo 'sinfo: error: resolve_ctls_from_dns_srv: res_nsearch error' >&2\n"
        "echo 'sinfo: fatal: Could not establish a configuration source' >&2\nexit 1\n",
    )
    runner = Runner(env=_env(tmp_path))
    with pytest.raises(CommandError) as info:
        runner.run("sinfo", cmd.SINFO_JSON)
    assert str(info.value) == "sinfo: fatal: Could not establish a configuration source"
    assert runner.status["sinfo"].ok is False
    assert runner.status["sinfo"].error == str(info.value)


def test_missing_command(tmp_path: Path) -> None:
    runner = Runner(env={"PATH": str(tmp_path)})
    with pytest.raises(CommandError, match="sprio: command not found"):
        runner.run("sprio", cmd.SPRIO)


def test_hung_command_is_killed_with_its_whole_tree(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # The fake squeue forks a grandchild that would outlive a plain kill of squeue.
    _script(
        tmp_path,
        "squeue",
        f"sh -c 'echo $$ >> {pids}; exec sleep 300' &\necho $$ >> {pids}\nsleep 300\n",
    )
    runner = Runner(env=_env(tmp_path), timeout=1.0)
    started = time.monotonic()
    with pytest.raises(CommandError, match="no answer after 1 s"):
        runner.run("squeue", cmd.SQUEUE_JSON)
    assert time.monotonic() - started < 15
    found = [int(p) for p in pids.read_text().split()]
    assert len(found) == 2
    for pid in found:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert "no answer" in (runner.status["squeue"].error or "")


def test_ssh_argv_shape(tmp_path: Path) -> None:
    runner = Runner(ssh_host="login.example", connect_timeout=7)
    wire = runner.wire_argv(cmd.SPRIO)
    assert wire[:2] == ["ssh", "-o"]
    opts = [wire[i + 1] for i, w in enumerate(wire) if w == "-o"]
    assert "BatchMode=yes" in opts and "ControlMaster=auto" in opts
    assert "ControlPersist=60" in opts and "ConnectTimeout=7" in opts
    assert any(o.startswith("ControlPath=") for o in opts)
    host_at = wire.index("login.example")
    assert wire[host_at + 1] == "--"
    assert shlex.split(wire[host_at + 2]) == cmd.SPRIO
    runner.close()


def test_ssh_runs_the_quoted_command_remotely(tmp_path: Path) -> None:
    log = tmp_path / "ssh.log"
    remote = tmp_path / "remote"
    remote.mkdir()
    _script(remote, "sprio", 'for a in "$@"; do echo "arg:$a"; done\n')
    # A stand-in for ssh: like sshd it hands the last word to a shell on the far side.
    _script(
        tmp_path,
        "ssh",
        f'echo "$@" >> {log}\nfor last; do :; done\nPATH={remote}:$PATH exec sh -c "$last"\n',
    )
    runner = Runner(ssh_host="login.example", env=_env(tmp_path))
    out = runner.run("sprio", cmd.SPRIO).stdout.decode().splitlines()
    assert out == [f"arg:{a}" for a in cmd.SPRIO[1:]]
    assert "BatchMode=yes" in log.read_text()
    runner.close()


def test_ssh_failure_names_the_host(tmp_path: Path) -> None:
    _script(
        tmp_path,
        "ssh",
        "echo 'ssh: connect to host login.example port 22: refused' >&2\nexit 255\n",
    )
    runner = Runner(ssh_host="login.example", env=_env(tmp_path))
    with pytest.raises(CommandError, match=r"^squeue: ssh login.example: ssh: connect"):
        runner.run("squeue", cmd.SQUEUE_JSON)
    runner.close()
