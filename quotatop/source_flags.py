"""The flags that say where a source is, one set for every command that opens one
(the TUI, ``predict``; ``snapshot`` and ``record`` declare the same names), so that a
flag learnt with one command works with the others."""

from __future__ import annotations

import argparse
import os
from typing import Any

from quotatop.flags import seconds

# The Prometheus URL may come from the environment instead of the command line, where
# `ps` shows a password in it to every user of the machine; `quotatop web` hands it to
# its sessions this way (quotatop/commands/web_sessions.py). The flag wins over it.
PROMETHEUS_URL_ENV = "QUOTATOP_PROMETHEUS_URL"


def add_config_flags(p: argparse.ArgumentParser, *, top: bool = False) -> None:
    """``--config FILE`` and ``--scenario NAME|FILE``, on the top-level parser (``top``)
    and on every command that opens a source, so that either place means the same:
    ``quotatop --config F predict`` and ``quotatop predict --config F``. A command's
    copies default to nothing at all (SUPPRESS), not to None: argparse copies a
    subcommand's defaults over the top-level values, which silently dropped a top-level
    ``--config``."""
    default = None if top else argparse.SUPPRESS
    p.add_argument("--config", metavar="FILE", default=default,
                   help="config TOML (default $XDG_CONFIG_HOME/quotatop/config.toml)")
    p.add_argument("--scenario", metavar="NAME|FILE", default=default,
                   help="scenario to play for --source demo: a TOML file, or a bundled "
                        "one by name, e.g. queue_storm")


def add_source_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("where the source is (flags win over the config file)")
    g.add_argument("--ssh", metavar="HOST",
                   help="slurm: run the Slurm commands on HOST via ssh (BatchMode)")
    g.add_argument("--timeout", type=seconds(3600.0),
                   help="seconds per command or request (default 10)")
    g.add_argument("--kubeconfig", help="k8s: the kubeconfig file")
    g.add_argument("--context", help="k8s: the kubeconfig context")
    g.add_argument("--namespace", metavar="NS[,NS…]",
                   help="k8s: only these namespaces' teams and jobs (ClusterQueues stay whole)")
    g.add_argument("--prometheus-url", metavar="URL",
                   help=f"prometheus: its base URL (default ${PROMETHEUS_URL_ENV}, which "
                        "keeps a password in it out of `ps`)")
    # The recording as a flag too: ``--source replay FILE`` and ``--source replay
    # --recording FILE`` are the same to every command (source_words below).
    g.add_argument("--recording", metavar="FILE",
                   help="replay, live: the recording (the same as --source replay FILE)")
    g.add_argument("--poller-pidfile", metavar="FILE",
                   help="live: the poller's pid file (record --pidfile); gone: poller stale")


def source_overrides(args: argparse.Namespace, kind: str) -> dict[str, Any]:
    """The flags given, as SourceOptions overrides (None: not given, the file's value)."""
    if getattr(args, "ssh", None) and kind != "slurm":
        from quotatop.collectors.errors import UserError

        raise UserError(f"--ssh applies to --source slurm only, not {kind}")
    if getattr(args, "namespace", None) and kind != "k8s":
        from quotatop.collectors.errors import UserError

        raise UserError(f"--namespace applies to --source k8s only, not {kind}")
    if getattr(args, "poller_pidfile", None) and kind != "live":
        from quotatop.collectors.errors import UserError

        raise UserError(f"--poller-pidfile applies to --source live only, not {kind}")
    flags = {"ssh_host": "ssh", "timeout": "timeout", "kubeconfig": "kubeconfig",
             "context": "context", "prometheus_url": "prometheus_url",
             "live_pidfile": "poller_pidfile"}
    out = {key: getattr(args, flag, None) for key, flag in flags.items()}
    if out["prometheus_url"] is None:
        out["prometheus_url"] = os.environ.get(PROMETHEUS_URL_ENV) or None
    if getattr(args, "namespace", None):
        out["namespaces"] = [n for n in args.namespace.split(",") if n.strip()] or None
    return out


def source_options(cfg: Any, args: argparse.Namespace, kind: str, path: str | None,
                   **extra: Any) -> Any:
    """The SourceOptions for ``--source KIND [PATH]`` with the flags given (``extra``:
    a command's own overrides, None = not given): PATH is the demo's scenario or the
    replay's or live viewer's recording, and a replay or live viewer without one,
    here or in the config, is refused in one line."""
    from quotatop.collectors.errors import UserError

    overrides = {**extra, **source_overrides(args, kind)}
    if kind == "demo":
        overrides["scenario"] = path or getattr(args, "scenario", None)
    elif kind in ("replay", "live"):
        overrides["recording"] = path
    opts = cfg.source_options(kind, **overrides)
    if kind in ("replay", "live") and not opts.recording:
        raise UserError(f"--source {kind} needs a file: --source {kind} FILE "
                        f"(or sources.{kind}.recording in the config)")
    return opts


def source_words(source: list[str] | None, default: str,
                 recording: str | None = None) -> tuple[str, str | None]:
    """``--source KIND [FILE]`` as (kind, file); every command reads it this way.
    ``recording`` is ``--recording FILE``, the same file by a flag (issue #32: one form
    for every command, both accepted)."""
    from quotatop.collectors.errors import UserError
    from quotatop.sources import SOURCES

    words = list(source or [])
    if len(words) > 2:
        raise UserError(f"--source {' '.join(words)}: expected a kind and at most one file")
    kind = words[0] if words else default
    if kind not in SOURCES:
        raise UserError(f"--source {kind}: unknown source (choose from {', '.join(SOURCES)})")
    path = words[1] if len(words) > 1 else None
    if recording is not None:
        if kind not in ("replay", "live"):
            raise UserError(f"--recording applies to --source replay or live only, not {kind}")
        if path is not None and path != recording:
            raise UserError(f"--source {kind} {path} and --recording {recording}: "
                            "two recordings; give one")
        path = recording
    if path and kind not in ("demo", "replay", "live"):
        raise UserError(f"--source {kind} takes no file argument")
    return kind, path
