"""A viewer of a recording a poller is still writing: one poller, many viewers.

``quotatop record --daemon`` polls the cluster once; every ``quotatop --source live
FILE`` (and ``predict --source live FILE``) reads its frames instead of polling the
cluster again, so ten viewers cost the scheduler what the poller alone does. A
live source is a collector whose snapshot is the newest frame: the file is opened
read-only (``Recording(read_only=True, follow=True)``: SQLite ``mode=ro``, docs/recording.md "One
poller, many viewers"), the newest frame is decoded at once, and each ``collect``
reads only the frames committed since the last one (a step forward in the delta
chain, or a new keyframe). Predictions are the viewer's own: the TUI runs the core
on what this returns, as for any source.

When the poller stops — its pid file is gone, or no frame was written for
``stale_after`` of its intervals — the snapshot is the last frame marked stale
("poller stale: last frame 42s ago"): the TUI keeps it on screen under a banner.
The poller's silence is timed from the file's modification times, so a frame's own
clock (a demo scenario's, or a cluster's) never enters it.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import msgspec

from quotatop.collectors.human import human_duration
from quotatop.collectors.model import Snapshot
from quotatop.recording.store import Recording, RecordingError

# A poll waits up to its timeout (10 s by default) before it writes even a stale
# frame, so a shorter silence is not yet a stopped poller.
STALE_FLOOR = 15.0
DEFAULT_STALE_AFTER = 5  # poller intervals without a new frame

# Snapshot.meta keys the TUI reads from a live source (tui/app.py).
META_POLLER = "live_poller"  # "ok" | "stale"
META_WRITTEN_AT = "live_written_at"  # epoch seconds the frame was written


class LiveSource:
    """The newest frame of ``path``, followed as a poller appends to it."""

    # Between the poller's frames ``collect`` hands back the same item lists (the
    # same Snapshot while its state is unchanged too): the TUI then keeps its rows
    # and the core's answer instead of predicting the same frame again.
    repeats_items = True

    def __init__(self, path: str | Path, *, refresh: float = 2.0, pidfile: str | Path | None = None,
                 stale_after: int = DEFAULT_STALE_AFTER,
                 clock: Callable[[], float] = time.time) -> None:
        self.path = str(path)
        self.refresh = refresh
        self.pidfile = Path(pidfile) if pidfile is not None else None
        self.stale_after = stale_after
        self.clock = clock
        # follow: the file itself, never a private copy, to see the poller's new frames.
        self.recording = Recording(self.path, read_only=True, follow=True)  # RecordingError
        meta = self.recording.meta
        self.name = f"live:{meta.get('source') or '?'}:{Path(self.path).name}"
        self._inode = _inode(self.path)
        # When the newest frame was written (wall clock, from the file's mtime) and the
        # seconds between the frames seen arriving: the poller's observed cadence.
        self._written_at = self._last_write()
        self._gaps: deque[float] = deque(maxlen=8)
        self._last: Snapshot | None = self.recording.frame(-1) if len(self.recording) else None
        self._error: str | None = None  # the last read failure, until a read succeeds
        self._out: Snapshot | None = None  # what collect returned last,
        self._out_of: Snapshot | None = None  # made of this frame
        self.poller_stale: str | None = None  # the reason of the last collect, or None

    # ---- Collector -----------------------------------------------------------------
    def collect(self) -> Snapshot:
        self._reopen_if_replaced()
        try:
            with self.recording.read_transaction():
                new = self.recording.refresh()
                if new:
                    self._last = self.recording.frame(-1)
            self._error = None
        except RecordingError as e:
            # A damaged frame or an unreadable file mid-run: keep the last good data.
            new, self._error = 0, str(e)
        if new:
            written = self._last_write()
            if written is not None and self._written_at is not None:
                gap = (written - self._written_at) / new
                if gap > 0:
                    self._gaps.append(gap)
            self._written_at = written
        reason = self._stale_reason()
        out = self._out
        if out is None or self._last is None or self._last is not self._out_of \
                or reason != self.poller_stale:
            self.poller_stale = reason
            out = self._out = self._snapshot()
            self._out_of = self._last
        return out

    def close(self) -> None:
        self.recording.close()

    # ---- the poller's state ----------------------------------------------------------
    def frame_age(self) -> float | None:
        """Seconds since the poller last wrote the file, or None if unknown."""
        if self._written_at is None:
            return None
        return max(0.0, self.clock() - self._written_at)

    def poll_interval(self) -> float:
        """The poller's seconds between frames: what its recorder wrote in the file's
        meta, or the median gap seen between frames if that is longer (a slow
        cluster), else this viewer's own refresh."""
        said = _positive(self.recording.meta.get("interval"))
        seen = statistics.median(self._gaps) if self._gaps else None
        known = [x for x in (said, seen) if x is not None]
        return max(known) if known else self.refresh

    def stale_threshold(self) -> float:
        return max(self.stale_after * self.poll_interval(), STALE_FLOOR)

    def _stale_reason(self) -> str | None:
        age = self.frame_age()
        last = "no frame yet" if self._last is None else (
            "last frame" + (f" {human_duration(age)} ago" if age is not None
                            else " of unknown age"))
        if self._error is not None:
            return f"cannot read the poller's file: {self._error} (showing the {last})"
        if self.pidfile is not None and not _pidfile_alive(self.pidfile):
            return f"poller stale: {last} (pid file {self.pidfile} gone)"
        if self.recording.immutable:
            return f"poller stale: {last} (no poller has the file open)"
        if age is not None and age > self.stale_threshold():
            return (f"poller stale: {last} (none for {self.stale_after} of its "
                    f"{self.poll_interval():g} s intervals)")
        return None

    def _snapshot(self) -> Snapshot:
        reason = self.poller_stale
        snap = self._last
        if snap is None:  # the poller has not written its first frame yet
            return Snapshot(source=self.name, taken_at=self.clock(), stale=True,
                            stale_reason=reason or f"no frame yet in {self.path}",
                            meta={META_POLLER: "stale"})
        meta = {**snap.meta, META_POLLER: "stale" if reason else "ok"}
        if not snap.stale and self._written_at is not None:
            # The frame was fresh when the poller wrote it: its data is as old as that.
            meta[META_WRITTEN_AT] = f"{self._written_at:.3f}"
        if reason is None:
            return msgspec.structs.replace(snap, meta=meta)
        # The poller's reason first; what its own source said, if anything, after.
        why = reason if not snap.stale else f"{reason}; {snap.stale_reason or 'source stale'}"
        return msgspec.structs.replace(snap, meta=meta, stale=True, stale_reason=why)

    # ---- helpers -------------------------------------------------------------------
    def _last_write(self) -> float | None:
        """When the poller last wrote: the newer mtime of the file and its -wal (a
        commit goes to the -wal; a checkpoint to the file). A viewer writes neither.
        Never later than now, so a clock ahead on the writer's side reads as now."""
        times = []
        for p in (self.path, self.path + "-wal"):
            try:
                times.append(os.stat(p).st_mtime)
            except OSError:
                continue
        return min(max(times), self.clock()) if times else None

    def _reopen_if_replaced(self) -> None:
        """Open the file again when a poller started since (a ``-wal`` appeared beside
        a file read as immutable) or the path now names another file (a poller
        restarted on a fresh one). A failure keeps the file already open."""
        replaced = _inode(self.path) not in (None, self._inode)
        started = self.recording.immutable and Path(self.path + "-wal").exists()
        if not (replaced or started):
            return
        try:
            fresh = Recording(self.path, read_only=True, follow=True)
        except RecordingError as e:
            self._error = str(e)
            return
        self.recording.close()
        self.recording, self._inode = fresh, _inode(self.path)
        if len(fresh):
            self._last = fresh.frame(-1)
            self._written_at = self._last_write()
        self._gaps.clear()


def _inode(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _positive(text: str | None) -> float | None:
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value is not None and 0 < value < float("inf") else None


def _pidfile_alive(pidfile: Path) -> bool:
    """Whether the pid file names a running process. Gone, empty or naming no
    process: not alive. Unreadable (another user's, mode 0600): not known to be
    dead, so the silence of the file decides instead."""
    try:
        pid = int(pidfile.read_text().strip())
    except (FileNotFoundError, ValueError):
        return False
    except OSError:
        return True
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's (a poller run by a service account)
        return True
    return True
