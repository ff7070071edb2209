"""One session over one collector: the refresh pipeline, with no Textual in it.

A refresh is collect → derive → (the source's estimates now, the core's prediction
after) → incidents → record. The session runs each step in the thread that calls it
(the App's workers: a slow cluster or core never blocks the UI) and reports what
happened as small typed events, in order, through one ``emit`` callback; the App turns
them into Textual messages and only paints. It also owns what the pipeline needs
between refreshes: the last good snapshot, pause, the replay's timeline, the
recording and the incident detector. An import contract (pyproject.toml) holds this
module and everything it imports free of Textual.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from quotatop.collectors.base import Collector, driven_as_timeline
from quotatop.collectors.footprint import Footprint
from quotatop.collectors.model import Snapshot
from quotatop.collectors.untrusted import printable, printable_tree
from quotatop.tui.derive import Derived, derive
from quotatop.tui.heap import give_back_free_heap
from quotatop.tui.live_incidents import IncidentState, LiveIncidents
from quotatop.tui.live_recording import LiveRecording
from quotatop.tui.predictions import Predictions, core_available, core_top, predict_taken
from quotatop.tui.timeline_protocol import TimelineControl, timeline_of


@dataclass(frozen=True)
class Collected:
    """New data: paint it with ``predictions`` (the source's estimates, or the core's
    previous answer marked as updating) until the core's new answer follows."""
    snap: Snapshot
    derived: Derived
    predictions: Predictions
    footprint: Footprint | None


@dataclass(frozen=True)
class PredictionWanted:
    """The snapshot just reported waits for the core: ask ``next_prediction`` once it
    is on screen (a separate step, so that the core's encoding, which holds the GIL,
    starts only after the paint)."""


@dataclass(frozen=True)
class Unchanged:
    """The source handed back the items on screen (a live viewer between its poller's
    frames), or a snapshot whose content equals them (an idle cluster): rows,
    predictions and incidents stand; the header may change."""
    snap: Snapshot


@dataclass(frozen=True)
class Failed:
    """The collect raised; the last good snapshot stays (``Session.snapshot``)."""
    reason: str


@dataclass(frozen=True)
class Predicted:
    """The core's answer for the snapshot handed to ``Session.predict``."""
    predictions: Predictions


@dataclass(frozen=True)
class IncidentsFound:
    """The incidents open and closed after the newest snapshot."""
    state: IncidentState


@dataclass(frozen=True)
class RecordingChanged:
    """A recording started, stopped or failed (``Session.recording`` says which)."""


@dataclass(frozen=True)
class Finished:
    """The refresh's whole tail (incidents, recording) is done: the next may start."""


SessionEvent = Collected | PredictionWanted | Unchanged | Failed | Predicted | IncidentsFound \
    | RecordingChanged | Finished


def _ignore(event: SessionEvent) -> None:
    pass


_ENCODER = msgspec.msgpack.Encoder()


def content_digest(snap: Snapshot) -> bytes:
    """What a snapshot says about the cluster, hashed: its moment and each command's
    latency left out (they differ on every collect of an idle cluster). 8k jobs: a few
    ms, against the ~100 ms a derive, a prediction and a paint of them cost."""
    status = [msgspec.structs.replace(st, latency_ms=None, at=None) for st in snap.status]
    body = _ENCODER.encode(msgspec.structs.replace(snap, taken_at=0.0, status=status))
    return hashlib.blake2b(body, digest_size=16).digest()


def _without_items(snap: Snapshot) -> Snapshot:
    return msgspec.structs.replace(snap, jobs=[], nodes=[], teams=[])


def _refreshed(kept: Snapshot, new: Snapshot) -> Snapshot:
    """``kept`` (equal in content to ``new``) stamped with ``new``'s moment and status."""
    return msgspec.structs.replace(kept, taken_at=new.taken_at, status=new.status,
                                   meta=new.meta)


def _incident_ids(state: IncidentState) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return tuple(map(id, state.open)), tuple(map(id, state.closed))


