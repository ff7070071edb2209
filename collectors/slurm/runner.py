"""Run read-only Slurm commands, here or on a login node through the system ssh.

Only an allowlist of commands and argument shapes can run: every argv is checked
before any process starts, so a bug elsewhere cannot turn quotatop into something
that cancels jobs or edits accounts.

Each command runs in its own session (its own process group), its output read with a
size cap (OUTPUT_CAPS), and the group killed at the deadline; the groups still running
are registered in collectors/procgroups.py, which kills them at exit and, once the CLI
installed its handlers, on SIGHUP/SIGTERM. ``Runner.run_many`` runs one round's commands
at once under a single deadline (docs/slurm.md, "The runner")."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence

import psutil
from msgspec import Struct

from quotatop.collectors import procgroups
from quotatop.collectors.model import SourceStatus
from quotatop.collectors.pipes import ReadStopped, read_both
from quotatop.collectors.slurm.commands import FORMATS


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
        frozenset(
            {
                "partition",
                "partitions",
                "config",
                "node",
                "nodes",
                "job",
                "jobs",
                "ping",
                "reservation",
                "reservations",
            }
        ),
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


# Most bytes a command may print before it is killed: squeue/sacct --json print about
# 3.7 KB per job (368 MB at 100k jobs, the size bench/slurm_parse.py is held to), so
# they get 1 GiB; the other commands print a line or a small object per node, job,
# association or QoS and get 64 MiB. stderr is capped at 1 MiB for every command.
MiB = 1 << 20
OUTPUT_CAPS: dict[str, int] = {"squeue": 1024 * MiB, "sacct": 1024 * MiB}
DEFAULT_CAP = 64 * MiB
STDERR_CAP = 1 * MiB
# Over ssh, at most this many ssh processes at once: the first round opens real
# connections (the ControlMaster is not up yet) and sshd's default MaxStartups 10:30:100
# starts refusing beyond ten unauthenticated ones.
SSH_PARALLEL = 4
_CHUNK = 1 << 20


def output_cap(command: str) -> int:
    return OUTPUT_CAPS.get(command, DEFAULT_CAP)


def _seconds(s: float) -> str:
    return f"{round(s, 1):g}"


def _reason(text: str, label: str) -> str:
    """The telling line of a client's stderr: its fatal line, else its last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        return ""
    line = next((ln for ln in lines if "fatal:" in ln), lines[-1])
    return line.removeprefix(f"{label}: ")[:200]


# Each command runs with RUN_MARK=<a mark of its own> in its environment, which every
# process it starts inherits. A grandchild that left the group and whose parent has
# exited is neither in the group nor a descendant any more: the mark still finds it.
RUN_MARK = "QUOTATOP_RUN"
_marks: dict[int, str] = {}  # pid of a command running now -> its mark
_mark_ids = itertools.count(1)


def _marked(mark: str) -> list[psutil.Process]:
    """The processes (this user's, other than this one) whose environment has ``mark``."""
    found = []
    for p in psutil.process_iter():
        if p.pid == os.getpid():
            continue
        with contextlib.suppress(psutil.Error, OSError):
            if p.environ().get(RUN_MARK) == mark:
                found.append(p)
    return found


def kill_tree(pid: int) -> None:
    """Kill a process and every descendant, its own group first (Slurm clients may
    fork helpers; a helper that left the group is still found as a descendant, and
    one whose parent has gone by the mark in its environment). Waits for them to be
    gone, never longer than a second."""
    try:
        parent = psutil.Process(pid)
        procs = [*parent.children(recursive=True), parent]
    except psutil.NoSuchProcess:
        procs = []
    procgroups.kill(pid)  # start_new_session: the group id is the command's pid
    mark = _marks.get(pid)
    if mark is not None:
        procs += [p for p in _marked(mark) if p not in procs]
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.kill()
    with contextlib.suppress(psutil.Error):
        psutil.wait_procs(procs, timeout=1.0)


