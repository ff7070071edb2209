"""A recording with a ``-wal`` beside it, read from a private copy so that reading it
changes none of its three files.

A reader of a WAL file needs the WAL index, the ``-shm``: SQLite writes its read marks
there even over ``mode=ro``, and rebuilds the index there after a writer died, so a
replay of a killed recorder's file changed its ``-shm``. ``immutable=1`` does not read
the ``-wal`` (the frames only in it would be lost), and ``mode=ro`` with
``locking_mode=EXCLUSIVE`` (an index in the reader's own memory) fails with "disk I/O
error" on a killed recorder's files. So the file and its ``-wal`` are copied into a
private temporary folder (``$TMPDIR``, mode 0700) and the copy is opened; the index is
made there. The cost is a copy: the recording's size in time and in ``$TMPDIR``. The
folder is removed on close, when the open fails, and at exit at the latest.

A recorder may be writing the file as it is copied (a checkpoint between copying the
file and its ``-wal`` would tear the copy): the copy is kept only if neither file
changed while it was made (inode, size and modification time), else made again, at
most ``ATTEMPTS`` times. A viewer that follows a writer (``--source live``) reads the
file itself instead: it shares the writer's index by design."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import weakref

ATTEMPTS = 3
_State = tuple[tuple[int, int, int] | None, ...]


class ChangedWhileCopied(Exception):
    """The file or its -wal changed during each of the ATTEMPTS copies."""


def _state(path: str) -> _State:
    out: list[tuple[int, int, int] | None] = []
    for p in (path, path + "-wal"):
        try:
            st = os.stat(p)
        except FileNotFoundError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


class PrivateCopy:
    """``path`` and its ``-wal``, copied to ``self.path`` in a folder of this process's
    own; OSError or ChangedWhileCopied (the folder then already removed)."""

    def __init__(self, path: str) -> None:
        self.dir = tempfile.mkdtemp(prefix="quotatop-replay-")
        # At exit at the latest, and when this object goes without remove().
        self._remove = weakref.finalize(self, shutil.rmtree, self.dir, ignore_errors=True)
        self.path = os.path.join(self.dir, "recording.qtr")
        try:
            self._copy(path)
        except BaseException:
            self.remove()
            raise

    def _copy(self, path: str) -> None:
        for _ in range(ATTEMPTS):
            before = _state(path)
            if before[0] is None:
                raise FileNotFoundError(path)
            # A -wal removed while it was copied (its writer stopped and checkpointed):
            # the state check below sees the change, and the copy is made again.
            with contextlib.suppress(FileNotFoundError):
                shutil.copyfile(path, self.path)
                if before[1] is not None:
                    shutil.copyfile(path + "-wal", self.path + "-wal")
            if _state(path) == before:
                return
            for p in (self.path, self.path + "-wal"):
                if os.path.exists(p):
                    os.unlink(p)
        raise ChangedWhileCopied(path)

    def remove(self) -> None:
        self._remove()