class Session:
    def __init__(self, collector: Collector, *, emit: Callable[[SessionEvent], None] = _ignore,
                 recording: LiveRecording | None = None,
                 incidents: LiveIncidents | None = None,
                 footprint: Callable[[], Footprint | None] | None = None,
                 record_dir: Path | None = None, first: Snapshot | None = None) -> None:
        # A source that can be driven as a replay (a demo scenario) is: found by the
        # protocol, never by its class.
        self.collector = driven_as_timeline(collector)
        self.timeline: TimelineControl | None = timeline_of(self.collector)
        self.emit = emit
        self.recording = recording or LiveRecording(record_dir)
        self.incidents = incidents or LiveIncidents()
        # quotatop's own RSS and CPU, read after each collect (the CLI passes a psutil
        # meter; tests leave it out so that frames do not depend on the host).
        self.footprint_meter = footprint
        self.footprint: Footprint | None = None
        self._paused = False  # a live source's pause; a timeline keeps its own
        self.snapshot: Snapshot | None = None  # the last good one, as shown
        self._raw: Snapshot | None = None  # the same as the source gave it, for R
        self.predictions = Predictions()  # the answer shown with it
        # The snapshot waiting for the core: set by the collect worker, taken by the UI
        # thread; the lock keeps a newer one from being lost between read and take.
        self._want_lock = threading.Lock()
        self._want_prediction: Snapshot | None = None
        self._predicting = False
        self._digest: bytes | None = None  # content_digest of the snapshot on screen
        self._light_digest: bytes | None = None  # the same, but its jobs, nodes, teams
        self._incidents_shown: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
        # The snapshot the command line already took to refuse an empty source before
        # the TUI started (quotatop/tui_launch.py): the first refresh shows it rather
        # than asking the cluster a second time.
        self._first = first

    # pause -----------------------------------------------------------------
    @property
    def paused(self) -> bool:
        return self.timeline.paused if self.timeline is not None else self._paused

    def toggle_pause(self) -> None:
        if self.timeline is None:
            self._paused = not self._paused
        elif self.timeline.paused:
            self.timeline.play()
        else:
            self.timeline.pause()

    # one refresh (a worker thread) ----------------------------------------------
    def refresh(self) -> None:
        """Collect, derive and report; then feed the incidents and the recording.
        Ends with ``Finished`` whatever happened, so the caller may start the next."""
        try:
            self._refresh()
        finally:
            self.emit(Finished())

    def _refresh(self) -> None:
        try:
            raw, self._first = self._first or self.collector.collect(), None
            if self._same_items_as_shown(raw):
                return
            # Every string the views paint comes from here: escaped once, where it
            # enters, so that no job name or stderr line sends control characters or
            # bidi overrides to the terminal (collectors/untrusted.py; Rich and Textual
            # pass ESC through). The same object when clean, as nearly always.
            snap = printable_tree(raw)
            if self._unchanged(raw):
                self.emit(Unchanged(snap))
                return
            # A timeline's frames are its clock (the Timeline's cursor, a replay's "now"):
            # only a live source's equal frames are the same picture.
            digest = content_digest(raw) if self.timeline is None else None
            if digest is not None and digest == self._digest and self.snapshot is not None:
                self._light_digest = self._light_of(raw)
                self._show_unchanged(snap, raw)
                return
            derived = derive(snap)
        except Exception as e:  # a collector bug must become a banner, not a crash
            self.emit(Failed(printable(f"{type(e).__name__}: {e}")))
            return
        if self.footprint_meter is not None:  # after the collect, so it counts its cost
            self.footprint = self.footprint_meter()
        # Paint with the source's estimates (or the core's previous answer) now; the
        # core's new predictions follow (``predict``), so a slow prediction never
        # delays fresh data or the first frame.
        keep = self.predictions
        preds = keep.updating() if core_available() else Predictions(error=keep.error)
        self.snapshot, self._raw, self.predictions = snap, raw, preds
        self._digest, self._light_digest = digest, None
        with self._want_lock:  # before the event: its handler may ask for it
            self._want_prediction = snap
        self.emit(Collected(snap, derived, preds, self.footprint))
        self.emit(PredictionWanted())
        # After the new data is handed over: neither detection nor a recording's
        # keyframe delays it.
        self._tail(snap, raw)

    def _tail(self, snap: Snapshot, raw: Snapshot, only_if_changed: bool = False) -> None:
        state = self.incidents.feed(snap)
        if not only_if_changed or _incident_ids(state) != self._incidents_shown:
            self._incidents_shown = _incident_ids(state)
            self.emit(IncidentsFound(state))
        if self.recording.active:
            self.recording.append(raw)  # a recording keeps the source's own words
            if self.recording.error:
                self.emit(RecordingChanged())

    def _light_of(self, raw: Snapshot) -> bytes | None:
        """The digest of ``raw`` but its jobs, nodes and teams, when those are the
        objects shown (a source that hands back the same lists for the same answers,
        as the Slurm collector does); else None."""
        prev = self._raw
        if (self.timeline is not None or prev is None or raw.jobs is not prev.jobs
                or raw.nodes is not prev.nodes or raw.teams is not prev.teams):
            return None
        return content_digest(_without_items(raw))

    def _same_items_as_shown(self, raw: Snapshot) -> bool:
        """The same cluster as on screen, known without escaping or hashing its 8k
        jobs: the same lists, and the rest equal. Handled as an equal digest is."""
        light = self._light_of(raw) if self._light_digest is not None else None
        if light is None or light != self._light_digest or self.snapshot is None:
            return False
        self._show_unchanged(printable_tree(_without_items(raw)), raw)  # status escaped
        return True

    def _show_unchanged(self, snap: Snapshot, raw: Snapshot) -> None:
        """The same cluster as on screen, newly taken: nothing to derive, predict or
        paint. The incidents still see time pass (a wait grows into a starvation) and a
        recording still gets the frame. The objects on screen are kept, with the new
        moment: the new ones are let go at once (two 100k-job snapshots are ~200 MB)."""
        assert self.snapshot is not None
        snap, raw = _refreshed(self.snapshot, snap), _refreshed(self._raw or raw, raw)
        self.snapshot, self._raw = snap, raw
        self.emit(Unchanged(snap))
        self._tail(snap, raw, only_if_changed=True)

    def _unchanged(self, snap: Snapshot) -> bool:
        """The same items as last time, from a source that says it hands them back
        unchanged while nothing new has come (``repeats_items``: the live source)."""
        prev = self._raw
        return (getattr(self.collector, "repeats_items", False) and prev is not None
                and snap.jobs is prev.jobs and snap.nodes is prev.nodes
                and snap.teams is prev.teams)

    # the core's prediction ---------------------------------------------------------
    def next_prediction(self) -> list[Snapshot] | None:
        """The newest snapshot still waiting for the core, in a box for ``predict``, or
        None when the core is absent, busy or has nothing new to answer (UI thread)."""
        if not core_available() or self._predicting:
            return None
        with self._want_lock:
            snap, self._want_prediction = self._want_prediction, None
        if snap is None:
            return None
        self._predicting = True
        return [snap]

    @property
    def predicting(self) -> bool:
        """The core is computing an answer (or its answer is not yet on screen)."""
        return self._predicting

    def drop_waiting_prediction(self) -> None:
        """Forget the snapshot waiting for the core: no answer for it is wanted."""
        with self._want_lock:
            self._want_prediction = None

    @property
    def prediction_waiting(self) -> bool:
        """A newer snapshot waits for the core than the one it answered last."""
        return self._want_prediction is not None

    def predict(self, box: list[Snapshot]) -> Predictions:
        """Ask the core (a worker thread); report and return its answer. The snapshot
        comes in a box that ``predict_taken`` empties once encoded, so a newer snapshot
        replacing it frees it while the core computes (at 100k jobs, ~100 MB)."""
        # A source with no priority factors of its own has the Priority bars drawn from
        # the core's, on one scale: its top is read here, not while painting (~1.4 s at
        # 100k pending rows), and kept with the answer.
        own = any(j.factors is not None for j in box[0].jobs) if box else True
        preds = predict_taken(box)
        if not own:
            core_top(preds)
        # The core's working memory is free now but still mapped (glibc): give it back
        # before the next snapshot is built beside this one.
        give_back_free_heap()
        self.predictions = preds
        self.emit(Predicted(preds))
        return preds

    def prediction_shown(self) -> None:
        """The answer is on screen (the UI thread): the next snapshot may go to the
        core. Released here, not when the core returns, so that the answer is marked
        as updating only while a newer snapshot truly waits."""
        self._predicting = False

    # recording (a worker thread: a keyframe may be slow) ---------------------------
    def record_start(self, snap: Snapshot | None = None) -> None:
        """Record from ``snap`` (what is on screen; the last good one if None) on. What
        is on screen is the last good snapshot as shown: its keyframe is the source's own."""
        if snap is None or snap is self.snapshot:
            snap = self._raw
        self.recording.start(snap, self.collector.name)
        self.emit(RecordingChanged())

    def record_stop(self) -> None:
        self.recording.stop()
        self.emit(RecordingChanged())

    def close(self) -> None:
        """Commit the recording's last frame and cut a hung collect short."""
        self.recording.stop()
        # A source that can cut its requests short (an optional method, like
        # progress()) is told to now: a collect waiting on a hung Slurm held quit.
        interrupt = getattr(self.collector, "interrupt", None)
        if interrupt is not None:
            with contextlib.suppress(Exception):  # a courtesy: never a reason to fail quit
                interrupt()
