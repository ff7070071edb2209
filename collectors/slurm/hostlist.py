"""Slurm hostlists: ``gpu[01-04,07]``, ``a[1-2]b[3-4]``, ``n1,n[3-5]``."""

from __future__ import annotations

import itertools
import re

from quotatop.collectors.slurm.errors import ParseError
from quotatop.collectors.slurm.ranges import split_top

EMPTY = frozenset({"", "(null)", "None", "N/A"})
# The most hosts one hostlist may name: no cluster has more nodes (quotatop/flags.py
# MAX_NODES, the same bound for a scenario), and the cap, checked before a range is
# expanded, stops "gpu[001-999999]" from building a million names per record.
MAX_HOSTS = 100_000
_TOO_MANY = f"more than {MAX_HOSTS} hosts (the bound on one hostlist)"
_TRAILING_DIGITS = re.compile(r"^(.*?)([0-9]+)$")
_DIGITS = re.compile(r"[0-9]+")


def _expand_range(body: str, whole: str) -> list[str]:
    out: list[str] = []
    for piece in body.split(","):
        lo, sep, hi = piece.partition("-")
        if not _DIGITS.fullmatch(lo) or (sep and not _DIGITS.fullmatch(hi)):
            raise ParseError("hostlist", whole, f"bad range {piece!r}")
        if not sep:
            out.append(lo)
            continue
        a, b = int(lo), int(hi)
        if b < a:
            raise ParseError("hostlist", whole, f"descending range {piece!r}")
        if b - a + len(out) >= MAX_HOSTS:
            raise ParseError("hostlist", whole, _TOO_MANY)
        width = len(lo)
        out.extend(f"{n:0{width}d}" for n in range(a, b + 1))
    return out


def _expand_item(item: str, whole: str) -> list[str]:
    if not item:
        raise ParseError("hostlist", whole, "empty host name")
    choices: list[list[str]] = []
    pos = 0
    for m in re.finditer(r"\[([^\]]*)\]", item):
        if m.start() > pos:
            choices.append([item[pos : m.start()]])
        choices.append(_expand_range(m.group(1), whole))
        pos = m.end()
    if pos < len(item):
        choices.append([item[pos:]])
    total = 1
    for c in choices:
        total *= len(c)
    if total > MAX_HOSTS:
        raise ParseError("hostlist", whole, _TOO_MANY)
    return ["".join(p) for p in itertools.product(*choices)]


def expand_hostlist(text: str) -> list[str]:
    """Every host name in a hostlist expression, in Slurm's order."""
    text = text.strip()
    if text in EMPTY:
        return []
    if any(ch.isspace() for ch in text):
        raise ParseError("hostlist", text, "whitespace inside")
    hosts: list[str] = []
    for item in split_top(text, "hostlist", "[", "]", nested=False):
        hosts.extend(_expand_item(item, text))
        if len(hosts) > MAX_HOSTS:
            raise ParseError("hostlist", text, _TOO_MANY)
    return hosts


def compress_hostlist(names: list[str]) -> str:
    """The shortest-ish hostlist for these names (prefix + zero-padded number ranges)."""
    groups: dict[tuple[str, int], set[int]] = {}
    plain: list[str] = []
    for name in dict.fromkeys(names):
        m = _TRAILING_DIGITS.match(name)
        if m is None or "[" in m.group(1):
            plain.append(name)
            continue
        digits = m.group(2)
        groups.setdefault((m.group(1), len(digits)), set()).add(int(digits))
    out = list(plain)
    for (prefix, width), nums in sorted(groups.items()):
        # A number wider than the padding (e.g. 100 in a 2-wide group) prints wider
        # than its group and so cannot share it; keep it alone.
        ordered = sorted(nums)
        ranges: list[str] = []
        i = 0
        while i < len(ordered):
            j = i
            while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
                j += 1
            a, b = ordered[i], ordered[j]
            ranges.append(f"{a:0{width}d}" if a == b else f"{a:0{width}d}-{b:0{width}d}")
            i = j + 1
        if len(ordered) == 1:
            out.append(f"{prefix}{ranges[0]}")
        else:
            out.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(out)
