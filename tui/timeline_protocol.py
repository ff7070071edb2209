"""What the Timeline screen needs from a replay: the capability is the Collector
protocol's (collectors/base.py), re-exported here with the speeds the screen offers.
The TUI finds it with ``timeline_of(collector)``."""

from __future__ import annotations

# Collectors never import the TUI: the protocol and the mark are theirs, re-exported here.
from quotatop.collectors.base import TimelineControl, timeline_of
from quotatop.collectors.timeline_base import IncidentMark

__all__ = ["SPEEDS", "IncidentMark", "TimelineControl", "timeline_of"]

SPEEDS = (1.0, 2.0, 5.0, 10.0, 50.0, 100.0, 1000.0)
