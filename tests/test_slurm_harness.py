"""The real-Slurm test harness itself: topology, accounting, workload, restart."""

from __future__ import annotations

import json

import psutil
import pytest

from tests.harness import fixtures as _slurm_fixtures
from tests.harness.slurm_cluster import (
    CPUS_PER_NODE,
    GPU_TYPE,
    NODE_NAMES,
    REAL_MEMORY_MB,
    SlurmCluster,
    Workload,
)

pytestmark = pytest.mark.timeout(300)

# Until tests/conftest.py imports them; both FixtureDefs share one cluster.
slurm_cluster = _slurm_fixtures.slurm_cluster
slurm_workload = _slurm_fixtures.slurm_workload


def test_eight_nodes_with_eight_typed_gpus(slurm_cluster: SlurmCluster) -> None:
    out = slurm_cluster.run(
        ["sinfo", "--noheader", "--Node", "-O", "NodeList:|,Gres:|,CPUs:|,Memory:|"]
    ).stdout
    rows = {tuple(line.split("|")[:4]) for line in out.splitlines() if line}
    nodes = {r[0]: r for r in rows}
    assert sorted(nodes) == NODE_NAMES
    for name, (_, gres, cpus, mem) in nodes.items():
        assert gres == f"gpu:{GPU_TYPE[name]}:8"
        assert int(cpus) == CPUS_PER_NODE
        assert int(mem) == REAL_MEMORY_MB
    assert {g for _, g, _, _ in rows} == {"gpu:h100:8", "gpu:a100:8"}
    data = json.loads(slurm_cluster.run(["sinfo", "--json"]).stdout)
    assert len(data["nodes"]) == 8


def test_account_tree_and_qos(slurm_cluster: SlurmCluster) -> None:
    out = slurm_cluster.run(
        [
            "sacctmgr",
            "-n",
            "-P",
            "show",
            "assoc",
            "format=Account,ParentName,User,Fairshare,GrpTRES",
        ]
    ).stdout
    accounts = {}
    users = set()
    for line in out.splitlines():
        acct, parent, user, share, grp = line.split("|")
        if user:
            users.add((acct, user))
        else:
            accounts[acct] = (parent, share, grp)
    assert accounts["prod"][:2] == ("root", "60")
    assert accounts["exp"][:2] == ("root", "30")
    assert accounts["elastic"][:2] == ("root", "10")
    assert accounts["vision-prod"][0] == "prod"
    assert accounts["elastic-pool"][0] == "elastic"
    assert accounts["vision-exp"] == ("exp", "50", "gres/gpu=8")
    assert ("vision-exp", "carol") in users and ("elastic-pool", "dave") in users

    shares = {}
    for line in slurm_cluster.run(
        ["sshare", "-a", "-P", "-n", "-o", "Account,User,NormShares"]
    ).stdout.splitlines():
        acct, user, norm = line.split("|")
        if not user:
            shares[acct.strip()] = norm
    # The root user association is removed, so the 60-30-10 split is exact.
    assert (shares["prod"], shares["exp"], shares["elastic"]) == (
        "0.600000",
        "0.300000",
        "0.100000",
    )

    qos = {}
    for line in slurm_cluster.run(
        [
            "sacctmgr",
            "-n",
            "-P",
            "show",
            "qos",
            "format=Name,Priority,Preempt,PreemptMode,GrpTRES,MaxTRESPU,MaxSubmitPU,MaxWall",
        ]
    ).stdout.splitlines():
        name, *rest = line.split("|")
        qos[name] = rest
    assert qos["high"][:2] == ["1000", "low"]
    assert qos["high"][3] == "gres/gpu=8" and qos["high"][5] == "2"
    assert qos["normal"][4] == "gres/gpu=16"
    assert qos["low"][6] == "1-00:00:00"


def test_expected_pending_reasons(slurm_cluster: SlurmCluster, slurm_workload: Workload) -> None:
    states = slurm_cluster.squeue_states()
    preempted = set(slurm_workload.preempted_job_ids)
    assert preempted, "no job was preempted"
    for job in slurm_workload.jobs.values():
        if job.expected_state in ("COMPLETED", "FAILED"):
            assert job.job_id not in states or states[job.job_id][0] == job.expected_state
            continue
        state, reason = states[job.job_id]
        if job.job_id in preempted:
            # A requeued job waits for its new BeginTime, then for GPUs again.
            assert state in ("PENDING", "RUNNING"), job
            continue
        assert (state, reason if state == "PENDING" else None) == (
            job.expected_state,
            job.expected_reason,
        ), job.key
    seen = {r for s, r in states.values() if s == "PENDING"}
    for reason in (
        "Resources",
        "Priority",
        "QOSGrpGRES",
        "AssocGrpGRES",
        "QOSMaxGRESPerUser",
        "Dependency",
        "BeginTime",
        "JobArrayTaskLimit",
    ):
        assert reason in seen, reason
    assert "QOSMaxSubmitJobPerUserLimit" in slurm_workload.rejected["alice_high_submit_limit"]

    for jid in preempted:
        assert int(slurm_cluster.job_info(jid)["Restarts"]) >= 1
    sacct = slurm_cluster.run(
        ["sacct", "-n", "-P", "-a", "-D", "-X", "-o", "JobID,State", "-S", "now-1days"]
    ).stdout
    assert any(
        line.startswith(f"{jid}|PREEMPTED") for jid in preempted for line in sacct.splitlines()
    ), sacct

    arr = slurm_cluster.run(
        ["squeue", "--noheader", "-j", slurm_workload.array_job_id, "-O", "JobArrayID:|,State:|"]
    ).stdout
    assert f"{slurm_workload.array_job_id}_[" in arr and "%2]" in arr, arr


def test_backfill_start_estimate(slurm_cluster: SlurmCluster, slurm_workload: Workload) -> None:
    job = slurm_workload.jobs["alice_res"].job_id
    # Backfill runs every 2 s in this config and fills in StartTime for pending jobs.
    slurm_cluster.wait_until(
        lambda: slurm_cluster.job_info(job)["StartTime"] not in ("Unknown", "N/A"),
        30,
        "a backfill StartTime estimate",
    )


def test_everything_listens_on_loopback_only(slurm_cluster: SlurmCluster) -> None:
    pids = set(slurm_cluster.pids().values())
    listening = [
        c
        for c in psutil.net_connections(kind="inet")
        if c.pid in pids and c.status == psutil.CONN_LISTEN
    ]
    assert listening
    assert {c.laddr.ip for c in listening} == {"127.0.0.1"}, listening


def test_controller_stop_and_restart(slurm_cluster: SlurmCluster, slurm_workload: Workload) -> None:
    before = set(slurm_cluster.squeue_states())
    others = {n: p for n, p in slurm_cluster.pids().items() if n != "slurmctld"}
    slurm_cluster.stop_daemon("slurmctld")
    try:
        assert not slurm_cluster.is_running("slurmctld")
        down = slurm_cluster.run(["squeue", "--noheader"], check=False, timeout=60)
        assert down.returncode != 0
        # Only the controller went away.
        assert all(psutil.pid_exists(p) for p in others.values())
    finally:
        slurm_cluster.start_daemon("slurmctld")
    slurm_cluster.wait_controller(60)
    slurm_cluster.wait_nodes_responding(60)
    after = set(slurm_cluster.squeue_states())
    running_or_pending = {
        j.job_id for j in slurm_workload.jobs.values() if j.expected_state in ("RUNNING", "PENDING")
    }
    assert running_or_pending <= after, (before, after)
