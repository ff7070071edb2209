"""What the core needs to predict THIS Slurm, from captured or edited real output:
null fields tolerated, the site's scheduler settings, limits in their scopes, node
features and job constraints, the terminal states, runtime estimates, priorities."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slurm_fixture_runner import V2205, FixtureRunner

from quotatop.collectors.model import (
    COMPLETED,
    PENDING,
    RUNNING,
    TERMINAL_STATES,
    Job,
    PriorityFactors,
)
from quotatop.collectors.slurm import limits as lim
from quotatop.collectors.slurm import mapping, sacctmgr, scontrol
from quotatop.collectors.slurm.collector import SlurmCollector
from quotatop.collectors.slurm.errors import ParseError
from quotatop.collectors.slurm.json_decode import (
    decode_sacct,
    decode_sinfo,
    decode_squeue,
    job_state,
)
from quotatop.collectors.slurm.runtimes import with_runtime_estimates
from quotatop.collectors.slurm.sched_config import scheduler_config
from quotatop.collectors.slurm.sprio import SprioRow

NEWER = V2205.parent / "23.02+"


def _doc(name: str) -> dict[str, Any]:
    return json.loads((V2205 / name).read_bytes())


def _bytes(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc).encode()


# ---- 1. null fields -------------------------------------------------------------------
def test_real_idle_sinfo_with_null_tres_used_keeps_every_node() -> None:
    # Captured from the harness before any job: every node has "tres_used": null.
    doc = _doc("sinfo_idle.json")
    assert all(n["tres_used"] is None for n in doc["nodes"])
    nodes, info, exact = decode_sinfo((V2205 / "sinfo_idle.json").read_bytes())
    assert exact and info.warnings == [] and len(nodes) == 8
    for n in nodes:
        assert n.state == "idle" and n.allocated == {} and n.capacity["gpu"] == 8
        assert n.features and n.features[0] == n.gpu_type


_NULLABLE_NODE = [
    "state",
    "state_flags",
    "partitions",
    "cpus",
    "alloc_cpus",
    "real_memory",
    "alloc_memory",
    "gres",
    "gres_used",
    "tres",
    "tres_used",
    "reason",
    "features",
    "active_features",
    "owner",
]


def test_sinfo_with_every_nullable_field_null_keeps_the_nodes() -> None:
    doc = _doc("sinfo.json")
    for n in doc["nodes"]:
        for k in _NULLABLE_NODE:
            n[k] = None
    nodes, _, _ = decode_sinfo(_bytes(doc))
    assert [n.name for n in nodes] == [f"gpu0{i}" for i in range(1, 9)]
    assert all(n.capacity == {} and n.allocated == {} for n in nodes)


_JOB_KEYS = sorted(_doc("squeue.json")["jobs"][0])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_squeue_with_random_fields_null_keeps_every_job(data: st.DataObject) -> None:
    doc = _doc("squeue.json")
    for j in doc["jobs"]:
        for k in data.draw(st.lists(st.sampled_from(_JOB_KEYS), max_size=12)):
            if k != "job_id":
                j[k] = None
    jobs, info = decode_squeue(_bytes(doc))
    assert [j.id for j in jobs] == [str(j["job_id"]) for j in doc["jobs"]]
    assert not any("skipped" in w for w in info.warnings)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_sinfo_and_sacct_with_random_fields_null_never_drop_the_answer(
    data: st.DataObject,
) -> None:
    sinfo = _doc("sinfo.json")
    keys = sorted(sinfo["nodes"][0])
    for n in sinfo["nodes"]:
        for k in data.draw(st.lists(st.sampled_from(keys), max_size=10)):
            if k != "name":
                n[k] = None
    nodes, _, _ = decode_sinfo(_bytes(sinfo))
    assert len(nodes) == 8
    sacct = _doc("sacct.json")
    for j in sacct["jobs"]:
        k = data.draw(st.sampled_from(sorted(j)))
        if k != "job_id":
            j[k] = None
        sub = data.draw(st.sampled_from(["time", "state", "tres", "array"]))
        if isinstance(j.get(sub), dict):
            inner = data.draw(st.sampled_from(sorted(j[sub]) or ["x"]))
            j[sub][inner] = None
    jobs, _ = decode_sacct(_bytes(sacct))
    assert len(jobs) == len(sacct["jobs"])


def test_one_unreadable_record_is_skipped_with_a_warning() -> None:
    doc = _doc("squeue.json")
    doc["jobs"][0]["job_id"] = None  # no id: this one record cannot be a job
    doc["jobs"][1]["tres_req_str"] = "cpu=lots"  # a TRES string that does not parse
    jobs, info = decode_squeue(_bytes(doc))
    assert len(jobs) == len(doc["jobs"]) - 2
    assert any("skipped" in w for w in info.warnings)
    sinfo = _doc("sinfo.json")
    sinfo["nodes"][3]["name"] = None
    nodes, info, _ = decode_sinfo(_bytes(sinfo))
    assert len(nodes) == 7 and any("skipped 1" in w for w in info.warnings)


def test_a_skipped_record_reaches_the_snapshot_warnings() -> None:
    runner = FixtureRunner()
    doc = _doc("squeue.json")
    doc["jobs"][0]["job_id"] = "not a number"
    runner.override["squeue.json"] = _bytes(doc)
    snap = SlurmCollector(runner, clock=lambda: 1_796_229_000.0).collect()
    assert not snap.stale and len(snap.nodes) == 8
    assert any(w.startswith("squeue: skipped") for w in snap.warnings)


def test_newer_schema_null_fields() -> None:
    doc = json.loads((NEWER / "25.05-v0.0.42/slurm-job-pending.json").read_bytes())
    for j in doc["jobs"]:
        for k in ("name", "account", "partition", "tres_req_str", "features", "nodes", "shared"):
            j[k] = None
    jobs, _ = decode_squeue(_bytes(doc))
    assert len(jobs) == len(doc["jobs"])


# ---- 2. the site's scheduler settings ------------------------------------------------
def test_scheduler_config_from_the_real_config() -> None:
    config = scontrol.parse_config((V2205 / "scontrol_config.txt").read_text())
    s = scheduler_config(config)
    assert s is not None
    assert (s.priority, s.fairshare, s.favor_small, s.backfill) == (
        "multifactor",
        "fair_tree",
        False,
        "conservative",
    )
    assert s.weights == {
        "age": 1000,
        "fairshare": 10000,
        "qos": 5000,
        "job_size": 1000,
        "partition": 1000,
        "assoc": 0,
    }
    assert (s.max_age, s.usage_half_life) == (7 * 86400, 7 * 86400)
    # bf_interval=2,bf_resolution=60,sched_min_interval=100000,bf_window=4320 (minutes)
    assert (s.bf_interval, s.bf_resolution, s.bf_window) == (2, 60, 4320 * 60)
    # Not set: the 22.05 defaults.
    assert (s.bf_max_job_test, s.bf_continue, s.queue_depth, s.sched_interval) == (
        500,
        False,
        100,
        60,
    )
    assert (s.preemption, s.preempt_mode, s.preempt_exempt_time) == ("qos", "requeue", 0)
    assert s.raw["SchedulerParameters"].startswith("bf_interval=2")
    assert s.raw["PriorityType"] == "priority/multifactor"
    # AuthInfo names only the munge socket: a requeued job waits the default 120 s.
    assert s.requeue_delay == 120
    assert "AuthInfo" not in s.raw


def test_requeue_delay_is_authinfos_cred_expire() -> None:
    s = scheduler_config({"AuthInfo": "socket=/run/munge/munge.socket.2,cred_expire=300"})
    assert s is not None and s.requeue_delay == 300
    s = scheduler_config({"AuthInfo": "(null)"})
    assert s is not None and s.requeue_delay == 120
    with pytest.raises(ParseError, match="AuthInfo cred_expire"):
        scheduler_config({"AuthInfo": "cred_expire=soon"})


def test_scheduler_config_defaults_and_variants() -> None:
    assert scheduler_config({}) is None
    s = scheduler_config({"ClusterName": "x"})
    assert s is not None
    assert (s.priority, s.backfill, s.bf_interval, s.bf_resolution, s.bf_window) == (
        "basic",
        "conservative",
        30,
        60,
        1440 * 60,
    )
    assert (s.preemption, s.preempt_mode, s.fairshare, s.max_age) == (
        "off",
        "off",
        "fair_tree",
        7 * 86400,
    )
    s = scheduler_config(
        {
            "PriorityType": "priority/basic",
            "PriorityFlags": "ACCRUE_ALWAYS,NO_FAIR_TREE",
            "PriorityFavorSmall": "Yes",
            "PriorityWeightTRES": "CPU=1000,Mem=2000,GRES/gpu=3000",
            "SchedulerType": "sched/builtin",
            "SchedulerParameters": "bf_continue,bf_max_job_test=1000,default_queue_depth=50,"
            "sched_interval=30,bf_window=60",
            "PreemptType": "preempt/partition_prio",
            "PreemptMode": "SUSPEND,GANG",
            "PreemptExemptTime": "00:10:00",
            "PriorityMaxAge": "1-00:00:00",
            "PriorityDecayHalfLife": "0",
        }
    )
    assert s is not None
    assert (s.priority, s.fairshare, s.favor_small, s.backfill) == (
        "basic",
        "classic",
        True,
        "none",
    )
    assert s.weights["tres:cpu"] == 1000 and s.weights["tres:memory"] == 2000
    assert s.weights["tres:gpu"] == 3000
    assert (s.bf_continue, s.bf_max_job_test, s.queue_depth, s.sched_interval, s.bf_window) == (
        True,
        1000,
        50,
        30,
        3600,
    )
    assert (s.preemption, s.preempt_mode, s.preempt_exempt_time) == (
        "partition_priority",
        "suspend",
        600,
    )
    assert (s.max_age, s.usage_half_life) == (86400, 0)


def test_snapshot_carries_scheduler_and_limits() -> None:
    snap = SlurmCollector(FixtureRunner(), clock=lambda: 1_796_229_000.0).collect()
    assert snap.scheduler is not None and snap.scheduler.bf_window == 4320 * 60
    assert len(snap.limits) == 7
    qos = {q.name: q for q in snap.qos}
    assert qos["normal"].preempt_exempt_time == 0 and qos["normal"].grace_time == 0


# ---- 3. limits in their scopes ---------------------------------------------------------
def _fixture_limits() -> tuple[list[Any], list[Any], list[Any]]:
    q = sacctmgr.parse_qos((V2205 / "sacctmgr_qos.txt").read_text())
    a = sacctmgr.parse_assoc((V2205 / "sacctmgr_assoc.txt").read_text())
    p = scontrol.parse_partitions((V2205 / "scontrol_partition.txt").read_text())
    return q, a, p


def _key(x: Any) -> tuple[Any, ...]:
    return (x.scope, x.owner, x.per, x.tres, x.jobs, x.submit, x.wall, x.rank)


HARNESS_LIMITS = sorted(
    [
        ("qos", "high", "group", {"gpu": 8.0}, None, None, None, 1),
        ("qos", "high", "user", {}, None, 2, None, 1),
        ("qos", "normal", "user", {"gpu": 16.0}, None, None, None, 1),
        ("qos", "low", "job", {}, None, None, 86400.0, 1),
        ("account", "vision-prod", "group", {"gpu": 32.0}, None, None, None, 3),
        ("account", "vision-exp", "group", {"gpu": 8.0}, None, None, None, 3),
        ("account", "elastic-pool", "group", {"gpu": 24.0}, None, None, None, 3),
    ],
    key=str,
)


def test_limits_of_the_captured_cluster() -> None:
    q, a, p = _fixture_limits()
    assert all(x.qos is None for x in p)  # QoS=N/A
    assert sorted((_key(x) for x in lim.limits(q, a, p)), key=str) == HARNESS_LIMITS


def _qos_line(**values: str) -> str:
    """One ``sacctmgr show qos`` line in the collector's format, from column names."""
    row = {c: "" for c in sacctmgr.QOS_FORMAT.split(",")}
    row.update(Priority="10", GraceTime="00:05:00", PreemptMode="requeue")
    row.update(values)
    return "|".join(row.values())


