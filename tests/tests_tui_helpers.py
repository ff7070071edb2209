"""Helpers for TUI tests: wait for the first snapshot, read the screen as text."""

from __future__ import annotations

from textual.app import App
from textual.pilot import Pilot


async def loaded(pilot: Pilot, tries: int = 100) -> None:
    """Bounded wait until the app has painted its first snapshot."""
    app = pilot.app
    for _ in range(tries):
        await pilot.pause(0.02)
        if getattr(app, "data", None) is not None:
            break
    await pilot.pause()


def screen_text(app: App) -> str:
    return "\n".join("".join(seg.text for seg in strip)
                     for strip in app.screen._compositor.render_strips())
