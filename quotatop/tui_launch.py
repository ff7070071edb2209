"""`quotatop` with no subcommand: pick the source, read the config, run the TUI.

The config file is the one every command reads (quotatop/config.py, docs/config.md);
the source is built by the one registry (quotatop/sources.py). Flags win over the file.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from quotatop import __version__
from quotatop.collectors.base import Collector
from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Snapshot
from quotatop.commands.snapshot import collect_showing_progress
from quotatop.config import load_config
from quotatop.review.report import Prices, parse_prices
from quotatop.source_flags import source_options, source_words
from quotatop.sources import (
    CLUSTER_SOURCES,
    SourceOptions,
    open_source,
    refuse_empty,
)


@dataclass(frozen=True)
class Launch:
    """What the TUI opens, resolved from flags over the config file."""

    kind: str
    options: SourceOptions
    refresh: float  # seconds between refreshes of the view
    theme: str | None
    record_dir: Path | None
    export_dir: Path | None = None  # e/E exports, ctrl+s screenshots; None: the cwd
    prices: Prices | None = None  # the config's [prices], for the Report screen (m)


def resolve(args: argparse.Namespace) -> Launch:
    cfg = load_config(args.config)
    kind, path = source_words(args.source, cfg.source, getattr(args, "recording", None))
    refresh = cfg.refresh
    if args.refresh is not None:
        if isinstance(args.refresh, bool) or not args.refresh > 0:
            raise UserError(f"--refresh must be a positive number of seconds, not {args.refresh!r}")
        refresh = float(args.refresh)
    # --refresh sets the poll too, unless the file gives this source its own.
    options = source_options(cfg, args, kind, path,
                             refresh=refresh if kind not in cfg.poll else None)
    record_dir = getattr(args, "record_dir", None) or cfg.tui.record_dir
    export_dir = cfg.tui.export_dir
    return Launch(kind=kind, options=options, refresh=refresh, theme=cfg.tui.theme,
                  record_dir=Path(record_dir).expanduser() if record_dir else None,
                  export_dir=Path(export_dir).expanduser() if export_dir else None,
                  prices=parse_prices(cfg.prices or {}, cfg.path or "config"))


def _in_web_session() -> bool:
    from quotatop.commands.web_sessions import DRIVER

    return os.environ.get("TEXTUAL_DRIVER") == DRIVER


def open_launch(launch: Launch, *,
                refuse_unreachable: bool = True) -> tuple[Collector, Snapshot | None]:
    """The source ``launch`` names, opened, and for a cluster its first snapshot. An
    unreachable cluster is refused in one line (exit 2), as `snapshot` refuses it, not
    shown as an empty TUI, unless ``refuse_unreachable`` is False. `quotatop` and
    `quotatop web` (before it serves) both open a source this way, so that the same
    flags fail the same way in a terminal and in a browser."""
    source = open_source(launch.kind, launch.options)
    first: Snapshot | None = None
    if launch.kind in CLUSTER_SOURCES:
        try:
            first = collect_showing_progress(source)
            if refuse_unreachable:
                refuse_empty(launch.kind, first)
        except BaseException:
            source.close()
            raise
    return source, first


def run_tui(args: argparse.Namespace) -> int:
    if sys.__stderr__ is None and not _in_web_session():
        # Textual draws on the standard error quotatop started with; closed (`2>&-`),
        # the TUI spun on a screen it could not write, deaf to SIGTERM. Nobody can read
        # this line either (std_streams.py put /dev/null there): the exit status says it.
        raise UserError("the TUI draws on standard error, which is closed")
    launch = resolve(args)
    # A `web` session has no terminal of its own to say it on (its stderr is the
    # server's) and its page would only close: it opens on the stale banner instead,
    # and keeps asking, as the TUI does when a cluster goes away later. `web` itself
    # refused a cluster unreachable when it started (commands/web.py _check_source).
    source, first = open_launch(launch, refuse_unreachable=not _in_web_session())
    from quotatop.collectors.footprint import FootprintMeter
    from quotatop.tui.app import QuotatopApp

    app = QuotatopApp(source, refresh=launch.refresh, theme=launch.theme,
                      record_dir=launch.record_dir, footprint=FootprintMeter(),
                      prices=launch.prices, version=__version__, first=first)
    app.export_dir = launch.export_dir
    try:
        app.run()
    finally:
        source.close()
    return 0