def test_every_qos_limit_kind_partition_qos_and_flags() -> None:
    text = "\n".join(
        [
            _qos_line(ID="1", Name="part", GrpTRES="cpu=100", MaxJobsPU="3"),
            _qos_line(
                ID="2",
                Name="big",
                Flags="DenyOnLimit,OverPartQOS",
                GrpTRES="gres/gpu=64",
                GrpJobs="10",
                GrpSubmitJobs="20",
                MaxTRES="gres/gpu:h100=16,node=2",
                MaxWall="2-00:00:00",
                MaxTRESPU="gres/gpu=32",
                MaxJobsPU="4",
                MaxSubmitPU="8",
                MaxTRESPA="gres/gpu=48",
                MaxJobsPA="6",
                MaxSubmitPA="12",
            ),
        ]
    )
    rows = sacctmgr.parse_qos(text + "\n")
    parts = scontrol.parse_partitions(
        "PartitionName=gpu QoS=part Nodes=n[1-2] State=UP\nPartitionName=cpu QoS=N/A State=UP\n"
    )
    assert [(x.name, x.qos) for x in parts] == [("gpu", "part"), ("cpu", None)]
    got = sorted((_key(x) for x in lim.limits(rows, [], parts)), key=str)
    assert got == sorted(
        [
            ("partition", "gpu", "group", {"cpu": 100.0}, None, None, None, 0),
            ("partition", "gpu", "user", {}, 3, None, None, 0),
            ("qos", "part", "group", {"cpu": 100.0}, None, None, None, 1),
            ("qos", "part", "user", {}, 3, None, None, 1),
            ("qos", "big", "group", {"gpu": 64.0}, 10, 20, None, 1),
            ("qos", "big", "user", {"gpu": 32.0}, 4, 8, None, 1),
            ("qos", "big", "account", {"gpu": 48.0}, 6, 12, None, 1),
            ("qos", "big", "job", {"gpu:h100": 16.0, "node": 2.0}, None, None, 172800.0, 1),
        ],
        key=str,
    )
    qos = {x.name: x for x in mapping.qos_levels(rows, "REQUEUE", 120.0)}
    assert qos["big"].flags == ["DenyOnLimit", "OverPartQOS"]
    assert qos["big"].grace_time == 300 and qos["big"].preempt_exempt_time == 120


