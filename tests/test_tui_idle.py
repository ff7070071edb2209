"""A TUI left open is a good citizen (issue #32): what an unchanged cluster costs, and
what a long session keeps, held by count (no timing: bench/soak.py measures CPU).

Found by tracemalloc on the default demo tour: every refresh rebuilt the footer's keys
(the Overview asked for its bindings again on each paint) and Textual's Footer kept
every key it removed (1,550 after 100 refreshes); and each refresh drew every chart
three times (for the data, for the core's answer, for the incidents)."""

from __future__ import annotations

import gc
from typing import Any

import msgspec
from tests_tui_helpers import loaded, refreshed
from textual.app import App, ComposeResult
from textual.widgets import Static
from textual.widgets._footer import FooterKey
from tui_fixtures import FixedCollector, frozen_clock, snapshot

from quotatop.tui.app import QuotatopApp
from quotatop.tui.paint import update_static
from quotatop.tui.views.overview import OverviewView
from quotatop.tui.widgets.charts import Chart


def _footer_keys() -> int:
    gc.collect()
    return sum(isinstance(o, FooterKey) for o in gc.get_objects())


async def test_the_footer_keeps_no_key_it_removed() -> None:
    app = QuotatopApp(FixedCollector(snapshot()), refresh=60.0, clock=frozen_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        shown = len(app.screen.query(FooterKey))
        for key in "23456781" * 3:  # each screen switch rebuilds the footer's keys
            await pilot.press(key)
            await pilot.pause()
        for _ in range(20):
            app.screen.refresh_bindings()
            await pilot.pause()
        await pilot.pause(0.1)
        assert shown > 0 and _footer_keys() <= 2 * shown


async def test_an_overview_repainted_with_the_same_data_redraws_nothing() -> None:
    app = QuotatopApp(FixedCollector(snapshot()), refresh=60.0, clock=frozen_clock)
    drawn: list[Chart] = []
    async with app.run_test(size=(120, 48)) as pilot:
        await loaded(pilot)
        await pilot.pause(0.1)
        keys_before = _footer_keys()
        overview = app.query_one(OverviewView)
        charts = [c for c in overview.query(Chart) if c.display]
        assert charts  # the Overview has room for its charts at this size
        for c in charts:
            original = c.plt.clear_figure
            c.plt.clear_figure = lambda c=c, original=original: (drawn.append(c), original())[1]
        for _ in range(5):
            overview.repaint()
            await pilot.pause()
        assert drawn == []
        assert _footer_keys() <= keys_before  # no refresh_bindings per paint
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        overview.repaint()
        await pilot.pause()
        assert set(drawn) == set(charts)  # a new theme is a reason to draw again


async def test_an_unchanged_cluster_is_painted_once() -> None:
    """An idle cluster's collects (new snapshots, taken later, equal in content) cost a
    header line each, not a paint of the view, until UNCHANGED_REPAINT passes."""
    base = snapshot()
    frames = [base, *(msgspec.structs.replace(base, taken_at=base.taken_at + i)
                      for i in range(1, 6))]
    source = FixedCollector(*frames)
    app = QuotatopApp(source, refresh=60.0, clock=frozen_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        overview = app.query_one(OverviewView)
        painted: list[float] = []
        original = overview.show_data
        overview.show_data = lambda data: (painted.append(data.snap.taken_at), original(data))[1]
        shown = app.data.snap if app.data is not None else None
        for _ in range(5):
            await refreshed(pilot)
        assert source.calls == 6
        assert painted == []
        assert app.data is not None and app.data.snap is shown
        assert app.snapshot is not None and app.snapshot.taken_at == base.taken_at + 5


async def test_the_header_ticking_lays_out_nothing() -> None:
    """The header's age changes every second; a layout of the screen repaints every
    chart beside it, so a line of the same size is painted in place."""
    app = QuotatopApp(FixedCollector(snapshot()), refresh=60.0, clock=frozen_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        await pilot.pause(0.1)
        header = app.main.query_one("#header", Static)
        layouts: list[bool] = []
        original = header.refresh

        def spy(*regions: Any, **kw: Any) -> Any:
            layouts.append(bool(kw.get("layout")))
            return original(*regions, **kw)

        header.refresh = spy  # type: ignore[method-assign]
        for shift in range(1, 6):
            now = frozen_clock() + shift
            app.clock = lambda now=now: now  # type: ignore[misc]
            app._tick()
            await pilot.pause()
        assert layouts and not any(layouts)


class _Grows(App[None]):
    CSS = "Static { width: 20; } #auto { width: auto; }"

    def compose(self) -> ComposeResult:
        yield Static("one line", id="fixed")
        yield Static("short", id="auto")


async def test_a_static_whose_content_changes_size_is_laid_out_again() -> None:
    app = _Grows()
    async with app.run_test(size=(80, 20)) as pilot:
        fixed, auto = app.query_one("#fixed", Static), app.query_one("#auto", Static)
        assert fixed.size.height == 1 and auto.size.width == len("short")
        update_static(fixed, "a line too long for twenty columns")  # wraps: two lines
        update_static(auto, "a little longer")
        await pilot.pause()
        assert fixed.size.height == 2 and auto.size.width == len("a little longer")
        update_static(fixed, "one line again")
        await pilot.pause()
        assert fixed.size.height == 1


async def test_a_view_covered_by_help_or_the_report_is_painted_when_shown_again() -> None:
    """Help or the report left open over a changing cluster: the view beneath is not
    painted on each refresh (its charts were rendered under the overlay), and shows
    the newest frame once it is uncovered."""
    base = snapshot()
    frames = [msgspec.structs.replace(base, taken_at=base.taken_at + i,
                                      jobs=base.jobs[: len(base.jobs) - i])
              for i in range(4)]
    app = QuotatopApp(FixedCollector(*frames), refresh=60.0, clock=frozen_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        overview = app.query_one(OverviewView)
        painted: list[float] = []
        original = overview.show_data
        overview.show_data = lambda data: (painted.append(data.snap.taken_at), original(data))[1]
        for key in ("question_mark", "m"):
            await pilot.press(key)
            await pilot.pause()
            assert app.screen is not app.main
            await refreshed(pilot)
            assert painted == []
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is app.main
            assert app.data is not None and painted == [app.data.snap.taken_at]
            painted.clear()


async def test_the_same_lists_again_are_neither_escaped_nor_hashed_whole(
        monkeypatch: Any) -> None:
    """A source that hands back the same job, node and team lists for the same answers
    (the Slurm collector) costs a refresh no walk of its jobs: neither the escaping
    scan nor the content hash sees them after the first equal frame."""
    import quotatop.tui.session as session

    base = snapshot()
    frames = [msgspec.structs.replace(base, taken_at=base.taken_at + i) for i in range(6)]
    whole: list[int] = []
    digest, escape = session.content_digest, session.printable_tree

    def counted(fn: Any) -> Any:
        def call(snap: Any) -> Any:
            if getattr(snap, "jobs", None):
                whole.append(len(snap.jobs))
            return fn(snap)
        return call

    monkeypatch.setattr(session, "content_digest", counted(digest))
    monkeypatch.setattr(session, "printable_tree", counted(escape))
    source = FixedCollector(*frames)
    app = QuotatopApp(source, refresh=60.0, clock=frozen_clock)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        for _ in range(5):
            await refreshed(pilot)
        assert source.calls == 6
        assert app.snapshot is not None and app.snapshot.taken_at == base.taken_at + 5
    # the first frame and the first equal one are looked at whole; the other four not
    assert len(whole) == 4, whole
