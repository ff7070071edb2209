"""`quotatop record --source slurm|k8s|prometheus|demo --out FILE`: poll a source and
append every snapshot to a recording (docs/recording.md)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from quotatop import __version__
from quotatop.collectors import procgroups
from quotatop.collectors.errors import UserError
from quotatop.flags import MAX_FRAMES, number, seconds
from quotatop.source_flags import add_config_flags, add_source_flags, source_overrides

if TYPE_CHECKING:
    from quotatop.collectors.base import Collector

SOURCES = ("slurm", "k8s", "prometheus", "demo")


def make_source(args: argparse.Namespace) -> Collector:
    """The collector for ``--source``, built by the one registry (quotatop/sources.py)."""
    from quotatop.config import load_config
    from quotatop.sources import open_source

    if getattr(args, "recording", None) is not None:  # a flag every source command shares
        raise UserError("--recording: record reads a cluster and writes --out FILE; "
                        "it does not read a recording")
    cfg = load_config(args.config)
    opts = cfg.source_options(args.source, **source_overrides(args, args.source),
                              refresh=args.interval, scenario=args.scenario)
    return open_source(args.source, opts)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _check_pidfile(pidfile: Path) -> None:
    try:
        pid = int(pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return
    if _pid_alive(pid):
        raise UserError(f"{pidfile}: a recorder is already running as pid {pid}")


def write_pidfile(pidfile: Path) -> None:
    """The pid, written whole or not at all: to a file beside it, then renamed over it.
    Written in place, the file exists empty for a moment, and a reader that checks
    for it (a supervisor's `kill $(cat FILE)`, the live source's staleness check) reads
    nothing there."""
    tmp = pidfile.with_name(f".{pidfile.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(f"{os.getpid()}\n")
        os.replace(tmp, pidfile)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _daemonize(pidfile: Path, log: str | None) -> None:
    # Double fork, as dolphie's daemon mode: detach from the terminal and session.
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    out = os.open(log or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    write_pidfile(pidfile)


def run(args: argparse.Namespace) -> int:
    from quotatop.recording.store import Recorder, RecordingError, parse_duration

    try:
        retention = parse_duration(args.retention) if args.retention else None
    except ValueError as e:
        raise UserError(f"--retention: {e}") from None
    if args.interval is not None and args.interval <= 0:
        raise UserError("--interval must be positive")
    pidfile = Path(args.pidfile) if args.pidfile else None
    if args.daemon and pidfile is None:
        raise UserError("--daemon needs --pidfile FILE")
    if pidfile:
        _check_pidfile(pidfile)
    source = make_source(args)
    # The interval the source was built with: the flag, else the config's poll interval.
    args.interval = getattr(source, "refresh", None) or args.interval or 2.0
    recorder = Recorder(args.out, cluster="", source=args.source, retention=retention,
                        keyframe_every=args.keyframe_every, interval=args.interval,
                        version=__version__)
    try:
        recorder.start()  # fail on a bad --out before detaching
    except RecordingError as e:
        raise UserError(str(e)) from None
    if args.daemon:
        assert pidfile is not None
        # SQLite connections must not cross a fork (POSIX locks stay behind): reopen.
        recorder.stop()
        _daemonize(pidfile, args.log)
        recorder.start()
    elif pidfile:
        write_pidfile(pidfile)
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True
        # A command still running would hold the stop up to its timeout: end it now.
        procgroups.kill_all()

    signal.signal(signal.SIGTERM, stop)
    good = False  # any frame with data, not only a stale source's empty answer
    why = ""
    failed = ""  # the recorder's one line when a frame could not be written (disk full)
    try:
        n = 0
        while not stopping and (args.frames is None or n < args.frames):
            t0 = time.monotonic()
            snap = source.collect()
            if stopping:
                break  # its commands were killed by the stop: not a frame to keep
            seq = recorder.append(snap)
            n += 1
            if snap.stale and not (snap.jobs or snap.nodes or snap.teams):
                why = why or (snap.stale_reason or "no reason given")
            else:
                good = True
            if args.progress:
                print(f"frame {seq} at {snap.taken_at:.3f}", flush=True)
            delay = args.interval - (time.monotonic() - t0)
            if delay > 0 and (args.frames is None or n < args.frames):
                time.sleep(delay)
    except KeyboardInterrupt:
        pass
    except RecordingError as e:
        failed = str(e)
    finally:
        recorder.stop()
        source.close()
        if pidfile and pidfile.exists() and pidfile.read_text().strip() == str(os.getpid()):
            pidfile.unlink()
    if failed:  # after stop(): what was recorded is closed and kept
        raise UserError(failed)
    if n and not good:
        # Every frame came back empty and stale (no squeue, no controller, ...): the
        # recording holds nothing to replay, and a script must not take it for one.
        reason = why.removeprefix(f"{args.source}: ")
        raise UserError(
            f"{args.source}: no data in {recorder.frames_written} frame(s) recorded "
            f"to {args.out}: {reason}"
        )
    if not args.daemon:
        print(f"recorded {recorder.frames_written} frames to {args.out}", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("record", help="poll a source and append snapshots to a recording")
    p.add_argument("--source", required=True, choices=SOURCES)
    p.add_argument("--out", required=True, metavar="FILE", help="recording file (SQLite)")
    add_source_flags(p)  # the same --ssh, --kubeconfig, --namespace … as every command
    p.add_argument("--interval", type=seconds(), default=None,
                   help="seconds between snapshots (default: the source's poll interval in "
                        "the config; slurm 5, others 2)")
    p.add_argument("--retention", metavar="AGE", help="drop frames older than AGE (e.g. 72h)")
    p.add_argument("--daemon", action="store_true", help="run in the background")
    p.add_argument("--pidfile", metavar="FILE", help="write the recorder's pid here")
    p.add_argument("--log", metavar="FILE", help="daemon's stdout/stderr (default: none)")
    add_config_flags(p)
    p.add_argument("--frames", type=number(1, 10 * MAX_FRAMES, integer=True),
                   help="stop after this many frames")
    p.add_argument("--keyframe-every", type=number(1, 100_000, integer=True), default=300,
                   help=argparse.SUPPRESS)
    p.add_argument("--progress", action="store_true", help="print a line per frame written")
    p.set_defaults(func=run)