_ASSOC = (
    "quotatop|{acct}|{user}||{parent}|1|1|2|1|||normal|{grp}|||{grpjobs}||{grpsub}||"
    "{maxtres}|||{maxjobs}||{maxsub}|{wall}"
)


def test_association_limits_user_rows_and_ranks() -> None:
    lines = [
        _ASSOC.format(acct="root", user="", parent="", grp="cpu=1000", grpjobs="", grpsub="",
                      maxtres="", maxjobs="", maxsub="", wall=""),
        _ASSOC.format(acct="prod", user="", parent="root", grp="", grpjobs="50", grpsub="",
                      maxtres="", maxjobs="5", maxsub="", wall=""),
        _ASSOC.format(acct="vision", user="", parent="prod", grp="gres/gpu=32", grpjobs="",
                      grpsub="100", maxtres="gres/gpu=8", maxjobs="", maxsub="", wall="1-0"),
        _ASSOC.format(acct="vision", user="alice", parent="", grp="gres/gpu=16", grpjobs="",
                      grpsub="", maxtres="", maxjobs="2", maxsub="4", wall=""),
        _ASSOC.format(acct="vision", user="bob", parent="", grp="gres/gpu=16", grpjobs="",
                      grpsub="", maxtres="", maxjobs="", maxsub="", wall=""),
    ]  # fmt: skip
    assocs = sacctmgr.parse_assoc("\n".join(lines) + "\n")
    got = sorted((_key(x) for x in lim.assoc_limits(assocs)), key=str)
    assert got == sorted(
        [
            ("account", "root", "group", {"cpu": 1000.0}, None, None, None, 5),
            ("account", "prod", "group", {}, 50, None, None, 4),
            ("account", "prod", "user", {}, 5, None, None, 4),
            ("account", "vision", "group", {"gpu": 32.0}, None, 100, None, 3),
            ("account", "vision", "job", {"gpu": 8.0}, None, None, 86400.0, 3),
            ("user", "vision/alice", "group", {"gpu": 16.0}, 2, 4, None, 2),
            ("user", "vision/bob", "group", {"gpu": 16.0}, None, None, None, 2),
        ],
        key=str,
    )
    # Team.per_user_limit comes only from the user associations' own GrpTRES.
    teams = {t.name: t for t in mapping.teams(assocs, [], [], [])}
    assert teams["vision"].per_user_limit == {"gpu": 16.0}
    assert teams["prod"].per_user_limit is None and teams["vision"].max == {"gpu": 32.0}


