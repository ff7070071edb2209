"""The fidelity workload generator makes only workloads Slurm accepts: checked here over
many seeds without a cluster (a fresh seed's refused sbatch fails the whole fidelity run)."""

from __future__ import annotations

from collections import Counter

from harness.workload_gen import HIGH_SUBMIT_PER_USER, generate


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
