"""The paths a user leaves open, as the user runs them: `quotatop` itself in a
pseudo-terminal of 120x40, driven by keys, its RSS and CPU read with psutil.

Used by bench/soak.py ``--path``; nothing here is built for the bench: the process is
the installed command line with its defaults (the demo tour, a 2 s refresh), reading a
terminal it must draw to. The bytes it writes to the terminal are counted too: a
screen that repaints nothing writes nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
COLS, ROWS = 120, 40

# The keys of each path, as (seconds from start, key). Screens 1-8 are the app's
# bindings; "?" help, ctrl+p the palette, "m" the report, escape closes an overlay.
ESC, CTRL_P = "\x1b", "\x10"


def screens_keys(seconds: float) -> list[tuple[float, str]]:
    """Every screen in turn, the round repeated over the run."""
    step = max(5.0, seconds / 16)
    return [(10 + i * step, str(i % 8 + 1)) for i in range(int((seconds - 10) // step))]


def overlay_keys(seconds: float) -> list[tuple[float, str]]:
    """Help open for the first half, then the palette for the second."""
    return [(10.0, "?"), (seconds / 2, ESC), (seconds / 2 + 2, CTRL_P)]


@dataclass
class Phase:
    name: str
    start: float
    rss: list[tuple[float, float]] = field(default_factory=list)  # (s, MB)
    cpu_seconds: float = 0.0  # quotatop's own process
    child_seconds: float = 0.0  # the commands it ran and reaped (squeue, sinfo, ssh …)
    wall: float = 0.0
    written: int = 0  # bytes to the terminal


class Terminal:
    """A child on a pty of COLS x ROWS whose output is read (and counted) by a thread."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the command as a user runs it
            try:
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.written = 0
        self.tail = b""
        self._stop = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while not self._stop:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.written += len(chunk)
            self.tail = (self.tail + chunk)[-4096:]

    def send(self, key: str) -> None:
        os.write(self.fd, key.encode())

    def close(self) -> int:
        with contextlib.suppress(OSError):
            self.send("q")
        deadline = time.monotonic() + 10
        status = None
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            _, status = os.waitpid(self.pid, 0)
        self._stop = True
        self._reader.join(2)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status or 0)


def quotatop_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "quotatop", *args]


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUOTATOP_")}
    env.update(TERM="xterm-256color", COLUMNS=str(COLS), LINES=str(ROWS),
               XDG_CONFIG_HOME=tempfile.mkdtemp(prefix="soak-cfg-"))  # no user config
    env.update(extra or {})
    return env


@contextlib.contextmanager
def demo_recording(frames: int = 300) -> Iterator[Path]:
    """A recording of the default demo, made by `quotatop record` as a user would."""
    with tempfile.TemporaryDirectory(prefix="soak-rec-") as tmp:
        out = Path(tmp) / "tour.sqlite"
        subprocess.run(quotatop_argv("record", "--source", "demo", "--out", str(out),
                                     "--frames", str(frames), "--interval", "0.01"),
                       check=True, env=child_env(), capture_output=True, timeout=600)
        yield out


def idle_cluster(cluster, jobs: int, log=lambda s: print(s, file=sys.stderr)) -> int:  # type: ignore[no-untyped-def]
    """Make the harness's Slurm an unchanged cluster of ``jobs`` job records: every node
    busy with a job of two hours, and the rest pending, held (a held job's priority is
    0 and accrues no age, so nothing moves while the soak runs). The held jobs are
    arrays of 1,000 tasks whose every task is split into a record of its own (``scontrol
    update`` of one task splits it off), as squeue lists a cluster of that many jobs.
    Returns the records squeue --json lists."""
    import json

    from harness.slurm_cluster import GPU_TYPE, USERS

    for node, gpu in GPU_TYPE.items():
        cluster.sbatch("bob", "nlp-prod", "normal", f"--nodelist={node}", "--time=3:00:00",
                       f"--gres=gpu:{gpu}:8", payload="sleep 7200")
    users = [(u, accts[0]) for u, accts in USERS.items()]
    t0 = time.monotonic()
    left, k = jobs - len(GPU_TYPE), 0
    while left > 0:
        n = min(1000, left)
        user, account = users[k % len(users)]
        job_id, _, _ = cluster.sbatch(user, account, "normal", "--hold", f"--array=0-{n - 1}",
                                      "--time=1:00:00", "--gres=gpu:1", payload="sleep 60")
        for task in range(n):
            cluster.run(["scontrol", "update", f"JobId={job_id}_{task}", "Comment=soak"])
        left, k = left - n, k + 1
    listed = len(json.loads(cluster.run(["squeue", "--all", "--json"]).stdout)["jobs"])
    log(f"idle cluster: {listed} job records in {time.monotonic() - t0:.0f} s")
    return listed