# ---- 4. node features, constraints, exclusive, typed GRES ------------------------------
def test_job_constraint_exclusive_and_typed_gres_2205() -> None:
    doc = _doc("squeue.json")
    pending = next(j for j in doc["jobs"] if j["job_state"] == "PENDING")
    pending["features"] = "h100&ib"
    pending["shared"] = "none"  # what 22.05 prints for --exclusive
    jobs, _ = decode_squeue(_bytes(doc))
    got = next(j for j in jobs if j.id == str(pending["job_id"]))
    assert (got.constraint, got.exclusive) == ("h100&ib", True)
    assert any(k.startswith("gpu:") for k in got.request)  # the type is kept
    others = [j for j in jobs if j.id != got.id]
    assert all(j.constraint is None and not j.exclusive for j in others)


def test_job_constraint_and_exclusive_newer_schema() -> None:
    doc = json.loads((NEWER / "24.11-v0.0.40/slurm-job-gpus-pending.json").read_bytes())
    doc["jobs"][0]["features"] = "a100|h100"
    doc["jobs"][0]["exclusive"] = ["true"]
    jobs, _ = decode_squeue(_bytes(doc))
    assert (jobs[0].constraint, jobs[0].exclusive) == ("a100|h100", True)
    doc["jobs"][0]["exclusive"] = ["false"]
    doc["jobs"][0]["shared"] = ["oversubscribe"]
    jobs, _ = decode_squeue(_bytes(doc))
    assert not jobs[0].exclusive


