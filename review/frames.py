"""A period's frames read again, for the report: a recording from its first frame to
its last, or a scenario played once through (no loop), and the report of a period of
them. Shared by ``quotatop report`` and the TUI's Report screen, so both read the same
frames into the same numbers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct

from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Snapshot, Team
from quotatop.review.history import History
from quotatop.review.report import JobRecord, Prices, Report, build_report


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


class PeriodData(Struct, kw_only=True):
    """What one pass over a period's frames gives the report: the job runs, the teams,
    where the frames came from, the moments they cover and (when asked) the incidents."""

    records: list[JobRecord]
    teams: list[Team]
    source: str
    cluster: str
    start: float  # the first frame's time: nothing is known before it
    end: float  # the last frame's time
    incidents: list[Any] | None  # None: not asked for


def read_frames(frames: Iterable[Snapshot], incident_cfg: Any | None = None) -> PeriodData:
    """One pass over the frames: the job runs (review/history.py) and, given an
    ``incidents.IncidentConfig``, the incidents the detectors find in them."""
    from quotatop.incidents import IncidentMonitor

    hist = History()
    mon = IncidentMonitor(incident_cfg) if incident_cfg is not None else None
    for snap in frames:
        hist.feed(snap)
        if mon is not None:
            mon.feed(snap)
    if hist.first_t is None or hist.last_t is None:
        raise UserError("report: the source has no frames")
    if hist.last_t <= hist.first_t:
        raise UserError("report: one frame only: a period needs two (let it run, "
                        "or record longer)")
    return PeriodData(records=hist.finish(), teams=list(hist.teams.values()),
                      source=hist.source, cluster=hist.cluster, start=hist.first_t,
                      end=hist.last_t, incidents=None if mon is None else mon.finish())


def report_since(start: float | None, until: float, span: float) -> float:
    """The period's start, ``span`` before ``until``, but not before the data's
    ``start`` (None: as far as the source keeps): nothing is known before the first
    frame, so a guarantee cannot be called idle there."""
    since = until - span
    if start is not None and since < start < until:
        return start
    return since


def frames_report(data: PeriodData, *, span: float, until: float | None = None,
                  prices: Prices | None = None, source: str = "",
                  incidents_note: str | None = None, notes: Sequence[str] = ()) -> Report:
    """The report of the ``span`` seconds before ``until`` (default: the last frame) of
    the frames read (``source``: where they came from, when the frames do not say):
    ``quotatop report --source demo|replay`` and the TUI's Report screen (m) both call
    this, so their numbers are one computation."""
    end = data.end if until is None else until
    return build_report(data.records, data.teams, since=report_since(data.start, end, span),
                        until=end, prices=prices, source=data.source or source,
                        cluster=data.cluster, incidents=data.incidents,
                        incidents_note=incidents_note, notes=notes)
