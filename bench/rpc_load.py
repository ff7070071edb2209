"""slurmctld RPCs per minute: quotatop polling Slurm, `watch -n2 squeue`, and one
poller with ten live viewers, on the real Slurm of tests/harness.

    .venv/bin/python bench/rpc_load.py [--seconds 60] [--viewers 10]

Each setup runs for ``--seconds`` between an ``sdiag --reset`` and an ``sdiag``, on one
cluster (the harness's workload submitted first, so the queue is not empty):

* idle: nothing runs (what the cluster does by itself: the reference noise);
* (a) one quotatop viewer polling Slurm directly at the TUI's default refresh: the
  collector the TUI builds (``SlurmCollector``, default refresh and slow-command
  interval), asked on the TUI's fixed-rate ticks, in this process;
* (b) ``watch -n2 squeue``: ``squeue`` every 2 s after the last one ended;
* (c) ``quotatop record --daemon --source slurm`` plus ``--viewers`` headless viewers on
  ``--source live FILE`` (tests/harness/live_viewer.py: the newest frame each refresh,
  the core's predictions on each new one), run as the user ``nobody`` so that
  sdiag's "by user" table shows apart what they asked (nothing: they never run a
  Slurm command; each also counts the processes it started, which must be 0).

Then the cost of single calls, each between a reset and a read: one ``squeue``, one
quotatop poll with its slow commands (the first one) and one without (every other).
Prints RPCs and RPCs/min per setup, (a) by message type, the ratios, and a line saying
so when one quotatop viewer costs slurmctld far more than ``watch -n2 squeue``.
sdiag counts what slurmctld serves: sacctmgr and sacct (quotatop's slow commands) go
to slurmdbd and are not in it. Needs root and the Slurm packages (as tests/harness).
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the harness lives with the tests

from harness import sdiag  # noqa: E402
from harness.slurm_cluster import SlurmCluster, missing_binaries  # noqa: E402
from quotatop.collectors.slurm.collector import SlurmCollector  # noqa: E402
from quotatop.collectors.slurm.runner import Runner  # noqa: E402
from quotatop.config import Config  # noqa: E402
from quotatop.sources import SourceOptions  # noqa: E402

VIEWER = ROOT / "tests" / "harness" / "live_viewer.py"
WATCH_EVERY = 2.0  # watch's default -n is 2 s
FAR_MORE = 2.0  # "far more" than watch -n2 squeue: at least this many times its RPCs


def _window(cluster: SlurmCluster, seconds: float, setup: Callable[[float], None]
            ) -> sdiag.RpcStats:
    """The RPCs slurmctld served while ``setup`` ran until the deadline it is given."""
    sdiag.reset(cluster)
    setup(time.monotonic() + seconds)
    return sdiag.read(cluster)


def _idle(deadline: float) -> None:
    time.sleep(max(0.0, deadline - time.monotonic()))


class QuotatopViewer:
    """What `quotatop --source slurm` asks Slurm: the TUI's collector on its ticks."""

    def __init__(self, cluster: SlurmCluster, refresh: float, slow_every: float) -> None:
        self.cluster, self.refresh, self.slow_every = cluster, refresh, slow_every
        self.polls = 0  # rounds that reached Slurm (a tick inside `refresh` of the
        # last round gets the cached snapshot, as in the TUI)
        self.ticks = 0

    def collector(self) -> SlurmCollector:
        return SlurmCollector(Runner(env=self.cluster.env, timeout=10.0),
                              refresh=self.refresh, slow_every=self.slow_every)

    def run(self, deadline: float) -> None:
        c = self.collector()
        try:
            tick = time.monotonic()
            while tick < deadline:
                self.ticks += 1
                before = c._fast_at
                c.collect()
                self.polls += c._fast_at != before
                # Textual's set_interval: fixed-rate ticks; a collect still running
                # when one fires runs again at once when it returns.
                tick += self.refresh
                time.sleep(max(0.0, min(tick, deadline) - time.monotonic()))
        finally:
            c.close()


def _watch_squeue(cluster: SlurmCluster, counter: list[int]) -> Callable[[float], None]:
    def run(deadline: float) -> None:
        while time.monotonic() < deadline:
            cluster.run(["squeue"])
            counter[0] += 1
            time.sleep(max(0.0, min(WATCH_EVERY, deadline - time.monotonic())))
    return run


def as_viewer_user() -> tuple[str, list[str]]:
    """The user viewers run as and the argv prefix that runs a command as it: nobody
    (sdiag then counts their RPCs apart) through setpriv, which drops every
    privilege; root and no prefix without either. (Popen's user= cannot be used
    here: the venv's interpreter lives under /root, and its exec is refused.)"""
    setpriv = shutil.which("setpriv")
    try:
        pw = pwd.getpwnam("nobody")
    except KeyError:
        return "root", []
    if setpriv is None:
        return "root", []
    return "nobody", [setpriv, f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}",
                      "--clear-groups", "--"]


