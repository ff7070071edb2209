"""What every screen receives on each refresh, and the base class they share."""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.containers import Vertical

from quotatop.collectors.footprint import Footprint
from quotatop.collectors.model import Snapshot, Team
from quotatop.tui.chart_data import ChartHistory
from quotatop.tui.derive import Derived
from quotatop.tui.live_incidents import IncidentState
from quotatop.tui.predictions import Predictions

_SOURCE_NAMES = {"slurm": "Slurm", "k8s": "Kubernetes", "kube": "Kubernetes",
                 "kueue": "Kueue", "prometheus": "Prometheus", "demo": "demo",
                 "replay": "replay"}


@dataclass
class ViewData:
    snap: Snapshot
    derived: Derived
    predictions: Predictions
    now: float
    history: dict[str, list[float]] = field(default_factory=dict)
    incidents: IncidentState = field(default_factory=IncidentState)
    footprint: Footprint | None = None  # quotatop's own, when the app measures it
    charts: ChartHistory = field(default_factory=ChartHistory)  # the app's, shared, bounded


def source_label(team: Team | None, snap: Snapshot) -> str:
    """The source a team's quota came from, in words (for "no guarantee (Slurm)")."""
    texts = [*(team.source_notes if team else []), snap.source]
    for text in texts:
        low = text.lower()
        for key, name in _SOURCE_NAMES.items():
            if key in low:
                return name
    return snap.source or "source"


def no_guarantee(team: Team | None, snap: Snapshot) -> str:
    return f"no guarantee ({source_label(team, snap)})"


class View(Vertical):
    """A screen's content. ``show_data`` is called with fresh data when the view
    is visible (or becomes visible); it must only paint, never compute much.

    A view keeps no ViewData of its own: a hidden view holding one would keep a
    replaced snapshot (100k jobs: ~100 MB) alive. ``repaint`` asks the app."""

    title = ""

    def show_data(self, data: ViewData) -> None:
        raise NotImplementedError

    def repaint(self) -> None:
        """Paint the app's current data again (after a resize: what fits changed)."""
        data: ViewData | None = getattr(self.app, "data", None)
        if data is not None and self.size.width:
            self.show_data(data)

    def release(self) -> None:
        """Hidden while a newer snapshot arrived: drop references to the old
        one's jobs (it is painted afresh when shown)."""
