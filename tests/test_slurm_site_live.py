"""Against the real Slurm 22.05 of tests/harness: what the core needs to predict this
Slurm — nodes whatever sinfo leaves null, node features, the site's scheduler settings,
every limit in its scope, squeue's priority as the sum of sprio's factors, and runtime
estimates from a user's own completed jobs."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from quotatop.collectors.model import PENDING, Snapshot
from quotatop.collectors.slurm.collector import SlurmCollector
from quotatop.collectors.slurm.json_decode import decode_sinfo
from quotatop.collectors.slurm.runner import Runner
from tests.harness import fixtures as _slurm_fixtures
from tests.harness.slurm_cluster import GPU_TYPE, NODE_FABRIC, NODE_NAMES, SlurmCluster, Workload

pytestmark = pytest.mark.timeout(300)

# The same module objects as the other harness tests use: one cluster per session.
slurm_cluster = _slurm_fixtures.slurm_cluster
slurm_workload = _slurm_fixtures.slurm_workload


@pytest.fixture
def collector(slurm_cluster: SlurmCluster, slurm_workload: Workload) -> Iterator[SlurmCollector]:
    c = SlurmCollector(Runner(env=slurm_cluster.env, timeout=30), refresh=0, slow_every=0)
    yield c
    c.close()


def _fresh(c: SlurmCollector) -> Snapshot:
    snap = c.collect()
    assert not snap.stale, snap.stale_reason
    return snap


def test_sinfo_nodes_survive_null_fields_and_carry_features(
    slurm_cluster: SlurmCluster, slurm_workload: Workload
) -> None:
    raw = slurm_cluster.run(["sinfo", "--all", "--json"]).stdout
    nodes, info, exact = decode_sinfo(raw.encode())
    assert exact and not info.warnings
    assert {n.name: n.features for n in nodes} == {
        n: [GPU_TYPE[n], NODE_FABRIC[n]] for n in NODE_NAMES
    }
    # What an idle node prints ("tres_used": null), and other nullable fields, on every
    # node of this real answer: every node is still there.
    doc = json.loads(raw)
    for n in doc["nodes"]:
        for key in ("tres_used", "gres_used", "reason", "features", "active_features", "owner"):
            n[key] = None
    nulled, info, _ = decode_sinfo(json.dumps(doc).encode())
    assert [n.name for n in nulled] == [n.name for n in nodes]
    assert all(n.allocated.get("cpu") is None for n in nulled)


def test_scheduler_settings_of_this_slurm(collector: SlurmCollector) -> None:
    s = _fresh(collector).scheduler
    assert s is not None
    # slurm.conf of the harness: SchedulerParameters=bf_interval=2,bf_resolution=60,
    # sched_min_interval=100000,bf_window=4320; PriorityWeight*; PreemptType=preempt/qos.
    assert (s.priority, s.fairshare, s.backfill) == ("multifactor", "fair_tree", "conservative")
    assert s.weights == {
        "age": 1000,
        "fairshare": 10000,
        "qos": 5000,
        "job_size": 1000,
        "partition": 1000,
        "assoc": 0,
    }
    assert (s.bf_interval, s.bf_resolution, s.bf_window) == (2, 60, 4320 * 60)
    assert (s.bf_max_job_test, s.queue_depth, s.sched_interval, s.bf_continue) == (
        500,
        100,
        60,
        False,
    )
    assert (s.max_age, s.usage_half_life) == (7 * 86400, 7 * 86400)
    assert (s.preemption, s.preempt_mode, s.preempt_exempt_time) == ("qos", "requeue", 0)
    assert s.requeue_delay == 120  # AuthInfo gives only the munge socket: the default


def test_limits_are_exactly_the_harness_ones(collector: SlurmCollector) -> None:
    snap = _fresh(collector)
    got = sorted(
        ((x.scope, x.owner, x.per, x.tres, x.jobs, x.submit, x.wall, x.rank) for x in snap.limits),
        key=str,
    )
    assert got == sorted(
        [
            ("qos", "high", "group", {"gpu": 8.0}, None, None, None, 1),  # GrpTRES
            ("qos", "high", "user", {}, None, 2, None, 1),  # MaxSubmitJobsPerUser
            ("qos", "normal", "user", {"gpu": 16.0}, None, None, None, 1),  # MaxTRESPerUser
            ("qos", "low", "job", {}, None, None, 86400.0, 1),  # MaxWall 1 day
            ("account", "vision-prod", "group", {"gpu": 32.0}, None, None, None, 3),
            ("account", "vision-exp", "group", {"gpu": 8.0}, None, None, None, 3),
            ("account", "elastic-pool", "group", {"gpu": 24.0}, None, None, None, 3),
        ],
        key=str,
    )
    assert all(p.qos is None for p in snap.partitions)  # QoS=N/A
    teams = {t.name: t for t in snap.teams}
    assert all(t.per_user_limit is None for t in teams.values())
    assert teams["vision-prod"].max == {"gpu": 32.0}
    for q in snap.qos:
        assert (q.preempt_exempt_time, q.grace_time, q.flags) == (0, 0, [])


def test_priority_is_squeues_and_the_sum_of_sprios_factors(
    slurm_cluster: SlurmCluster, collector: SlurmCollector
) -> None:
    for _ in range(4):  # the age factor moves between two reads: retry
        snap = _fresh(collector)
        jobs = {j.id: j for j in snap.jobs}
        fmt = "JobID:|,PriorityLong:|"
        out = slurm_cluster.run(["squeue", "--noheader", "-t", "PD", "-O", fmt])
        squeue = {}
        for line in out.stdout.splitlines():
            jid, prio, _ = line.split("|")
            squeue[jid.strip()] = float(prio)
        if all(jobs[j].priority == p for j, p in squeue.items() if j in jobs):
            break
        time.sleep(1)
    checked = 0
    for jid, prio in squeue.items():
        j = jobs.get(jid)
        if j is None or j.factors is None:
            continue
        assert j.priority == prio, jid
        f = j.factors
        total = f.age + f.fairshare + f.qos + f.job_size + f.partition + f.assoc + f.tres + f.nice
        if prio <= 1:  # Slurm floors a priority pushed below 1 (--nice) at 1
            assert total <= 1, jid
        else:
            # sprio rounds each factor to a whole number
            assert abs(total - prio) <= 3, (jid, total, prio)
        checked += 1
    assert checked >= 4


def _sacct_states(cluster: SlurmCluster, ids: list[str]) -> dict[str, str]:
    out = cluster.run(
        ["sacct", "-n", "-P", "-X", "-a", "-j", ",".join(ids), "-o", "JobID,State"], check=False
    ).stdout
    return dict(line.split("|")[:2] for line in out.splitlines() if "|" in line)


def test_runtime_estimate_from_the_users_last_two_runs(
    slurm_cluster: SlurmCluster, collector: SlurmCollector
) -> None:
    # CPU-only jobs in the interactive partition: the workload leaves cores free on
    # every node (its GPU jobs take 8 of 64), so these run at once and touch no GPU.
    shape = ("-c", "1", "--mem=1G", "--time=00:10:00", "--partition=interactive")
    ids = []
    for _ in range(2):
        jid, _, _ = slurm_cluster.sbatch("carol", "vision-exp", "normal", *shape, payload="sleep 3")
        assert jid
        ids.append(jid)
    slurm_cluster.wait_until(
        lambda: set(_sacct_states(slurm_cluster, ids).values()) == {"COMPLETED"},
        90,
        "two short jobs to complete in sacct",
        "slurmdbd",
    )
    pending, _, _ = slurm_cluster.sbatch(
        "carol", "vision-exp", "normal", *shape, "--begin=now+1hour", payload="sleep 3"
    )
    assert pending
    try:
        snap = _fresh(collector)
        job = next(j for j in snap.jobs if j.id == pending)
        assert job.state == PENDING
        ran = [j for j in snap.jobs if j.id in ids]
        elapsed = sorted(j.end_time - j.start_time for j in ran)  # type: ignore[operator]
        assert all(2 <= e <= 30 for e in elapsed), elapsed
        assert job.runtime_estimate == pytest.approx(sum(elapsed) / 2)
        assert job.runtime_basis is not None
        assert job.runtime_basis.startswith(
            "mean of carol's last 2 runs in vision-exp/interactive with the same request "
            "(no GPUs, 1 CPU, QoS normal) ("
        )
    finally:
        slurm_cluster.run(["scancel", pending], check=False)
