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


async def refreshed(pilot: Pilot, tries: int = 200) -> None:
    """Ask the app for a refresh now and wait (bounded) until its collect has returned
    and its messages were handled: the next refresh may start."""
    app = pilot.app
    app.refresh_now()  # type: ignore[attr-defined]
    for _ in range(tries):
        await pilot.pause(0.02)
        if not app._collecting:  # type: ignore[attr-defined]
            break
    await pilot.pause()


def screen_text(app: App) -> str:
    return "\n".join("".join(seg.text for seg in strip)
                     for strip in app.screen._compositor.render_strips())