def test_node_features_in_every_sinfo_form() -> None:
    nodes, _, _ = decode_sinfo((V2205 / "sinfo_idle.json").read_bytes())
    assert {n.name: n.features for n in nodes}["gpu02"] == ["h100", "eth"]
    doc = json.loads((NEWER / "25.05-v0.0.42/slurm-node-drain.json").read_bytes())
    doc["nodes"][0]["active_features"] = ["a100", "ib"]
    nodes, _, _ = decode_sinfo(_bytes(doc))
    assert nodes[0].features == ["a100", "ib"]
    doc = json.loads((NEWER / "23.02-v0.0.39/sinfo_dataparser.json").read_bytes())
    doc["sinfo"][0]["features"] = {"total": "a,b", "active": "a"}
    nodes, _, _ = decode_sinfo(_bytes(doc))
    assert nodes[0].features == ["a"]


def test_text_squeue_feature_and_oversubscribe() -> None:
    from quotatop.collectors.slurm.squeue_text import FIELDS, parse_squeue_text

    row = {f: "" for f in FIELDS}
    row.update(
        JobID="7", ArrayTaskID="N/A", State="PENDING", PriorityLong="5", NumNodes="2",
        SubmitTime="N/A", EligibleTime="N/A", StartTime="N/A", EndTime="N/A",
        TimeLimit="1:00:00", Feature="h100&ib", OverSubscribe="NO", Name="x|y",
        Dependency="(null)", Reason="Resources", NodeList="", Reservation="train",
    )  # fmt: skip
    line = "|".join(row[f] for f in FIELDS) + "|"
    job = mapping.job_from_text(parse_squeue_text(line)[0])
    assert (job.constraint, job.exclusive, job.name, job.nodes_requested, job.reservation) == (
        "h100&ib",
        True,
        "x|y",
        2,
        "train",
    )


