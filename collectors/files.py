"""Small input files (a config, a scenario, a kubeconfig) read within bounds.

A path that is not a regular file (a FIFO would block the read forever, /dev/zero
would fill memory) or is larger than the bound is a ``UserError`` of one line
naming the file, said before anything is read."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from quotatop.collectors.errors import UserError

MAX_INPUT_BYTES = 1 << 20  # 1 MiB: far above any real config, scenario or kubeconfig


def read_small_file(path: str | Path, what: str, *,
                    limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes; UserError
    naming ``what`` and the file otherwise (FileNotFoundError passes through, so
    callers can word "no such file" their own way)."""
    p = str(path)
    st = os.stat(p)  # FileNotFoundError / PermissionError: the caller's except clauses
    _check(p, st, what, limit)
    # O_NONBLOCK: if a FIFO took the file's place since the stat, opening it does not
    # wait for a writer; fstat below then refuses it.
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        _check(p, os.fstat(fd), what, limit)
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:  # it grew after the stat
        raise UserError(f"{p}: {what} larger than {_size(limit)}")
    return data


def _check(p: str, st: os.stat_result, what: str, limit: int) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise UserError(f"{p}: {what} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{p}: {what} is not a regular file")
    if st.st_size > limit:
        raise UserError(f"{p}: {what} larger than {_size(limit)} ({st.st_size} bytes)")


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n % (1 << 20) == 0 else f"{n} bytes"


def parse_toml(text: bytes | str, where: str) -> dict[str, Any]:
    """A TOML document's table; UserError naming ``where`` if it is not UTF-8, not
    TOML, or nested deeper than tomllib can recurse (found by tests/fuzz)."""
    try:
        return tomllib.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
    except UnicodeDecodeError:
        raise UserError(f"{where}: not TOML: the file is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{where}: not TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per [ or {
        raise UserError(f"{where}: not TOML: nested too deeply") from None


def read_toml(path: str | Path, what: str) -> dict[str, Any]:
    """The table of the small TOML file ``path`` (``what``: "scenario file", …); one
    UserError naming the file when it is missing, unreadable or not TOML."""
    try:
        text = read_small_file(path, what)
    except FileNotFoundError:
        raise UserError(f"{path}: no such {what}") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    return parse_toml(text, str(path))
