"""The live TUI under source faults that the tests start themselves (tests/faults/):
fake Slurm commands that hang, flood, leave a detached grandchild holding stdout,
print garbage or exit 1; a fake Prometheus on 127.0.0.1 that hangs, trickles, answers
HTTP 500 or malformed JSON; and damaged recordings.

For each live fault, the real App runs headless on the source at a short refresh,
first on good answers, then on the fault, and:

* a banner naming the source problem appears within a bounded number of refreshes,
  while the last good data stays;
* keys are still processed while the fault persists (``?`` opens help, ``2`` switches
  the screen);
* ``q`` ends the app, and the collect in flight ends with it: Textual's ``run()``
  joins the collect thread before it returns, so a request left to its deadline
  would hold the terminal after ``q`` (the hang tests set a deadline no test waits);
* afterwards no process the test did not have before is left.

A recording that cannot be opened is one line and exit 2 from ``quotatop replay``,
and the file is left byte for byte as it was, with no -wal/-shm beside it.
No assertion reads the wall clock: every wait is a bounded loop of ``pilot.pause``.
"""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from faults import bad_recordings
from faults.fake_prometheus import MALFORMED, FakePrometheus
from faults.fake_slurm import COMMANDS, FakeSlurm
from textual.pilot import Pilot
from textual.widgets import Static
from tui_fixtures import T0

from quotatop.collectors.model import Snapshot
from quotatop.collectors.prometheus_source import PrometheusCollector, PrometheusConfig
from quotatop.collectors.slurm import runner as runner_mod
from quotatop.collectors.slurm.collector import SlurmCollector
from quotatop.recording.replay_source import ReplaySource
from quotatop.tui.app import QuotatopApp
from quotatop.tui.modals import HelpScreen

ROOT = Path(__file__).resolve().parent.parent
REFRESH = 0.1  # the app's refresh, seconds
# Bounds of the waits, in pauses of one refresh. Generous: a loaded 2-core machine runs
# ten fake commands a round; the hang and grandchild faults wait out a 1 s deadline.
FAULT_REFRESHES = 200
KEY_PAUSES = 50
# The sources' deadline while the data is good; the fault brings it down to the 1 s its
# banner names. With 1 s from the start, the good phase raced the machine's load: in one
# CI run four fake Slurm commands of the first round did not answer within 1 s, and the
# test failed on a banner before any fault. Below FAULT_REFRESHES' 20 s, so that a round
# begun just before the fault still ends in time for the next one to name it.
GOOD_DEADLINE = 8.0
pytestmark = pytest.mark.timeout(180)


# ---- helpers ----------------------------------------------------------------------------
class Watched:
    """A collector seen from the test: whether a collect is running now. Every other
    attribute (progress, interrupt, runner, config…) is the collector's own."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.started = 0  # collects begun
        self._inside = 0
        self._lock = threading.Lock()

    @property
    def collecting(self) -> bool:
        with self._lock:
            return self._inside > 0

    def collect(self) -> Snapshot:
        with self._lock:
            self.started += 1
            self._inside += 1
        try:
            return self.inner.collect()
        finally:
            with self._lock:
                self._inside -= 1

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def banner(app: QuotatopApp) -> str:
    """The banner's text, '' while it is hidden."""
    widget = app.main.query_one("#banner", Static)
    return str(widget.content) if widget.has_class("shown") else ""


async def until(pilot: Pilot, cond: Callable[[], bool], pauses: int,
                every: float = REFRESH) -> bool:
    """Pause until ``cond()`` holds, at most ``pauses`` times ``every`` seconds."""
    for _ in range(pauses):
        if cond():
            return True
        await pilot.pause(every)
    return cond()


def descendants() -> set[int]:
    """The test process's descendants still running (a zombie has ended)."""
    out = set()
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                out.add(proc.pid)
        except psutil.Error:
            continue
    return out


@pytest.fixture
def before() -> set[int]:
    return descendants()


