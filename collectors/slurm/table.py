"""Rows of ``--parsable2`` / ``-O 'Field:|'`` output, checked for their column count."""

from __future__ import annotations

import math

from quotatop.collectors.slurm.errors import ParseError

# Slurm keeps priorities and counts in 16 to 64 bits; a number beyond 2^53 (exact as a
# float, and as a JSON number elsewhere) is not one Slurm meant, and one beyond 2^64
# cannot even be written to a recording (msgpack). Out of range is a ParseError.
MAX_INT = 2**53


def rows(
    text: str, columns: list[str], what: str, *, trailing_bar: bool = False
) -> list[dict[str, str]]:
    """One dict per line. A line with the wrong number of fields is garbage, not data:
    it raises rather than shifting every later column by one."""
    out = []
    want = len(columns) + (1 if trailing_bar else 0)
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != want:
            raise ParseError(what, line, f"line {n} has {len(fields)} fields, expected {want}")
        out.append(dict(zip(columns, fields, strict=False)))
    return out


def to_float(text: str, what: str) -> float | None:
    text = text.strip()
    if text in ("", "N/A", "(null)"):
        return None
    try:
        value = float(text)
    except ValueError:
        raise ParseError(what, text, "not a number") from None
    if not math.isfinite(value):  # NaN, or a number too large for a float (1e999)
        raise ParseError(what, text, "not a finite number")
    return value


def to_int(text: str, what: str) -> int | None:
    text = text.strip()
    if text in ("", "N/A", "(null)", "UNLIMITED"):
        return None
    if not (text.isascii() and text.removeprefix("-").isdigit()):
        raise ParseError(what, text, "not an integer")
    if len(text) > 20 or abs(value := int(text)) > MAX_INT:  # (no 4,300-digit int() error)
        raise ParseError(what, text, f"out of range (at most 2^53 = {MAX_INT})")
    return value
