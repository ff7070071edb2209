"""One stable colour per team, so the same team reads the same on every screen.
Colour is never the only signal: the Nodes grid also prints team initials, and
NO_COLOR (handled by Textual) leaves the glyphs readable."""

from __future__ import annotations

from functools import lru_cache
from zlib import crc32

from rich.style import Style

PALETTE = ("#5fafff", "#ffaf5f", "#87d787", "#d787d7", "#ffd75f", "#5fd7d7", "#ff8787",
           "#afafff", "#d7af87", "#87afaf")
_assigned: dict[str, str] = {}


def assign_team_colors(names: list[str]) -> None:
    """Teams get palette slots in the snapshot's order, so a fixed snapshot
    always paints the same colours."""
    _assigned.clear()
    for i, n in enumerate(names):
        _assigned[n] = PALETTE[i % len(PALETTE)]
    team_style.cache_clear()


def team_color(name: str) -> str:
    if name in _assigned:
        return _assigned[name]
    return PALETTE[crc32(name.encode()) % len(PALETTE)]


@lru_cache(maxsize=256)
def team_style(name: str) -> Style:
    return Style(color=team_color(name))
