"""The flags that say where a source is, one set for every command that opens one
(the TUI, ``predict``; ``snapshot`` and ``record`` declare the same names), so that a
flag learnt with one command works with the others."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from quotatop.collectors.untrusted import url_problem
from quotatop.flags import seconds

# The Prometheus URL may come from the environment instead of the command line, where
# `ps` shows a password in it to every user of the machine; `quotatop web` hands it to
# its sessions this way (quotatop/commands/web_sessions.py). The flag wins over it.
PROMETHEUS_URL_ENV = "QUOTATOP_PROMETHEUS_URL"


def url_flag(flag: str) -> Callable[[str], str]:
    """An argparse type: an http(s) URL with a host and a port from 1 to 65535, refused
    by the parser in one line naming ``flag`` (and nothing of the URL, which may hold a
    password: collectors/untrusted.py url_problem)."""

    def parse(text: str) -> str:
        problem = url_problem(text)
        if problem is not None:
            raise argparse.ArgumentTypeError(problem)
        return text

    parse.__name__ = f"URL for {flag}"
    return parse


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


def add_source_flags(p: argparse.ArgumentParser, *, top: bool = False) -> None:
    """The source flags, on the top-level parser (``top``) and on every command that
    opens a source. A command's copies default to SUPPRESS, as add_config_flags', so
    that ``quotatop --ssh HOST predict …`` keeps the HOST instead of argparse copying
    the command's None over it."""
    default = None if top else argparse.SUPPRESS
    g = p.add_argument_group("where the source is (flags win over the config file)")
    g.add_argument("--ssh", metavar="HOST", default=default,
                   help="slurm: run the Slurm commands on HOST via ssh (BatchMode)")
    g.add_argument("--timeout", type=seconds(3600.0), default=default,
                   help="seconds per command or request (default 10)")
    g.add_argument("--kubeconfig", default=default, help="k8s: the kubeconfig file")
    g.add_argument("--context", default=default, help="k8s: the kubeconfig context")
    g.add_argument("--namespace", metavar="NS[,NS…]", default=default,
                   help="k8s: only these namespaces' teams and jobs (ClusterQueues stay whole)")
    g.add_argument("--prometheus-url", metavar="URL", type=url_flag("--prometheus-url"),
                   default=default,
                   help=f"prometheus: its base URL (default ${PROMETHEUS_URL_ENV}, which "
                        "keeps a password in it out of `ps`)")
    # The recording as a flag too: ``--source replay FILE`` and ``--source replay
    # --recording FILE`` are the same to every command (source_words below).
    g.add_argument("--recording", metavar="FILE", default=default,
                   help="replay, live: the recording (the same as --source replay FILE)")
    g.add_argument("--poller-pidfile", metavar="FILE", default=default,
                   help="live: the poller's pid file (record --pidfile); gone: poller stale")


# Each flag that says where one kind of source is, and the sources it applies to. A
# flag given with any other --source is refused by name, not silently left unused
# (`predict --source slurm --scenario X` predicted the cluster and said nothing).
APPLIES_TO: dict[str, tuple[str, tuple[str, ...]]] = {
    "scenario": ("--scenario", ("demo",)),
    "ssh": ("--ssh", ("slurm",)),
    "timeout": ("--timeout", ("slurm", "k8s", "prometheus")),
    "kubeconfig": ("--kubeconfig", ("k8s",)),
    "context": ("--context", ("k8s",)),
    "namespace": ("--namespace", ("k8s",)),
    "prometheus_url": ("--prometheus-url", ("prometheus",)),
    "poller_pidfile": ("--poller-pidfile", ("live",)),
    "recording": ("--recording", ("replay", "live")),
}


def refuse_foreign_flags(args: argparse.Namespace, kind: str) -> None:
    """UserError naming the first flag given that ``--source kind`` does not read, and
    the sources it applies to."""
    from quotatop.collectors.errors import UserError

    for dest, (flag, kinds) in APPLIES_TO.items():
        if getattr(args, dest, None) is not None and kind not in kinds:
            raise UserError(f"{flag} applies to --source {_either(kinds)} only, not {kind}")


def _either(kinds: tuple[str, ...]) -> str:
    return kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} or {kinds[-1]}"


def given_source_flags(args: argparse.Namespace) -> list[str]:
    """The source flags given (for a command that opens no source, to refuse them)."""
    return [flag for dest, (flag, _) in APPLIES_TO.items()
            if getattr(args, dest, None) is not None]


def source_overrides(args: argparse.Namespace, kind: str) -> dict[str, Any]:
    """The flags given, as SourceOptions overrides (None: not given, the file's value)."""
    refuse_foreign_flags(args, kind)
    flags = {"ssh_host": "ssh", "timeout": "timeout", "kubeconfig": "kubeconfig",
             "context": "context", "prometheus_url": "prometheus_url",
             "live_pidfile": "poller_pidfile"}
    out = {key: getattr(args, flag, None) for key, flag in flags.items()}
    if out["prometheus_url"] is None:
        out["prometheus_url"] = os.environ.get(PROMETHEUS_URL_ENV) or None
        if out["prometheus_url"] is not None and kind == "prometheus":
            problem = url_problem(out["prometheus_url"])
            if problem is not None:
                from quotatop.collectors.errors import UserError

                raise UserError(f"${PROMETHEUS_URL_ENV}: {problem}")
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
    if path and getattr(args, "scenario", None) is not None:
        # Two scenarios, one of them silently unplayed: say which to drop.
        raise UserError(f"--source demo {path} and --scenario "
                        f"{args.scenario}: give the scenario once")
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


def add_config_flag_only(p: argparse.ArgumentParser) -> None:
    """``--config FILE`` on a command that opens no source of a kind the config names
    (replay, simulate): taken after the command as before it, and checked the same
    (cli.check_config), so that ``quotatop replay F --config C`` is not refused where
    ``quotatop --config C replay F`` is accepted."""
    p.add_argument("--config", metavar="FILE", default=argparse.SUPPRESS,
                   help="config TOML, checked as every command checks it")
