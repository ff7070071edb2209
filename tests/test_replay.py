"""The replay controller: play/pause, step, seek, speed, and the headless frame."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotatop.cli import main
from quotatop.collectors.model import Snapshot
from quotatop.recording.replay_source import ReplaySource
from quotatop.recording.store import Recorder
from quotatop.tui.timeline_protocol import TimelineControl, timeline_of


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    path = tmp_path / "r.qtrec"
    with Recorder(path, source="test", keyframe_every=4) as rec:
        for i in range(20):  # made-up frames 10 s apart from t=1000
            rec.append(Snapshot(taken_at=1000.0 + 10 * i, meta={"i": str(i)}))
    return path


def frame_no(src: ReplaySource) -> int:
    return int(src.collect().meta["i"])


def test_is_a_timeline_for_the_tui(recording: Path) -> None:
    src = ReplaySource(recording)
    assert isinstance(src, TimelineControl)
    assert timeline_of(src) is src
    assert (src.frames, src.start_time, src.end_time) == (20, 1000.0, 1190.0)
    assert src.time_at(3) == 1030.0


def test_playing_advances_by_wall_time_times_speed(recording: Path) -> None:
    clock = Clock()
    src = ReplaySource(recording, clock=clock, speed=5)
    assert frame_no(src) == 0
    clock.now += 4.0  # 20 s of recording at ×5
    assert frame_no(src) == 2
    src.set_speed(1000)
    clock.now += 1.0
    assert frame_no(src) == 19 and src.paused  # stops at the end
    src.play()  # from the end: starts over
    assert frame_no(src) == 0


def test_paused_holds_and_step_moves_and_pauses(recording: Path) -> None:
    clock = Clock()
    src = ReplaySource(recording, clock=clock)
    src.pause()
    clock.now += 100
    assert frame_no(src) == 0
    src.step(3)
    assert frame_no(src) == 3
    src.step(-10)
    assert frame_no(src) == 0
    src.play()
    src.step()
    assert src.paused and frame_no(src) == 1


def test_seek_to_time_and_speed_bounds(recording: Path) -> None:
    src = ReplaySource(recording, clock=Clock())
    src.seek(1055.0)
    assert src.position == 5 and frame_no(src) == 5
    src.seek(0)
    assert src.position == 0
    src.set_speed(0.1)
    assert src.speed == 1.0
    src.set_speed(5000)
    assert src.speed == 1000.0


def test_replay_json_at_offset(recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(recording), "--at", "+35s", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["frame"] == 4 and out["time"] == 1030.0
    assert out["snapshot"]["meta"]["i"] == "3"
    assert "predictions" in out


def test_replay_json_at_epoch_and_bad_at(recording: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(recording), "--at", "1100", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["frame"] == 11
    assert main(["replay", str(recording), "--at", "yesterday-ish", "--json"]) == 2
    assert "--at" in capsys.readouterr().err


def test_at_outside_the_recording_is_refused_with_its_span(
        recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The recording runs 1000-1190 (20 frames 10 s apart): +190s is its last frame;
    +191s, an epoch before its first frame, or one past its end, was silently the
    first or last frame (issue #35)."""
    assert main(["replay", str(recording), "--at", "+190s", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["time"] == 1190.0
    for at in ("+191s", "999", "5000"):
        for argv in (["replay", str(recording), "--at", at, "--json"],
                     ["predict", "--source", "replay", str(recording), "--at", at]):
            assert main(argv) == 2, argv
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1 and "outside the recording, which spans" in err[0], err
            assert err[0].endswith("(3m10s)"), err
