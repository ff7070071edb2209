"""quotatop's scheduling core (Rust, via PyO3). See ``_core.pyi`` for the API."""

from scheduler_core._core import __version__, fifo_simulate, snapshot_stats

__all__ = ["__version__", "fifo_simulate", "snapshot_stats"]