def soak(argv: list[str], seconds: float, keys: list[tuple[float, str]],
         env: dict[str, str], every: float = 10.0,
         log=lambda s: print(s, file=sys.stderr)) -> list[Phase]:  # type: ignore[no-untyped-def]
    """Run ``argv`` on a pty for ``seconds``, pressing ``keys``; a phase per third of the
    run (start, middle, end), each with its RSS samples, CPU seconds and bytes drawn."""
    term = Terminal(argv, env)
    proc = psutil.Process(term.pid)
    phases = [Phase(n, seconds * i / 3) for i, n in enumerate(("start", "middle", "end"))]
    t0 = time.monotonic()
    pending = sorted(keys)
    cpu0 = _cpu(proc)
    wrote0 = 0
    current = 0
    next_sample = t0
    try:
        while (now := time.monotonic()) - t0 < seconds:
            t = now - t0
            while pending and pending[0][0] <= t:
                term.send(pending.pop(0)[1])
            if current < 2 and t >= phases[current + 1].start:
                cpu = _cpu(proc)
                phases[current].cpu_seconds = cpu[0] - cpu0[0]
                phases[current].child_seconds = cpu[1] - cpu0[1]
                phases[current].wall = t - phases[current].start
                phases[current].written = term.written - wrote0
                cpu0, wrote0 = cpu, term.written
                current += 1
            if now >= next_sample:
                rss = proc.memory_info().rss / 1e6
                phases[current].rss.append((t, rss))
                log(f"  {t:7.0f} s  RSS {rss:6.1f} MB  drawn {term.written / 1e6:7.2f} MB")
                next_sample += every
            if proc.status() == psutil.STATUS_ZOMBIE:
                raise RuntimeError("quotatop exited early: "
                                   + term.tail.decode(errors="replace")[-500:])
            time.sleep(0.2)
        end = time.monotonic() - t0
        last = phases[current]
        cpu = _cpu(proc)
        last.cpu_seconds = cpu[0] - cpu0[0]
        last.child_seconds = cpu[1] - cpu0[1]
        last.wall = end - last.start
        last.written = term.written - wrote0
    finally:
        term.close()
    return phases


def _cpu(proc: psutil.Process) -> tuple[float, float]:
    """(its own CPU seconds, its reaped children's): a login node pays for both."""
    t = proc.cpu_times()
    return t.user + t.system, t.children_user + t.children_system


def reference_rss(source_args: list[str], env: dict[str, str]) -> float:
    """The RSS of a process holding two snapshots of the same source and nothing else:
    the least any viewer of that data needs."""
    code = (
        "import sys, gc, psutil\n"
        "from quotatop.sources import open_source, options_from_mapping\n"
        "kind, *rest = sys.argv[1:]\n"
        "opts = dict(a.split('=', 1) for a in rest)\n"
        "src = open_source(kind, options_from_mapping(opts))\n"
        "held = [src.collect(), src.collect()]\n"
        "gc.collect()\n"
        "print(psutil.Process().memory_info().rss / 1e6)\n")
    out = subprocess.run([sys.executable, "-c", code, *source_args], env=env, check=True,
                         capture_output=True, text=True, timeout=300).stdout
    return float(out.strip().splitlines()[-1])
