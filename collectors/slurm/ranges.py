"""What Slurm's bracket notations share: splitting at top-level commas, and writing
a set of integers back as ``0-3,5``. GRES indices, hostlists and array task specs
each read their own ranges (zero padding, steps and limits differ)."""

from __future__ import annotations

from quotatop.collectors.slurm.errors import ParseError


def split_top(text: str, what: str, opening: str, closing: str, *,
              nested: bool = True) -> list[str]:
    """``text`` split at the commas outside ``opening``…``closing``; unbalanced or
    (unless ``nested``) nested brackets are a ParseError naming ``what``."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == opening:
            depth += 1
            if depth > 1 and not nested:
                raise ParseError(what, text, "nested brackets")
        elif ch == closing:
            depth -= 1
            if depth < 0:
                raise ParseError(what, text, f"unbalanced {closing!r}")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise ParseError(what, text, f"unclosed {opening!r}")
    parts.append(text[start:])
    return parts


def format_ranges(numbers: tuple[int, ...]) -> str:
    """``(0, 1, 2, 3, 5)`` → ``0-3,5``: runs of consecutive numbers as ranges."""
    ordered = sorted(set(numbers))
    parts, i = [], 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)
