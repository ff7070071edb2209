"""A period's frames read again, for the report: a recording from its first frame to
its last, or a scenario played once through (no loop). Shared by ``quotatop report``
and the TUI's Report screen, so both read the same frames."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Snapshot


def recording_frames(path: str | Path) -> Iterator[Snapshot]:
    """Every frame of the recording at ``path``; a bad file is a one-line UserError."""
    from quotatop.recording.store import RecordingError, open_recording

    try:
        rec = open_recording(str(path))
    except (RecordingError, OSError) as e:
        raise UserError(f"{path}: {e}") from None
    try:
        yield from rec
    except RecordingError as e:
        raise UserError(f"{path}: {e}") from None
    finally:
        rec.close()


def scenario_frames(scenario: Any) -> Iterator[Snapshot]:
    """Every frame the demo shows of ``scenario`` (a loaded scenario), once through."""
    from quotatop.simulation.scenario_source import ScenarioSource

    src = ScenarioSource(scenario, loop=False)
    for _ in range(src.total_steps):
        yield src.collect()
