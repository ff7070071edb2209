"""`quotatop whatif --source … --set 'team=vision-exp max.gpu=24' [--set …] [--json]`:
the snapshot with the changes made, predicted before and after by the core with the
site's own policy; per team the pending jobs and their mean and p90 predicted wait
before → after, the jobs whose start moves most, and the commands an admin would run
to make the change. Nothing is sent to a cluster: the commands are printed as text.
Syntax and fields: docs/review.md."""

from __future__ import annotations

import argparse
import json
import sys

import msgspec

from quotatop.collectors.human import human_duration
from quotatop.collectors.untrusted import json_safe, printable_lines
from quotatop.flags import number
from quotatop.review.whatif import WhatifOutput, parse_set, whatif
from quotatop.source_flags import add_config_flags, add_source_flags

__all__ = ["WhatifOutput", "text", "whatif"]


def _w(v: float | None) -> str:
    # The text is read by people: the one human format (the JSON keeps seconds).
    return "—" if v is None else human_duration(v)


def text(out: WhatifOutput) -> str:
    lines = [f"{out.source} {out.cluster}: what if " + "; ".join(out.changes), "",
             f"{'team':<16} {'pending':>7}  {'mean wait':>17}  {'p90 wait':>17}"]
    for t in out.teams:
        lines.append(f"{t.team:<16} {t.pending:>7}  "
                     f"{_w(t.mean_wait_before):>7} → {_w(t.mean_wait_after):<7}  "
                     f"{_w(t.p90_wait_before):>7} → {_w(t.p90_wait_after):<7}")
    if out.movers:
        lines += ["", "jobs whose predicted start moves most:"]
        for m in out.movers:
            moved = ("gains a start" if m.start_before is None else
                     "loses its start" if m.start_after is None else
                     f"{'earlier' if (m.moved or 0) < 0 else 'later'} by {_w(abs(m.moved or 0))}")
            lines.append(f"  {m.job_id:>10} {m.team:<16} {moved}")
    else:
        lines += ["", "no pending job's predicted start moves"]
    lines += ["", "to make the change (not run; quotatop only reads):"]
    lines += [f"  {c}" for c in out.commands]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from quotatop.commands.predict import snapshot_frame

    changes = [parse_set(s) for s in args.set]  # bad syntax fails before any source opens
    snap, _ = snapshot_frame(args)
    out = whatif(snap, changes, runtimes=args.runtimes, horizon=args.horizon)
    if args.json:
        sys.stdout.write(json_safe(json.dumps(msgspec.to_builtins(out), ensure_ascii=False))
                         + "\n")
    else:
        # Team and node names are the cluster's: no control character reaches the terminal
        # (collectors/untrusted.py); the lines are this module's own.
        print(printable_lines(text(out)))
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("whatif", help="predict waits with a quota, QoS or node changed")
    p.add_argument("--source", nargs="+", metavar="KIND",
                   help="demo [FILE] | slurm | k8s | prometheus | replay FILE | live FILE")
    p.add_argument("--set", action="append", required=True, metavar="CHANGE",
                   help="'team=NAME max.gpu=24', 'qos=NAME priority=100', "
                        "'node=NAME state=drain', 'add_nodes=2 like=NODE', "
                        "'policy weight.fairshare=5000' (repeatable; docs/review.md)")
    p.add_argument("--at", metavar="TIME",
                   help="with --source replay FILE or demo: the frame at HH:MM, +DURATION, "
                        "ISO or epoch")
    p.add_argument("--json", action="store_true", help="one JSON object")
    p.add_argument("--runtimes", choices=("estimate", "limit"), default="estimate",
                   help="run jobs for their runtime estimate (default) or their time limit")
    p.add_argument("--horizon", type=number(1.0, 366 * 86400.0), default=7 * 86400.0,
                   help="seconds ahead to predict (default 7 days)")
    add_source_flags(p)
    add_config_flags(p)
    p.set_defaults(func=run)