async def under_fault(app: QuotatopApp, pilot: Pilot, source: Watched,
                      start_fault: Callable[[], None], names: tuple[str, ...],
                      hold: Callable[[], None] | None = None) -> str:
    """Good data first; then the fault, until its banner (which must name one of
    ``names``); keys while it persists; then ``q``. Returns the banner seen.
    ``hold`` (optional) makes the fault's next collect block past any wait of the
    test, so that ``q`` is pressed while a collect waits on the broken source."""
    assert await until(pilot, lambda: app.data is not None, FAULT_REFRESHES), banner(app)
    assert not banner(app), banner(app)
    good = app.snapshot
    assert good is not None and not good.stale and (good.jobs or good.teams)
    start_fault()

    def named() -> bool:
        # The whole source down: a stale snapshot, or a failed collect beside the last
        # good one. (A collect the fault met halfway is a banner of the failing parts.)
        failed = app.failure is not None or (app.snapshot is not None and app.snapshot.stale)
        return failed and any(n in banner(app) for n in names)

    assert await until(pilot, named, FAULT_REFRESHES), f"no banner naming {names}: {banner(app)}"
    seen = banner(app)
    assert "showing the last good data" in seen, seen
    # The last good data stays on screen.
    assert app.snapshot is not None
    assert [t.name for t in app.snapshot.teams] == [t.name for t in good.teams]
    if hold is not None:
        hold()
        mark = source.started
        # A collect begun after hold() (so under its deadline) waits on the fault.
        assert await until(pilot, lambda: source.started > mark and source.collecting,
                           FAULT_REFRESHES)
    # Keys are processed while the source is still broken.
    await pilot.press("question_mark")
    assert await until(pilot, lambda: isinstance(app.screen, HelpScreen), KEY_PAUSES)
    await pilot.press("escape")
    assert await until(pilot, lambda: not isinstance(app.screen, HelpScreen), KEY_PAUSES)
    await pilot.press("2")
    assert await until(pilot, lambda: app.active_view == "quota", KEY_PAUSES)
    assert banner(app), "the fault went away during the key presses"
    if hold is not None:
        assert source.collecting  # the keys were taken while a collect was blocked
    await pilot.press("q")
    assert await until(pilot, lambda: not app.is_running, KEY_PAUSES)
    return seen


async def collect_ended(source: Watched) -> None:
    """After the app has shut down (its unmount runs as run_test's context ends): the
    collect in flight ends with it, as Textual's run() needs before it returns."""
    for _ in range(KEY_PAUSES):
        if not source.collecting:
            return
        await asyncio.sleep(REFRESH)  # the worker's last call_from_thread runs on this loop
    raise AssertionError("a collect still waits on the broken source after q")


# ---- Slurm ------------------------------------------------------------------------------
SLURM_FAULTS = {
    # mode: what the banner says about it
    "hang": ("no answer after 1 s (killed)",),
    "flood": ("output over 1 MiB (killed)",),
    "grandchild": ("no answer after 1 s (killed)",),
    "garbage": ("cannot parse", "unreadable", "malformed"),
    "exit1": ("Unable to contact slurm controller",),
}


@pytest.fixture
def fake_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSlurm]:
    # The flood is cut at 1 MiB, not at squeue's 1 GiB: the same code path, in a moment.
    monkeypatch.setattr(runner_mod, "OUTPUT_CAPS", {})
    monkeypatch.setattr(runner_mod, "DEFAULT_CAP", 1 << 20)
    fake = FakeSlurm(tmp_path / "slurm")
    try:
        yield fake
    finally:
        fake.kill_all()


@pytest.mark.parametrize("mode", sorted(SLURM_FAULTS))
async def test_slurm_fault_banner_keys_quit_and_no_process_left(
        mode: str, fake_slurm: FakeSlurm, before: set[int]) -> None:
    slurm = SlurmCollector(env=fake_slurm.env(), timeout=GOOD_DEADLINE, refresh=REFRESH / 2)
    source = Watched(slurm)
    app = QuotatopApp(source, refresh=REFRESH)  # type: ignore[arg-type]

    def fault() -> None:
        slurm.runner.timeout = 1.0  # first: a round begun now meets the fault under it
        fake_slurm.mode = mode

    def hold() -> None:
        slurm.runner.timeout = 600.0  # the next round's deadline: past any wait here

    try:
        async with app.run_test(size=(120, 30)) as pilot:
            seen = await under_fault(app, pilot, source, fault, SLURM_FAULTS[mode],
                                     hold=hold if mode in ("hang", "grandchild") else None)
        await collect_ended(source)
        assert any(c in seen for c in COMMANDS), seen  # the banner names the command
    except BaseException:
        fake_slurm.kill_all()  # a failure does not wait out the fakes' sleep in teardown
        raise
    finally:
        slurm.close()  # as the CLI does once the app has returned
    assert descendants() - before == set()
    # Grandchildren too: one that left the group after its parent exited is found by
    # the mark the runner puts in every command's environment (runner.RUN_MARK).
    assert [p.pid for p in fake_slurm.running()] == []


# ---- Prometheus -------------------------------------------------------------------------
PROMETHEUS_FAULTS = {
    "hang": ("prometheus: timed out after 1s",),
    "trickle-body": ("prometheus: timed out after 1s",),
    "trickle-headers": ("prometheus: timed out after 1s",),
    "500": ("prometheus: HTTP 500 internal: boom",),
    **{m: ("prometheus: malformed answer", "prometheus: answer larger than") for m in MALFORMED},
}


