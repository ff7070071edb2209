"""TRES strings (``cpu=64,mem=500G,gres/gpu:h100=8,billing=64``) to model Resources."""

from __future__ import annotations

import math
import re

from quotatop.collectors.model import Resources
from quotatop.collectors.slurm.errors import ParseError

EMPTY = frozenset({"", "(null)", "N/A", "None", "n/a"})
# Slurm prints memory with a unit suffix; the model counts MiB.
_MEM_UNITS = {"": 1.0, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}
_COUNT_UNITS = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_VALUE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([KMGTP]?)$")
_KEY = re.compile(r"^[A-Za-z][\w./:-]*$", re.ASCII)


def tres_key(name: str) -> str:
    """Slurm TRES name to model key: mem→memory, gres/gpu:h100→gpu:h100."""
    if name == "mem":
        return "memory"
    if name.startswith("gres/"):
        return name[5:]
    return name


def slurm_tres_name(key: str) -> str:
    if key == "memory":
        return "mem"
    if key == "gpu" or key.startswith("gpu:"):
        return f"gres/{key}"
    return key


def parse_tres(text: str) -> Resources:
    text = text.strip()
    if text in EMPTY:
        return {}
    out: Resources = {}
    for item in text.split(","):
        name, sep, raw = item.partition("=")
        if not sep or not _KEY.match(name):
            raise ParseError("TRES", text, f"bad item {item!r}")
        m = _VALUE.match(raw)
        if m is None:
            raise ParseError("TRES", text, f"bad value {raw!r}")
        number, unit = float(m.group(1)), m.group(2)
        key = tres_key(name)
        value = number * (_MEM_UNITS if key == "memory" else _COUNT_UNITS)[unit]
        if not math.isfinite(value):
            raise ParseError("TRES", text, f"value out of range {raw!r}")
        out[key] = value
    return out


def _num(v: float) -> str:
    return str(int(v)) if v == int(v) else repr(v)


def format_tres(resources: Resources) -> str:
    """The TRES string Slurm would print (memory in M); inverse of parse_tres."""
    parts = []
    for key, value in resources.items():
        name = slurm_tres_name(key)
        parts.append(f"{name}={_num(value)}M" if key == "memory" else f"{name}={_num(value)}")
    return ",".join(parts)
