"""Nodes: a grid of nodes × GPUs — free, used (team colour and letter),
stranded — with partitions and node states."""

from __future__ import annotations

from collections import Counter, defaultdict

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from quotatop.collectors.model import RUNNING, Snapshot
from quotatop.tui.derive import DOWN_STATES, node_is_stranding
from quotatop.tui.format import num, until
from quotatop.tui.theme_colors import team_color
from quotatop.tui.views.base import View, ViewData
from quotatop.tui.widgets.node_grid import FREE, STRANDED, UNKNOWN, NodeCell, NodeGrid


def team_letters(names: list[str]) -> dict[str, str]:
    """A distinct letter per team: its initial, else the next free letter of its name."""
    taken: set[str] = set()
    out: dict[str, str] = {}
    for n in names:
        pick = next((c.upper() for c in n if c.isalnum() and c.upper() not in taken), None)
        if pick is None:
            pick = next(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" if c not in taken)
        taken.add(pick)
        out[n] = pick
    return out


def node_usage(snap: Snapshot, unit: str) -> dict[str, list[tuple[str, int]]]:
    """Per node: (team, units) from running jobs, spreading a multi-node job evenly."""
    per: dict[str, Counter[str]] = defaultdict(Counter)
    for j in snap.jobs:
        if j.state != RUNNING or not j.nodes:
            continue
        share = j.request.get(unit, 0.0) / len(j.nodes)
        for n in j.nodes:
            per[n][j.team] += share
    return {n: [(t, round(v)) for t, v in sorted(c.items())] for n, c in per.items()}


def node_cells(snap: Snapshot, unit: str) -> list[NodeCell]:
    """One small tuple per node for the windowed grid (formatted when on screen)."""
    letters = team_letters([t.name for t in snap.teams])
    usage = node_usage(snap, unit)
    out: list[NodeCell] = []
    for n in snap.nodes:
        state = n.state
        out.append((n.name, state, state.lower().rstrip("*~#") in DOWN_STATES,
                    node_is_stranding(state, n.capacity, n.allocated, unit),
                    int(n.capacity.get(unit, 0)), int(n.allocated.get(unit, 0)),
                    [(letters.get(team, UNKNOWN), team, amount)
                     for team, amount in usage.get(n.name, [])]))
    return out


def reservation_lines(snap: Snapshot, most: int = 6) -> list[Text]:
    """One line per advanced reservation (its nodes take only the jobs that ask for
    it): name, nodes, window relative to the snapshot, who may use it."""
    now = snap.taken_at
    out: list[Text] = []
    for r in sorted(snap.reservations, key=lambda r: r.start)[:most]:
        nodes = ",".join(r.nodes[:4]) + (f" +{len(r.nodes) - 4}" if len(r.nodes) > 4 else "")
        end = "no end" if r.end is None else f"ends {until(r.end, now)}"
        when = (f"active, {end}" if r.start <= now
                else f"starts {until(r.start, now)}, {end}")
        who = ",".join([*r.users, *r.accounts]) or "no users listed"
        line = Text()
        line.append("reserved ", style="bold")
        line.append(f"{r.name:<10}", style="bold yellow")
        line.append(f" {nodes or '(no nodes)'}  {when}  for {who}")
        out.append(line)
    if len(snap.reservations) > most:
        out.append(Text(f"reserved   +{len(snap.reservations) - most} more", style="dim"))
    return out


def summary_text(snap: Snapshot, unit: str) -> Text:
    t = Text()
    states = Counter(n.state for n in snap.nodes)
    t.append("states  ", style="bold")
    t.append("  ".join(f"{s} {c}" for s, c in sorted(states.items())))
    by_part: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for n in snap.nodes:
        for p in n.partitions or ["(none)"]:
            v = by_part[p]
            v[0] += 1
            v[1] += n.capacity.get(unit, 0.0)
            v[2] += n.allocated.get(unit, 0.0)
    pstate = {p.name: p.state for p in snap.partitions}
    for name, (count, cap, used) in sorted(by_part.items()):
        t.append(f"\n{name:<10}", style="bold")
        t.append(f" {pstate.get(name, 'up'):<5} {int(count)} nodes  {num(used)}/{num(cap)} "
                 f"{unit} used")
    for line in reservation_lines(snap):
        t.append("\n")
        t.append_text(line)
    letters = team_letters([x.name for x in snap.teams])
    t.append("\nlegend  ", style="bold")
    for name, letter in letters.items():
        t.append(f" {letter} ", style=f"bold #000000 on {team_color(name)}")
        t.append(f" {name}  ")
    t.append(f"{FREE} free  ", style="green")
    t.append(f"{STRANDED} stranded", style="red")
    return t


class NodesView(View):
    title = "Nodes"

    def compose(self) -> ComposeResult:
        yield Static(id="node-summary")
        yield NodeGrid(id="grid")

    def show_data(self, data: ViewData) -> None:
        snap, unit = data.snap, data.derived.unit
        if not snap.nodes:
            self.query_one("#node-summary", Static).update(
                Text("this source reports no nodes", style="dim"))
            self.query_one(NodeGrid).set_nodes([], 80)
            return
        self.query_one("#node-summary", Static).update(summary_text(snap, unit))
        width = max(40, (self.size.width or 80) - 2)
        self.query_one(NodeGrid).set_nodes(node_cells(snap, unit), width)

    def on_resize(self) -> None:
        self.repaint()
