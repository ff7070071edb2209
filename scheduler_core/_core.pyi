__version__: str

StepTeams = list[tuple[str, float, int]]

def fifo_simulate(
    caps: list[tuple[str, float]], events: list[tuple[str, str, float]]
) -> tuple[list[tuple[str | int, StepTeams]], int]:
    """Per-team FIFO under a cap (the seed article's ClusterQuota).

    Raises ValueError naming the step for an unknown team or op."""

def snapshot_stats(data: bytes) -> dict[str, float | int]:
    """Decode a msgpack snapshot in Rust and return counts (nodes, jobs, ...)."""
