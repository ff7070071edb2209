"""Replaying a recording never changes it (#35), not even one whose recorder was killed
with its frames still in the -wal: the real commands (replay, predict, report) read it
through a read-only connection, and ``replay --repair`` is the one that folds it in."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import DEMO

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
    """Each file's bytes, hashed: the recording itself and its -wal. (The -shm is the
    WAL's index in shared memory, which every reader marks; it holds no frame.)"""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir()) if not p.name.endswith("-shm")}


def quotatop(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "quotatop", *argv], capture_output=True,
                          text=True, cwd=ROOT, stdin=subprocess.DEVNULL, timeout=120,
                          check=False)


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
        command: str, killed_recording: Path) -> None:
    folder = killed_recording.parent
    before = contents(folder)
    names = sorted(p.name for p in folder.iterdir())
    read = frames_read(command, killed_recording)
    assert contents(folder) == before
    assert sorted(p.name for p in folder.iterdir()) == names  # -wal and -shm still there
    if command == "replay":
        assert read == FRAMES  # every frame, the ones only in the -wal too


def test_repair_folds_the_wal_in_and_keeps_every_frame(killed_recording: Path) -> None:
    # The change the read-only path avoids is real: an ordinary open makes it.
    before = contents(killed_recording.parent)
    assert frames_read("replay", killed_recording) == FRAMES
    proc = quotatop("replay", str(killed_recording), "--json", "--repair")
    assert proc.returncode == 0, proc.stderr
    assert contents(killed_recording.parent) != before
    assert sorted(p.name for p in killed_recording.parent.iterdir()) == [killed_recording.name]
    assert frames_read("replay", killed_recording) == FRAMES
