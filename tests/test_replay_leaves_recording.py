"""Replaying a recording never changes it (#35), not even one whose recorder was killed
with its frames still in the -wal: the real commands (replay, predict, report) read a
private copy of it (recording/private_copy.py), so the file, its -wal and its -shm keep
their bytes, and ``replay --repair`` is the one that folds it in."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import DEMO
from quotatop.recording import private_copy
from quotatop.recording.store import Recording, RecordingError

ROOT = Path(__file__).resolve().parents[1]
FRAMES = 6

# A recorder that appends its frames, says so, and waits to be killed: SQLite keeps them
# in the -wal until a checkpoint, which only a clean stop would have run.
WRITER = f"""
import sys, time
from quotatop.recording.store import Recorder
from quotatop.simulation.scenario import load_scenario
from quotatop.simulation.scenario_source import ScenarioSource
source = ScenarioSource(load_scenario({str(DEMO / "seed_fifo.toml")!r}), loop=False)
timeline = source.as_timeline()
rec = Recorder(sys.argv[1], cluster="c", source="demo", version="test").start()
for _ in range({FRAMES}):
    rec.append(timeline.collect())
print("ready", flush=True)
time.sleep(120)
"""


@pytest.fixture
def killed_recording(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "killed.qtr"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
    finally:
        writer.kill()
        writer.wait(10)
        if writer.stdout is not None:
            writer.stdout.close()
    assert Path(f"{path}-wal").stat().st_size > 0  # the frames are in the -wal
    yield path


def contents(folder: Path) -> dict[str, str]:
    """Each file's bytes, hashed: the recording itself, its -wal and its -shm (the WAL's
    index, which a reader of the file itself marks: no frame, but a change)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir())}


@pytest.fixture
def tmpdir_env(tmp_path_factory: pytest.TempPathFactory,
               monkeypatch: pytest.MonkeyPatch) -> Path:
    """A $TMPDIR of the test's own (not the recording's folder), for this process and
    the commands it runs: where the private copies are made, so the test sees them go."""
    tmp = tmp_path_factory.mktemp("tmpdir")
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr("tempfile.tempdir", None)  # tempfile reads TMPDIR again
    return tmp


def quotatop(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "quotatop", *argv], capture_output=True,
                          text=True, cwd=ROOT, stdin=subprocess.DEVNULL, timeout=120,
                          check=False, env=os.environ.copy())


def frames_read(command: str, path: Path) -> int | None:
    """Run the real ``command`` on ``path``; for replay, the frames it found in it."""
    if command == "replay":
        proc = quotatop("replay", str(path), "--json")
        assert proc.returncode == 0, proc.stderr
        return int(json.loads(proc.stdout)["frames"])
    if command == "predict":
        proc = quotatop("predict", "--source", "replay", str(path), "--json")
        # The demo's first frame may have no pending job: "nothing to predict", exit 2.
        assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr, proc.stderr
        return None
    proc = quotatop("report", "--source", "replay", str(path), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["source"] == "demo:seed_fifo"  # frames only in the -wal
    return None


@pytest.mark.parametrize("command", ["replay", "predict", "report"])
def test_replaying_a_killed_recording_leaves_its_bytes_and_files(
        command: str, killed_recording: Path, tmpdir_env: Path) -> None:
    folder = killed_recording.parent
    before = contents(folder)
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["killed.qtr", "killed.qtr-shm", "killed.qtr-wal"]
    read = frames_read(command, killed_recording)
    assert contents(folder) == before  # the -shm too
    assert sorted(p.name for p in folder.iterdir()) == names  # -wal and -shm still there
    assert list(tmpdir_env.iterdir()) == []  # the private copy is gone
    if command == "replay":
        assert read == FRAMES  # every frame, the ones only in the -wal too


def test_a_killed_recording_is_read_from_a_copy_removed_on_close(
        killed_recording: Path, tmpdir_env: Path) -> None:
    before = contents(killed_recording.parent)
    rec = Recording(killed_recording)
    try:
        assert len(rec) == FRAMES
        copies = list(tmpdir_env.iterdir())
        assert len(copies) == 1 and copies[0].name.startswith("quotatop-replay-")
        rec.frame(FRAMES - 1)
    finally:
        rec.close()
    assert list(tmpdir_env.iterdir()) == []
    assert contents(killed_recording.parent) == before


def test_a_copy_is_removed_when_the_open_fails(
        killed_recording: Path, tmpdir_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A damaged frame list: the open fails after the copy was made.
    monkeypatch.setattr("quotatop.recording.store._check_times", _refuse)
    with pytest.raises(RecordingError, match="refused by the test"):
        Recording(killed_recording)
    assert list(tmpdir_env.iterdir()) == []


def _refuse(rows: object) -> None:
    raise RecordingError("refused by the test")


def test_a_recording_that_changes_while_copied_is_one_line(
        killed_recording: Path, tmpdir_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A recorder checkpointing as the copy is made would tear it: never kept.
    states = iter(range(1000))
    monkeypatch.setattr(private_copy, "_state", lambda path: (next(states), next(states)))
    with pytest.raises(RecordingError) as err:
        Recording(killed_recording)
    assert str(err.value) == (
        f"{killed_recording}: a recorder is writing it (it changed each time it was copied "
        "to be read unchanged): follow it with --source live")
    assert list(tmpdir_env.iterdir()) == []


def test_a_recording_without_a_wal_is_read_in_place_not_copied(
        killed_recording: Path, tmpdir_env: Path) -> None:
    proc = quotatop("replay", str(killed_recording), "--json", "--repair")
    assert proc.returncode == 0, proc.stderr
    folder = killed_recording.parent
    before = contents(folder)
    assert list(before) == ["killed.qtr"]
    with Recording(killed_recording) as rec:
        assert len(rec) == FRAMES and rec.immutable
        assert rec._db.copy is None and rec._db.target == str(killed_recording)
        assert list(tmpdir_env.iterdir()) == []
    assert contents(folder) == before


def test_repair_folds_the_wal_in_and_keeps_every_frame(killed_recording: Path) -> None:
    # The change the read-only path avoids is real: an ordinary open makes it.
    before = contents(killed_recording.parent)
    assert frames_read("replay", killed_recording) == FRAMES
    proc = quotatop("replay", str(killed_recording), "--json", "--repair")
    assert proc.returncode == 0, proc.stderr
    assert contents(killed_recording.parent) != before
    assert sorted(p.name for p in killed_recording.parent.iterdir()) == [killed_recording.name]
    assert frames_read("replay", killed_recording) == FRAMES
