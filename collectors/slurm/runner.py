"""Run read-only Slurm commands, here or on a login node through the system ssh.

Only an allowlist of commands and argument shapes can run: every argv is checked
before any process starts, so a bug elsewhere cannot turn quotatop into something
that cancels jobs or edits accounts."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence

import psutil
from msgspec import Struct

from collectors.model import SourceStatus
from collectors.slurm.commands import FORMATS


class NotAllowed(ValueError):
    """An argv outside the read-only allowlist; raised before anything runs."""


class CommandError(RuntimeError):
    """A command that could not run, exited non-zero or timed out (one line)."""


# Per command: flags allowed (flags taking a value separately listed with a trailing '=').
_FLAGS: dict[str, frozenset[str]] = {
    "squeue": frozenset(
        {
            "--all",
            "-a",
            "--json",
            "--noheader",
            "-h",
            "-O=",
            "--Format=",
            "-o=",
            "--format=",
            "--states=",
            "-t=",
            "--partition=",
            "-p=",
            "--account=",
            "-A=",
            "--user=",
            "-u=",
            "--jobs=",
            "-j=",
            "--start",
            "--array",
            "-r",
            "--me",
        }
    ),
    "sinfo": frozenset(
        {
            "--all",
            "-a",
            "--json",
            "--noheader",
            "-h",
            "--Node",
            "-N",
            "-O=",
            "--Format=",
            "-o=",
            "--format=",
            "--partition=",
            "-p=",
            "--long",
        }
    ),
    "sprio": frozenset(
        {
            "--noheader",
            "-h",
            "--weights",
            "-w",
            "-o=",
            "--format=",
            "--long",
            "-l",
            "--jobs=",
            "-j=",
            "--user=",
            "-u=",
            "--partition=",
            "-p=",
        }
    ),
    "sshare": frozenset(
        {
            "--all",
            "-a",
            "--long",
            "-l",
            "--parsable2",
            "-P",
            "--noheader",
            "-n",
            "--format=",
            "-o=",
            "--accounts=",
            "-A=",
            "--users=",
            "-u=",
        }
    ),
    "sacct": frozenset(
        {
            "--json",
            "--allusers",
            "-a",
            "--duplicates",
            "-D",
            "--starttime=",
            "-S=",
            "--endtime=",
            "-E=",
            "--parsable2",
            "-P",
            "--noheader",
            "-n",
            "--format=",
            "-o=",
            "--state=",
            "-s=",
            "--jobs=",
            "-j=",
            "-X",
            "--allocations",
            "--accounts=",
            "-A=",
        }
    ),
    "sacctmgr": frozenset({"--noheader", "-n", "--parsable2", "-P", "--readonly", "-r"}),
    "scontrol": frozenset({"--oneliner", "-o", "--details", "-d", "--all", "-a", "--json"}),
}
_POSITIONAL: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "sacctmgr": (
        frozenset({"show", "list"}),
        frozenset(
            {
                "assoc",
                "association",
                "associations",
                "qos",
                "tres",
                "account",
                "accounts",
                "user",
                "users",
                "cluster",
                "clusters",
            }
        ),
    ),
    "scontrol": (
        frozenset({"show"}),
        frozenset({"partition", "partitions", "config", "node", "nodes", "job", "jobs", "ping"}),
    ),
}
# Nothing a shell would act on: no quotes, spaces, ; & | $ ` < > ( ) * ? ! ~ or newlines.
_SAFE = re.compile(r"^[A-Za-z0-9_=,.:/%+@\-\[\]]*$")
_HOST = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@:\-]*$")


def check_argv(argv: Sequence[str]) -> list[str]:
    """The argv as a list, or NotAllowed naming the offending part."""
    argv = list(argv)
    if not argv or not isinstance(argv[0], str):
        raise NotAllowed("empty command")
    cmd = argv[0]
    if cmd not in _FLAGS:
        raise NotAllowed(f"{cmd!r} is not an allowed read-only Slurm command")
    flags = _FLAGS[cmd]
    positional: list[str] = []
    expect_value = False
    for arg in argv[1:]:
        if not isinstance(arg, str):
            raise NotAllowed(f"{cmd}: non-string argument")
        if arg not in FORMATS and not _SAFE.match(arg):
            raise NotAllowed(f"{cmd}: argument {arg!r} has characters outside the allowlist")
        if expect_value:
            expect_value = False
            continue
        if arg.startswith("-"):
            name, eq, _ = arg.partition("=")
            if eq and f"{name}=" in flags:
                continue
            if arg in flags:
                continue
            if f"{arg}=" in flags:
                expect_value = True
                continue
            raise NotAllowed(f"{cmd}: option {arg!r} is not allowed")
        if cmd in ("sacctmgr",) and positional and arg.startswith("format="):
            continue
        positional.append(arg)
    if expect_value:
        raise NotAllowed(f"{cmd}: option without its value")
    if cmd in _POSITIONAL:
        verbs, objects = _POSITIONAL[cmd]
        if len(positional) < 1 or positional[0] not in verbs:
            raise NotAllowed(f"{cmd}: only {'/'.join(sorted(verbs))} is allowed")
        if len(positional) < 2 or positional[1] not in objects:
            raise NotAllowed(f"{cmd}: {positional[0]} of {positional[1:2]} is not allowed")
        # "scontrol show job 12" names one item; nothing else may follow.
        extra = positional[2:]
        if (cmd == "sacctmgr" and extra) or len(extra) > 1:
            raise NotAllowed(f"{cmd}: unexpected arguments {extra!r}")
    elif positional:
        raise NotAllowed(f"{cmd}: unexpected arguments {positional!r}")
    return argv


class Result(Struct):
    stdout: bytes
    stderr: str
    latency_ms: float


def _reason(text: str, label: str) -> str:
    """The telling line of a client's stderr: its fatal line, else its last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    line = next((ln for ln in lines if "fatal:" in ln), lines[-1])
    return line.removeprefix(f"{label}: ")[:200]


