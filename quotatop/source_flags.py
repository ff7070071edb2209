"""The flags that say where a source is, one set for every command that opens one
(the TUI, ``predict``; ``snapshot`` and ``record`` declare the same names), so that a
flag learnt with one command works with the others."""

from __future__ import annotations

import argparse
from typing import Any

from quotatop.flags import seconds


def add_source_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("where the source is (flags win over the config file)")
    g.add_argument("--ssh", metavar="HOST",
                   help="slurm: run the Slurm commands on HOST via ssh (BatchMode)")
    g.add_argument("--timeout", type=seconds(3600.0),
                   help="seconds per command or request (default 10)")
    g.add_argument("--kubeconfig", help="k8s: the kubeconfig file")
    g.add_argument("--context", help="k8s: the kubeconfig context")
    g.add_argument("--prometheus-url", metavar="URL", help="prometheus: its base URL")
    g.add_argument("--poller-pidfile", metavar="FILE",
                   help="live: the poller's pid file (record --pidfile); gone: poller stale")


def source_overrides(args: argparse.Namespace, kind: str) -> dict[str, Any]:
    """The flags given, as SourceOptions overrides (None: not given, the file's value)."""
    if getattr(args, "ssh", None) and kind != "slurm":
        from quotatop.errors import UserError

        raise UserError(f"--ssh applies to --source slurm only, not {kind}")
    if getattr(args, "poller_pidfile", None) and kind != "live":
        from quotatop.errors import UserError

        raise UserError(f"--poller-pidfile applies to --source live only, not {kind}")
    flags = {"ssh_host": "ssh", "timeout": "timeout", "kubeconfig": "kubeconfig",
             "context": "context", "prometheus_url": "prometheus_url",
             "live_pidfile": "poller_pidfile"}
    return {key: getattr(args, flag, None) for key, flag in flags.items()}
