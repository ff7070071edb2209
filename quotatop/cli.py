"""The `quotatop` command line."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from quotatop.commands import COMMANDS
from quotatop.errors import UserError

DEFAULT_SCENARIO = "split_60_30_10.toml"


def demo_path(name: str) -> Path:
    """A bundled scenario from demo_data/ beside the packages."""
    return Path(__file__).resolve().parent.parent / "demo_data" / name


def _cmd_tui(args: argparse.Namespace) -> int:
    from quotatop.tui_launch import run_tui

    return run_tui(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="quotatop", description=__doc__)
    p.add_argument("--scenario", help="scenario TOML to play (default: bundled demo)")
    p.add_argument("--source", nargs="+", metavar="KIND",
                   help="demo | slurm | k8s | prometheus | replay FILE (default: demo)")
    p.add_argument("--refresh", type=float, default=None,
                   help="seconds between refreshes (default 1, or [tui] refresh)")
    p.add_argument("--config", help="config TOML (default $XDG_CONFIG_HOME/quotatop/config.toml)")
    p.add_argument("--record-dir", default=None,
                   help="where R records (default $XDG_STATE_HOME/quotatop, or [tui] record_dir)")
    p.set_defaults(func=_cmd_tui)
    sub = p.add_subparsers(dest="command")
    for name in COMMANDS:
        importlib.import_module(f"quotatop.commands.{name}").register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except UserError as e:
        print(f"quotatop: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
