"""The `quotatop` command line."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Sequence

from quotatop import __version__
from quotatop.collectors import procgroups
from quotatop.collectors.errors import UserError
from quotatop.collectors.untrusted import printable
from quotatop.commands import COMMANDS
from quotatop.flags import OneLineParser, seconds
from quotatop.source_flags import add_config_flags, add_source_flags


def _cmd_tui(args: argparse.Namespace) -> int:
    from quotatop.tui_launch import run_tui

    return run_tui(args)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="quotatop", description=__doc__)
    p.add_argument("--version", action="version", version=f"quotatop {__version__}")
    p.add_argument("--source", nargs="+", metavar="KIND",
                   help="demo | slurm | k8s | prometheus | replay FILE | live FILE "
                        "(default: source in the config, else demo)")
    p.add_argument("--refresh", type=seconds(), default=None,
                   help="seconds between refreshes (default: refresh in the config, 2)")
    add_config_flags(p, top=True)
    add_source_flags(p)
    p.add_argument("--record-dir", default=None,
                   help="where R records (default: [tui] record_dir, $XDG_STATE_HOME/quotatop)")
    p.set_defaults(func=_cmd_tui)
    sub = p.add_subparsers(dest="command")
    for name in COMMANDS:
        importlib.import_module(f"quotatop.commands.{name}").register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit:  # --help, --version, or a flag refused: it ends as argparse says
            # argparse printed and leaves the flush to the interpreter's exit, where a
            # full standard output would pass unsaid (`--help > /dev/full` exited 0);
            # flushed here, a failure is the OSError below.
            sys.stdout.flush()
            raise
        # SIGHUP (the terminal closed) and SIGTERM kill the commands a source still
        # runs (collectors/procgroups.py) before the process goes as it would have.
        with procgroups.killing_on_signals():
            code = int(args.func(args))
        # What is still buffered goes now, inside this handler: a full disk or a closed
        # pipe found at the interpreter's exit would be a traceback-like "Exception
        # ignored" and an exit status of 120.
        sys.stdout.flush()
        return code
    except UserError as e:
        # A message quotes what it refuses (a job name, squeue's stderr, a path): escaped,
        # so that it stays one line and sends nothing to the terminal.
        print(f"quotatop: {printable(str(e))}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`| head -1`): nothing is wrong and nothing is said.
        _stdout_to_devnull()
        return 0
    except OSError as e:
        if e.errno not in OUTPUT_FULL or e.filename is not None:
            raise  # not a write to a full standard output: a bug to see whole
        _stdout_to_devnull()
        print(f"quotatop: cannot write the output: {e.strerror}", file=sys.stderr)
        return 2


# A write that fails for want of room (/dev/full, a full disk or quota, a file too
# large): the user's to fix, said in one line.
OUTPUT_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, so that the interpreter's own flush at exit, of what
    is still buffered, cannot fail again (the way the Python docs give for SIGPIPE,
    library/signal.html#note-on-sigpipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
