"""Habits k9s and htop users bring: ctrl+p opens the palette like ':', a replay's job
detail reads its clocks from the frame, `--version`."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from tests_tui_helpers import loaded
from textual.command import CommandPalette
from tui_fixtures import T0, FixedCollector, frozen_clock, snapshot

from quotatop.cli import main
from quotatop.collectors.model import Job
from quotatop.recording.replay_source import ReplaySource
from quotatop.recording.store import Recorder
from quotatop.tui.app import QuotatopApp
from quotatop.tui.modals import JobDetailScreen


@pytest.mark.parametrize("key", ["ctrl+p", "colon"])
async def test_both_keys_open_the_command_palette(key: str) -> None:
    app = QuotatopApp(FixedCollector(), refresh=60, clock=frozen_clock)
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press(key)
        await pilot.pause(0.2)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert not isinstance(app.screen, CommandPalette)


async def test_replayed_job_detail_reads_its_clocks_from_the_frame(tmp_path: Path) -> None:
    """The frame is from T0; the wall clock says 333 days later. The job was submitted
    10 minutes before the frame: the detail says 10m ago, not 333d."""
    job = Job(id="77", user="u", team="t", submit_time=T0 - 600, time_limit=3600.0)
    snap = snapshot()
    snap.jobs.append(job)
    path = tmp_path / "r.qtr"
    with Recorder(path, source="test") as rec:
        rec.append(snap)
    source = ReplaySource(path)
    app = QuotatopApp(source, refresh=60, clock=lambda: T0 + 333 * 86400)
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        app.on_job_table_opened(SimpleNamespace(job=job))  # type: ignore[arg-type]
        await pilot.pause(0.1)
        assert isinstance(app.screen, JobDetailScreen)
        assert app.screen.now == T0
    source.close()


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == "quotatop 0.1.0"


def test_the_tui_takes_the_same_source_flags_as_snapshot() -> None:
    from quotatop.cli import build_parser
    from quotatop.collectors.errors import UserError
    from quotatop.tui_launch import resolve

    args = build_parser().parse_args(["--source", "prometheus", "--prometheus-url",
                                      "http://127.0.0.1:9", "--timeout", "3"])
    opts = resolve(args).options
    assert (opts.prometheus_url, opts.timeout) == ("http://127.0.0.1:9", 3.0)
    args = build_parser().parse_args(["--source", "slurm", "--ssh", "login1"])
    assert resolve(args).options.ssh_host == "login1"
    with pytest.raises(UserError, match="--ssh applies to --source slurm only"):
        resolve(build_parser().parse_args(["--source", "k8s", "--ssh", "login1"]))


def test_a_missing_prometheus_url_names_the_flag_and_the_config_key() -> None:
    from quotatop.collectors.errors import UserError
    from quotatop.sources import SourceOptions, open_source

    with pytest.raises(UserError) as e:
        open_source("prometheus", SourceOptions())
    assert "--prometheus-url" in str(e.value) and "[sources.prometheus]" in str(e.value)


async def test_the_header_says_what_it_is_connecting_to_before_any_data() -> None:
    """A source that takes its time: the first screen names it and the requests in
    flight (from the collector's progress), not a bare header; then the data."""
    import threading

    from tests_tui_helpers import screen_text

    gate = threading.Event()

    class Slow(FixedCollector):
        def collect(self):  # type: ignore[no-untyped-def]
            gate.wait(10)
            return super().collect()

        def progress(self) -> list[tuple[str, float]]:
            return [] if gate.is_set() else [("squeue", 3.2), ("sinfo", 3.1), ("sprio", 3.0),
                                            ("sshare", 2.9)]

    app = QuotatopApp(Slow(name="slurm"), refresh=60, clock=frozen_clock)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "connecting to slurm: squeue, sinfo, sprio … (3s)" in text
        gate.set()
        await loaded(pilot)
        await pilot.pause(0.1)
        assert "connecting to" not in screen_text(app)
