"""A disk that fills while recording (#35): SQLite's SQLITE_FULL, forced with
``PRAGMA max_page_count`` on the real Recorder's own connection (a small tmpfs needs
root). The recorder ends with one line, the frames before the full one are kept, and
closing the file raises nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import DEMO
from quotatop.cli import main
from quotatop.collectors.model import Snapshot
from quotatop.recording import store
from quotatop.recording.store import Recorder, Recording, RecordingError
from quotatop.simulation.scenario import load_scenario
from quotatop.simulation.scenario_source import ScenarioSource

ROOM = 12  # pages the file may grow by once started: a few frames, not the scenario


def frames() -> Iterator[Snapshot]:
    timeline = ScenarioSource(load_scenario(DEMO / "queue_storm.toml"), loop=False).as_timeline()
    while True:
        yield timeline.collect()


def fill_up(rec: Recorder) -> None:
    """Let the file grow by ROOM pages at most, as a nearly full disk would."""
    assert rec._db is not None  # the recorder's own connection, started
    conn = rec._db.conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count={pages + ROOM}")


def test_a_full_disk_is_one_line_and_the_frames_before_it_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "full.qtr"
    rec = Recorder(path, source="demo", version="test").start()
    fill_up(rec)
    written: list[float] = []
    with pytest.raises(RecordingError) as failure:
        for snap in frames():
            rec.append(snap)
            written.append(snap.taken_at)
            assert len(written) < 10_000, "the page limit never filled the file"
    rec.stop()  # no OperationalError at close
    message = str(failure.value)
    assert "\n" not in message
    assert "database or disk is full" in message
    assert f"the {len(written)} frame(s) before it are kept" in message
    assert written  # some frames fitted before the disk filled
    with Recording(path) as kept:
        assert kept.times == written


def test_record_on_a_full_disk_exits_2_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    real_start = store.Recorder.start

    def start_on_a_nearly_full_disk(self: Recorder) -> Recorder:
        real_start(self)
        fill_up(self)
        return self

    monkeypatch.setattr(store.Recorder, "start", start_on_a_nearly_full_disk)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no config file
    out = tmp_path / "rec.qtr"
    code = main(["record", "--source", "demo", "--scenario", "queue_storm", "--out", str(out),
                 "--frames", "10000", "--interval", "0.001"])
    _, err = capsys.readouterr()
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"quotatop: {out}: cannot write frame ")
    assert "database or disk is full" in lines[0]
    kept = int(lines[0].split("; the ")[1].split(" frame")[0])
    assert kept > 0
    with Recording(out) as rec:
        assert len(rec) == kept