def _poller_and_viewers(cluster: SlurmCluster, refresh: float, viewers: int, seconds: float,
                        results: dict[str, object]) -> Callable[[float], None]:
    def run(deadline: float) -> None:
        # A folder the viewers' user can reach, and the recording made readable to it
        # before the poller opens it, so its -wal and -shm get the same mode
        # (docs/recording.md, "One poller, many viewers").
        work = Path(tempfile.mkdtemp(prefix="qtrpc-", dir="/tmp"))
        work.chmod(0o755)
        out, pidfile = work / "cluster.qtr", work / "poller.pid"
        out.touch(mode=0o644)
        out.chmod(0o644)
        procs: list[subprocess.Popen[str]] = []
        user, prefix = as_viewer_user()
        results["viewer_user"] = user
        try:
            subprocess.run(
                [sys.executable, "-m", "quotatop", "record", "--source", "slurm", "--out",
                 str(out), "--interval", f"{refresh:g}", "--daemon", "--pidfile", str(pidfile),
                 "--log", str(work / "poller.log")],
                env=cluster.env, cwd=ROOT, check=True, timeout=60)
            for _ in range(viewers):
                procs.append(subprocess.Popen(
                    [*prefix, sys.executable, str(VIEWER), str(out), "--refresh",
                     f"{refresh:g}", "--seconds", f"{max(1.0, deadline - time.monotonic()):g}"],
                    env=cluster.env, cwd=ROOT, stdout=subprocess.PIPE, text=True))
            reports = []
            for p in procs:
                stdout, _ = p.communicate(timeout=seconds + 120)
                reports.append(json.loads(stdout.strip().splitlines()[-1]))
            results["viewers"] = reports
            _idle(deadline)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            _stop_daemon(pidfile)
            results["frames"] = _frames(out)
            for f in sorted(work.iterdir()):
                f.unlink()
            work.rmdir()
    return run


