"""Damaged recordings, made fresh in a test's tmp_path from a good one.

* ``truncated``: a good recording cut at half its size (a copy stopped midway);
* ``foreign``: another application's SQLite file (optionally in WAL mode);
* ``corrupt``: garbage over the page that holds the schema, so that the file is an
  SQLite file whose tables cannot be read;
* ``frame-time``: a good recording whose last frame's time is 1e308 (``frame_time``:
  any time), a number no clock can show;
* ``damaged_frame``: a recording that opens (its last frame reads) but one frame in
  the middle has garbage for its bytes, so a replay fails only when it gets there.

The first four are refused when the file is opened; the last one opens.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec
from tui_fixtures import T0, snapshot

from quotatop.recording.store import Recorder

FAULTS = ("truncated", "foreign", "foreign-wal", "corrupt", "frame-time")


def good(path: Path, frames: int = 20) -> Path:
    """A recording of the TUI fixture cluster, one frame a second from T0."""
    base = snapshot()
    with Recorder(path, cluster="atlas", source="fixture", keyframe_every=5) as rec:
        for i in range(frames):
            jobs = base.jobs[: max(1, len(base.jobs) - i % 7)]  # something changes
            rec.append(msgspec.structs.replace(base, taken_at=T0 + i, jobs=jobs))
    return path


def truncated(path: Path) -> Path:
    good(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def foreign(path: Path, *, wal: bool = False) -> Path:
    con = sqlite3.connect(path)
    try:
        if wal:
            con.execute("PRAGMA journal_mode=WAL")
        con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        con.executemany("INSERT INTO notes (body) VALUES (?)", [(f"note {i}",) for i in range(50)])
        con.commit()
        # Folded back into the file: what is left is one file, as another app leaves it.
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    return path


def corrupt(path: Path) -> Path:
    """Garbage over page 1 after the 100-byte file header: the schema (sqlite_master)
    is unreadable, the header still says SQLite and quotatop's application id."""
    good(path)
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    for i in range(100, page):
        data[i] = (i * 131 + 7) % 251
    path.write_bytes(bytes(data))
    return path


def damaged_frame(path: Path, frame: int = 12, frames: int = 20) -> Path:
    """A good recording whose frame ``frame`` (0-based; not the last, which is read at
    open) holds bytes that do not decompress."""
    good(path, frames)
    con = sqlite3.connect(path)
    try:
        with con:
            con.execute("UPDATE frames SET blob = ? WHERE seq = (SELECT seq FROM frames "
                        "ORDER BY seq LIMIT 1 OFFSET ?)", (b"\x28\xb5\x2f\xfd garbage", frame))
    finally:
        con.close()
    return path


def frame_time(path: Path, t: float = 1e308) -> Path:
    """A good recording whose last frame is stamped ``t`` (the frames table's time)."""
    good(path)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE frames SET t = ? WHERE seq = (SELECT MAX(seq) FROM frames)", (t,))
    con.close()
    return path


def make(fault: str, path: Path) -> Path:
    """One of FAULTS, written to ``path``."""
    if fault == "truncated":
        return truncated(path)
    if fault == "foreign":
        return foreign(path)
    if fault == "foreign-wal":
        return foreign(path, wal=True)
    if fault == "corrupt":
        return corrupt(path)
    if fault == "frame-time":
        return frame_time(path)
    raise ValueError(f"unknown recording fault {fault!r} (known: {', '.join(FAULTS)})")
