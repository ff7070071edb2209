"""Issue #18, keys k9s and htop users bring: esc goes back, ←/→ switch screens
without stealing the filter box's cursor, shift+letter and header clicks sort,
e/E export the table, ctrl+s saves a screenshot."""

from __future__ import annotations

import contextlib
import csv
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from tests_tui_helpers import loaded, screen_text
from textual.pilot import Pilot
from textual.widgets import Input, TabbedContent
from tui_fixtures import FixedCollector, frozen_clock

from quotatop.tui.app import QuotatopApp
from quotatop.tui.modals import HelpScreen, JobDetailScreen
from quotatop.tui.widgets.job_table import JobTable
from quotatop.tui.widgets.sortable_table import SortableTable, sort_value


@contextlib.asynccontextmanager
async def running(size: tuple[int, int] = (100, 30)) -> AsyncIterator[tuple[QuotatopApp, Pilot]]:
    app = QuotatopApp(FixedCollector(), refresh=60, clock=frozen_clock)
    async with app.run_test(size=size) as pilot:
        await loaded(pilot)
        yield app, pilot


def active(app: QuotatopApp) -> str:
    return app.query_one(TabbedContent).active


# esc -------------------------------------------------------------------------
async def test_esc_goes_back_to_the_screen_before() -> None:
    async with running() as (app, pilot):
        for key in ("5", "8"):  # Overview → Queue → Incidents
            await pilot.press(key)
            await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert active(app) == "queue"
        await pilot.press("escape")
        await pilot.pause()
        assert active(app) == "overview"
        await pilot.press("escape")  # nothing left: stays home, no error
        await pilot.pause()
        assert active(app) == "overview"


async def test_esc_on_a_screen_reached_directly_goes_home() -> None:
    async with running() as (app, pilot):
        await pilot.press("6", "escape")
        await pilot.pause()
        assert active(app) == "overview"


async def test_esc_closes_a_dialog_then_a_filter_then_the_screen() -> None:
    async with running() as (app, pilot):
        await pilot.press("slash", *"team:exp", "enter")
        await pilot.pause()
        table = app.query_one(JobTable)
        assert table.filter
        await pilot.press("enter")  # job detail
        await pilot.pause()
        assert isinstance(app.screen, JobDetailScreen)
        await pilot.press("escape")  # 1: the dialog
        await pilot.pause()
        assert not isinstance(app.screen, JobDetailScreen)
        assert table.filter and active(app) == "queue"
        await pilot.press("escape")  # 2: the filter
        await pilot.pause()
        assert not table.filter and active(app) == "queue"
        await pilot.press("escape")  # 3: back to where / came from
        await pilot.pause()
        assert active(app) == "overview"