# ---- 5. states --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("slurm", "model"),
    [
        ("TIMEOUT", "timeout"),
        ("NODE_FAIL", "node_fail"),
        ("PREEMPTED", "preempted"),
        ("OUT_OF_MEMORY", "out_of_memory"),
        ("BOOT_FAIL", "boot_fail"),
        ("DEADLINE", "deadline"),
        ("FAILED", "failed"),
        (["TIMEOUT", "COMPLETING"], "timeout"),
    ],
)
def test_terminal_states_keep_their_names(slurm: Any, model: str) -> None:
    assert job_state(slurm) == model and model in TERMINAL_STATES


def test_timed_out_history_is_merged_as_timeout() -> None:
    doc = _doc("sacct.json")
    doc["jobs"][1]["state"]["current"] = "TIMEOUT"
    hist, _ = decode_sacct(_bytes(doc))
    merged = mapping.merge_history([], hist)
    assert {j.id: j.state for j in merged}[str(doc["jobs"][1]["job_id"])] == "timeout"


# ---- 6. runtime estimates -----------------------------------------------------------------
def _job(jid: str, state: str = PENDING, **kw: Any) -> Job:
    base: dict[str, Any] = dict(
        user="alice", team="vision-prod", partition="gpu", request={"gpu": 8, "gpu:h100": 8}
    )
    base.update(kw)
    return Job(id=jid, state=state, **base)


def _done(jid: str, start: float, secs: float, **kw: Any) -> Job:
    return _job(jid, COMPLETED, start_time=start, end_time=start + secs, **kw)


def test_mean_of_the_last_two_runs_of_the_same_shape() -> None:
    history = [
        _done("1", 100, 500),  # older: not among the last two
        _done("2", 1000, 61),
        _done("3", 2000, 59),
        _done("4", 3000, 999, request={"gpu": 1}),  # other shape
        _done("5", 4000, 7, user="bob"),
        _job("6", "failed", start_time=5000, end_time=5001),  # not COMPLETED
    ]
    jobs = [_job("10", time_limit=3600), _job("11", RUNNING, start_time=9000), _done("12", 1, 2)]
    out = {j.id: j for j in with_runtime_estimates(jobs, history)}
    assert out["10"].runtime_estimate == 60
    assert out["10"].runtime_basis == (
        "mean of alice's last 2 runs in vision-prod/gpu with 8 h100 GPUs (59s, 61s)"
    )
    assert out["11"].runtime_estimate == 60
    assert out["12"].runtime_estimate is None  # finished jobs get none
    assert jobs[0].runtime_estimate is None  # the input is not changed


def test_any_shape_fallback_cap_and_nothing() -> None:
    history = [_done("1", 0, 7200, request={"gpu": 1}), _done("2", 10, 3600, request={})]
    jobs = [
        _job("10", time_limit=1800, nodes_requested=2),
        _job("11", partition="interactive"),
        _job("12", user="carol"),
    ]
    out = {j.id: j for j in with_runtime_estimates(jobs, history)}
    assert out["10"].runtime_estimate == 1800
    assert out["10"].runtime_basis == (
        "mean of alice's last 2 runs in vision-prod/gpu (any shape) (120m, 60m), "
        "capped at the time limit (30m)"
    )
    assert out["11"].runtime_estimate is None and out["12"].runtime_estimate is None
    one = with_runtime_estimates([_job("13", request={})], [_done("2", 10, 30, request={})])
    assert one[0].runtime_estimate == 30
    assert one[0].runtime_basis == (
        "mean of alice's last run in vision-prod/gpu with the same request (no GPUs, QoS normal) "
        "(30s)")


