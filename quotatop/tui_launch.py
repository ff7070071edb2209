"""`quotatop` with no subcommand: pick the source, read the XDG config, run the TUI.

Config: ``$XDG_CONFIG_HOME/quotatop/config.toml`` (default ``~/.config``), or
``--config FILE``. Flags win over the file::

    [tui]
    source = "slurm"        # demo | slurm | k8s | prometheus | replay
    refresh = 2.0           # seconds between refreshes
    theme = "nord"          # any Textual theme
    replay = "/path/rec.qtr"  # the file for source = "replay"
    record_dir = "/scratch/rec"  # where R records (default $XDG_STATE_HOME/quotatop)
    scenario = "demo_data/seed_fifo.toml"

    [slurm]
    ssh_host = "login1"     # run the Slurm commands over ssh (optional)

    [k8s]
    context = "prod"

    [prometheus]
    url = "http://prometheus:9090"
"""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path
from typing import Any

from quotatop.errors import UserError

SOURCES = ("demo", "slurm", "k8s", "prometheus", "replay")


def config_path(explicit: str | None) -> Path | None:
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            raise UserError(f"{p}: config file not found")
        return p
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    p = base / "quotatop" / "config.toml"
    return p if p.is_file() else None


def load_config(explicit: str | None) -> dict[str, Any]:
    path = config_path(explicit)
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read config: {e}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: invalid TOML: {e}") from None
    for section in ("tui", "slurm", "k8s", "prometheus"):
        if section in data and not isinstance(data[section], dict):
            raise UserError(f"{path}: [{section}] must be a table")
    return data


def _section(cfg: dict[str, Any], name: str, allowed: set[str]) -> dict[str, Any]:
    sec = dict(cfg.get(name, {}))
    unknown = sorted(set(sec) - allowed)
    if unknown:
        raise UserError(f"config [{name}]: unknown key {unknown[0]!r} "
                        f"(known: {', '.join(sorted(allowed))})")
    return sec


def resolve(args: argparse.Namespace) -> tuple[str, str | None, float, str | None, dict]:
    """(source kind, its file if any, refresh seconds, theme, whole config)."""
    cfg = load_config(args.config)
    tui = _section(cfg, "tui", {"source", "refresh", "theme", "replay", "scenario",
                                "record_dir"})
    words = list(args.source or [])
    kind = words[0] if words else str(tui.get("source", "demo"))
    if kind not in SOURCES:
        raise UserError(f"--source {kind}: unknown source (choose from {', '.join(SOURCES)})")
    path: str | None = words[1] if len(words) > 1 else None
    if len(words) > 2:
        raise UserError(f"--source {' '.join(words)}: expected a kind and at most one file")
    if kind == "replay":
        path = path or tui.get("replay")
        if not path:
            raise UserError("--source replay needs a file: --source replay FILE")
    elif kind == "demo":
        path = path or args.scenario or tui.get("scenario")
    elif path:
        raise UserError(f"--source {kind} takes no file argument")
    refresh = args.refresh if args.refresh is not None else tui.get("refresh", 1.0)
    if not isinstance(refresh, int | float) or isinstance(refresh, bool) or refresh <= 0:
        raise UserError(f"refresh must be a positive number of seconds, not {refresh!r}")
    theme = tui.get("theme")
    record_dir = getattr(args, "record_dir", None) or tui.get("record_dir")
    if record_dir is not None and not isinstance(record_dir, str):
        raise UserError(f"record_dir must be a directory path, not {record_dir!r}")
    cfg = {**cfg, "_record_dir": record_dir}
    return kind, path, float(refresh), theme, cfg


def open_source(kind: str, path: str | None, cfg: dict[str, Any]) -> Any:
    """The collector for a source kind; any setup failure is one UserError line."""
    if kind == "demo":
        from collectors.scenario_source import ScenarioSource
        from quotatop.cli import DEFAULT_SCENARIO, demo_path
        from quotatop.scenario import load_scenario

        return ScenarioSource(load_scenario(path or demo_path(DEFAULT_SCENARIO)))
    if kind == "replay":
        from collectors.recording import RecordingError
        from collectors.replay_source import ReplaySource

        if not Path(path or "").is_file():
            raise UserError(f"{path}: recording not found")
        try:
            return ReplaySource(str(path))
        except (RecordingError, OSError, ValueError) as e:
            raise UserError(f"{path}: cannot replay: {e}") from None
    if kind == "slurm":
        from collectors.slurm.collector import SlurmCollector

        sec = _section(cfg, "slurm", {"ssh_host", "timeout", "slow_every"})
        return SlurmCollector(**sec)
    if kind == "k8s":
        from collectors.kubernetes_source import KubernetesCollector, KubernetesConfig

        try:
            return KubernetesCollector(KubernetesConfig(**cfg.get("k8s", {})))
        except TypeError as e:
            raise UserError(f"config [k8s]: {e}") from None
    from collectors.prometheus_source import PrometheusCollector, PrometheusConfig

    try:
        return PrometheusCollector(PrometheusConfig(**cfg.get("prometheus", {})))
    except TypeError as e:
        raise UserError(f"config [prometheus]: {e}") from None


def run_tui(args: argparse.Namespace) -> int:
    kind, path, refresh, theme, cfg = resolve(args)
    source = open_source(kind, path, cfg)
    from tui.app import QuotatopApp

    record_dir = cfg.get("_record_dir")
    app = QuotatopApp(source, refresh=refresh, theme=theme,
                      record_dir=Path(record_dir).expanduser() if record_dir else None)
    try:
        app.run()
    finally:
        source.close()
    return 0
