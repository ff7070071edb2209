"""The recording format: round trip, deltas, columns, dictionaries, keyframe chains,
retention, v1 files, damage, kill -9."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest
import zstandard

from quotatop.cli import main
from quotatop.collectors.model import (
    RUNNING,
    Job,
    Node,
    PriorityFactors,
    Snapshot,
    Team,
    to_msgpack,
)
from quotatop.recording.store import (
    FORMAT_VERSION,
    TRAIN_AFTER,
    Recorder,
    Recording,
    RecordingError,
    _delta_decoder,
    _encoder,
    _keyframe_raw,
    apply_delta,
    make_bounded_delta,
    make_delta,
    parse_duration,
    purge_file,
    read_work,
)

ROOT = Path(__file__).resolve().parent.parent


def evolving(n: int, t0: float = 1_000.0, step: float = 2.0) -> list[Snapshot]:
    """Made-up frames: jobs arrive, start, finish; a node fills; order changes once."""
    out = []
    jobs: dict[str, Job] = {}
    for i in range(n):
        t = t0 + i * step
        jobs[f"j{i}"] = Job(id=f"j{i}", team=("a", "b")[i % 2], request={"gpu": 1.0},
                            submit_time=t)
        if i >= 2:
            jobs[f"j{i - 2}"] = Job(id=f"j{i - 2}", team=jobs[f"j{i - 2}"].team,
                                    request={"gpu": 1.0}, submit_time=t - 4,
                                    state=RUNNING, start_time=t, nodes=["n1"])
        if i >= 5:
            jobs.pop(f"j{i - 5}", None)
        listed = list(jobs.values())
        if i == n // 2:
            listed.reverse()  # a source that re-sorts its output
        used = float(sum(1 for j in listed if j.state == RUNNING))
        out.append(Snapshot(
            cluster="made-up", source="test", taken_at=t,
            nodes=[Node(name="n1", capacity={"gpu": 8.0}, allocated={"gpu": used})],
            teams=[Team(name="a", max={"gpu": 4.0}), Team(name="b", usage={"gpu": used})],
            jobs=listed, meta={"i": str(i)}))
    return out


def write(path: Path, snaps: list[Snapshot], **kw) -> None:
    with Recorder(path, cluster="made-up", source="test", **kw) as rec:
        for s in snaps:
            rec.append(s)


def test_round_trip_every_frame_and_in_any_order(tmp_path: Path) -> None:
    snaps = evolving(40)
    path = tmp_path / "r.qtrec"
    write(path, snaps, keyframe_every=7)
    with Recording(path) as rec:
        assert len(rec) == 40
        assert rec.meta["cluster"] == "made-up" and rec.meta["source"] == "test"
        assert rec.meta["schema_version"] == str(FORMAT_VERSION)
        assert list(rec) == snaps
        for i in (39, 0, 13, 14, 6, 7, 20, 19):  # backwards, across keyframes, forwards
            assert rec.frame(i) == snaps[i]


def test_deltas_are_smaller_than_keyframes(tmp_path: Path) -> None:
    path = tmp_path / "r.qtrec"
    write(path, evolving(30), keyframe_every=100)
    rows = sqlite3.connect(path).execute("SELECT kind, length(blob) FROM frames").fetchall()
    assert [k for k, _ in rows] == [0] + [1] * 29
    key = rows[0][1]
    assert max(size for kind, size in rows[1:] if kind == 1) < key


def test_appending_to_an_existing_recording_starts_with_a_keyframe(tmp_path: Path) -> None:
    snaps = evolving(12)
    path = tmp_path / "r.qtrec"
    write(path, snaps[:5])
    write(path, snaps[5:])
    with Recording(path) as rec:
        assert list(rec) == snaps
    kinds = [k for (k,) in sqlite3.connect(path).execute("SELECT kind FROM frames")]
    assert kinds[5] == 0 and kinds[6] == 1


def test_index_at_time_is_the_frame_at_or_before(tmp_path: Path) -> None:
    path = tmp_path / "r.qtrec"
    write(path, evolving(10))  # t = 1000, 1002, ...
    with Recording(path) as rec:
        assert rec.index_at(1003.9) == 1
        assert rec.index_at(1004.0) == 2
        assert rec.index_at(0) == 0
        assert rec.index_at(1e12) == 9


def test_retention_purges_old_groups_only(tmp_path: Path) -> None:
    path = tmp_path / "r.qtrec"
    snaps = evolving(50)  # 1000 .. 1098
    write(path, snaps, keyframe_every=10)
    deleted = purge_file(path, parse_duration("30s"))  # keep t >= 1068 → group from 1060
    assert deleted == 30
    with Recording(path) as rec:
        assert rec.times[0] == 1060.0
        assert list(rec) == snaps[30:]


def test_recorder_retention_applies_while_recording(tmp_path: Path) -> None:
    path = tmp_path / "r.qtrec"
    snaps = evolving(120, step=60.0)
    write(path, snaps, keyframe_every=10, retention=parse_duration("1h"))
    with Recording(path) as rec:
        assert len(rec) < 120
        assert rec.frame(-1) == snaps[-1]
        assert rec.frame(0) == snaps[120 - len(rec)]


@pytest.mark.parametrize("text,seconds", [("72h", 259200.0), ("30m", 1800.0), ("2d", 172800.0),
                                          ("90", 90.0)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "-3h", "0", "3w"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def _replay_json(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    rc = main(["replay", str(path), "--json"])
    return rc, capsys.readouterr().err


def test_foreign_files_get_one_line_and_exit_2(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello, not a database\n" * 100)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)")
    for path, words in ((text, "not a quotatop recording"),
                        (other, "not a quotatop recording"),
                        (tmp_path / "missing.qtrec", "no such recording")):
        rc, err = _replay_json(path, capsys)
        assert rc == 2
        assert err.count("\n") == 1 and words in err and "Traceback" not in err


def test_newer_schema_is_a_clear_message(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.qtrec"
    write(path, evolving(3))
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'",
                (str(FORMAT_VERSION + 1),))
    con.commit()
    con.close()
    rc, err = _replay_json(path, capsys)
    assert rc == 2
    assert f"schema v{FORMAT_VERSION + 1} is newer" in err and "upgrade quotatop" in err
    assert err.count("\n") == 1


def test_truncated_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.qtrec"
    write(path, evolving(60), keyframe_every=20)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    rc, err = _replay_json(path, capsys)
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err


def test_corrupt_frame_blob_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.qtrec"
    write(path, evolving(5))
    con = sqlite3.connect(path)
    con.execute("UPDATE frames SET blob = x'28b52ffd00deadbeef' WHERE seq = 5")
    con.commit()
    con.close()
    with pytest.raises(RecordingError, match="damaged frame 5"):
        Recording(path)
    rc, err = _replay_json(path, capsys)
    assert rc == 2 and "damaged frame 5" in err and err.count("\n") == 1


@pytest.mark.parametrize("t", [1e308, -5.0, 253_402_300_800.0])
@pytest.mark.parametrize("command", [["predict", "--source", "replay"], ["replay", "--json"]])
def test_a_frame_time_no_clock_can_show_is_one_line(
        t: float, command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # #35 X1: 1e308 reached predict's clock (datetime.fromtimestamp): OverflowError.
    path = tmp_path / "r.qtrec"
    write(path, evolving(5))
    con = sqlite3.connect(path)
    con.execute("UPDATE frames SET t = ? WHERE seq = 5", (t,))
    con.commit()
    con.close()
    rc = main([*command[:-1], command[-1], str(path)] if command[0] == "predict"
              else [command[0], str(path), command[1]])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"frame 5 has time {t!r}, not between 1970 and 9999" in err, err


_WRITER = """
import sys
sys.path.insert(0, {root!r})
from quotatop.collectors.model import Job, Snapshot
from quotatop.recording.store import Recorder
rec = Recorder(sys.argv[1], keyframe_every=25).start()
i = 0
while True:
    jobs = [Job(id=str(k), team="t", submit_time=float(k), name="x" * 2000)
            for k in range(i, i + 300)]
    seq = rec.append(Snapshot(taken_at=float(i), jobs=jobs))
    print(seq, flush=True)
    i += 1
