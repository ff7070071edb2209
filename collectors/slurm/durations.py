"""Slurm durations (``D-HH:MM:SS``, ``HH:MM:SS``, ``MM:SS``, minutes) to seconds."""

from __future__ import annotations

import math
import re

from quotatop.collectors.slurm.errors import ParseError
from quotatop.collectors.slurm.table import MAX_INT

# None = no limit or no value: the UI says "unlimited"/"n/a", never shows 0.
NO_VALUE = frozenset(
    {
        "",
        "UNLIMITED",
        "INFINITE",
        "INVALID",
        "N/A",
        "NONE",
        "None",
        "(null)",
        "Partition_Limit",
        "NOT_SET",
    }
)
_FIELD = re.compile(r"^[0-9]+$")
_SECONDS = re.compile(r"^[0-9]+(?:\.[0-9]+)?$")


def _int(part: str, text: str) -> int:
    if not _FIELD.match(part):
        raise ParseError("duration", text, f"bad field {part!r}")
    # Found by tests/fuzz: int() of more than 4,300 digits is a ValueError, and a
    # duration beyond 2^53 s is none Slurm meant (nor a float once times 60).
    if len(part) > 16:
        raise ParseError("duration", text, f"out of range (at most 2^53 = {MAX_INT} s)")
    return int(part)


def _seconds(value: float, text: str) -> float:
    if not (math.isfinite(value) and value <= MAX_INT):  # "9" * 400 + ".5" seconds is inf
        raise ParseError("duration", text, f"out of range (at most 2^53 = {MAX_INT} s)")
    return value


def parse_duration(text: str) -> float | None:
    """Seconds, or None for UNLIMITED / INVALID / N/A.

    Slurm's forms: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS; sacct adds
    fractional seconds (``00:01.234``)."""
    text = text.strip()
    if text in NO_VALUE:
        return None
    days = 0
    rest = text
    if "-" in text:
        d, _, rest = text.partition("-")
        days = _int(d, text)
        fields = rest.split(":")
        if len(fields) > 3:
            raise ParseError("duration", text, "too many ':' fields")
        fields += ["0"] * (3 - len(fields))
        h, m, s = fields
    else:
        fields = rest.split(":")
        if len(fields) == 1:
            return _seconds(float(_int(fields[0], text) * 60), text)
        if len(fields) == 2:
            h, (m, s) = "0", fields
        elif len(fields) == 3:
            h, m, s = fields
        else:
            raise ParseError("duration", text, "too many ':' fields")
    if not _SECONDS.match(s):
        raise ParseError("duration", text, f"bad seconds {s!r}")
    return _seconds(days * 86400 + _int(h, text) * 3600 + _int(m, text) * 60 + float(s), text)


def format_duration(seconds: float | None) -> str:
    """Slurm's own layout; whole seconds. None prints as UNLIMITED."""
    if seconds is None:
        return "UNLIMITED"
    total = int(seconds)
    days, rem = divmod(total, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    if days:
        return f"{days}-{h:02d}:{m:02d}:{s:02d}"
    return f"{h:02d}:{m:02d}:{s:02d}"
