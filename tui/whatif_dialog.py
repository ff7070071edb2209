"""What-if (key ``w``): change a team's guarantee or max, a QoS's limits or priority, the
fair-share weights, or drain and add nodes on the snapshot on screen, and see each team's
predicted waits and starts before and after, side by side, with the commands an admin
would run to make the change, as text to copy.

The syntax is ``quotatop whatif --set``'s (review/whatif.py, docs/review.md);
several changes are separated by ``;``. Nothing is sent to the cluster. The core predicts
both snapshots in a thread worker (quotatop.review.whatif.whatif); the dialog only paints.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import DataTable, Input, Static, TextArea
from textual.widgets.data_table import CellDoesNotExist

from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Snapshot
from quotatop.review.whatif import Change, WhatifOutput, parse_set, whatif
from quotatop.tui.format import DASH, duration, num

HINT = ("team=NAME max.gpu=24 guarantee.gpu=8 shares=200 · qos=NAME priority=500 grp.gpu=16 · "
        "node=NAME state=drain · add_nodes=2 like=NODE · policy weight.fairshare=5000 · "
        "several: separate with ;")
COLUMNS = ("team", "pending", "starts ≤7d before", "after", "mean wait before", "after",
           "p90 wait before", "after")


def parse_changes(text: str) -> list[Change]:
    """``;``-separated ``--set`` texts; a UserError (one line) for the first bad one."""
    parts = [p.strip() for p in text.split(";") if p.strip()]
    if not parts:
        raise UserError("nothing to change; e.g. team=NAME max.gpu=24")
    return [parse_set(p) for p in parts]


def default_change(snap: Snapshot, selected: str | None, unit: str) -> str:
    """A starting point for the selected team (its max, else its guarantee, as it
    stands, to edit) or QoS (its priority); the first team when nothing is selected."""
    q = next((q for q in snap.qos if q.name == selected), None)
    if q is not None and not any(t.name == selected for t in snap.teams):
        if q.grp_tres and unit in q.grp_tres:
            return f"qos={q.name} grp.{unit}={num(q.grp_tres[unit])}"
        return f"qos={q.name} priority={q.priority}"
    t = next((t for t in snap.teams if t.name == selected), None)
    if t is None:
        t = snap.teams[0] if snap.teams else None
    if t is None:
        return "policy weight.fairshare=1000"
    for field, values in (("max", t.max), ("guarantee", t.guarantee)):
        if values and unit in values:
            return f"team={t.name} {field}.{unit}={num(values[unit])}"
    return f"team={t.name} max.{unit}="


def selected_row(view: Widget) -> str | None:
    """The key of the row under the cursor of the view's focused table (else its first):
    a team on the Overview and Quota screens, a QoS in the Quota screen's QoS table."""
    tables = list(view.query(DataTable))
    table = next((t for t in tables if t.has_focus), tables[0] if tables else None)
    if table is None or table.row_count == 0:
        return None
    try:
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
    except CellDoesNotExist:
        return None
    return None if key is None else str(key)


def _wait(v: float | None) -> str:
    return DASH if v is None else duration(v)


def _arrow(before: float | None, after: float | None) -> Text:
    """The after value, green when it waits less, red when more."""
    style = ""
    if before is not None and after is not None and abs(after - before) >= 1:
        style = "green" if after < before else "red"
    elif (before is None) != (after is None):
        style = "green" if after is not None else "red"
    return Text(_wait(after), style=style)


def team_rows(out: WhatifOutput) -> list[list[str | Text]]:
    rows: list[list[str | Text]] = []
    for t in out.teams:
        starts = Text(str(t.predicted_after),
                      style="" if t.predicted_after == t.predicted_before else
                      "green" if t.predicted_after > t.predicted_before else "red")
        rows.append([t.team, str(t.pending), str(t.predicted_before), starts,
                     _wait(t.mean_wait_before), _arrow(t.mean_wait_before, t.mean_wait_after),
                     _wait(t.p90_wait_before), _arrow(t.p90_wait_before, t.p90_wait_after)])
    return rows


def mover_lines(out: WhatifOutput) -> str:
    if not out.movers:
        return "no pending job's predicted start moves"
    words = []
    for m in out.movers:
        moved = ("gains a start" if m.start_before is None else
                 "loses its start" if m.start_after is None else
                 f"{'earlier' if (m.moved or 0) < 0 else 'later'} by {duration(abs(m.moved or 0))}")
        words.append(f"{m.job_id} ({m.team}) {moved}")
    return "moves most: " + " · ".join(words)


class WhatifScreen(ModalScreen[None]):
    """The dialog over the snapshot it was opened on (it stays that snapshot's)."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close")]  # q closes it, as every dialog

    def __init__(self, snap: Snapshot, selected: str | None, unit: str) -> None:
        super().__init__()
        self.snap = snap
        self.unit = unit
        self.first = default_change(snap, selected, unit)
        self.result: WhatifOutput | None = None
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="whatif-box"):
            where = f"{self.snap.cluster or 'cluster'} · {self.snap.source}"
            yield Static(f"What if… on {where} — predicted by the core; nothing is sent to "
                         "the cluster", id="whatif-title")
            yield Static(HINT, classes="hint")
            yield Input(value=self.first, id="whatif-input",
                        placeholder="team=NAME max.gpu=24; qos=NAME priority=500")
            yield Static("enter: predict before and after · esc: close", id="whatif-status")
            table: DataTable[str | Text] = DataTable(id="whatif-teams", cursor_type="row")
            yield table
            yield Static("", id="whatif-movers")
            yield Static("to make the change (not run; select and copy):", classes="hint")
            yield TextArea("", id="whatif-commands", read_only=True)

    def on_mount(self) -> None:
        self.query_one("#whatif-teams", DataTable).add_columns(*COLUMNS)
        self.query_one("#whatif-input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.ask(event.value)

    def ask(self, text: str) -> None:
        """Parse on the UI thread (cheap, and a typo answers at once); predict in a worker."""
        try:
            changes = parse_changes(text)
        except UserError as e:
            self._status(str(e), error=True)
            return
        self._status("predicting before and after…")
        self._predict(self.snap, changes)

    @work(thread=True, exclusive=True, group="whatif", description="what-if predict")
    def _predict(self, snap: Snapshot, changes: Sequence[Change]) -> None:
        try:
            out = whatif(snap, changes)
        except UserError as e:  # a name the snapshot does not hold, an inconsistent one
            self.app.call_from_thread(self._failed, str(e))
            return
        except Exception as e:  # the core's failure is a message, never a crash
            self.app.call_from_thread(self._failed, f"{type(e).__name__}: {e}")
            return
        self.app.call_from_thread(self._show, out)

    def _status(self, text: str, *, error: bool = False) -> None:
        status = self.query_one("#whatif-status", Static)
        status.update(text)
        status.set_class(error, "error")

    def _failed(self, message: str) -> None:
        self.error = message
        if self.is_attached:  # closed while the core computed: nothing to paint
            self._status(message, error=True)

    def _show(self, out: WhatifOutput) -> None:
        self.result, self.error = out, None
        if not self.is_attached:
            return
        table = self.query_one("#whatif-teams", DataTable)
        table.clear()
        for row in team_rows(out):
            table.add_row(*row)
        self.query_one("#whatif-movers", Static).update(mover_lines(out))
        self.query_one("#whatif-commands", TextArea).load_text("\n".join(out.commands))
        self._status(f"what if {'; '.join(out.changes)}: waits from the snapshot's time, "
                     "before → after")
