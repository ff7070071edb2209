__version__: str

StepTeams = list[tuple[str, float, int]]

def fifo_simulate(
    caps: list[tuple[str, float]], events: list[tuple[str, str, float]]
) -> tuple[list[tuple[str | int, StepTeams]], int]:
    """Per-team FIFO under a cap (the seed article's ClusterQuota).

    Raises ValueError naming the step for an unknown team or op."""

def predict_msgpack(snapshot: bytes, policy: bytes, horizon: float) -> bytes:
    """msgpack Snapshot + msgpack Policy -> msgpack list of Prediction arrays
    (decode with quotatop.scheduler_core.types.Prediction): job_id, state, start, end, nodes,
    reason, preempts, priority, factors, binding, runtime, runtime_basis (new fields
    are appended at the end). ValueError on bad input."""

def predict_rows_msgpack(snapshot: bytes, policy: bytes, horizon: float) -> tuple[bytes, bytes]:
    """Like predict_msgpack, but (concatenated msgpack Prediction rows, little-endian
    u64 offsets of each row plus the end): rows are decoded only when read."""

def predict_windows_msgpack(snapshot: bytes, policy: bytes, horizon: float, samples: int,
                            seed: int) -> bytes:
    """msgpack list of (job_id, p10, p50, p90) start windows of every pending job, in
    queue order, over ``samples`` plans with run times drawn from each job's history
    (decode with quotatop.scheduler_core.types.StartWindow). ValueError on bad input."""

def fairshare_msgpack(snapshot: bytes, policy: bytes) -> bytes:
    """msgpack Snapshot + msgpack Policy -> msgpack list of FairShareRow arrays (team,
    raw_shares, raw_usage, norm_shares, norm_usage, level_fs, factor), in team order.
    ValueError on bad input."""

def simulate_msgpack(input: bytes, policy: bytes) -> bytes:
    """msgpack {"cluster": Snapshot, "jobs": [SimJob], "start"?, "until"?} +
    msgpack Policy -> msgpack SimResult array. ValueError on bad input."""

def check_policy(policy: bytes) -> None:
    """Raises ValueError naming the first bad setting of a msgpack Policy."""

def snapshot_stats(data: bytes) -> dict[str, float | int]:
    """Decode a msgpack snapshot the core's lean way and return counts (nodes, jobs, ...)."""

def snapshot_stats_owned(data: bytes) -> dict[str, float | int]:
    """The same through the full owned serde mirror: the crossing baseline."""

def _panic_for_test() -> None:
    """Panics inside the core's guard; raises ValueError (tests the guard)."""

def prune_json_keys(data: bytes, member: str, keep: list[str]) -> bytes:
    """``data`` with only ``keep`` in each object of the top-level array ``member``
    (generic JSON key pruning from json_prune/, no part of scheduling; it is built into
    this extension so that one build gives it). Values are copied byte for byte; a key
    written with an escape is kept. Raises ValueError (with the byte offset) when
    ``data`` is not JSON."""
