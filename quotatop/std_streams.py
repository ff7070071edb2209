"""Standard output or error closed before quotatop started (``quotatop … >&-``).

Python then sets ``sys.stdout`` (``sys.stderr``) to None: ``print`` drops the output
without a word, and ``sys.stdout.write`` is an AttributeError traceback, exit 1.
Worse, the descriptor is free: the next file opened (a recording, a log) would be
given it, and whatever writes to fd 1 or 2 (a child's output, the Rust core's panic
message) would land in that file. ``guard_closed_streams`` puts /dev/null on the
closed descriptor, so that no file takes it, and:

- a closed standard output becomes an object whose every write raises
  ``ClosedOutput``, which ``cli.main`` says in one line and exit 2, as it says a full
  one (/dev/full): the output was asked for and could not be written;
- a closed standard error becomes /dev/null: nobody reads it, so the command runs as
  it would and its exit status is all it says.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from typing import Any, NoReturn


class ClosedOutput(OSError):
    """A write to a standard output that was closed when quotatop started."""

    def __init__(self) -> None:
        super().__init__(errno.EBADF, "standard output is closed")


def _refuse(*_args: Any) -> NoReturn:
    raise ClosedOutput()


class _ClosedBinary(io.RawIOBase):
    """``sys.stdout.buffer`` of a closed standard output."""

    def writable(self) -> bool:
        return True

    write = _refuse  # type: ignore[assignment]


class _ClosedText(io.TextIOBase):
    """``sys.stdout`` of a closed standard output: each write refused, nothing kept."""

    def __init__(self) -> None:
        super().__init__()
        self._buffer = _ClosedBinary()

    @property
    def buffer(self) -> _ClosedBinary:  # type: ignore[override]
        return self._buffer

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    write = _refuse  # type: ignore[assignment]


def _fill(fd: int) -> None:
    """/dev/null on ``fd`` if it is closed, so that no file opened later takes it."""
    try:
        os.fstat(fd)
    except OSError:
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)


def guard_closed_streams() -> None:
    """Make a closed standard output refuse writes and a closed standard error quiet."""
    if sys.stdout is None:
        _fill(1)
        sys.stdout = _ClosedText()
    if sys.stderr is None:
        _fill(2)
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
