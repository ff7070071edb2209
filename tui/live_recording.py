"""The R key: record the live snapshots into a SQLite recording while the TUI runs.

Start, append and stop all run off the UI thread (start/stop in a small worker,
append in the collect worker) and take one lock, so a slow keyframe never
freezes the screen and stop never races an append. A failure becomes ``error``
(shown as a one-line banner) and ends the recording.
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

from quotatop.collectors.model import Snapshot

KEYFRAME_EVERY = 300


def default_record_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "quotatop"


def recording_name(cluster: str, at: float) -> str:
    """``<cluster>-YYYYmmdd-HHMMSS.qtr`` (local time), safe as a file name."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", cluster or "cluster").strip("._") or "cluster"
    return f"{safe}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(at))}.qtr"


class LiveRecording:
    def __init__(self, directory: Path | None = None, retention: float | None = None,
                 clock: object = time.time, version: str = "") -> None:
        self.version = version  # the quotatop version a recording states (from the roof)
        self.directory = Path(directory) if directory else default_record_dir()
        self.retention = retention
        self._clock = clock
        self._lock = threading.Lock()
        self._recorder: object | None = None
        self.path: Path | None = None
        self.frames = 0
        self.error: str | None = None
        # The snapshot appended last: start() records what is on screen, and the
        # collect that put it there may offer the same snapshot again right after.
        self._last: Snapshot | None = None

    @property
    def active(self) -> bool:
        return self.path is not None

    def start(self, snap: Snapshot | None, source: str) -> None:
        """Open a new file named by cluster and time; append ``snap`` (what is on
        screen) as its first frame. Worker thread."""
        from quotatop.recording.store import Recorder, RecordingError

        cluster = (snap.cluster if snap is not None else "") or "cluster"
        with self._lock:
            if self._recorder is not None:
                return
            self.error = None
            path = self.directory / recording_name(cluster, self._clock())  # type: ignore[operator]
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                rec = Recorder(path, cluster=cluster, source=(snap.source if snap else "")
                               or source, retention=self.retention,
                               keyframe_every=KEYFRAME_EVERY,
                               version=self.version).start()
            except (OSError, RecordingError) as e:
                self.error = f"cannot record to {path}: {e}"
                return
            self._recorder, self.path, self.frames = rec, path, 0
            if snap is not None:
                self._append_locked(snap)

    def append(self, snap: Snapshot) -> None:
        """One frame (collect worker). No-op when not recording."""
        if self._recorder is None:
            return
        with self._lock:
            self._append_locked(snap)

    def _append_locked(self, snap: Snapshot) -> None:
        rec = self._recorder
        if rec is None or snap is self._last:
            return
        try:
            rec.append(snap)  # type: ignore[attr-defined]
            self.frames += 1
            self._last = snap
        except Exception as e:  # a full disk or a damaged file ends the recording, not the app
            self.error = f"recording {self.path} stopped: {type(e).__name__}: {e}"
            self._close_locked()

    def stop(self) -> None:
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        rec, self._recorder, self.path, self._last = self._recorder, None, None, None
        if rec is None:
            return
        try:
            rec.stop()  # type: ignore[attr-defined]
        except Exception as e:  # closing a damaged file must not take the app down
            self.error = self.error or f"closing the recording failed: {e}"
