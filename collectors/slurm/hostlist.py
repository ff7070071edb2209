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
# Every message of a bound being hit carries this, so that a warning listing a few of
# many skipped records names a bound first (json_decode._skipped).
BOUND = "(the bound on"
_TOO_MANY = f"more than {MAX_HOSTS} hosts {BOUND} one hostlist)"
# The most host names one answer (one squeue or sacct document) may expand to, summed
# over its records: MAX_HOSTS per hostlist still lets 3,000 jobs each name 100,000
# hosts (300 million names, gigabytes). No cluster runs more than this at once: it is
# MAX_HOSTS nodes with ten jobs on each; the snapshot then refuses a live job naming a
# node sinfo does not list (collectors/slurm/collector.py), which bounds a job's list
# by the cluster's own node count.
MAX_ANSWER_HOSTS = 1_000_000
_TRAILING_DIGITS = re.compile(r"^(.*?)([0-9]+)$")
_DIGITS = re.compile(r"[0-9]+")


def _expand_range(body: str, whole: str, limit: int, too_many: str) -> list[str]:
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
        if b - a + len(out) >= limit:
            raise ParseError("hostlist", whole, too_many)
        width = len(lo)
        out.extend(f"{n:0{width}d}" for n in range(a, b + 1))
    return out


def _expand_item(item: str, whole: str, limit: int, too_many: str) -> list[str]:
    if not item:
        raise ParseError("hostlist", whole, "empty host name")
    choices: list[list[str]] = []
    pos = 0
    for m in re.finditer(r"\[([^\]]*)\]", item):
        if m.start() > pos:
            choices.append([item[pos : m.start()]])
        choices.append(_expand_range(m.group(1), whole, limit, too_many))
        pos = m.end()
    if pos < len(item):
        choices.append([item[pos:]])
    total = 1
    for c in choices:
        total *= len(c)
    if total > limit:
        raise ParseError("hostlist", whole, too_many)
    return ["".join(p) for p in itertools.product(*choices)]


def expand_hostlist(text: str, limit: int = MAX_HOSTS, too_many: str = _TOO_MANY) -> list[str]:
    """Every host name in a hostlist expression, in Slurm's order; ParseError
    ``too_many`` past ``limit`` names, found before the range that would pass it is built."""
    text = text.strip()
    if text in EMPTY:
        return []
    if any(ch.isspace() for ch in text):
        raise ParseError("hostlist", text, "whitespace inside")
    hosts: list[str] = []
    for item in split_top(text, "hostlist", "[", "]", nested=False):
        hosts.extend(_expand_item(item, text, limit - len(hosts), too_many))
        if len(hosts) > limit:
            raise ParseError("hostlist", text, too_many)
    return hosts


class HostBudget:
    """The host names one answer may still expand to (``total`` in all), and the
    lists it expanded (a queue repeats a few node lists: each is read once)."""

    def __init__(self, what: str, total: int = MAX_ANSWER_HOSTS) -> None:
        self.left = total
        self._too_many = f"more than {total} hosts in one {what} answer {BOUND} one answer)"
        self._seen: dict[str, tuple[str, ...]] = {}

    def expand(self, text: str) -> list[str]:
        """The record's hosts, counted against the answer's total; ParseError naming
        the bound (the record is skipped) once that total would be passed."""
        hosts = self._seen.get(text)
        if hosts is None:
            limit = min(MAX_HOSTS, self.left)
            why = _TOO_MANY if limit == MAX_HOSTS else self._too_many
            hosts = self._seen[text] = tuple(expand_hostlist(text, limit, why))
        if len(hosts) > self.left:
            raise ParseError("hostlist", text, self._too_many)
        self.left -= len(hosts)
        return list(hosts)


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