def test_the_same_request_comes_before_the_same_shape() -> None:
    """One user's CPU-only jobs of 8 and 96 CPUs, and 8-GPU jobs under two QoS and
    constraints, are different work: each job takes the runs that asked for the same."""
    cpu8, cpu96 = {"cpu": 8.0}, {"cpu": 96.0}
    history = [
        _done("1", 0, 15, request=cpu8),
        _done("2", 100, 60, request=cpu96),  # newer, same shape (no GPUs), other CPUs
        _done("3", 200, 50, qos="normal"),
        _done("4", 300, 40, qos="low"),
        _done("5", 400, 35, qos="low", constraint="ib"),
    ]
    jobs = [_job("10", request=cpu8), _job("11", request={"cpu": 4.0}),
            _job("12", qos="normal"), _job("13", qos="low"), _job("14", qos="low", constraint="ib"),
            _job("15", qos="high")]
    got = {j.id: j.runtime_estimate for j in with_runtime_estimates(jobs, history)}
    assert got == {"10": 15, "11": 37.5, "12": 50, "13": 40, "14": 35, "15": 37.5}
    basis = {j.id: j.runtime_basis for j in with_runtime_estimates(jobs, history)}
    assert basis["14"] == ("mean of alice's last run in vision-prod/gpu with the same request "
                           "(8 h100 GPUs, QoS low, constraint ib) (35s)")
    assert basis["11"] == ("mean of alice's last 2 runs in vision-prod/gpu with no GPUs "
                           "(60s, 15s)")


def test_runtime_estimates_on_the_captured_snapshot() -> None:
    # erin's one completed job in nlp-prod/gpu ran 0 s; her other jobs there get that.
    snap = SlurmCollector(FixtureRunner(), clock=lambda: 1_796_229_000.0).collect()
    erin = [j for j in snap.jobs if j.user == "erin" and j.team == "nlp-prod"]
    live = [j for j in erin if j.state in (PENDING, RUNNING) and j.partition == "gpu"]
    assert live and all(j.runtime_estimate == 0 for j in live)
    assert all("any shape" in (j.runtime_basis or "") for j in live)
    # Runs of another shape say less of this job: the windows trust them less.
    assert all(j.runtime_history_weak for j in live)


def test_only_runs_of_the_same_request_are_a_strong_history() -> None:
    from quotatop.collectors.model import COMPLETED

    def job(i: str, gpus: float, state: str = PENDING, elapsed: float = 0.0) -> Job:
        done = state == COMPLETED
        return Job(id=i, user="u", team="t", partition="p", qos="normal", state=state,
                   request={"gpu": gpus}, time_limit=600.0,
                   start_time=1000.0 if done else None,
                   end_time=1000.0 + elapsed if done else None)

    history = [job("h1", 4, COMPLETED, 100.0), job("h2", 4, COMPLETED, 120.0)]
    same, other = with_runtime_estimates([job("1", 4), job("2", 8)], history)
    assert same.runtime_history == [120.0, 100.0] and not same.runtime_history_weak
    assert other.runtime_history == [120.0, 100.0] and other.runtime_history_weak
    assert "any shape" in (other.runtime_basis or "")


# ---- 7. priority -----------------------------------------------------------------------------
def test_squeue_priority_wins_and_sprio_factors_attach() -> None:
    f = PriorityFactors(age=10, qos=500)
    rows = [SprioRow(job_id="1", partition="gpu", user="a", priority=511.0, factors=f)]
    jobs = [Job(id="1", partition="gpu", priority=510.0), Job(id="2", priority=None)]
    out = mapping.attach_priority(jobs, rows)
    assert (out[0].priority, out[0].factors) == (510.0, f)
    rows.append(SprioRow(job_id="2", partition="gpu", user="a", priority=7.0, factors=f))
    assert mapping.attach_priority(jobs, rows)[1].priority == 7.0


