"""Painting only what changed: a refresh whose text is the same as on screen costs
no layout and no redraw (issue #32: an idle Overview repainted everything every 2 s)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

_SHOWN = "_quotatop_shown"


def update_static(widget: Static, content: Text | str) -> None:
    """``widget.update(content)`` unless it already shows equal content."""
    if getattr(widget, _SHOWN, None) == content:
        return
    setattr(widget, _SHOWN, content)
    widget.update(content)
