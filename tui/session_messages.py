"""The session's events (tui/session.py) as typed Textual messages.

The App's ``emit`` makes one of these per event in the session's worker threads and
hands it to its ``on_…`` handler on the UI thread through ``call_from_thread`` (see
``QuotatopApp._post_event`` for why not the message queue); the handlers only paint.
"""

from __future__ import annotations

from textual.message import Message

from quotatop.collectors.footprint import Footprint
from quotatop.collectors.model import Snapshot
from quotatop.tui.derive import Derived
from quotatop.tui.live_incidents import IncidentState
from quotatop.tui.predictions import Predictions
from quotatop.tui.session import (
    Collected,
    Failed,
    Finished,
    IncidentsFound,
    Predicted,
    PredictionWanted,
    RecordingChanged,
    SessionEvent,
    Unchanged,
)


class SessionMessage(Message):
    """A session event on its way to the UI thread."""


class SessionUpdated(SessionMessage):
    def __init__(self, snap: Snapshot, derived: Derived, predictions: Predictions,
                 footprint: Footprint | None) -> None:
        super().__init__()
        self.snap, self.derived, self.predictions = snap, derived, predictions
        self.footprint = footprint


class PredictionRequested(SessionMessage):
    """A new snapshot waits for the core."""


class SessionRepeated(SessionMessage):
    def __init__(self, snap: Snapshot) -> None:
        super().__init__()
        self.snap = snap


class SourceFailed(SessionMessage):
    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason


class PredictionsReady(SessionMessage):
    def __init__(self, predictions: Predictions) -> None:
        super().__init__()
        self.predictions = predictions


class IncidentsChanged(SessionMessage):
    def __init__(self, state: IncidentState) -> None:
        super().__init__()
        self.state = state


class RecordingStateChanged(SessionMessage):
    """A recording started, stopped or failed: the header says which."""


class RefreshFinished(SessionMessage):
    """The refresh's whole tail is done: the next collect may start."""


def as_message(event: SessionEvent) -> SessionMessage:
    match event:
        case Collected(snap, derived, preds, footprint):
            return SessionUpdated(snap, derived, preds, footprint)
        case PredictionWanted():
            return PredictionRequested()
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
