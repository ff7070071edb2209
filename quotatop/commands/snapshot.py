"""`quotatop snapshot --source slurm [--ssh HOST] [--json]`: one snapshot, for scripts."""

from __future__ import annotations

import argparse
import sys

from quotatop.errors import UserError
from quotatop.flags import seconds


def _summary(snap) -> str:
    running = sum(1 for j in snap.jobs if j.state == "running")
    pending = sum(1 for j in snap.jobs if j.state == "pending")
    gpus = sum(n.capacity.get("gpu", 0) for n in snap.nodes)
    used = sum(n.allocated.get("gpu", 0) for n in snap.nodes)
    lines = [
        f"{snap.source} {snap.cluster}: {len(snap.nodes)} nodes, GPUs {used:g}/{gpus:g} allocated, "
        f"{running} running, {pending} pending, {len(snap.teams)} teams, {len(snap.qos)} QoS"
    ]
    lines += [f"warning: {w}" for w in snap.warnings]
    if snap.stale:
        lines.append(f"stale: {snap.stale_reason}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from collectors.config import load_config
    from collectors.model import to_json
    from collectors.sources import open_source

    if args.ssh and args.source != "slurm":
        raise UserError(f"--ssh applies to --source slurm only, not {args.source}")
    cfg = load_config(args.config)
    opts = cfg.source_options(args.source, ssh_host=args.ssh, timeout=args.timeout,
                              kubeconfig=args.kubeconfig, context=args.context,
                              prometheus_url=args.prometheus_url, scenario=args.scenario,
                              recording=args.recording)
    collector = open_source(args.source, opts)
    try:
        snap = collector.collect()
    finally:
        collector.close()
    if not snap.jobs and not snap.nodes and not snap.teams and snap.stale:
        # Nothing at all came back: the source is not reachable from here, or its
        # answers are not usable.
        reason = (snap.stale_reason or "").removeprefix(f"{args.source}: ")
        raise UserError(f"{args.source}: no data: {reason}")
    if args.json:
        sys.stdout.buffer.write(to_json(snap) + b"\n")
    else:
        print(_summary(snap))
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from collectors.sources import SOURCES

    p = sub.add_parser("snapshot", help="collect one snapshot from a live source")
    p.add_argument("--source", required=True, choices=SOURCES, help="where to collect from")
    p.add_argument("--ssh", metavar="HOST", help="run the Slurm commands on HOST via ssh")
    p.add_argument("--timeout", type=seconds(3600.0),
                   help="seconds per command or request (default 10)")
    p.add_argument("--kubeconfig", help="kubeconfig for --source k8s")
    p.add_argument("--context", help="kubeconfig context for --source k8s")
    p.add_argument("--prometheus-url", help="Prometheus base URL for --source prometheus")
    p.add_argument("--scenario", help="scenario TOML for --source demo")
    p.add_argument("--recording", help="recording file for --source replay")
    p.add_argument("--config", help="config TOML (default: $XDG_CONFIG_HOME/quotatop/...)")
    p.add_argument("--json", action="store_true", help="print the snapshot as JSON")
    p.set_defaults(func=run)
