"""The session's events (tui/session.py) as typed Textual messages.

The App's ``emit`` posts one of these per event from the session's worker threads
(``post_message`` is thread-safe and keeps their order); the App's ``on_…``
handlers run on the UI thread and only paint.
"""

from __future__ import annotations

from textual.message import Message

from collectors.footprint import Footprint
from collectors.model import Snapshot
from tui.derive import Derived
from tui.live_incidents import IncidentState
from tui.predictions import Predictions
from tui.session import (
    Collected,
    Failed,
    Finished,
    IncidentsFound,
    Predicted,
    RecordingChanged,
    SessionEvent,
    Unchanged,
)


class SessionUpdated(Message):
    def __init__(self, snap: Snapshot, derived: Derived, predictions: Predictions,
                 footprint: Footprint | None) -> None:
        super().__init__()
        self.snap, self.derived, self.predictions = snap, derived, predictions
        self.footprint = footprint


class SessionRepeated(Message):
    def __init__(self, snap: Snapshot) -> None:
        super().__init__()
        self.snap = snap


class SourceFailed(Message):
    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class PredictionsReady(Message):
    def __init__(self, predictions: Predictions) -> None:
        super().__init__()
        self.predictions = predictions


class IncidentsChanged(Message):
    def __init__(self, state: IncidentState) -> None:
        super().__init__()
        self.state = state


class RecordingStateChanged(Message):
    pass


class RefreshFinished(Message):
    pass


def as_message(event: SessionEvent) -> Message:
    match event:
        case Collected(snap, derived, preds, footprint):
            return SessionUpdated(snap, derived, preds, footprint)
        case Unchanged(snap):
            return SessionRepeated(snap)
        case Failed(reason):
            return SourceFailed(reason)
        case Predicted(preds):
            return PredictionsReady(preds)
        case IncidentsFound(state):
            return IncidentsChanged(state)
        case RecordingChanged():
            return RecordingStateChanged()
        case Finished():
            return RefreshFinished()
    raise TypeError(f"not a session event: {event!r}")