class _Killed(Exception):
    """Why reading stopped early: the one-line reason, after the group was killed."""


# How often a read blocked on a silent command looks whether the runner was
# interrupted (Runner.interrupt): the most a quit waits on it, beside the kill.
_STOP_POLL = 0.2


def _read_all(proc: subprocess.Popen[bytes], deadline: float, cap: int,
              stop: threading.Event | None = None) -> tuple[bytes, bytes]:
    """stdout and stderr until both close (collectors/pipes.py), never more than ``cap``
    / STDERR_CAP bytes and never past ``deadline``: at the deadline, over a cap or once
    ``stop`` is set, _Killed is raised and the pipes are left unread."""
    try:
        return read_both(proc, deadline, cap, STDERR_CAP, stop=stop, poll=_STOP_POLL,
                         chunk=_CHUNK)
    except ReadStopped as exc:
        raise _Killed(str(exc)) from None


class Runner:
    """Runs allowlisted argv locally, or through ``ssh HOST`` when ``ssh_host`` is set.

    Each command runs in its own session (so its process group is its own), is read
    with a size cap (``OUTPUT_CAPS``) and is killed, group and all, at its deadline.
    ``run_many`` runs the commands of one refresh round at once, each in its own
    thread and process, under one deadline for the round."""

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
        self._lock = threading.Lock()
        self._inflight: dict[str, float] = {}  # command name -> monotonic start
        self._procs: set[int] = set()  # pids of the commands running now
        self._stop = threading.Event()  # set by interrupt(): run nothing more

    def wire_argv(self, argv: Sequence[str]) -> list[str]:
        """What actually gets exec'd (after the allowlist check)."""
        argv = check_argv(argv)
        if self.ssh_host is None:
            return argv
        with self._lock:
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

    def interrupt(self) -> None:
        """quotatop is quitting: kill the commands running now and run no more. Each
        ``run`` in flight then ends at once (a CommandError) instead of at its
        deadline, so that the thread waiting on it ends with the app: Textual's
        ``run()`` joins that thread before it returns, and a hung controller held
        ``q`` for the rest of the round (up to ``timeout``). Safe from any thread;
        the runner stays interrupted."""
        self._stop.set()
        with self._lock:
            pids = list(self._procs)
        for pid in pids:
            kill_tree(pid)

    def progress(self) -> list[tuple[str, float]]:
        """The commands running now and the seconds each has run, oldest first. Safe
        to call from any thread while ``run``/``run_many`` blocks another."""
        now = time.monotonic()
        with self._lock:
            items = sorted(self._inflight.items(), key=lambda kv: kv[1])
        return [(name, now - at) for name, at in items]

    def run(
        self,
        name: str,
        argv: Sequence[str],
        timeout: float | None = None,
        *,
        deadline: float | None = None,
    ) -> Result:
        """stdout of one command; CommandError (one line) otherwise. The outcome and
        latency are recorded in ``status[name]`` either way. ``deadline`` (a
        time.monotonic() instant) overrides ``timeout``."""
        wire = self.wire_argv(argv)
        started = time.monotonic()
        if deadline is None:
            deadline = started + (timeout or self.timeout)
        with self._lock:
            self._inflight[name] = started
        try:
            if self._stop.is_set():
                raise CommandError(f"{self._label(wire)}: not started, quotatop is quitting")
            left = deadline - started
            if left <= 0:
                raise CommandError(
                    f"{self._label(wire)}: not started, the round's "
                    f"{_seconds(self.timeout)} s were over"
                )
            result = self._exec(wire, left)
        except CommandError as exc:
            self.status[name] = SourceStatus(
                name=name,
                ok=False,
                error=str(exc),
                at=time.time(),
                latency_ms=(time.monotonic() - started) * 1000,
            )
            raise
        finally:
            with self._lock:
                self._inflight.pop(name, None)
        self.status[name] = SourceStatus(
            name=name, ok=True, latency_ms=result.latency_ms, at=time.time()
        )
        return result

    def run_many(
        self,
        commands: Sequence[tuple[str, Sequence[str]]],
        *,
        deadline: float | None = None,
    ) -> dict[str, Result | CommandError]:
        """Run ``(name, argv)`` pairs at once (a thread and a process each; over ssh at
        most SSH_PARALLEL at a time) under one deadline, by default ``timeout`` from
        now: the round takes at most about ``timeout``, not one timeout per command.
        Every argv is checked first; NotAllowed is raised before anything starts."""
        for _, argv in commands:
            self.wire_argv(argv)
        if deadline is None:
            deadline = time.monotonic() + self.timeout
        results: dict[str, Result | CommandError] = {}
        slots = threading.BoundedSemaphore(
            SSH_PARALLEL if self.ssh_host is not None else max(1, len(commands))
        )

        def one(name: str, argv: Sequence[str]) -> None:
            try:
                with slots:
                    results[name] = self.run(name, argv, deadline=deadline)
            except CommandError as exc:
                results[name] = exc
            except Exception as exc:  # a bug in one thread must not lose the round
                results[name] = CommandError(f"{argv[0]}: {exc!r}"[:200])

        if len(commands) == 1:
            one(*commands[0])
            return results
        # Daemon threads: at exit the atexit hook kills their commands; nothing waits.
        threads = [
            threading.Thread(target=one, args=(n, a), name=f"slurm {n}", daemon=True)
            for n, a in commands
        ]
        for t in threads:
            t.start()
        for t in threads:
            # Each thread ends by the deadline (plus killing); the margin is for a stall.
            t.join(max(0.0, deadline - time.monotonic()) + 5.0)
        for name, argv in commands:
            if name not in results:
                results[name] = CommandError(f"{argv[0]}: did not finish by its deadline")
        return results

    def _exec(self, wire: list[str], timeout: float) -> Result:
        path = (self.env or os.environ).get("PATH")
        exe = shutil.which(wire[0], path=path)
        label = self._label(wire)
        if exe is None:
            raise CommandError(f"{wire[0]}: command not found")
        started = time.monotonic()
        deadline = started + timeout
        mark = f"{os.getpid()}.{next(_mark_ids)}"
        env = {**(self.env if self.env is not None else os.environ), RUN_MARK: mark}
        try:
            proc = subprocess.Popen(
                [exe, *wire[1:]],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,  # its own process group, id = its pid
            )
        except OSError as exc:
            raise CommandError(f"{wire[0]}: {exc.strerror or exc}") from None
        _marks[proc.pid] = mark
        procgroups.add(proc.pid)
        with self._lock:
            self._procs.add(proc.pid)
        if self._stop.is_set():  # interrupted while it started: interrupt() missed it
            kill_tree(proc.pid)
        try:
            try:
                out, err = _read_all(proc, deadline, output_cap(label), self._stop)
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                if self._stop.is_set():
                    # interrupt() killed what held the pipes open, so the read ended as
                    # if the command had finished: quotatop is quitting, not answering.
                    raise _Killed("interrupted")
            except (_Killed, subprocess.TimeoutExpired) as exc:
                kill_tree(proc.pid)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=1.0)
                why = str(exc) if isinstance(exc, _Killed) else "deadline"
                if why == "deadline":
                    why = f"no answer after {_seconds(timeout)} s"
                raise CommandError(f"{label}: {why} (killed)") from None
        finally:
            _marks.pop(proc.pid, None)
            procgroups.discard(proc.pid)
            with self._lock:
                self._procs.discard(proc.pid)
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
        latency = (time.monotonic() - started) * 1000
        stderr = err.decode(errors="replace")
        if proc.returncode != 0:
            why = _reason(stderr, label)
            if not why:
                rc = proc.returncode
                why = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
            if self.ssh_host is not None and proc.returncode == 255:
                why = f"ssh {self.ssh_host}: {why}"
            raise CommandError(f"{label}: {why}")
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
