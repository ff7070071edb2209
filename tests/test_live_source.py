"""One poller, many viewers: `--source live FILE` on a recording that a real
`quotatop record` subprocess is writing (docs/recording.md, "One poller, many viewers").

The viewer opens the file read-only, shows its newest frame at once, follows it
reading only newer frames, never writes to it, and says when the poller has stopped
while keeping its last frame. On the real Slurm of tests/harness, ten viewers run as
another user add no RPC to slurmctld's own counters (sdiag). Waits are bounded; no
assertion depends on how fast anything runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests_tui_helpers import loaded, screen_text

from quotatop.cli import build_parser, main
from quotatop.collectors.errors import UserError
from quotatop.config import parse_config
from quotatop.recording.live_source import LiveSource
from quotatop.recording.store import Recording
from quotatop.sources import SourceOptions, open_source
from quotatop.tui_launch import resolve
from tests.harness import fixtures as _slurm_fixtures
from tests.harness import sdiag
from tests.harness.slurm_cluster import SlurmCluster

ROOT = Path(__file__).resolve().parent.parent
VIEWER = ROOT / "tests" / "harness" / "live_viewer.py"
_FRAME = re.compile(r"^frame (\d+) at ([\d.]+)$")

# The same module object as tests/test_slurm_live.py uses, so one cluster per session.
slurm_cluster = _slurm_fixtures.slurm_cluster


class Writer:
    """`quotatop record --source demo --progress` in a subprocess: each committed frame
    it reports ("frame SEQ at T") is collected by a thread, so waits never block."""

    def __init__(self, argv: list[str], path: Path, pidfile: Path,
                 env: dict[str, str] | None = None) -> None:
        self.path, self.pidfile = path, pidfile
        self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.frames: dict[int, float] = {}
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            m = _FRAME.match(line.strip())
            if m:
                with self._lock:
                    self.frames[int(m.group(1))] = float(m.group(2))

    def reported(self) -> int:
        with self._lock:
            return max(self.frames, default=0)

    def wait_frames(self, n: int, timeout: float = 120.0) -> None:
        """Bounded wait until the writer has reported frame ``n``."""
        deadline = time.monotonic() + timeout
        while self.reported() < n:
            if self.proc.poll() is not None:
                raise AssertionError(f"the writer exited {self.proc.returncode}: "
                                     f"{self.proc.stderr.read() if self.proc.stderr else ''}")
            if time.monotonic() > deadline:
                raise AssertionError(f"the writer reported {self.reported()} of {n} frames")
            time.sleep(0.02)

    def pause(self) -> None:
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        """SIGTERM, as `kill $(cat pidfile)`: it commits, checkpoints, removes its pid file."""
        if self.proc.poll() is None:
            self.resume()
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(10)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def _record_argv(out: Path, pidfile: Path, source: str, interval: float) -> list[str]:
    return [sys.executable, "-m", "quotatop", "record", "--source", source, "--out",
            str(out), "--interval", f"{interval:g}", "--pidfile", str(pidfile), "--progress"]


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[Writer]:
    out, pidfile = tmp_path / "cluster.qtr", tmp_path / "poller.pid"
    w = Writer(_record_argv(out, pidfile, "demo", 0.1), out, pidfile)
    try:
        w.wait_frames(3)
        yield w
    finally:
        w.stop()


def _newest(path: Path, *, immutable: bool = False) -> tuple[int, float]:
    """The newest committed frame, read by a plain read-only SQLite connection: an
    oracle that shares no code with the viewer. (Plain ``mode=ro`` on a file no writer
    has open leaves an empty -wal and -shm: ``immutable`` there.)"""
    conn = sqlite3.connect(f"file:{path}?mode=ro{'&immutable=1' if immutable else ''}",
                           uri=True)
    try:
        seq, t = conn.execute("SELECT seq, t FROM frames ORDER BY seq DESC LIMIT 1").fetchone()
    finally:
        conn.close()
    return int(seq), float(t)


def _files(path: Path) -> dict[str, tuple[int, int]]:
    """Size and mtime of the recording and its -wal (what a writer would change)."""
    out = {}
    for p in (path, Path(f"{path}-wal")):
        if p.exists():
            st = p.stat()
            out[p.name] = (st.st_size, st.st_mtime_ns)
    return out


def _until(cond: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def test_the_viewer_shows_the_newest_frame_at_once_and_follows_it(writer: Writer) -> None:
    writer.pause()  # now only the viewer could touch the files
    try:
        before = _files(writer.path)
        names = sorted(os.listdir(writer.path.parent))
        seq, t = _newest(writer.path)
        src = LiveSource(writer.path, pidfile=writer.pidfile, refresh=0.1)
        try:
            snap = src.collect()
            assert src.recording.seqs[-1] == seq  # the newest frame, at once
            assert snap.taken_at == t and not snap.stale
            assert snap.meta["live_poller"] == "ok"
            assert snap.teams and snap.nodes
            conn = src.recording._db.conn
            for sql in ("INSERT INTO meta VALUES ('x', 'y')", "DELETE FROM frames",
                        "UPDATE meta SET value = 'x' WHERE key = 'source'"):
                with pytest.raises(sqlite3.OperationalError, match=r"readonly"):
                    conn.execute(sql)
            assert src.collect() is snap  # nothing new: the same snapshot, nothing decoded
            assert _files(writer.path) == before  # the reader changed neither file
            assert sorted(os.listdir(writer.path.parent)) == names
        finally:
            src.close()
        assert _files(writer.path) == before

        # Following: each refresh reads only the frames after the last one seen.
        src = LiveSource(writer.path, pidfile=writer.pidfile, refresh=0.1)
    finally:
        writer.resume()
    try:
        sql: list[str] = []
        src.recording._db.conn.set_trace_callback(sql.append)
        seen = src.recording.seqs[-1]
        for _ in range(3):
            last = src.recording.seqs[-1]
            sql.clear()
            _until(lambda last=last: src.collect() is not None and src.recording.seqs[-1] > last)
            reads = [s for s in sql if "FROM frames" in s]
            assert any(f"FROM frames WHERE seq > {last} ORDER BY seq" in s for s in reads)
            assert not any(s.rstrip().endswith("FROM frames ORDER BY seq") for s in reads)
            for s in reads:  # deltas are read from after the frame last seen
                if m := re.search(r"WHERE seq BETWEEN (\d+) AND", s):
                    assert int(m.group(1)) > last
        newest = src.recording.seqs[-1]
        snap = src.collect()
        assert newest > seen
        with Recording(writer.path, read_only=True) as oracle:
            want = oracle.frame(oracle.seqs.index(src.recording.seqs[-1]))
        assert snap.taken_at == want.taken_at and snap.meta["step"] == want.meta["step"]
        assert [j.id for j in snap.jobs] == [j.id for j in want.jobs]
    finally:
        src.close()


_STALE = re.compile(r"^poller stale: last frame (?:\d+[smhdy])+ ago \((.+)\)$")


def test_a_hung_poller_is_stale_after_its_silence_and_the_last_frame_stays(
        writer: Writer) -> None:
    skew = [0.0]
    src = LiveSource(writer.path, refresh=0.1, clock=lambda: time.time() + skew[0])
    try:
        writer.pause()  # alive, but writing nothing: hung on a cluster, say
        fresh = src.collect()
        assert not fresh.stale and src.poller_stale is None
        skew[0] = 1000.0  # a quarter of an hour later, still nothing
        stale = src.collect()
        assert stale.stale and stale.meta["live_poller"] == "stale"
        m = _STALE.match(stale.stale_reason or "")
        assert m and m.group(1).startswith("none for 5 of its"), stale.stale_reason
        assert stale.jobs is fresh.jobs and stale.taken_at == fresh.taken_at  # kept
        skew[0] = 0.0
        writer.resume()
        last = src.recording.seqs[-1]
        _until(lambda: src.collect() is not None and src.recording.seqs[-1] > last)
        assert not src.collect().stale  # it writes again: the banner goes
    finally:
        writer.resume()
        src.close()


def test_a_stopped_poller_is_stale_at_once_by_its_pid_file(writer: Writer) -> None:
    src = LiveSource(writer.path, pidfile=writer.pidfile, refresh=0.1)
    try:
        assert not src.collect().stale
        writer.stop()  # SIGTERM: the recorder removes its pid file on the way out
        assert not writer.pidfile.exists()
        snap = src.collect()
        m = _STALE.match(snap.stale_reason or "")
        assert snap.stale and m and m.group(1) == f"pid file {writer.pidfile} gone"
        newest = _newest(writer.path)
        assert src.recording.seqs[-1] == newest[0] and snap.taken_at == newest[1]
    finally:
        src.close()


async def test_the_tui_shows_the_stale_poller_banner_over_the_last_data(
        writer: Writer) -> None:
    from quotatop.tui.app import QuotatopApp

    writer.stop()
    src = LiveSource(writer.path, pidfile=writer.pidfile, refresh=0.1)
    app = QuotatopApp(src, refresh=0.1)
    try:
        async with app.run_test(size=(140, 36)) as pilot:
            await loaded(pilot)
            await pilot.pause(0.2)
            text = " ".join(screen_text(app).split())  # the banner wraps
    finally:
        src.close()
    assert re.search(r"poller stale: last frame (?:\d+[smhdy])+ ago \(pid file .* gone\)", text)
    assert "showing the last good data" in text and "source stale" not in text
    assert "prod" in text and "elastic" in text  # the demo's teams are still on screen


def test_a_finished_recording_is_read_without_creating_anything(writer: Writer) -> None:
    writer.stop()
    folder = writer.path.parent
    assert sorted(os.listdir(folder)) == [writer.path.name]  # the recorder tidied up
    before = _files(writer.path)
    src = open_source("live", SourceOptions(recording=str(writer.path)))
    try:
        snap = src.collect()
        assert snap.stale and snap.stale_reason
        assert snap.stale_reason.endswith("(no poller has the file open)")
        assert snap.taken_at == _newest(writer.path, immutable=True)[1]
    finally:
        src.close()
    assert sorted(os.listdir(folder)) == [writer.path.name]  # no -wal, no -shm left
    assert _files(writer.path) == before


def test_a_bad_file_is_one_line_and_exit_2(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.qtr"
    assert main(["record", "--source", "demo", "--out", str(good), "--interval", "0.01",
                 "--frames", "40"]) == 0
    truncated = tmp_path / "truncated.qtr"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    text = tmp_path / "notes.qtr"
    text.write_text("not a recording\n" * 20)
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    capsys.readouterr()
    cases = {tmp_path / "missing.qtr": "no such recording", text: "not an SQLite file",
             other: "not a quotatop recording", truncated: "damaged|malformed|not a quotatop"}
    for path, why in cases.items():
        for argv in (["predict", "--source", "live", str(path)], ["--source", "live", str(path)]):
            assert main(argv) == 2, argv
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and err.startswith("quotatop: "), err
            assert re.search(why, err), err
    assert main(["predict", "--source", "live"]) == 2
    assert "needs a file" in capsys.readouterr().err


def test_predict_reads_the_newest_frame(writer: Writer,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["predict", "--source", "live", str(writer.path), "--json",
                 "--poller-pidfile", str(writer.pidfile)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stale"] is False and out["cluster"] == "demo"
    conn = sqlite3.connect(f"file:{writer.path}?mode=ro", uri=True)
    try:
        times = {t for (t,) in conn.execute("SELECT t FROM frames")}
    finally:
        conn.close()
    assert out["taken_at"] in times  # a frame of the recording, not a fresh demo step


def test_the_config_names_the_live_recording(tmp_path: Path, writer: Writer) -> None:
    cfg_path = tmp_path / "config.toml"
    cfg_path.write_text(f'source = "live"\n[sources.live]\nrecording = "{writer.path}"\n'
                        f'pidfile = "{writer.pidfile}"\nstale_after = 3\n')
    launch = resolve(build_parser().parse_args(["--config", str(cfg_path)]))
    assert launch.kind == "live"
    assert launch.options.recording == str(writer.path)
    assert launch.options.live_pidfile == str(writer.pidfile)
    assert launch.options.live_stale_after == 3
    src = open_source(launch.kind, launch.options)
    try:
        assert isinstance(src, LiveSource) and src.stale_after == 3
        assert not src.collect().stale
    finally:
        src.close()
    with pytest.raises(UserError, match=r"at sources\.live\.stale_after"):
        parse_config("[sources.live]\nstale_after = 0\n")
    with pytest.raises(UserError, match="--poller-pidfile applies to --source live only"):
        resolve(build_parser().parse_args(["--source", "demo", "--poller-pidfile", "p"]))


# ---- the real Slurm ----------------------------------------------------------------

def _as_nobody() -> list[str]:
    """The argv prefix that runs a command as nobody with no privilege left (setpriv:
    Popen's user= cannot exec the venv's interpreter, which lives under /root here)."""
    import pwd

    setpriv = shutil.which("setpriv")
    try:
        pw = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody to run the viewers as")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to run the viewers as nobody")
    return [setpriv, f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups", "--"]


@pytest.mark.timeout(600)
def test_ten_live_viewers_add_no_rpc_to_slurmctld(slurm_cluster: SlurmCluster) -> None:
    """Viewers run as nobody, so slurmctld counts whatever they ask apart from the
    poller (root) and the harness (root): nobody's count must not move while ten
    viewers follow the poller. A squeue as nobody afterwards must move it, so the
    zero means they never asked, not that they could not reach the controller."""
    prefix = _as_nobody()
    work = Path(tempfile.mkdtemp(prefix="qtlive-", dir="/tmp"))
    try:
        # Readable by the viewers' user before the poller opens it, so its -wal and
        # -shm get the same mode (docs/recording.md, "One poller, many viewers").
        work.chmod(0o755)
        out, pidfile = work / "cluster.qtr", work / "poller.pid"
        out.touch(mode=0o644)
        out.chmod(0o644)
        poller = Writer(_record_argv(out, pidfile, "slurm", 1.0), out, pidfile,
                        env=slurm_cluster.env)
        try:
            poller.wait_frames(1)
            before = sdiag.read(slurm_cluster)
            viewers = [subprocess.Popen(
                [*prefix, sys.executable, str(VIEWER), str(out), "--refresh", "0.5",
                 "--frames", "2", "--seconds", "240"],
                cwd=ROOT, env=slurm_cluster.env, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True) for _ in range(10)]
            reports = []
            for v in viewers:
                stdout, stderr = v.communicate(timeout=300)
                assert v.returncode == 0, stderr
                reports.append(stdout)
            after = sdiag.read(slurm_cluster)
        finally:
            poller.stop()
        for line in reports:
            report = json.loads(line.strip().splitlines()[-1])
            assert report["started"] == []  # no process at all, let alone a Slurm command
            assert report["frames_seen"] >= 3 and report["last_seq"] > report["first_seq"]
        assert after.user("root") > before.user("root")  # the poller polled meanwhile
        assert after.user("nobody") == before.user("nobody")
        subprocess.run([*prefix, "squeue"], env=slurm_cluster.env, check=True,
                       capture_output=True, timeout=60)
        assert sdiag.read(slurm_cluster).user("nobody") > after.user("nobody")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_a_file_that_cannot_be_read_mid_run_keeps_the_last_frame(
        writer: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    from quotatop.recording.store import RecordingError

    src = LiveSource(writer.path, pidfile=writer.pidfile, refresh=0.1)
    try:
        good = src.collect()

        def broken() -> int:
            raise RecordingError(f"{writer.path}: damaged recording (disk I/O error)")

        monkeypatch.setattr(src.recording, "refresh", broken)
        snap = src.collect()
        assert snap.stale and snap.meta["live_poller"] == "stale"
        assert re.fullmatch(re.escape(f"cannot read the poller's file: {writer.path}: damaged "
                                      "recording (disk I/O error) (showing the last frame ")
                            + r"(?:\d+[smhdy])+ ago\)", snap.stale_reason or ""), snap.stale_reason
        assert snap.jobs is good.jobs and snap.taken_at == good.taken_at
        monkeypatch.undo()
        last = src.recording.seqs[-1]
        _until(lambda: src.collect() is not None and src.recording.seqs[-1] > last)
        assert not src.collect().stale  # readable again: the banner goes
    finally:
        src.close()
