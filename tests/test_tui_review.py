"""The admin's review in the TUI (issue #20): ``w`` opens the what-if dialog on the
snapshot on screen, the selected team's setting to edit, and paints the core's before and
after per team with the commands to copy; ``m`` opens the Report screen, whose numbers
are ``quotatop report``'s for the same source, with its charts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.widgets import DataTable, Input, TextArea
from textual_plotext import PlotextPlot

from quotatop.cli import main
from quotatop.recording.replay_source import ReplaySource
from quotatop.recording.store import Recorder
from quotatop.review.report import to_builtins
from quotatop.review.whatif import parse_set, whatif
from quotatop.simulation.scenario import load_scenario
from quotatop.simulation.scenario_source import ScenarioSource
from quotatop.sources import DEFAULT_SCENARIO
from quotatop.tui.app import QuotatopApp
from quotatop.tui.report_frames import NO_HISTORY
from quotatop.tui.report_screen import ReportScreen, team_cells
from quotatop.tui.whatif_dialog import WhatifScreen, team_rows
from tests.harness import fixtures as _slurm_fixtures
from tests.tests_tui_helpers import loaded, screen_text
from tests.tui_fixtures import FixedCollector, frozen_clock, snapshot

slurm_cluster = _slurm_fixtures.slurm_cluster
slurm_workload = _slurm_fixtures.slurm_workload
ROOT = Path(__file__).resolve().parent.parent


def _cells(table: DataTable) -> list[list[str]]:
    return [[getattr(c, "plain", str(c)) for c in table.get_row_at(i)]
            for i in range(table.row_count)]


async def _until(pilot, ready, tries: int = 300) -> None:  # type: ignore[no-untyped-def]
    for _ in range(tries):
        if ready():
            return
        await pilot.pause(0.05)
    raise AssertionError("the worker did not answer in time")


async def test_whatif_edits_the_selected_team_and_paints_the_cores_before_and_after() -> None:
    snap = snapshot()
    app = QuotatopApp(FixedCollector(snap), refresh=60.0, clock=frozen_clock)
    async with app.run_test(size=(140, 44)) as pilot:
        await loaded(pilot)
        await pilot.press("2")  # Quota
        table = app.view("quota").query_one("#quota-table", DataTable)
        table.focus()
        await pilot.press("down")
        await pilot.pause()
        selected = str(table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value)
        await pilot.press("w")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, WhatifScreen)
        box = screen.query_one("#whatif-input", Input)
        team = next(t for t in snap.teams if t.name == selected)
        assert box.value == f"team={selected} max.gpu={team.max['gpu']:g}"  # type: ignore[index]

        # A typo answers at once, in one line, and predicts nothing.
        box.value = "team=nosuch max.gpu=x"
        await pilot.press("enter")
        await pilot.pause()
        assert screen.result is None and "not a number" in screen_text(app)

        change = "add_nodes=2 like=gpu01; node=gpu02 state=drain"
        box.value = change
        await pilot.press("enter")
        await _until(pilot, lambda: screen.result is not None or screen.error is not None)
        assert screen.error is None
        want = whatif(snap, [parse_set("add_nodes=2 like=gpu01"),
                             parse_set("node=gpu02 state=drain")])
        assert screen.result == want
        shown = _cells(screen.query_one("#whatif-teams", DataTable))
        assert shown == [[getattr(c, "plain", c) for c in row] for row in team_rows(want)]
        # Two more nodes than one drained: some team's predicted mean wait must change.
        assert any(t.mean_wait_after != t.mean_wait_before for t in want.teams)
        commands = screen.query_one("#whatif-commands", TextArea).text
        assert "scontrol update nodename=gpu02 state=drain" in commands
        assert "kubectl cordon gpu02" in commands
        # Nothing is sent anywhere: the snapshot on screen is the one collected.
        assert app.snapshot is snap and len(snap.nodes) == 10
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, WhatifScreen)


async def test_whatif_on_an_unknown_name_is_a_message_from_the_worker() -> None:
    app = QuotatopApp(FixedCollector(snapshot()), refresh=60.0, clock=frozen_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("w")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, WhatifScreen)
        screen.query_one("#whatif-input", Input).value = "team=nosuch max.gpu=4"
        await pilot.press("enter")
        await _until(pilot, lambda: screen.error is not None)
        assert "no team 'nosuch'" in screen.error  # type: ignore[operator]
        assert screen.result is None


async def test_report_screen_shows_quotatop_reports_numbers_with_charts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # no user config, no prices
    assert main(["report", "--source", "demo", "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    app = QuotatopApp(ScenarioSource(load_scenario(DEFAULT_SCENARIO)), refresh=60.0,
                      clock=frozen_clock)
    async with app.run_test(size=(160, 50)) as pilot:
        await loaded(pilot)
        await pilot.press("m")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReportScreen)
        await _until(pilot, lambda: screen.report is not None or screen.error is not None,
                     tries=600)
        assert screen.error is None
        rep = screen.report
        assert rep is not None
        assert (rep.since, rep.until) == (cli["since"], cli["until"])
        # Every figure both show, field by field, in numbers (seconds, hours, cost), not
        # in their texts: one computation (review/frames.py), whatever the formatting.
        tui = to_builtins(rep)
        assert (tui["hours"], tui["currency"]) == (cli["hours"], cli["currency"])
        assert [t["team"] for t in tui["teams"]] == [t["team"] for t in cli["teams"]]
        for mine, theirs in zip([*tui["teams"], tui["total"]],
                                [*cli["teams"], cli["total"]], strict=True):
            assert mine.keys() == theirs.keys()
            for field, value in mine.items():
                assert value == theirs[field], (mine["team"], field)
        assert sum(r.gpu_hours for r in rep.teams if r.depth == 0) > 0
        assert _cells(screen.query_one("#report-teams", DataTable)) == team_cells(rep)
        assert screen.query_one("#report-waits", DataTable).row_count == \
            len(rep.total.longest_waits)
        await pilot.pause(0.1)
        text = screen_text(app)
        assert "GPU-hours: used vs guarantee" in text and "wait p50 / p90" in text
        # The bars are drawn: plotext's block characters appear in the chart area.
        chart = screen.query_one("#chart-hours", PlotextPlot)
        assert chart.size.height > 0 and "█" in text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ReportScreen)


async def test_report_of_a_live_source_not_recorded_says_how_to_get_one() -> None:
    app = QuotatopApp(FixedCollector(snapshot()), refresh=60.0, clock=frozen_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("m")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ReportScreen)
        await _until(pilot, lambda: screen.error is not None)
        assert screen.error == NO_HISTORY
        assert "press R to record" in screen_text(app)



async def test_report_of_a_replay_reads_the_whole_recording_as_quotatop_report_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    src = ScenarioSource(load_scenario(DEFAULT_SCENARIO), loop=False)
    rec = tmp_path / "demo.qtr"
    with Recorder(rec, source="demo") as r:
        for _ in range(src.total_steps):
            r.append(src.collect())
    assert main(["report", "--source", "replay", str(rec), "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    # Paused on its first frame: the report still covers the whole recording.
    app = QuotatopApp(ReplaySource(rec, paused=True), refresh=60.0, clock=frozen_clock)
    async with app.run_test(size=(140, 44)) as pilot:
        await loaded(pilot)
        await pilot.press("m")
        screen = app.screen
        assert isinstance(screen, ReportScreen)
        await _until(pilot, lambda: screen.report is not None or screen.error is not None,
                     tries=600)
        assert screen.error is None and screen.report is not None
        rep = screen.report
        assert (rep.since, rep.until) == (cli["since"], cli["until"])
        assert {r.team: r.gpu_hours for r in rep.teams} == pytest.approx(
            {t["team"]: t["gpu_hours"] for t in cli["teams"]})
        assert {r.team: r.preemptions for r in rep.teams} == \
            {t["team"]: t["preemptions"] for t in cli["teams"]}


async def test_a_live_session_recorded_with_R_reports_the_frames_recorded(
        tmp_path: Path) -> None:
    first = snapshot()
    later = snapshot(taken_at=first.taken_at + 600.0)
    app = QuotatopApp(FixedCollector(first, later), refresh=60.0, clock=frozen_clock,
                      record_dir=tmp_path)
    async with app.run_test(size=(140, 44)) as pilot:
        await loaded(pilot)
        await pilot.press("R")
        await _until(pilot, lambda: app.recording.active and app.recording.frames == 1)
        await pilot.press("r")  # the next frame, 10 minutes later, recorded too
        await _until(pilot, lambda: app.recording.frames == 2)
        await pilot.press("m")
        screen = app.screen
        assert isinstance(screen, ReportScreen)
        await _until(pilot, lambda: screen.report is not None or screen.error is not None)
        assert screen.error is None and screen.report is not None
        rep = screen.report
        assert (rep.since, rep.until) == (first.taken_at, later.taken_at)
        # Every running job's GPUs for the 10 minutes both frames show them running.
        running = sum(j.request.get("gpu", 0.0) for j in first.jobs if j.state == "running")
        assert running > 0
        assert rep.total.gpu_hours == pytest.approx(running * 600.0 / 3600.0)


def test_the_tui_takes_the_configs_prices_and_refuses_a_bad_one(tmp_path: Path) -> None:
    import argparse

    from quotatop.collectors.errors import UserError
    from quotatop.tui_launch import resolve

    def launch(text: str):  # type: ignore[no-untyped-def]
        cfg = tmp_path / "config.toml"
        cfg.write_text(text)
        return resolve(argparse.Namespace(source=None, refresh=None, config=str(cfg),
                                          scenario=None))

    prices = launch('[prices]\ncurrency = "EUR"\ngpu_hour = 2.5\n').prices
    assert prices is not None and (prices.currency, prices.gpu_hour) == ("EUR", 2.5)
    with pytest.raises(UserError, match=r"prices\.gpu_hour"):
        launch('[prices]\ngpu_hour = -1\n')


def _cli_report(env: dict[str, str]) -> dict[str, float]:
    proc = subprocess.run([sys.executable, "-m", "quotatop", "report", "--source", "slurm",
                           "--since", "30d", "--format", "json"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return {t["team"]: t["gpu_hours"] for t in json.loads(proc.stdout)["teams"]}


@pytest.mark.timeout(600)
async def test_report_of_a_live_slurm_is_sacct_as_quotatop_report_reads_it(
        slurm_cluster: _slurm_fixtures.SlurmCluster,
        slurm_workload: _slurm_fixtures.Workload) -> None:
    from quotatop.collectors.slurm.collector import SlurmCollector
    from quotatop.collectors.slurm.runner import Runner

    env = dict(slurm_cluster.env)
    before = _cli_report(env)
    collector = SlurmCollector(Runner(env=env, timeout=30), refresh=0, slow_every=0)
    app = QuotatopApp(collector, refresh=60.0)
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            await loaded(pilot, tries=1500)
            await pilot.press("m")
            screen = app.screen
            assert isinstance(screen, ReportScreen)
            await _until(pilot, lambda: screen.report is not None or screen.error is not None,
                         tries=1200)
            assert screen.error is None and screen.report is not None
            rep = screen.report
    finally:
        collector.close()
    after = _cli_report(env)
    assert rep.source == "slurm" and rep.hours == pytest.approx(30 * 24)
    got = {r.team: r.gpu_hours for r in rep.teams}
    assert any(v > 0 for v in got.values())
    # Running jobs accrue GPU-hours between the three reads: the screen's lie between.
    for team in set(before) | set(after) | set(got):
        assert before.get(team, 0.0) - 1e-6 <= got.get(team, 0.0) <= after.get(team, 0.0) + 1e-6


async def test_the_palette_opens_the_what_if_dialog_and_the_report() -> None:
    app = QuotatopApp(FixedCollector(snapshot()), refresh=60.0, clock=frozen_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        for words, screen_type in (("What-if", WhatifScreen), ("Report: GPU", ReportScreen)):
            await pilot.press("colon")
            # Type only once the palette is up: before it, "e" of "Report" is the export
            # key and wrote a CSV into the working directory.
            await _until(pilot, lambda: isinstance(app.screen, CommandPalette))
            await pilot.press(*words)
            await pilot.pause(0.3)
            await pilot.press("enter")
            await _until(pilot, lambda t=screen_type: isinstance(app.screen, t))
            await pilot.press("escape")
            await pilot.pause()


async def test_q_types_into_the_what_if_line_and_closes_the_dialog_elsewhere() -> None:
    app = QuotatopApp(FixedCollector(snapshot()), refresh=60.0, clock=frozen_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.press("w")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, WhatifScreen)
        box = screen.query_one("#whatif-input", Input)
        box.value = ""
        await pilot.press(*"qos=high")
        await pilot.pause()
        assert box.value == "qos=high" and app.screen is screen
        screen.query_one("#whatif-teams", DataTable).focus()
        await pilot.press("q")
        await pilot.pause()
        assert app.is_running and not isinstance(app.screen, WhatifScreen)
