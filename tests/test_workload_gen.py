"""The fidelity workload generator makes only workloads Slurm accepts: checked here over
many seeds without a cluster (a fresh seed's refused sbatch fails the whole fidelity run)."""

from __future__ import annotations

from collections import Counter

from harness.workload_gen import (
    HIGH_SUBMIT_PER_USER,
    MAX_QUEUE,
    MIN_WAITING,
    _gpus,
    generate,
    waiting_floor,
)


def test_no_user_submits_more_high_qos_jobs_at_once_than_the_qos_allows() -> None:
    for seed in range(500):
        w = generate(seed)
        # The history is submitted at once and ends before the fill and the held queue,
        # which are in the queue together.
        for batch in (w.history, w.fill + w.queue):
            high = Counter(g.spec.user for g in batch if g.spec.qos == "high")
            assert max(high.values(), default=0) <= HIGH_SUBMIT_PER_USER, (seed, high)


def test_the_same_seed_makes_the_same_workload() -> None:
    assert generate(1234).describe() == generate(1234).describe()
    assert generate(1234).queue == generate(1234).queue


def test_every_queue_meets_a_full_cluster() -> None:
    """By construction, not by choosing seeds: at least MIN_WAITING queue jobs cannot
    start beside the fill (seed 1459558672 once left only 18 of 32 pending)."""
    for seed in [*range(500), 1459558672]:
        w = generate(seed)
        assert w.waiting >= MIN_WAITING, (seed, w.describe())
        assert 28 <= len(w.queue) <= MAX_QUEUE, (seed, len(w.queue))


def test_the_waiting_floor_is_a_floor() -> None:
    """Against a brute force on small cases: no order of the queue starts more jobs
    than the floor leaves (the cluster's GPUs and the accounts' limits alone)."""
    from itertools import combinations

    from harness.workload_gen import ACCOUNT_GPUS, GPUS_PER_NODE, NODE_NAMES

    for seed in range(40):
        w = generate(seed)
        queue = [g for g in w.queue if _gpus(g.spec)][:9]
        kept = [g.spec for g in w.fill if g.spec.qos != "low"]
        free = len(NODE_NAMES) * GPUS_PER_NODE - sum(_gpus(k) for k in kept)
        used = {a: sum(_gpus(k) for k in kept if k.account == a) for a in ACCOUNT_GPUS}
        best = 0
        for r in range(len(queue), 0, -1):
            for subset in combinations(queue, r):
                sizes = [_gpus(g.spec) for g in subset]
                ok = sum(sizes) <= free and all(
                    sum(_gpus(g.spec) for g in subset if g.spec.account == a)
                    <= ACCOUNT_GPUS[a] - used[a] for a in ACCOUNT_GPUS)
                if ok:
                    best = r
                    break
            if best:
                break
        assert waiting_floor(w.fill, queue) <= len(queue) - best, seed
