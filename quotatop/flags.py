"""Numbers from the command line, each checked against a stated range.

``number(lo, hi)`` is an argparse ``type=``: a flag outside its range, NaN or
infinite is refused by the parser with the range said out loud, before any
command runs (the limits also keep memory and time bounded: a node count or a
frame count is what a command allocates)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

# Shared limits: what a trace or scenario cluster may hold, what a clock may wait.
MAX_NODES = 100_000
MAX_GPUS = 800_000.0  # MAX_NODES nodes of 8 GPUs
MAX_PER_NODE = 1_000_000.0  # GPUs (SWF: processors) on one node
MAX_SECONDS = 86_400.0  # a refresh, interval, timeout or snapping resolution: up to a day
MAX_FRAMES = 1_000_000


def _fmt(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def check(name: str, value: float, lo: float, hi: float, *, lo_open: bool = False,
          integer: bool = False) -> None:
    """ValueError naming ``name`` and the range unless ``lo (<|<=) value <= hi``."""
    try:
        ok = (not isinstance(value, bool) and math.isfinite(value)
              and (value > lo if lo_open else value >= lo) and value <= hi
              and (not integer or float(value).is_integer()))
    except OverflowError:  # found by tests/fuzz: an int past a float (--frames 9...9)
        ok = False
    if not ok:
        kind = "a whole number" if integer else "a number"
        span = (f"greater than {_fmt(lo)} and at most {_fmt(hi)}" if lo_open
                else f"from {_fmt(lo)} to {_fmt(hi)}")
        raise ValueError(f"{name} must be {kind} {span}, not {value!r}")


def number(lo: float, hi: float, *, lo_open: bool = False,
           integer: bool = False) -> Callable[[str], float]:
    """An argparse type: a float (an int when ``integer``) in the range."""

    def parse(text: str) -> float:
        try:
            value: float = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{'a whole number' if integer else 'a number'} expected, not {text!r}"
            ) from None
        try:
            check("", value, lo, hi, lo_open=lo_open, integer=integer)
        except ValueError as e:
            msg = str(e).strip().rpartition(", not ")[0]
            raise argparse.ArgumentTypeError(f"{msg}, not {text!r}") from None
        return value

    parse.__name__ = "int" if integer else "float"
    return parse


def seconds(hi: float = MAX_SECONDS) -> Callable[[str], float]:
    """A positive number of seconds, at most ``hi``."""
    return number(0.0, hi, lo_open=True)


class OneLineParser(argparse.ArgumentParser):
    """Parser errors as one line (``quotatop: …``) and exit 2, as every other bad input.

    No abbreviations: a flag is written whole. argparse matches prefixes against the
    top-level parser's flags too, before the command's own, so a new flag anywhere made
    an old one ambiguous (``simulate --record F`` broke when ``--recording`` joined
    ``--record-dir`` at the top), and a prefix could silently mean another flag."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        import sys

        from quotatop.collectors.untrusted import printable

        # Found by tests/fuzz: argparse quotes some arguments as given ("unrecognized
        # arguments: a<newline>b"); a line break, another control character or a lone
        # surrogate (invalid UTF-8 in argv) is written escaped, so the error stays one line.
        message = printable(message)
        sys.stderr.write(f"quotatop: {self.prog.removeprefix('quotatop ')}: {message}\n"
                         if self.prog != "quotatop" else f"quotatop: {message}\n")
        sys.exit(2)

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse drops an OSError writing --help or --version (Lib/argparse.py):
        # `quotatop --help > /dev/full` exited 0 with nothing written. It reaches
        # cli.main instead, which says it in one line and exits 2.
        if message:
            import sys

            (file or sys.stderr).write(message)