def test_real_priorities_equal_the_sum_of_sprio_factors() -> None:
    snap = SlurmCollector(FixtureRunner(), clock=lambda: 1_796_229_000.0).collect()
    checked = 0
    for j in snap.jobs:
        if j.state != PENDING or j.factors is None or j.priority is None:
            continue
        f = j.factors
        total = f.age + f.fairshare + f.qos + f.job_size + f.partition + f.assoc + f.tres + f.nice
        if j.priority <= 1:  # Slurm clamps at 1 (a large --nice)
            assert total <= 1
        else:
            assert abs(total - j.priority) <= 3, (j.id, total, j.priority)
        checked += 1
    assert checked >= 4


def test_fixture_copy_is_not_shared() -> None:
    # The helpers above edit copies only.
    a, b = _doc("squeue.json"), copy.deepcopy(_doc("squeue.json"))
    assert a == b and Path(V2205 / "squeue.json").exists()


# ---- 6. advanced reservations -----------------------------------------------------------
# Captured from tests/test_reservation_slurm.py's scenario (times: the controller's, UTC).
SCENARIO = (V2205 / "scontrol_reservation_scenario.txt").read_text()


def _utc(text: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp()


def test_reservations_parsed_from_real_scontrol_output() -> None:
    import datetime as dt

    got = {r.name: r for r in scontrol.parse_reservations(SCENARIO, dt.UTC)}
    assert list(got) == ["train", "maint"]
    train, maint = got["train"], got["maint"]
    assert train.nodes == ["gpu03", "gpu04"] and maint.nodes == ["gpu07", "gpu08"]
    assert train.users == ["alice", "erin"] and maint.users == ["erin"]
    assert train.accounts == [] and train.partition is None
    assert train.flags == ["SPEC_NODES"]
    assert (train.state, maint.state) == ("active", "inactive")
    assert train.start == _utc("2026-12-05T02:13:24") and train.end == train.start + 1800
    assert maint.start == _utc("2026-12-05T02:14:54") and maint.end == maint.start + 1800


def test_no_reservations_and_bad_reservation_lines() -> None:
    assert scontrol.parse_reservations("No reservations in the system\n") == []
    with pytest.raises(ParseError):
        scontrol.parse_reservations("ReservationName=r StartTime=soon\n")
    with pytest.raises(ParseError):
        scontrol.parse_reservations("ReservationName=r EndTime=2026-12-05T02:14:54\n")


def test_the_snapshot_keeps_reservations_not_over_and_known_nodes_only() -> None:
    import datetime as dt

    runner = FixtureRunner()
    text = SCENARIO.replace("Nodes=gpu[07-08]", "Nodes=gpu[07-09]")
    runner.override["scontrol_reservation.txt"] = text.encode()
    at = _utc("2026-12-05T02:20:00")
    snap = SlurmCollector(runner, clock=lambda: at, cluster_tz=dt.UTC).collect()
    got = {r.name: r.nodes for r in snap.reservations}
    assert got == {"train": ["gpu03", "gpu04"], "maint": ["gpu07", "gpu08"]}  # no gpu09
    assert not snap.stale
    later = _utc("2026-12-05T02:44:00")  # train is over, maint is not
    snap = SlurmCollector(runner, clock=lambda: later, cluster_tz=dt.UTC).collect()
    assert [r.name for r in snap.reservations] == ["maint"]


def test_a_jobs_reservation_in_every_squeue_schema() -> None:
    doc = _doc("squeue.json")
    pending = next(j for j in doc["jobs"] if j["job_state"] == "PENDING")
    pending["resv_name"] = "train"
    jobs, _ = decode_squeue(_bytes(doc))
    assert next(j for j in jobs if j.id == str(pending["job_id"])).reservation == "train"
    assert all(j.reservation is None for j in jobs if j.id != str(pending["job_id"]))
    newer = json.loads((NEWER / "24.11-v0.0.40/slurm-job-gpus-pending.json").read_bytes())
    newer["jobs"][0]["resv_name"] = "maint"
    jobs, _ = decode_squeue(_bytes(newer))
    assert jobs[0].reservation == "maint"
