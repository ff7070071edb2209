"""The Overview's account tree: sub-accounts under their parents, a parent row holding
its subtree (counted once), folded and unfolded from the keyboard."""

from __future__ import annotations

from tests_tui_helpers import loaded, screen_text
from textual.pilot import Pilot
from textual.widgets import DataTable
from tui_fixtures import NOW, FixedCollector, frozen_clock

from quotatop.collectors.model import RUNNING, Job, Node, Snapshot, Team
from quotatop.tui.app import QuotatopApp
from quotatop.tui.derive import derive, visible_rows


def tree_snapshot() -> Snapshot:
    """Slurm-like: org holds a (with a1) and b; usage is rolled up by the source, job
    counts are not (each job is in its own account)."""
    def run(jid: str, team: str, gpus: float, node: str) -> Job:
        return Job(id=jid, team=team, user="u", state=RUNNING, request={"gpu": gpus},
                   nodes=[node], submit_time=NOW - 100, start_time=NOW - 50)

    teams = [Team(name="org", max={"gpu": 64.0}, usage={"gpu": 14.0}),
             Team(name="a", parent="org", max={"gpu": 40.0}, usage={"gpu": 10.0}),
             Team(name="a1", parent="a", max={"gpu": 8.0}, usage={"gpu": 2.0}),
             Team(name="b", parent="org", max={"gpu": 40.0}, usage={"gpu": 4.0}),
             Team(name="solo", max={"gpu": 8.0})]
    jobs = [run("1", "a", 8, "n0"), run("2", "a1", 2, "n1"), run("3", "b", 4, "n2"),
            Job(id="4", team="b", user="u", request={"gpu": 6.0}, submit_time=NOW - 10)]
    nodes = [Node(name=f"n{i}", capacity={"gpu": 8.0}, allocated={"gpu": a})
             for i, a in enumerate([8.0, 2.0, 4.0, 0, 0, 0, 0, 0])]
    return Snapshot(taken_at=NOW, source="slurm", teams=teams, jobs=jobs, nodes=nodes)


def test_parent_rows_roll_up_their_subtree_and_count_reported_usage_once() -> None:
    d = derive(tree_snapshot())
    rows = {r.name: r for r in d.teams}
    assert [(r.name, r.depth, r.kids) for r in d.teams] == [
        ("org", 0, 3), ("a", 1, 1), ("a1", 2, 0), ("b", 1, 0), ("solo", 0, 0)]
    # Jobs: each in its own account, rolled up the tree.
    assert (rows["org"].running, rows["org"].pending, rows["org"].queued) == (3, 1, 6.0)
    assert (rows["a"].running, rows["a1"].running) == (2, 1)
    # Usage: the source rolled it up already; it is not added again.
    assert (rows["org"].used, rows["a"].used, rows["a1"].used) == (14.0, 10.0, 2.0)


def test_usage_counted_from_jobs_is_rolled_up_by_the_view() -> None:
    snap = tree_snapshot()
    snap.teams = [Team(name=t.name, parent=t.parent, max=t.max) for t in snap.teams]
    rows = {r.name: r for r in derive(snap).teams}
    assert (rows["org"].used, rows["a"].used, rows["a1"].used, rows["b"].used) == \
        (14.0, 10.0, 2.0, 4.0)


def test_a_folded_parent_hides_its_subtree_only() -> None:
    tree = derive(tree_snapshot()).teams
    assert [r.name for r in visible_rows(tree, {"a"})] == ["org", "a", "b", "solo"]
    assert [r.name for r in visible_rows(tree, {"org"})] == ["org", "solo"]
    assert [r.name for r in visible_rows(tree, {"solo", "a1"})] == \
        ["org", "a", "a1", "b", "solo"]  # leaves have nothing to fold
    folded = visible_rows(tree, {"org"})[0]
    assert folded.folded and not tree[0].folded  # the derived rows stay as they were


def team_rows(app: QuotatopApp) -> str:
    """The Overview's team table as text, one row a line: the charts below it name
    the teams too and draw their own corners, so the screen as a whole cannot say
    which rows the tree shows."""
    table = app.query_one("#teams", DataTable)
    return "\n".join(" ".join(str(c) for c in table.get_row_at(i))
                     for i in range(table.row_count))


async def shows(pilot: Pilot, *texts: str, absent: tuple[str, ...] = (),
                screen: bool = False) -> str:
    """The team table (or the whole screen) once it shows every one of ``texts`` and
    none of ``absent`` (a repaint lands a few frames after the key), else as it is
    after ~2 s."""
    text = ""
    for _ in range(40):
        await pilot.pause(0.05)
        text = screen_text(pilot.app) if screen else team_rows(pilot.app)  # type: ignore[arg-type]
        if all(t in text for t in texts) and not any(t in text for t in absent):
            break
    return text


async def test_enter_folds_and_unfolds_the_parent_under_the_cursor() -> None:
    app = QuotatopApp(FixedCollector(tree_snapshot()), refresh=60, clock=frozen_clock)
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        text = team_rows(app)
        assert "▾ org" in text and "└ ▾ a" in text and "└ a1" in text
        app.query_one("#teams", DataTable).focus()
        # the footer names the keys
        assert "- Fold  + Unfold" in await shows(pilot, "- Fold", screen=True)
        await pilot.press("enter")  # the cursor is on org
        text = await shows(pilot, "▸ org +3")
        assert "▸ org +3" in text and "└" not in text and "solo" in text
        await pilot.press("enter")
        assert "└ ▾ a" in await shows(pilot, "└ ▾ a")
        await pilot.press("down", "minus")  # fold a: a1 goes, b stays
        text = await shows(pilot, "└ ▸ a +1")
        assert "└ ▸ a +1" in text and "a1" not in text and "└ b" in text
        await pilot.press("plus")
        assert "└ a1" in await shows(pilot, "└ a1")