def kill_tree(pid: int) -> None:
    """Kill a process and every descendant (Slurm clients may fork helpers; ssh
    forks a ControlMaster)."""
    try:
        parent = psutil.Process(pid)
        procs = [*parent.children(recursive=True), parent]
    except psutil.NoSuchProcess:
        return
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(procs, timeout=5)


class Runner:
    """Runs allowlisted argv locally, or through ``ssh HOST`` when ``ssh_host`` is set."""

    def __init__(
        self,
        *,
        ssh_host: str | None = None,
        timeout: float = 10.0,
        env: Mapping[str, str] | None = None,
        connect_timeout: int = 5,
    ) -> None:
        if ssh_host is not None and not _HOST.match(ssh_host):
            raise NotAllowed(f"ssh host {ssh_host!r} is not a plain host name")
        self.ssh_host = ssh_host
        self.timeout = timeout
        self.env = dict(env) if env is not None else None
        self.connect_timeout = connect_timeout
        self.status: dict[str, SourceStatus] = {}
        self._control_dir: str | None = None

    def wire_argv(self, argv: Sequence[str]) -> list[str]:
        """What actually gets exec'd (after the allowlist check)."""
        argv = check_argv(argv)
        if self.ssh_host is None:
            return argv
        if self._control_dir is None:
            self._control_dir = tempfile.mkdtemp(prefix="qt-ssh-")
        return [
            "ssh",
            "-o",
            "BatchMode=yes",
            "-o",
            "ControlMaster=auto",
            "-o",
            f"ControlPath={self._control_dir}/%C",
            "-o",
            "ControlPersist=60",
            "-o",
            f"ConnectTimeout={self.connect_timeout}",
            self.ssh_host,
            "--",
            shlex.join(argv),
        ]

    def run(self, name: str, argv: Sequence[str], timeout: float | None = None) -> Result:
        """stdout of one command; CommandError (one line) otherwise. The outcome and
        latency are recorded in ``status[name]`` either way."""
        wire = self.wire_argv(argv)
        started = time.monotonic()
        try:
            result = self._exec(wire, timeout or self.timeout)
        except CommandError as exc:
            self.status[name] = SourceStatus(
                name=name,
                ok=False,
                error=str(exc),
                at=time.time(),
                latency_ms=(time.monotonic() - started) * 1000,
            )
            raise
        self.status[name] = SourceStatus(
            name=name, ok=True, latency_ms=result.latency_ms, at=time.time()
        )
        return result

    def _exec(self, wire: list[str], timeout: float) -> Result:
        path = (self.env or os.environ).get("PATH")
        exe = shutil.which(wire[0], path=path)
        if exe is None:
            raise CommandError(f"{wire[0]}: command not found")
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                [exe, *wire[1:]],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                start_new_session=True,
            )
        except OSError as exc:
            raise CommandError(f"{wire[0]}: {exc.strerror or exc}") from None
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(proc.pid)
            proc.communicate()
            raise CommandError(
                f"{self._label(wire)}: no answer after {timeout:g} s (killed)"
            ) from None
        latency = (time.monotonic() - started) * 1000
        stderr = err.decode(errors="replace")
        if proc.returncode != 0:
            why = _reason(stderr, self._label(wire)) or f"exit status {proc.returncode}"
            if self.ssh_host is not None and proc.returncode == 255:
                why = f"ssh {self.ssh_host}: {why}"
            raise CommandError(f"{self._label(wire)}: {why}")
        return Result(stdout=out, stderr=stderr, latency_ms=latency)

    def _label(self, wire: list[str]) -> str:
        if self.ssh_host is not None:
            return shlex.split(wire[-1])[0]
        return wire[0]

    def close(self) -> None:
        if self._control_dir is not None:
            # Ask the persisted master (if any) to exit rather than leave it 60 s.
            if self.ssh_host is not None:
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    subprocess.run(
                        [
                            "ssh",
                            "-o",
                            f"ControlPath={self._control_dir}/%C",
                            "-O",
                            "exit",
                            self.ssh_host,
                        ],
                        capture_output=True,
                        timeout=5,
                        env=self.env,
                        check=False,
                    )
            shutil.rmtree(self._control_dir, ignore_errors=True)
            self._control_dir = None