"""


def test_kill_9_mid_write_loses_at_most_the_last_frame(tmp_path: Path) -> None:
    path = tmp_path / "killed.qtrec"
    script = tmp_path / "writer.py"
    script.write_text(_WRITER.format(root=str(Path(__file__).resolve().parent.parent)))
    proc = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    committed = 0
    deadline = time.monotonic() + 60
    while committed < 60 and time.monotonic() < deadline:
        committed = int(proc.stdout.readline())
    time.sleep(0.05)  # land the kill somewhere inside a later write
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    committed = max([committed, *[int(x) for x in proc.stdout.read().split()]])
    proc.stdout.close()
    assert committed >= 60
    with Recording(path) as rec:
        assert len(rec) >= committed  # every frame reported committed is there
        last = rec.frame(-1)
        assert last.taken_at == float(len(rec) - 1)
        assert len(last.jobs) == 300
        assert all(rec.frame(i).taken_at == float(i) for i in range(0, len(rec), 7))


def test_record_command_records_the_demo(tmp_path: Path) -> None:
    out = tmp_path / "demo.qtrec"
    rc = main(["record", "--source", "demo", "--out", str(out), "--interval", "0.01",
               "--frames", "12"])
    assert rc == 0
    with Recording(out) as rec:
        assert len(rec) == 12
        assert rec.meta["source"] == "demo"
        steps = [int(rec.frame(i).meta["step"]) for i in range(12)]
        total = int(rec.frame(0).meta["steps"])  # the demo loops after its last step
        assert steps == [i % total + 1 for i in range(12)]


def test_record_refuses_a_bad_retention(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["record", "--source", "demo", "--out", str(tmp_path / "x"), "--retention", "soon"])
    assert rc == 2 and "--retention" in capsys.readouterr().err


def test_the_pid_file_is_replaced_whole_never_written_in_place(tmp_path: Path) -> None:
    """A reader that sees the pid file must read a pid: written in place, the file
    exists empty for a moment (the daemon test above once read '' there). So it is
    written beside and renamed over: the old file's inode is gone, no temporary
    file is left, and the content is the pid."""
    from quotatop.commands.record import write_pidfile

    pidfile = tmp_path / "rec.pid"
    pidfile.write_text("123\n")
    before = pidfile.stat().st_ino
    keep = pidfile.open()  # holds the old inode, so a new file cannot reuse its number
    try:
        write_pidfile(pidfile)
        assert pidfile.stat().st_ino != before
    finally:
        keep.close()
    assert pidfile.read_text() == f"{os.getpid()}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.pid"]


def test_record_daemon_writes_pidfile_and_stops_on_sigterm(tmp_path: Path) -> None:
    out, pidfile = tmp_path / "d.qtrec", tmp_path / "rec.pid"
    rc = subprocess.run([sys.executable, "-m", "quotatop", "record", "--source", "demo",
                         "--out", str(out), "--interval", "0.05", "--daemon",
                         "--pidfile", str(pidfile)], cwd=ROOT, timeout=30).returncode
    assert rc == 0
    deadline = time.monotonic() + 20
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    try:
        while time.monotonic() < deadline:
            try:
                with Recording(out) as rec:
                    if len(rec) >= 3:
                        break
            except RecordingError:
                pass
            time.sleep(0.05)
    finally:
        os.kill(pid, signal.SIGTERM)
    while pidfile.exists() and time.monotonic() < deadline + 10:
        time.sleep(0.05)
    assert not pidfile.exists()  # removed by the daemon on its way out
    with Recording(out) as rec:
        assert len(rec) >= 3


def _busy(n: int, jobs: int = 120) -> list[Snapshot]:
    """Made-up frames with enough jobs to train a dictionary on: one arrives and one
    leaves each frame, and every 10th frame every pending job's priority rises by a
    whole number (a Slurm PriorityCalcPeriod)."""
    out, live, nid = [], {}, 0
    for i in range(n):
        while len(live) < jobs:
            live[str(nid)] = Job(id=str(nid), team=("a", "b", "c")[nid % 3], user=f"u{nid % 7}",
                                 request={"gpu": float(1 + nid % 4)}, submit_time=float(nid),
                                 priority=float(1000 + nid * 37 % 500),
                                 factors=PriorityFactors(age=float(nid % 50), fairshare=300.0))
            nid += 1
        live.pop(next(iter(live)))
        if i % 10 == 9:
            for k, j in live.items():
                assert j.factors is not None
                live[k] = msgspec.structs.replace(
                    j, priority=(j.priority or 0.0) + 3 + int(k) % 5,
                    factors=msgspec.structs.replace(j.factors, age=j.factors.age + 3))
        out.append(Snapshot(cluster="made-up", source="test", taken_at=1000.0 + 2 * i,
                            jobs=list(live.values())))
    return out


def test_keyframes_chain_and_deltas_switch_to_a_trained_dictionary(tmp_path: Path) -> None:
    snaps = _busy(TRAIN_AFTER + 40)
    path = tmp_path / "r.qtrec"
    write(path, snaps, keyframe_every=10, keyframe_chain=3)
    con = sqlite3.connect(path)
    rows = con.execute("SELECT seq, kind, ref FROM frames ORDER BY seq").fetchall()
    dict_ids = [i for (i,) in con.execute("SELECT id FROM dicts")]
    con.close()
    keys = [(seq, ref) for seq, kind, ref in rows if kind == 0]
    # Roots every 3 keyframes; the others compressed against their root.
    assert [ref == 0 for _, ref in keys] == [i % 3 == 0 for i in range(len(keys))]
    assert all(ref == keys[i - i % 3][0] for i, (_, ref) in enumerate(keys) if ref)
    delta_refs = [ref for _, kind, ref in rows if kind == 1]
    assert dict_ids and set(delta_refs) == {0, dict_ids[0]}
    assert delta_refs.index(dict_ids[0]) >= TRAIN_AFTER - 1  # trained on the first ones
    with Recording(path) as rec:
        assert list(rec) == snaps
        for i in (len(snaps) - 1, 0, 55, 31, 70):
            rec.forget()
            assert rec.frame(i) == snaps[i]


def test_priority_recalculation_is_stored_as_columns() -> None:
    snaps = _busy(10)
    before, after = snaps[8], snaps[9]  # frame 9 raises every priority
    delta = make_delta(before, after)
    assert {c.field for c in delta.columns} == {"priority", "factors.age"}
    assert not delta.jobs_changed
    assert apply_delta(before, _delta_decoder.decode(_encoder.encode(delta))) == after
    # Fractional or few changes stay patches; a job that also started keeps both right.
    first = after.jobs[0]
    odd = msgspec.structs.replace(after, jobs=[
        msgspec.structs.replace(first, priority=(first.priority or 0) + 0.25, state=RUNNING),
        *after.jobs[1:]])
    delta = make_delta(before, odd)
    assert [names for names, _ in delta.jobs_changed] == [["state", "priority"]]
    assert apply_delta(before, _delta_decoder.decode(_encoder.encode(delta))) == odd


def test_retention_recompresses_a_kept_chained_keyframe_alone(tmp_path: Path) -> None:
    path = tmp_path / "r.qtrec"
    snaps = _busy(50)
    write(path, snaps, keyframe_every=10, keyframe_chain=5)
    assert purge_file(path, 2 * 15) == 30  # cut inside the 4th group of one chain
    con = sqlite3.connect(path)
    first = con.execute("SELECT kind, ref FROM frames ORDER BY seq LIMIT 1").fetchone()
    con.close()
    assert first == (0, 0)
    with Recording(path) as rec:
        assert list(rec) == snaps[30:]


def test_reads_a_v1_recording(tmp_path: Path) -> None:
    """v1: no ref column, no dicts table; deltas against the keyframe's bytes."""
    snaps = evolving(6)
    path = tmp_path / "v1.qtrec"
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE frames (seq INTEGER PRIMARY KEY, t REAL NOT NULL, kind INTEGER NOT NULL,
                             key_seq INTEGER NOT NULL, blob BLOB NOT NULL);
        CREATE INDEX frames_t ON frames (t);
    """)
    con.executemany("INSERT INTO meta VALUES (?, ?)", [
        ("format", "quotatop-recording"), ("schema_version", "1"), ("cluster", "made-up")])
    key = to_msgpack(snaps[0])
    raw = zstandard.ZstdCompressionDict(key, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    cctx = zstandard.ZstdCompressor(level=3, dict_data=raw, write_content_size=True)
    con.execute("INSERT INTO frames VALUES (1, ?, 0, 1, ?)",
                (snaps[0].taken_at, zstandard.ZstdCompressor().compress(key)))
    for i in range(1, 6):
        delta = make_delta(snaps[i - 1], snaps[i])
        assert not delta.columns
        con.execute("INSERT INTO frames VALUES (?, ?, 1, 1, ?)",
                    (i + 1, snaps[i].taken_at, cctx.compress(_encoder.encode(delta))))
    con.commit()
    con.close()
    with Recording(path) as rec:
        assert rec.meta["schema_version"] == "1"
        assert list(rec) == snaps
    with pytest.raises(RecordingError, match="cannot append to a v1 recording"):
        Recorder(path).start()


def _other_cluster(snap: Snapshot, *, prefix: str, t: float) -> Snapshot:
    """The same number of jobs as ``snap`` but nothing like them."""
    return msgspec.structs.replace(snap, taken_at=t, jobs=[
        msgspec.structs.replace(j, id=f"{prefix}{j.id}", team="z", user="other",
                                request={"gpu": 8.0}, submit_time=j.submit_time + 1e5)
        for j in snap.jobs])


def test_unlike_frames_are_written_as_keyframes_and_round_trip(tmp_path: Path) -> None:
    snaps = _busy(12, jobs=400)  # frame 9 raises all 400 priorities: still a delta
    t = snaps[-1].taken_at
    disjoint = _other_cluster(snaps[-1], prefix="b", t=t + 2)
    same_ids = _other_cluster(snaps[-1], prefix="", t=t + 4)
    after = _busy(2, jobs=400)
    after = [msgspec.structs.replace(s, taken_at=t + 6 + 2 * i) for i, s in enumerate(after)]
    frames = [*snaps, disjoint, same_ids, *after]
    path = tmp_path / "r.qtrec"
    write(path, frames)
    con = sqlite3.connect(path)
    rows = con.execute("SELECT seq, kind, key_seq FROM frames ORDER BY seq").fetchall()
    con.close()
    kinds = [k for _, k, _ in rows]
    # disjoint ids, other contents under the same ids, then back to the first cluster
    assert kinds == [0] + [1] * 11 + [0, 0, 0, 1]
    assert rows[-1][2] == rows[-2][0]  # the next like frame is a delta on the new keyframe
    with Recording(path) as rec:
        assert list(rec) == frames
        for i in (13, 12, 15, 9):
            rec.forget()
            assert rec.frame(i) == frames[i]


def test_bounded_delta_gives_up_on_unlike_snapshots_only() -> None:
    snaps = _busy(10, jobs=400)
    other = _other_cluster(snaps[9], prefix="b", t=snaps[9].taken_at + 2)
    assert make_bounded_delta(snaps[9], other, budget=200) is None
    assert make_bounded_delta(snaps[9], _other_cluster(snaps[9], prefix="", t=0.0),
                              budget=200) is None
    # Every priority changing is columns, not patches: within the budget, and exact.
    delta = make_bounded_delta(snaps[8], snaps[9], budget=200)
    assert delta is not None and delta.columns and not delta.jobs_changed
    assert delta == make_delta(snaps[8], snaps[9])
    assert apply_delta(snaps[8], _delta_decoder.decode(_encoder.encode(delta))) == snaps[9]


def test_big_deltas_compressed_at_the_keyframe_level_round_trip(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import quotatop.recording.store as recording

    monkeypatch.setattr(recording, "_BIG_DELTA", 1)  # every delta takes the big path
    snaps = _busy(TRAIN_AFTER + 8)
    path = tmp_path / "r.qtrec"
    write(path, snaps)
    con = sqlite3.connect(path)
    refs = [ref for kind, ref in con.execute("SELECT kind, ref FROM frames") if kind == 1]
    con.close()
    assert len(refs) == len(snaps) - 1 and {0} < set(refs)  # keyframe bytes, then trained
    with Recording(path) as rec:
        assert list(rec) == snaps


def test_frames_that_would_make_a_group_costly_to_seek_are_keyframes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import quotatop.recording.store as recording

    snaps = _busy(40)  # frames 9, 19, 29, 39 raise every priority: ~240 column entries
    small = tmp_path / "small.qtrec"
    write(small, snaps, keyframe_every=1000)
    kinds = [k for (k,) in sqlite3.connect(small).execute("SELECT kind FROM frames ORDER BY seq")]
    assert kinds == [0] + [1] * 39  # 120 jobs: under the floor, any group is cheap to seek

    monkeypatch.setattr(recording, "_GROUP_WORK_MIN", 0.0)  # as a big cluster's budget
    path = tmp_path / "r.qtrec"
    write(path, snaps, keyframe_every=1000)
    kinds = [k for (k,) in sqlite3.connect(path).execute("SELECT kind FROM frames ORDER BY seq")]
    assert [i for i, k in enumerate(kinds) if k == 0] == [0, 9, 19, 29, 39]
    budget = recording.GROUP_WORK_SHARE * len(snaps[0].jobs)
    work = 0.0
    for i in range(1, len(snaps)):
        work = 0.0 if kinds[i] == 0 else work + read_work(make_delta(snaps[i - 1], snaps[i]))
        assert work <= budget
    with Recording(path) as rec:
        assert list(rec) == snaps
        for i in (39, 38, 10, 8):
            rec.forget()
            assert rec.frame(i) == snaps[i]


@pytest.mark.parametrize("frames", [evolving(40), _busy(30)], ids=["patches", "columns"])
def test_snapshots_handed_out_are_never_changed_by_later_reads(
        tmp_path: Path, frames: list[Snapshot]) -> None:
    """A cold seek changes freshly decoded items in place; once a snapshot shares
    them, stepping forward (patches, columns) must copy them first."""
    path = tmp_path / "r.qtrec"
    write(path, frames, keyframe_every=1000)
    with Recording(path) as rec:
        rec.forget()
        held = {i: rec.frame(i) for i in range(5, len(frames))}  # one cold seek, then steps
        rec.forget()
        held[3] = rec.frame(3)
        rec.frame(len(frames) - 1)
        for i, snap in held.items():
            assert snap == frames[i]


def test_apply_delta_leaves_the_previous_snapshot_alone() -> None:
    for before, after in ((_busy(10)[8], _busy(10)[9]), (evolving(6)[4], evolving(6)[5])):
        kept = msgspec.msgpack.decode(to_msgpack(before), type=Snapshot)
        assert apply_delta(before, make_delta(before, after)) == after
        assert before == kept


def test_reads_v2_files_with_keyframes_chained_to_the_one_before(tmp_path: Path) -> None:
    """v2 recorders before this one compressed each keyframe against the keyframe
    before it (chains of ``keyframe_chain``), not against its root."""
    snaps = _busy(TRAIN_AFTER + 46)
    path = tmp_path / "r.qtrec"
    write(path, snaps, keyframe_every=10, keyframe_chain=6)
    con = sqlite3.connect(path)
    keys = [seq for (seq,) in con.execute("SELECT seq FROM frames WHERE kind = 0 ORDER BY seq")]
    raws = {seq: _keyframe_raw(con, seq, True) for seq in keys}
    for i, seq in enumerate(keys):
        if i % 6:
            prev = keys[i - 1]
            raw = zstandard.ZstdCompressionDict(raws[prev],
                                                dict_type=zstandard.DICT_TYPE_RAWCONTENT)
            blob = zstandard.ZstdCompressor(level=9, dict_data=raw).compress(raws[seq])
            con.execute("UPDATE frames SET ref = ?, blob = ? WHERE seq = ?", (prev, blob, seq))
    con.commit()
    chained = [r for (r,) in con.execute("SELECT ref FROM frames WHERE kind = 0 ORDER BY seq")]
    con.close()
    assert chained == [0, 1, 11, 21, 31, 41, 0, 61, 71, 81, 91]
    with Recording(path) as rec:
        assert list(rec) == snaps
        for i in (59, 55, 0, 109, 64):
            rec.forget()
            assert rec.frame(i) == snaps[i]
    assert purge_file(path, 2 * 75) == 30  # cut inside the first chain
    with Recording(path) as rec:
        assert list(rec) == snaps[30:]


def test_retention_inside_a_root_set_recompresses_its_kept_keyframes(tmp_path: Path) -> None:
    path = tmp_path / "r.qtrec"
    snaps = _busy(50)
    write(path, snaps, keyframe_every=10, keyframe_chain=5)
    con = sqlite3.connect(path)
    assert con.execute("SELECT seq, ref FROM frames WHERE kind = 0").fetchall() == [
        (1, 0), (11, 1), (21, 1), (31, 1), (41, 1)]
    con.close()
    assert purge_file(path, 2 * 15) == 30  # the root goes: 31 becomes one, 41 refers to it
    con = sqlite3.connect(path)
    assert con.execute("SELECT seq, ref FROM frames WHERE kind = 0").fetchall() == [
        (31, 0), (41, 31)]
    con.close()
    with Recording(path) as rec:
        assert list(rec) == snaps[30:]
        rec.forget()
        assert rec.frame(-1) == snaps[-1]


def test_recorder_starts_a_new_root_when_retention_purges_its_own(tmp_path: Path) -> None:
    path = tmp_path / "r.qtrec"
    snaps = evolving(130, step=60.0)
    write(path, snaps, keyframe_every=10, keyframe_chain=100, retention=parse_duration("1h"))
    con = sqlite3.connect(path)
    seqs = {s for (s,) in con.execute("SELECT seq FROM frames")}
    refs = [r for (r,) in con.execute("SELECT ref FROM frames WHERE kind = 0 ORDER BY seq")]
    con.close()
    assert min(seqs) > 1 and all(r == 0 or r in seqs for r in refs)
    with Recording(path) as rec:
        assert list(rec) == snaps[130 - len(rec):]


def test_a_keyframe_referring_to_itself_is_one_line(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.qtrec"
    write(path, _busy(30), keyframe_every=10)
    con = sqlite3.connect(path)
    con.execute("UPDATE frames SET ref = seq WHERE seq = 21")  # the last group's keyframe
    con.commit()
    con.close()
    rc, err = _replay_json(path, capsys)
    assert rc == 2 and "frame 30 has no keyframe" in err and err.count("\n") == 1


def test_a_column_with_values_missing_is_one_line(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.qtrec"
    snaps = _busy(12)
    write(path, snaps, keyframe_every=100)  # before a dictionary: deltas use the keyframe's
    con = sqlite3.connect(path)
    key = _keyframe_raw(con, 1, True)
    raw_dict = zstandard.ZstdCompressionDict(key, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    delta = make_delta(snaps[8], snaps[9])
    delta.columns[0].diffs.pop()
    blob = zstandard.ZstdCompressor(dict_data=raw_dict).compress(_encoder.encode(delta))
    con.execute("UPDATE frames SET blob = ? WHERE seq = 10", (blob,))
    con.commit()
    con.close()
    rc, err = _replay_json(path, capsys)
    assert rc == 2 and "damaged frame 12" in err and "column" in err and err.count("\n") == 1


def test_bounded_delta_gives_up_on_a_costly_recalculation_before_building_it() -> None:
    snaps = _busy(10, jobs=400)  # frame 9 raises every priority: ~800 column entries
    delta = make_delta(snaps[8], snaps[9])
    assert make_bounded_delta(snaps[8], snaps[9], budget=None,
                              work_budget=read_work(delta) / 2) is None
    assert make_bounded_delta(snaps[8], snaps[9], budget=None,
                              work_budget=read_work(delta) * 2) == delta
    assert make_bounded_delta(snaps[7], snaps[8], budget=None,
                              work_budget=read_work(delta) / 2) is not None  # no recalculation


# A reader thread (the TUI's collect worker) may still be decoding a frame when the
# viewer closes the source: found by CI as a segfault in test_live_source, where the
# test closed the LiveSource while the app's collect thread was in Recording.refresh.
_CLOSE_WHILE_READING = """
import sys, threading
from quotatop.recording.store import Recording, RecordingError
rec = Recording(sys.argv[1], read_only=True)
seen = []
def read():
    try:
        while True:
            with rec.read_transaction():
                rec.refresh()
                rec.frame(-1)
            rec.frame(0)
    except RecordingError as e:
        seen.append(str(e))
t = threading.Thread(target=read)
t.start()
import time; time.sleep(0.05)
rec.close()
t.join(10)
assert not t.is_alive() and seen, seen
print("closed cleanly:", seen[0])
"""


def test_closing_a_recording_while_a_thread_reads_it(tmp_path: Path) -> None:
    """The close waits for the read under way; the reader's next read is a clean
    RecordingError, never a crash of the process (run apart, so a crash fails only this
    test). Repeated: the race needed a read to be inside SQLite at the moment of close."""
    path = tmp_path / "r.sqlite"
    write(path, evolving(30))
    for _ in range(20):
        proc = subprocess.run([sys.executable, "-c", _CLOSE_WHILE_READING, str(path)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
        assert "closed cleanly" in proc.stdout and "closed database" in proc.stdout