def _stop_daemon(pidfile: Path) -> None:
    try:
        pid = int(pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while pidfile.exists() and time.monotonic() < deadline:  # it removes it on the way out
        time.sleep(0.1)


def _frames(path: Path) -> int:
    from quotatop.recording.store import Recording, RecordingError

    try:
        with Recording(path, read_only=True) as rec:
            return len(rec)
    except RecordingError:
        return 0


def _single(cluster: SlurmCluster, call: Callable[[], object]) -> sdiag.RpcStats:
    sdiag.reset(cluster)
    call()
    return sdiag.read(cluster)


def main() -> int:
    # A TERM (timeout, kill) unwinds through the cluster's `with`, which stops its daemons.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="each setup's window")
    ap.add_argument("--viewers", type=int, default=10, help="live viewers in setup (c)")
    args = ap.parse_args()
    if not args.seconds > 0 or args.viewers < 0:
        ap.error("--seconds must be positive and --viewers not negative")
    missing = missing_binaries()
    if missing or os.geteuid() != 0:
        print(f"rpc_load: needs root and the Slurm packages "
              f"({'missing: ' + ', '.join(missing) if missing else 'not root'})",
              file=sys.stderr)
        return 2
    refresh = Config().poll_interval("slurm")  # the default poll of Slurm (TUI, record)
    slow_every = SourceOptions().slurm_slow_every
    per_min = 60.0 / args.seconds
    with SlurmCluster() as cluster:  # started on entry, stopped on exit
        cluster.submit_workload()
        print(f"slurmctld RPCs over {args.seconds:g} s per setup (sdiag; the reads' own "
              f"REQUEST_STATS_INFO removed); quotatop refresh {refresh:g} s, slow commands "
              f"every {slow_every:g} s", flush=True)
        idle = _window(cluster, args.seconds, _idle)
        viewer = QuotatopViewer(cluster, refresh, slow_every)
        a = _window(cluster, args.seconds, viewer.run)
        squeues = [0]
        b = _window(cluster, args.seconds, _watch_squeue(cluster, squeues))
        results: dict[str, object] = {}
        c = _window(cluster, args.seconds,
                    _poller_and_viewers(cluster, refresh, args.viewers, args.seconds, results))

        one_squeue = _single(cluster, lambda: cluster.run(["squeue"]))
        # The control: the viewers' user reaches slurmctld when it asks (so its 0 in (c)
        # means it never asked, not that it could not).
        user, prefix = as_viewer_user()
        control = _single(cluster, lambda: subprocess.run(
            [*prefix, "squeue"], env=cluster.env, capture_output=True, check=True, timeout=30))
        fresh = viewer.collector()
        try:
            cold = _single(cluster, fresh.collect)  # fast and slow commands
            time.sleep(refresh)  # past the collector's own refresh guard
            warm = _single(cluster, fresh.collect)  # fast commands only
        finally:
            fresh.close()

    reports = results.get("viewers", [])
    assert isinstance(reports, list)
    viewer_rpcs = c.user(user) if user != "root" else None
    frames_written = int(results.get("frames", 0))  # type: ignore[call-overload]
    rows = [
        ("idle (nothing running)", idle, 0, ""),
        (f"(a) 1 quotatop on slurm, refresh {refresh:g} s", a, viewer.polls,
         f"{viewer.polls} polls reached Slurm of {viewer.ticks} ticks"),
        ("(b) watch -n2 squeue", b, squeues[0], f"{squeues[0]} squeue calls"),
        (f"(c) 1 poller + {args.viewers} live viewers", c, frames_written,
         f"{frames_written} polls (frames written); viewers as {user}: "
         + (f"{viewer_rpcs} RPCs" if viewer_rpcs is not None else "not told apart")),
    ]
    print()
    print(f"| setup | RPCs in {args.seconds:g} s | RPCs/min | × (b) | RPCs per poll or call "
          "| note |")
    print("|---|---|---|---|---|---|")
    for name, stats, calls, note in rows:
        ratio = f"{stats.total / b.total:.1f}" if b.total else "—"
        each = f"{stats.total / calls:.1f}" if calls else "—"
        print(f"| {name} | {stats.total} | {stats.total * per_min:.0f} | {ratio} | {each} "
              f"| {note} |")
    if viewer.polls < viewer.ticks:
        print(f"(a): {viewer.ticks - viewer.polls} of the TUI's {viewer.ticks} ticks came "
              f"less than {refresh:g} s after the last poll began (timer jitter) and got "
              f"SlurmCollector's cached snapshot, as they do in the TUI")
    print()
    print("(a) by message type:")
    print("| message type | RPCs | RPCs/min |")
    print("|---|---|---|")
    for msg, n in sorted(a.by_type.items(), key=lambda kv: -kv[1]):
        print(f"| {msg} | {n} | {n * per_min:.0f} |")
    print()
    print("single calls (RPCs):")
    print(f"  one squeue: {one_squeue.total} ({_types(one_squeue)})")
    print(f"  one quotatop poll with its slow commands (the first, then every "
          f"{slow_every:g} s): {cold.total} ({_types(cold)})")
    print(f"  one quotatop poll, fast commands only: {warm.total} ({_types(warm)})")
    if one_squeue.total:
        print(f"  a poll costs {warm.total / one_squeue.total:.1f}x an squeue "
              f"({cold.total / one_squeue.total:.1f}x with the slow commands)")
    # A minute at the default refresh if every tick polled: one round with the slow
    # commands, the others fast only; against squeue every WATCH_EVERY seconds.
    polls_a_minute = 60.0 / refresh
    nominal = cold.total + (polls_a_minute - 1) * warm.total
    watch_nominal = 60.0 / WATCH_EVERY * one_squeue.total
    print(f"  a minute at the default refresh, every tick polling: {nominal:.0f} RPCs "
          f"against {watch_nominal:.0f} for watch -n2 squeue "
          f"({nominal / watch_nominal:.1f}x)" if watch_nominal else "")
    print()
    if b.total and a.total:
        print(f"ratios: (a)/(b) {a.total / b.total:.1f}x a minute; (c)/(a) "
              f"{c.total / a.total:.2f}x a minute, per poll "
              f"{(c.total / max(frames_written, 1)) / (a.total / max(viewer.polls, 1)):.2f}x "
              f"(one poller whatever the number of viewers; it polls on every interval, "
              f"the TUI's jittered ticks skip some)")
    if viewer_rpcs is not None:
        spawned = sum(len(r.get("started", [])) for r in reports if isinstance(r, dict))
        frames = [r.get("frames_seen", 0) for r in reports if isinstance(r, dict)]
        print(f"viewers: {viewer_rpcs} RPCs by {user}; {spawned} processes started; "
              f"frames seen each: {min(frames, default=0)}–{max(frames, default=0)}; "
              f"control: one squeue as {user} is {control.user(user)} RPCs by {user}")
    worst = max(a.total / b.total if b.total else 0.0,
                nominal / watch_nominal if watch_nominal else 0.0)
    if worst >= FAR_MORE:
        print(f"NOTE: one quotatop viewer polling Slurm at the default {refresh:g} s refresh "
              f"costs slurmctld {worst:.1f}x the RPCs of `watch -n2 squeue` "
              f"(measured {a.total * per_min:.0f} against {b.total * per_min:.0f} a minute; "
              f"{nominal:.0f} against {watch_nominal:.0f} when every tick polls). The "
              f"default refresh is unchanged; on a shared login node, run one poller "
              f"(`quotatop record --daemon`) and view it with `--source live FILE`.")
    return 0


def _types(stats: sdiag.RpcStats) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(stats.by_type.items(), key=lambda kv: -kv[1]))


if __name__ == "__main__":
    sys.exit(main())