async def test_esc_closes_help_without_leaving_the_screen() -> None:
    async with running() as (app, pilot):
        await pilot.press("4", "question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen) and active(app) == "elastic"


# ←/→ -------------------------------------------------------------------------
async def test_arrows_switch_screens_from_a_focused_table() -> None:
    async with running() as (app, pilot):
        await pilot.press("right")  # the Overview's team table has the focus
        await pilot.pause()
        assert active(app) == "quota"
        await pilot.press("left", "left")
        await pilot.pause()
        assert active(app) == "incidents"  # wraps around
        await pilot.press("5", "right")  # from the Queue's JobTable too
        await pilot.pause()
        assert active(app) == "nodes"


async def test_arrows_move_the_filter_cursor_not_the_screen() -> None:
    async with running() as (app, pilot):
        await pilot.press("slash", *"abc")
        await pilot.pause()
        box = app.query_one("#filter", Input)
        assert app.focused is box and box.cursor_position == 3
        await pilot.press("left", "left")
        await pilot.pause()
        assert active(app) == "queue" and box.cursor_position == 1


async def test_arrows_do_nothing_under_a_dialog() -> None:
    async with running() as (app, pilot):
        await pilot.press("question_mark", "right")
        await pilot.pause()
        assert active(app) == "overview"


# sorting ---------------------------------------------------------------------
def header_text(table: SortableTable) -> list[str]:
    return [c.label.plain for c in table.columns.values()]


def first_column(table: SortableTable) -> list[str]:
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def test_shift_letter_sorts_the_queue_and_again_reverses() -> None:
    async with running() as (app, pilot):
        await pilot.press("5", "U")  # USER
        await pilot.pause()
        table = app.query_one(JobTable)
        users = [j.user for j in table.rows]
        assert table.sort_key == "user" and users == sorted(users)
        assert "USER▲" in screen_text(app)
        await pilot.press("U")
        await pilot.pause()
        assert [j.user for j in table.rows] == sorted(users, reverse=True)
        assert "USER▼" in screen_text(app)
        await pilot.press("A")  # AGE, a new column: ascending again
        await pilot.pause()
        assert table.sort_key == "age" and not table.sort_reverse
        await pilot.press("S")  # bound (reverse): keeps its meaning, not START/ST
        await pilot.pause()
        assert table.sort_key == "age" and table.sort_reverse


async def test_shift_letter_sorts_the_overview_and_the_header_shows_it() -> None:
    async with running() as (app, pilot):
        table = app.query_one("#teams", SortableTable)
        assert app.focused is table
        await pilot.press("U")  # "used"
        await pilot.pause()
        used_at = [str(k.value) for k in table.columns].index("used")
        used = [float(str(table.get_row_at(i)[used_at])) for i in range(table.row_count)]
        assert used == sorted(used) and "used▲" in header_text(table)
        await pilot.press("U")
        await pilot.pause()
        used = [float(str(table.get_row_at(i)[used_at])) for i in range(table.row_count)]
        assert used == sorted(used, reverse=True) and "used▼" in header_text(table)
        await pilot.press("T")  # "team" (the first title with a T)
        await pilot.pause()
        assert first_column(table) == sorted(first_column(table))
        assert header_text(table)[0] == "team▲"


async def test_a_sort_survives_the_next_refresh() -> None:
    async with running() as (app, pilot):
        table = app.query_one("#teams", SortableTable)
        await pilot.press("T", "T")
        await pilot.pause()
        before = first_column(table)
        assert before == sorted(before, reverse=True)
        app.refresh_now()
        await pilot.pause(0.3)
        assert first_column(table) == before and header_text(table)[0] == "team▼"


async def test_a_header_click_sorts_the_overview() -> None:
    async with running() as (app, pilot):
        table = app.query_one("#teams", SortableTable)
        await pilot.click("#teams", offset=(2, 0))  # the "team" header
        await pilot.pause()
        assert table.sort_column == "team" and header_text(table)[0] == "team▲"
        await pilot.click("#teams", offset=(2, 0))
        await pilot.pause()
        assert table.sort_reverse and header_text(table)[0] == "team▼"


def test_sort_value_reads_quantities_with_their_units() -> None:
    values = ["2h", "45m", "1.2k", "9", "10", "—", "", "prod", "60%"]
    assert sorted(values, key=sort_value) == ["9", "10", "60%", "1.2k", "45m", "2h", "prod",
                                              "—", ""]


# export and screenshot -------------------------------------------------------
def notes(app: QuotatopApp) -> list[str]:
    return [n.message for n in app._notifications]


async def wait_for(pilot: Pilot, paths: Callable[[], list[Path]]) -> list[Path]:
    for _ in range(100):
        await pilot.pause(0.02)
        if paths():
            break
    await pilot.pause(0.05)
    return paths()


async def test_e_exports_the_queue_as_shown_to_csv(tmp_path: Path) -> None:
    async with running(size=(80, 24)) as (app, pilot):
        app.export_dir = tmp_path
        await pilot.press("slash", *"team:exp", "enter", "U", "e")
        [path] = await wait_for(pilot, lambda: sorted(tmp_path.glob("*.csv")))
        assert path.name.startswith("quotatop-queue-")
        rows = list(csv.reader(path.open(encoding="utf-8")))
        # Every column, also those 80 columns drop (N, UTIL, NODES), and the filter's rows
        # in the sort order on screen.
        assert rows[0] == ["JOBID", "USER", "TEAM", "QOS", "ST", "GPU", "N", "AGE", "START",
                           "UTIL", "PENDING REASON", "NODES"]
        table = app.query_one(JobTable)
        assert [r[0] for r in rows[1:]] == [j.id for j in table.rows]
        assert {r[2] for r in rows[1:]} == {"exp"}
        assert f"exported to {path}" in notes(app)


async def test_shift_e_exports_the_overview_to_json(tmp_path: Path) -> None:
    async with running() as (app, pilot):
        app.export_dir = tmp_path
        await pilot.press("T", "E")  # sorted by team, then exported
        [path] = await wait_for(pilot, lambda: sorted(tmp_path.glob("*.json")))
        records = json.loads(path.read_text(encoding="utf-8"))
        assert path.name.startswith("quotatop-overview-")
        assert [r["team"] for r in records] == sorted(r["team"] for r in records)
        assert {"guarantee", "used", "util"} <= set(records[0])  # titles, arrow stripped
        assert any(path.name in n for n in notes(app))


async def test_export_goes_to_the_current_directory_by_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    async with running() as (_app, pilot):
        await pilot.press("8", "e")  # the Incidents table (empty here: a header only)
        [path] = await wait_for(pilot, lambda: sorted(tmp_path.glob("*.csv")))
        assert path.parent == tmp_path and path.read_text().startswith(",kind,since")


async def test_ctrl_s_saves_an_svg_screenshot(tmp_path: Path) -> None:
    async with running() as (app, pilot):
        app.export_dir = tmp_path
        await pilot.press("3", "ctrl+s")
        await pilot.pause()
        [path] = sorted(tmp_path.glob("*.svg"))
        assert path.name.startswith("quotatop-priority-")
        assert "<svg" in path.read_text(encoding="utf-8")
        assert f"screenshot saved to {path}" in notes(app)


def test_export_dir_comes_from_the_config(tmp_path: Path) -> None:
    from quotatop.cli import build_parser
    from quotatop.tui_launch import resolve

    cfg = tmp_path / "qt.toml"
    cfg.write_text('[tui]\nexport_dir = "~/exports"\n', encoding="utf-8")
    launch = resolve(build_parser().parse_args(["--config", str(cfg)]))
    assert launch.export_dir == Path("~/exports").expanduser()
    cfg.write_text("", encoding="utf-8")
    assert resolve(build_parser().parse_args(["--config", str(cfg)])).export_dir is None


# detail texts ----------------------------------------------------------------
async def test_incident_detail_shows_times_not_epochs() -> None:
    from tui_fixtures import NOW

    from quotatop.incidents import Incident
    from quotatop.tui.live_incidents import IncidentState, LiveIncidents

    storm = Incident(kind="queue_storm", opened_at=NOW - 600, teams=["exp"],
                     summary="exp submitted 400 jobs in 5m",
                     details={"peak_at": NOW - 240, "peak_queue_depth": 412.0,
                              "queue_depth_before": 12.5})

    class Fixed(LiveIncidents):
        def feed(self, snap):  # type: ignore[no-untyped-def]
            return IncidentState(open=[storm])

    app = QuotatopApp(FixedCollector(), refresh=60, clock=frozen_clock, incidents=Fixed())
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("8")
        await pilot.pause(0.2)
        detail = str(app.query_one("#inc-detail").render())
        assert "peak_at=" in detail and str(NOW - 240) not in detail
        # NOW is 2025-06-15 15:06:45 UTC, the frame 5 s older: the peak was 235 s before
        # the frame.
        assert "peak_at=15:02:45 UTC (3m55s ago)" in detail
        assert "peak_queue_depth=412 " in detail and "queue_depth_before=12.5" in detail


def test_job_detail_title_says_the_id_once() -> None:
    from quotatop.collectors.model import Job
    from quotatop.tui.modals import detail_title

    assert detail_title(Job(id="1001", name="prod-train-1001")) == "job prod-train-1001"
    assert detail_title(Job(id="train-a", name="train-a")) == "job train-a"
    assert detail_title(Job(id="77", name="")) == "job 77"
    assert detail_title(Job(id="1", name="run-100")) == "job 1  run-100"


def test_job_detail_says_a_reason_the_binding_repeats_once() -> None:
    from quotatop.collectors.model import PENDING, Job
    from quotatop.tui.modals import detail_text
    from quotatop.tui.predictions import Prediction

    job = Job(id="9", name="x", state=PENDING, reason="Resources")
    same = Prediction(start=None, binding="waiting for free nodes/GPUs")
    text = detail_text(job, same, "gpu", 0.0).plain
    assert text.count("waiting for free nodes/GPUs") == 1
    assert "reason" in text and "binding" not in text
    other = Prediction(start=None, binding="team exp at its guarantee of 24 gpu")
    text = detail_text(job, other, "gpu", 0.0).plain
    assert "reason" in text and "binding         team exp" in text


def test_the_queue_shows_each_jobs_gpu_utilization_and_drops_it_first_when_narrow() -> None:
    from quotatop.collectors.model import Job
    from quotatop.tui.predictions import Predictions
    from quotatop.tui.widgets.job_table import COLUMNS, TableContext, fit_columns

    col = next(c for c in COLUMNS if c.key == "util")
    ctx = TableContext(now=0.0, unit="gpu", predictions=Predictions(),
                       gpu_util={"1": 12.4, "2": None})
    assert [col.text(Job(id=i), ctx) for i in ("1", "2", "3")] == ["12%", "?", "—"]
    assert "util" in {c.key for c in fit_columns(200)}
    assert "util" not in {c.key for c in fit_columns(80)}