@pytest.mark.parametrize("mode", sorted(PROMETHEUS_FAULTS))
async def test_prometheus_fault_banner_keys_quit_and_no_process_left(
        mode: str, before: set[int]) -> None:
    fake = FakePrometheus()
    prom = PrometheusCollector(PrometheusConfig(
        url=fake.url, groups=("kube-state-metrics",), timeout=GOOD_DEADLINE, range_seconds=30.0,
        step_seconds=1.0, max_answer_bytes=100_000))
    source = Watched(prom)
    app = QuotatopApp(source, refresh=REFRESH)  # type: ignore[arg-type]

    def fault() -> None:
        prom.config.timeout = 1.0  # first: a query begun now meets the fault under it
        fake.mode = mode

    def hold() -> None:
        prom.config.timeout = 600.0  # the next query waits past any wait of this test

    try:
        async with app.run_test(size=(120, 30)) as pilot:
            await under_fault(app, pilot, source, fault, PROMETHEUS_FAULTS[mode],
                              hold=hold if mode in ("hang", "trickle-body") else None)
        await collect_ended(source)
    finally:
        prom.close()
        fake.close()
    assert descendants() - before == set()


# ---- recordings -------------------------------------------------------------------------
def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("fault", bad_recordings.FAULTS)
def test_replay_of_a_bad_recording_is_one_line_exit_2_and_the_file_untouched(
        fault: str, tmp_path: Path, before: set[int]) -> None:
    path = bad_recordings.make(fault, tmp_path / "bad.qtr")
    was = digest(path)
    proc = subprocess.run([sys.executable, "-m", "quotatop", "replay", str(path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"quotatop: {path}: "), lines[0]
    assert ("damaged recording" in lines[0] or "not a quotatop recording" in lines[0]), lines[0]
    assert digest(path) == was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.qtr"]  # no -wal, no -shm
    assert descendants() - before == set()


async def test_a_damaged_frame_met_in_replay_is_a_banner_and_the_tui_goes_on(
        tmp_path: Path, before: set[int]) -> None:
    path = bad_recordings.damaged_frame(tmp_path / "d.qtr", frame=12)
    was = digest(path)
    replay = ReplaySource(path, paused=True)
    source = Watched(replay)
    app = QuotatopApp(replay, refresh=REFRESH)

    def seek() -> None:  # as the timeline's keys do: to the damaged frame, paused
        replay.seek(T0 + 12)
        app.refresh_now()

    try:
        async with app.run_test(size=(120, 30)) as pilot:
            seen = await under_fault(app, pilot, source, seek, ("damaged frame 13",))
    finally:
        replay.close()
    assert seen.startswith("⚠ source failed: RecordingError: ")
    assert digest(path) == was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.qtr"]
    assert descendants() - before == set()


async def test_a_replay_opened_paused_shows_its_frame_at_once(tmp_path: Path) -> None:
    """`quotatop replay FILE --at T` opens paused at T: the frame there is on screen
    at once (it stayed on "waiting for the first snapshot" until space was pressed)."""
    replay = ReplaySource(bad_recordings.good(tmp_path / "g.qtr"))
    replay.seek(T0 + 5)
    replay.pause()  # as quotatop/commands/replay.py does for --at
    app = QuotatopApp(replay, refresh=REFRESH)
    try:
        async with app.run_test(size=(120, 30)) as pilot:
            assert await until(pilot, lambda: app.data is not None, FAULT_REFRESHES)
            assert app.snapshot is not None and app.snapshot.taken_at == T0 + 5
            assert replay.paused and replay.position == 5
    finally:
        replay.close()


def test_runner_interrupt_ends_a_read_a_detached_grandchild_holds(
        fake_slurm: FakeSlurm) -> None:
    """The group kill cannot reach a grandchild in its own session that holds stdout;
    interrupt() still ends the read at once, not at the deadline, and the grandchild
    is killed by the mark in its environment."""
    fake_slurm.mode = "grandchild"
    runner = runner_mod.Runner(env=fake_slurm.env(), timeout=600.0)
    got: list[BaseException] = []

    def run() -> None:
        try:
            runner.run("sinfo", ["sinfo", "--all", "--json"])
        except runner_mod.CommandError as exc:
            got.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    for _ in range(200):  # bounded: until the grandchild holds stdout and sinfo exited
        if fake_slurm.grandchildren() and runner.progress():
            break
        t.join(0.05)
    assert fake_slurm.grandchildren() and runner.progress()
    runner.interrupt()
    t.join(30)  # bounded; the read would otherwise wait out its 600 s deadline
    assert not t.is_alive()
    assert [str(e) for e in got] == ["sinfo: interrupted (killed)"]
    with pytest.raises(runner_mod.CommandError, match="not started, quotatop is quitting"):
        runner.run("sinfo", ["sinfo", "--all", "--json"])
    # The detached grandchild, out of the group and no one's descendant, is gone too.
    assert [p.pid for p in fake_slurm.running()] == []
