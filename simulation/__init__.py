"""Simulation: scenarios (demo_data/*.toml) and workload traces (demo_data/traces/) played
through the scheduling core, and the sources that show a play as snapshots.

A room of the middle floor (docs/architecture.md): it imports the snapshot model and the
Collector protocol below it, the incident detectors and the core; never the TUI or the
command line above it."""

from __future__ import annotations

from pathlib import Path

# The bundled scenarios and traces, beside the packages (in the repository and in the wheel).
DEMO_DATA = Path(__file__).resolve().parent.parent / "demo_data"
