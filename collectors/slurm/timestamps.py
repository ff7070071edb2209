"""Slurm timestamps (``2026-12-02T10:00:00``, ``Unknown``, ``N/A``) to epoch seconds."""

from __future__ import annotations

import datetime as dt
import re

from quotatop.collectors.slurm.errors import ParseError

NO_VALUE = frozenset({"", "Unknown", "N/A", "None", "(null)", "NONE", "n/a"})
_ISO = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}$")


def parse_timestamp(text: str, tz: dt.tzinfo | None = None) -> float | None:
    """Epoch seconds, or None when Slurm has no time.

    Slurm prints the controller host's local time without a zone; ``tz`` is that
    zone (None: this machine's local zone)."""
    text = text.strip()
    if text in NO_VALUE:
        return None
    if not _ISO.match(text):
        raise ParseError("timestamp", text)
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError as exc:
        raise ParseError("timestamp", text, str(exc)) from None
    if tz is not None:
        value = value.replace(tzinfo=tz)
    try:
        return value.timestamp()
    except (OverflowError, OSError, ValueError) as exc:
        raise ParseError("timestamp", text, str(exc)) from None


def format_timestamp(epoch: float | None, tz: dt.tzinfo | None = None) -> str:
    if epoch is None:
        return "Unknown"
    return dt.datetime.fromtimestamp(epoch, tz).strftime("%Y-%m-%dT%H:%M:%S")
