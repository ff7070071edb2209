"""predict releases the GIL while the core works, and predict_batch gives the
same predictions as predict, decoded row by row."""

from __future__ import annotations

import threading
import time

import msgspec

from quotatop import scheduler_core
from quotatop.collectors.model import Job, Node, Snapshot, Team

NOW = 1.7e9


def busy_cluster(pending: int, n_nodes: int) -> bytes:
    nodes = [Node(name=f"g{i}", capacity={"cpu": 64, "gpu": 8}) for i in range(n_nodes)]
    jobs = [Job(id=f"r{i}", team=f"t{i % 7}", state="running", request={"cpu": 8, "gpu": 8},
                nodes=[f"g{i}"], start_time=NOW - 60, time_limit=600.0 * (1 + i % 50))
            for i in range(n_nodes)]
    jobs += [Job(id=str(i), user=f"u{i % 13}", team=f"t{i % 7}",
                 request={"cpu": 8, "gpu": float(1 + i % 8)}, time_limit=900.0 * (1 + i % 9),
                 submit_time=NOW - i) for i in range(pending)]
    teams = [Team(name=f"t{i}", max={"gpu": n_nodes * 2.0}) for i in range(7)]
    return msgspec.msgpack.encode(Snapshot(taken_at=NOW, nodes=nodes, teams=teams, jobs=jobs))


def test_predict_releases_the_gil_so_other_threads_run() -> None:
    data = busy_cluster(30_000, 1_500)
    policy = msgspec.msgpack.encode(scheduler_core.Policy())
    ticks = 0
    stop = threading.Event()

    def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.0005)

    th = threading.Thread(target=ticker)
    th.start()
    try:
        time.sleep(0.01)
        counts = []
        for _ in range(3):
            before = ticks
            scheduler_core.predict_msgpack(data, policy, 86400.0)
            counts.append(ticks - before)
    finally:
        stop.set()
        th.join()
    # With the GIL held for the whole call the ticker could not run at all.
    assert max(counts) > 3, counts


def test_predict_batch_matches_predict_and_decodes_lazily() -> None:
    data = busy_cluster(300, 20)
    policy = scheduler_core.Policy(backfill="conservative")
    full = scheduler_core.predict(data, policy, 86400.0)
    batch = scheduler_core.predict_batch(data, policy, 86400.0)
    assert len(batch) == len(full) == 300
    assert list(batch) == full
    assert batch[0] == full[0] and batch[-1] == full[-1]
    assert batch[10:13] == full[10:13]
    assert any(p.start is not None and p.start > NOW for p in batch)
    assert scheduler_core.predict_batch(msgspec.msgpack.encode(Snapshot()), None, 60.0)[:] == []
