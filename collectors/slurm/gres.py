"""GRES strings with indices: ``gpu:h100:8(IDX:0-3,5)``, ``gpu:2``, ``gpu:a100:8(S:0-1)``."""

from __future__ import annotations

import re

from msgspec import Struct

from quotatop.collectors.slurm.errors import ParseError
from quotatop.collectors.slurm.ranges import format_ranges, split_top

EMPTY = frozenset({"", "(null)", "N/A", "None"})
_ITEM = re.compile(
    r"^(?P<name>[A-Za-z][\w.-]*)(?::(?P<type>[A-Za-z_][\w.-]*))?"
    r"(?::(?P<count>[0-9]+)(?P<unit>[KMG]?))?(?:\((?P<extra>[^()]*)\))?$",
    re.ASCII,
)
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
# A GPU index range larger than this is corruption, not a node.
MAX_INDEX = 1 << 16


class Gres(Struct, frozen=True):
    name: str
    type: str | None
    count: int
    indices: tuple[int, ...] | None = None  # None: Slurm printed no IDX


def parse_index_list(text: str, whole: str) -> list[int]:
    """``0-3,5`` → [0, 1, 2, 3, 5]."""
    out: list[int] = []
    for piece in text.split(","):
        lo, sep, hi = piece.partition("-")
        if not re.fullmatch(r"[0-9]+", lo) or (sep and not re.fullmatch(r"[0-9]+", hi)):
            raise ParseError("GRES", whole, f"bad index {piece!r}")
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a or b > MAX_INDEX:
            raise ParseError("GRES", whole, f"bad index range {piece!r}")
        out.extend(range(a, b + 1))
    return out


def parse_gres(text: str) -> list[Gres]:
    text = text.strip()
    if text in EMPTY:
        return []
    out = []
    for item in split_top(text, "GRES", "(", ")"):
        m = _ITEM.match(item)
        if m is None:
            raise ParseError("GRES", text, f"bad item {item!r}")
        name, gtype, count = m.group("name"), m.group("type"), m.group("count")
        n = int(count) * _UNITS[m.group("unit") or ""] if count is not None else 1
        indices = None
        extra = m.group("extra")
        if extra:
            key, _, val = extra.partition(":")
            if key == "IDX":
                indices = () if val == "N/A" else tuple(parse_index_list(val, text))
        out.append(Gres(name=name, type=gtype, count=n, indices=indices))
    return out


def format_index_list(indices: tuple[int, ...]) -> str:
    return format_ranges(indices)


def format_gres(items: list[Gres]) -> str:
    out = []
    for g in items:
        s = g.name + (f":{g.type}" if g.type else "") + f":{g.count}"
        if g.indices is not None:
            s += f"(IDX:{format_index_list(g.indices) or 'N/A'})"
        out.append(s)
    return ",".join(out)
