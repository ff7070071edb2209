"""`quotatop snapshot --source slurm [--ssh HOST] [--json]`: one snapshot, for scripts."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

from quotatop.collectors.human import human_duration
from quotatop.collectors.untrusted import json_safe_bytes, printable
from quotatop.source_flags import add_config_flags, add_source_flags, source_options


def _summary(snap) -> str:
    running = sum(1 for j in snap.jobs if j.state == "running")
    pending = sum(1 for j in snap.jobs if j.state == "pending")
    gpus = sum(n.capacity.get("gpu", 0) for n in snap.nodes)
    used = sum(n.allocated.get("gpu", 0) for n in snap.nodes)
    p = printable  # the source's words: one line each, no control bytes (untrusted.py)
    lines = [
        f"{p(snap.source)} {p(snap.cluster)}: {len(snap.nodes)} nodes, "
        f"GPUs {used:g}/{gpus:g} allocated, "
        f"{running} running, {pending} pending, {len(snap.teams)} teams, {len(snap.qos)} QoS"
    ]
    lines += [f"warning: {p(w)}" for w in snap.warnings]
    if snap.stale:
        lines.append(f"stale: {p(str(snap.stale_reason))}")
    return "\n".join(lines)


PROGRESS_AFTER = 1.0  # seconds before "connecting to ..." is shown


def progress_line(source: str, running: list[tuple[str, float]]) -> str:
    """``connecting to slurm: squeue, sinfo, sprio … (3s)``."""
    names = [n for n, _ in running]
    shown = ", ".join(names[:3]) + (" …" if len(names) > 3 else "")
    return f"connecting to {source}: {shown} ({human_duration(max(s for _, s in running))})"


def collect_showing_progress(collector: Any, out: TextIO = sys.stderr) -> Any:
    """``collector.collect()``; when it takes longer than PROGRESS_AFTER and the
    collector can say what it waits for (``progress()``), one line on ``out`` names
    the commands still running. On a terminal the line is kept current and erased
    at the end; elsewhere it is printed once."""
    progress: Callable[[], list[tuple[str, float]]] | None = getattr(
        collector, "progress", None
    )
    if progress is None:
        return collector.collect()
    done = threading.Event()
    tty = out.isatty()

    def watch() -> None:
        shown = False
        wait = PROGRESS_AFTER
        while not done.wait(wait):
            wait = 1.0
            running = progress()
            if not running:
                continue
            line = printable(progress_line(collector.name, running))
            if tty:
                out.write(f"\r\x1b[K{line}")
                out.flush()
            elif not shown:
                print(line, file=out, flush=True)
            shown = True
            if not tty:
                return
        if tty and shown:
            out.write("\r\x1b[K")
            out.flush()

    watcher = threading.Thread(target=watch, name="progress", daemon=True)
    watcher.start()
    try:
        return collector.collect()
    finally:
        done.set()
        watcher.join(2.0)


def run(args: argparse.Namespace) -> int:
    from quotatop.collectors.model import to_json
    from quotatop.config import load_config
    from quotatop.source_flags import source_words
    from quotatop.sources import open_source, refuse_empty

    cfg = load_config(args.config)
    kind, path = source_words(args.source, cfg.source, getattr(args, "recording", None))
    collector = open_source(kind, source_options(cfg, args, kind, path))
    try:
        snap = collect_showing_progress(collector)
    finally:
        collector.close()
    refuse_empty(kind, snap)
    if args.json:
        sys.stdout.buffer.write(json_safe_bytes(to_json(snap)) + b"\n")
    else:
        print(_summary(snap))
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from quotatop.sources import SOURCES

    p = sub.add_parser("snapshot", help="collect one snapshot from a live source")
    p.add_argument("--source", nargs="+", required=True, metavar="KIND",
                   help=f"where to collect from: {', '.join(SOURCES)}; demo and replay "
                        "take a file (--source replay FILE)")
    add_source_flags(p)  # the same --ssh, --kubeconfig, --namespace … as every command
    add_config_flags(p)
    p.add_argument("--json", action="store_true", help="print the snapshot as JSON")
    p.set_defaults(func=run)
