"""quotatop's own footprint: psutil's reading of this process, shown on the Overview's
Source panel when the app is given a meter (the CLI always gives one)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import psutil
from tests_tui_helpers import loaded, screen_text
from tui_fixtures import FixedCollector, frozen_clock

from quotatop import tui_launch
from quotatop.collectors.footprint import Footprint, FootprintMeter
from quotatop.tui.app import QuotatopApp


def test_the_meter_reads_this_process() -> None:
    meter = FootprintMeter()
    ballast = bytearray(64 * 1024 * 1024)  # touched below, so it is resident
    ballast[:: 4096] = b"\1" * len(ballast[:: 4096])
    fp = meter()
    assert fp is not None
    rss = psutil.Process().memory_info().rss / 1e6
    assert 64 < fp.rss_mb <= rss * 1.05
    assert fp.threads >= 1 and fp.cpu_percent >= 0
    del ballast


def test_a_vanished_process_is_none_not_an_error() -> None:
    meter = FootprintMeter()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    meter._proc = psutil.Process(child.pid)
    child.wait()  # reaped: psutil can no longer read it
    assert meter() is None


async def test_the_overview_shows_it_and_reads_it_each_refresh() -> None:
    readings = iter([Footprint(rss_mb=123.4, cpu_percent=7.2, threads=5)] * 1000)
    calls: list[int] = []

    def meter() -> Footprint:
        calls.append(1)
        return next(readings)

    app = QuotatopApp(FixedCollector(), refresh=60, clock=frozen_clock, footprint=meter)
    async with app.run_test(size=(80, 24)) as pilot:
        await loaded(pilot)
        assert calls
        assert "quotatop 123 MB · 7% CPU · 5 threads" in screen_text(app)


async def test_without_a_meter_nothing_is_said() -> None:
    app = QuotatopApp(FixedCollector(), refresh=60, clock=frozen_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        assert "% CPU" not in screen_text(app)


def test_the_cli_gives_the_app_a_meter(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import quotatop.tui.app

    made: list[dict] = []

    class Recorder:
        def __init__(self, source, **kwargs):  # type: ignore[no-untyped-def]
            made.append(kwargs)

        def run(self) -> None:
            pass

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no config file: every default
    monkeypatch.setattr(quotatop.tui.app, "QuotatopApp", Recorder)
    args = argparse.Namespace(source=None, refresh=None, config=None, scenario=None)
    assert tui_launch.run_tui(args) == 0
    meter = made[0]["footprint"]
    assert isinstance(meter, FootprintMeter) and meter() is not None
