"""`quotatop simulate FILE`: run a scenario through the scheduling core."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    if getattr(args, "format", None):
        from quotatop.trace_simulate import run as run_trace

        return run_trace(args)
    from quotatop.scenario import load_scenario
    from quotatop.simulate import jsonl_lines

    scenario = load_scenario(args.file)
    lines = list(jsonl_lines(scenario))  # all or nothing: no half output on error
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("simulate", help="run a scenario through the scheduling core")
    p.add_argument("file")
    p.add_argument("--jsonl", action="store_true", help="one JSON object per step (default)")
    from quotatop.trace_simulate import add_arguments

    add_arguments(p)
    p.set_defaults(func=run)
