"""The session's events (tui/session.py) as typed Textual messages.

The App's ``emit`` posts one of these per event from the session's worker threads
(``post_message`` is thread-safe and keeps their order); the App's ``on_…``
handlers run on the UI thread and only paint. The worker waits until its message is
handled, as ``call_from_thread`` waited: what the session does next (the incident
feed, a recording's keyframe) must not hold the GIL against the paint.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TypeVar

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


class SessionMessage(Message):
    """A session event on its way to the UI; ``handled`` is set once its handler ran."""

    def __init__(self) -> None:
        super().__init__()
        self.handled = threading.Event()

    def wait_handled(self, running: Callable[[], bool]) -> None:
        """Block the posting worker until the handler ran, or the app stopped running
        (a message queued behind shutdown is never handled)."""
        while not self.handled.wait(0.05):
            if not running():
                return


M = TypeVar("M", bound=SessionMessage)
H = TypeVar("H")


def acknowledges(handler: Callable[[H, M], None]) -> Callable[[H, M], None]:
    """A handler of a session message: marks it handled however the handler ends."""
    @functools.wraps(handler)
    def handle(self: H, message: M) -> None:
        try:
            handler(self, message)
        finally:
            message.handled.set()
    return handle


class SessionUpdated(SessionMessage):
    def __init__(self, snap: Snapshot, derived: Derived, predictions: Predictions,
                 footprint: Footprint | None) -> None:
        super().__init__()
        self.snap, self.derived, self.predictions = snap, derived, predictions
        self.footprint = footprint


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
