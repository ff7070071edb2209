"""The `quotatop` command line."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from quotatop import __version__
from quotatop.collectors import procgroups
from quotatop.collectors.errors import UserError
from quotatop.collectors.untrusted import printable
from quotatop.commands import COMMANDS
from quotatop.flags import OneLineParser, seconds
from quotatop.source_flags import add_config_flags, add_source_flags
from quotatop.std_streams import ClosedOutput, guard_closed_streams


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
    add_source_flags(p, top=True)
    p.add_argument("--record-dir", default=None,
                   help="where R records (default: [tui] record_dir, $XDG_STATE_HOME/quotatop)")
    p.set_defaults(func=_cmd_tui)
    sub = p.add_subparsers(dest="command")
    for name in COMMANDS:
        importlib.import_module(f"quotatop.commands.{name}").register(sub)
    return p


class _Namespace(argparse.Namespace):
    """A Namespace that keeps what the top-level parser stored before the command's
    name (``before``): argparse then copies the command's own values, defaults
    included, over the same names, and a top-level flag vanished without a word."""

    def __init__(self) -> None:
        super().__init__()
        self.__dict__["before"] = {}

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "command" and value is not None:
            self.__dict__["named"] = True
        elif not self.__dict__.get("named"):
            self.__dict__["before"][name] = value
        super().__setattr__(name, value)


# Top-level flags every command reads: --config is checked for all of them (check_config).
_EVERYWHERE = frozenset({"config", "func", "command"})


def check_top_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """UserError naming a flag given before the command's name that the command would
    not read: one it does not take (``quotatop --ssh h simulate X``), or one whose
    value its own parser replaced (``quotatop --source slurm predict``: predict's
    default --source). ``web`` says it itself, with what to write (tui_argv)."""
    command = getattr(args, "command", None)
    if command is None or command == "web":
        return
    flags = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings}
    for dest, value in vars(args).get("before", {}).items():
        if dest in _EVERYWHERE or value is None or dest not in flags:
            continue
        takes = dest in _dests(parser, command)
        if not takes or getattr(args, dest, None) != value:
            raise UserError(f"{flags[dest]} given before `{command}`, which "
                            + (f"reads its own: quotatop {command} {flags[dest]} …"
                               if takes else "does not take it"))


def _dests(parser: argparse.ArgumentParser, command: str) -> set[str]:
    """The names a command's parser stores its flags under."""
    for action in parser._actions:  # argparse lists its subparsers nowhere public
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest for a in action.choices[command]._actions}
    return set()


def check_config(args: argparse.Namespace) -> None:
    """A ``--config`` given is read and checked before any command runs (UserError in
    one line when it is missing or malformed): every command accepts it, top-level or
    after its name, and the ones that need no config (simulate, replay, advise --trace)
    would otherwise accept a file that is not there and say nothing."""
    if getattr(args, "config", None) is not None:
        from quotatop.config import load_config

        load_config(args.config)


def main(argv: Sequence[str] | None = None) -> int:
    guard_closed_streams()  # `quotatop … >&-`: std_streams.py
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv, namespace=_Namespace())
        except SystemExit:  # --help, --version, or a flag refused: it ends as argparse says
            # argparse printed and leaves the flush to the interpreter's exit, where a
            # full standard output would pass unsaid (`--help > /dev/full` exited 0);
            # flushed here, a failure is the OSError below.
            sys.stdout.flush()
            raise
        check_top_flags(parser, args)
        check_config(args)
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
    except ClosedOutput as e:  # nothing to point at /dev/null: it is there already
        print(f"quotatop: cannot write the output: {e.strerror}", file=sys.stderr)
        return 2
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
