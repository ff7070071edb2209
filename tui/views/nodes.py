"""Nodes: a grid of nodes × GPUs — free, used (team colour and letter),
stranded — with partitions and node states."""

from __future__ import annotations

from collections import Counter, defaultdict

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from collectors.model import RUNNING, Snapshot
from tui.derive import DOWN_STATES, node_is_stranding
from tui.format import num
from tui.theme_colors import team_color
from tui.views.base import View, ViewData

MAX_NODES = 600  # beyond this the grid is summarised; a page of cells is what a person reads
FREE, STRANDED, UNKNOWN = "·", "✕", "?"


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


def grid_text(snap: Snapshot, unit: str, width: int) -> Text:
    letters = team_letters([t.name for t in snap.teams])
    usage = node_usage(snap, unit)
    nodes = snap.nodes[:MAX_NODES]
    name_w = max([len(n.name) for n in nodes] + [4])
    cap_w = max([int(n.capacity.get(unit, 0)) for n in nodes] + [1])
    cell_w = name_w + 1 + 5 + 1 + cap_w + 3
    per_line = max(1, width // cell_w)
    t = Text()
    for i, n in enumerate(nodes):
        cap = int(n.capacity.get(unit, 0))
        alloc = int(n.allocated.get(unit, 0))
        state = n.state
        down = node_is_stranding(state, n.capacity, n.allocated, unit)
        t.append(f"{n.name:<{name_w}} ", style="bold")
        t.append(f"{state[:5]:<5} ",
                 style="red" if state.lower().rstrip("*~#") in DOWN_STATES else "dim")
        cells = 0
        for team, amount in usage.get(n.name, []):
            k = min(amount, cap - cells)
            t.append(letters.get(team, UNKNOWN) * k, style=f"bold #000000 on {team_color(team)}")
            cells += k
        if alloc > cells:  # allocated but no job we know of holds it
            t.append(UNKNOWN * (alloc - cells), style="reverse")
            cells = alloc
        rest = max(0, cap - cells)
        t.append((STRANDED if down else FREE) * rest, style="red" if down else "green")
        t.append(" " * (cap_w - cap))
        t.append("\n" if (i + 1) % per_line == 0 else "   ")
    if len(snap.nodes) > MAX_NODES:
        t.append(f"\n… {len(snap.nodes) - MAX_NODES:,} more nodes (see partitions above)",
                 style="dim")
    return t


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
    DEFAULT_CSS = """
    NodesView #node-summary { height: auto; padding: 0 1 1 1; }
    NodesView #grid-scroll { height: 1fr; }
    NodesView #grid { padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="node-summary")
        with VerticalScroll(id="grid-scroll"):
            yield Static(id="grid")

    def show_data(self, data: ViewData) -> None:
        self._data = data
        snap, unit = data.snap, data.derived.unit
        if not snap.nodes:
            self.query_one("#node-summary", Static).update(
                Text("this source reports no nodes", style="dim"))
            self.query_one("#grid", Static).update("")
            return
        self.query_one("#node-summary", Static).update(summary_text(snap, unit))
        width = max(40, (self.size.width or 80) - 2)
        self.query_one("#grid", Static).update(grid_text(snap, unit, width))

    def on_resize(self) -> None:
        data = getattr(self, "_data", None)
        if data is not None:
            self.show_data(data)
