"""`quotatop simulate FILE`: run a scenario, or a workload trace, through the
scheduling core."""

from __future__ import annotations

import argparse
import sys

from quotatop.collectors.errors import UserError
from quotatop.source_flags import add_config_flag_only


def run(args: argparse.Namespace) -> int:
    from quotatop.simulation.trace_simulate import resolve_trace
    from quotatop.sources import bundled_scenario, bundled_scenarios, scenario_path

    # A bundled scenario by name (queue_storm), as the demo, predict and report take it;
    # asked first, since a bare name that is no trace is refused by resolve_trace.
    bundled = None if getattr(args, "format", None) else bundled_scenario(args.file)
    if bundled is None:
        try:
            is_trace = bool(getattr(args, "format", None) or resolve_trace(args.file, None))
        except UserError as e:
            raise UserError(f"{e}; bundled scenarios: {', '.join(bundled_scenarios())}") \
                from None
        if is_trace:
            from quotatop.commands.simulate_trace import run as run_trace

            return run_trace(args)
    from quotatop.simulation.scenario import load_scenario
    from quotatop.simulation.simulate import jsonl_lines

    scenario = load_scenario(bundled or scenario_path(args.file))
    lines = list(jsonl_lines(scenario))  # all or nothing: no half output on error
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("simulate", help="run a scenario or a workload trace through the "
                                        "scheduling core",
                       description="FILE: a scenario (.toml), a workload trace (.swf, .csv, "
                                   ".json or --format), or a bundled one by name: "
                                   "queue_storm (demo_data/), nasa-ipsc (demo_data/traces/, "
                                   "see its README.md)")
    p.add_argument("file", help="scenario TOML, trace file, or a bundled scenario or trace "
                                "by name (queue_storm, nasa-ipsc)")
    p.add_argument("--jsonl", action="store_true", help="one JSON object per step (default)")
    from quotatop.commands.simulate_trace import add_arguments

    add_arguments(p)
    add_config_flag_only(p)
    p.set_defaults(func=run)
