"""Painting only what changed: a refresh whose text is the same as on screen costs
no layout and no redraw (issue #32: an idle Overview repainted everything every 2 s)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

_SHOWN = "_quotatop_shown"


def update_static(widget: Static, content: Text | str) -> None:
    """``widget.update(content)`` unless it already shows equal content; and a layout
    of the screen only when the new content changes the widget's size. Static.update
    lays the whole screen out on every call: the header's age ("refreshed 3s ago")
    alone did that every second, and a layout repaints every chart beside it."""
    if getattr(widget, _SHOWN, None) == content:
        return
    setattr(widget, _SHOWN, content)
    widget.update(content, layout=False)
    if _size_changes(widget):
        widget.refresh(layout=True)


def _size_changes(widget: Static) -> bool:
    """Whether ``widget``'s content, as set, no longer fits the size it was laid out at
    (a side sized by its content, measured as the layout would: True when unsure)."""
    if not widget.is_mounted or not widget.size.area:
        return True
    styles = widget.styles
    size = widget.content_size
    container, viewport = widget.container_size, widget.app.size
    try:
        # An unset side fills its container (Textual's box model): only ``auto`` is
        # sized by the content.
        width = styles.width
        if width is not None and width.is_auto and (
                widget.get_content_width(container, viewport) != size.width):
            return True
        height = styles.height
        if height is not None and height.is_auto:
            return widget.get_content_height(container, viewport, size.width) != size.height
    except Exception:  # a measure that fails: let the layout decide
        return True
    return False
