"""The data behind the Report screen (key ``m``): the period's job runs the session can
get — the demo scenario once through, the recording a replay plays, a live Slurm's own
accounting (``sacct``, asked of the collector), or the recording this session is making
(``R``) — and the report of review/report.py over them, the same numbers
``quotatop report`` prints for that source.

No Textual and no subprocess here: the screen calls ``session_report`` in a thread
worker. A scenario is played by a source of its own and a recording read through a
connection of its own; Slurm's sacct runs in the collector (``accounting``, on a runner
of its own, under its allowlist), so the polling round is never touched from this thread.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Snapshot
from quotatop.review.frames import frames_report, read_frames, recording_frames, scenario_frames
from quotatop.review.report import Prices, Report, build_report

PERIOD = 30 * 86400.0  # as `quotatop report`'s default --since 30d
NO_HISTORY = ("this source keeps no job history: press R to record this session and m "
              "reports on the frames recorded")


def session_frames(collector: Any, recording: Path | None) -> tuple[str, Iterable[Snapshot]]:
    """(what the frames are, the frames) for the session's collector; a UserError when
    it has none to read again (a live source that is not being recorded)."""
    # quotatop.simulation.scenario_timeline.ScenarioTimeline
    source = getattr(collector, "source", None)
    scenario = getattr(source, "scenario", None)
    if scenario is not None and hasattr(source, "total_steps"):
        return f"the scenario {collector.name} once through", scenario_frames(scenario)
    rec = getattr(collector, "recording", None)  # quotatop.recording.replay_source.ReplaySource
    rec_path = getattr(rec, "path", None)
    if rec_path:
        return f"the recording {Path(rec_path).name}", recording_frames(rec_path)
    if recording is not None:
        return (f"this session's recording {recording.name}",
                recording_frames(recording))
    raise UserError(NO_HISTORY)


def report_of_frames(frames: Iterable[Snapshot], prices: Prices | None = None,
                     period: float = PERIOD, notes: list[str] | None = None) -> Report:
    """The report of the last ``period`` seconds of the frames (from the first frame
    when they cover less): the one computation of `quotatop report --source
    demo|replay` (review/frames.py), the incidents left to their own screen."""
    return frames_report(read_frames(frames), span=period, prices=prices,
                         incidents_note="on the Incidents screen (8)", notes=notes or [])


def slurm_report(collector: Any, snap: Snapshot, prices: Prices | None = None,
                 period: float = PERIOD) -> Report:
    """The last ``period`` before the snapshot from Slurm's accounting, as
    `quotatop report --source slurm` gathers it: one sacct query, the snapshot's teams."""
    from quotatop.review.sacct import parse_sacct, sacct_argv

    until = snap.taken_at
    since = until - period
    # The collector's accounting capability (collectors/base.py) runs sacct and says a
    # failure as a one-line UserError; the TUI knows no runner.
    out = collector.accounting(sacct_argv(since, until))
    records, warnings = parse_sacct(out.decode("utf-8", "replace"))
    return build_report(records, snap.teams, since=since, until=until, prices=prices,
                        source="slurm", cluster=snap.cluster, incidents=None,
                        incidents_note="on the Incidents screen (8)",
                        notes=["from sacct, the last 30 days", *warnings])


def session_report(collector: Any, recording: Path | None, prices: Prices | None = None,
                   snap: Snapshot | None = None) -> Report:
    """A scenario or a replay: its frames; a live Slurm: its accounting; any other live
    source: this session's recording (R)."""
    source = getattr(collector, "source", None)
    replaying = getattr(source, "scenario", None) is not None or \
        getattr(getattr(collector, "recording", None), "path", None)
    if not replaying and callable(getattr(collector, "accounting", None)) and snap is not None:
        return slurm_report(collector, snap, prices)
    what, frames = session_frames(collector, recording)
    return report_of_frames(frames, prices, notes=[f"from {what}"])
