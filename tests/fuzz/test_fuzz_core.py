"""Fuzz of the scheduling core's way in: snapshots and policies, as model Structs with
hostile values and as raw bytes (the core's msgpack entry points, scheduler_core/_core.pyi).

The core's one error for input it refuses is a ValueError of one line (a Rust panic is
turned into one by its guard; an abort would take the whole test run down, which is why
the bytes here are bounded in size and nesting is left to the decoder's own limit).
tests/test_core_predict_property.py and tests/test_core_properties.py check the core's
answers on valid input; these only ask that any input gets an answer or that error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from fuzz.strategies import (
    BIG_INTS,
    DEMO,
    FLOATS,
    Named,
    fuzz,
    mutated_bytes,
    mutated_tree,
    one_line,
    pack_msgpack,
)
from quotatop import scheduler_core
from quotatop.collectors.model import (
    FairShare,
    Job,
    Limit,
    Node,
    Partition,
    PriorityFactors,
    QoS,
    SchedulerConfig,
    ShareNode,
    Snapshot,
    Team,
    to_msgpack,
)
from quotatop.scheduler_core import Policy, PriorityWeights, SimJob
from quotatop.scheduler_core._core import (
    check_policy,
    fifo_simulate,
    predict_msgpack,
    predict_rows_msgpack,
    simulate_msgpack,
    snapshot_stats,
    snapshot_stats_owned,
)

# What a model Struct can hold and still be encoded: text without lone surrogates (the
# collectors never make one: Slurm text is decoded with errors="replace", JSON decoders
# refuse them) and ints msgpack can write.
names = st.sampled_from(["", "a", "b", "gpu01", "n[1-2]", "normal", "high", " ", "é"]) | st.text(
    max_size=6)
floats = st.sampled_from(FLOATS) | st.floats() | st.floats(-10, 1e6)
ints = st.sampled_from([b for b in BIG_INTS if -(2**63) <= b < 2**63]) | st.integers(-3, 64)
opt_floats = st.none() | floats
opt_ints = st.none() | ints
KEYS = ["gpu", "cpu", "memory", "gpu:h100", "gpu:a100", "node", "", "gpu:", "billing"]
resources = st.dictionaries(st.sampled_from(KEYS) | names, floats, max_size=4)
opt_resources = st.none() | resources
STATES = ["pending", "running", "suspended", "completed", "preempted", "failed", "", "x"]

jobs = st.builds(
    Job, id=names, team=names, user=names, qos=names, partition=st.none() | names,
    state=st.sampled_from(STATES) | names, request=resources, nodes_requested=ints,
    time_limit=opt_floats, submit_time=floats, eligible_time=opt_floats,
    start_time=opt_floats, end_time=opt_floats, priority=opt_floats,
    factors=st.none() | st.builds(PriorityFactors, age=floats, fairshare=floats, qos=floats),
    nodes=st.lists(names, max_size=3), estimated_start=opt_floats,
    dependency=st.none() | names, gang=st.none() | names, queue_position=opt_ints,
    constraint=st.none() | st.sampled_from(["a100", "a|b", "a&b", "(", "[a*2]", "!"]) | names,
    exclusive=st.booleans(), runtime_estimate=opt_floats, array_parent=st.none() | names,
    array_task=st.none() | names,
)
nodes = st.builds(
    Node, name=names, partitions=st.lists(names, max_size=2),
    state=st.sampled_from(["idle", "mixed", "allocated", "down", "drain", "x"]),
    capacity=resources, allocated=resources, allocatable=resources,
    gpus_used_indices=st.lists(ints, max_size=3), features=st.lists(names, max_size=2),
)
teams = st.builds(
    Team, name=names, parent=st.none() | names, cohort=st.none() | names,
    guarantee=opt_resources, max=opt_resources, lendable=opt_resources, weight=floats,
    preemptible=st.booleans(), shares=opt_floats, usage=resources, borrowed=resources,
    per_job_limit=opt_resources, per_user_limit=opt_resources, max_wall=opt_floats,
    max_submit_jobs=opt_ints,
    fairshare=st.none() | st.builds(FairShare, raw_shares=opt_floats, factor=opt_floats,
                                    level_fs=opt_floats),
)
qos = st.builds(
    QoS, name=names, priority=ints, preempts=st.lists(names, max_size=2),
    preempt_mode=st.sampled_from(["requeue", "suspend", "cancel", "off", "x"]),
    max_wall=opt_floats, max_tres_per_user=opt_resources, max_tres_per_job=opt_resources,
    grp_tres=opt_resources, max_submit_jobs_per_user=opt_ints, max_jobs_per_user=opt_ints,
    usage_factor=floats, preempt_exempt_time=opt_floats, grace_time=opt_floats,
)
limits = st.builds(
    Limit, scope=st.sampled_from(["qos", "account", "user", "partition", "x"]), owner=names,
    per=st.sampled_from(["group", "user", "account", "job", "x"]), tres=resources,
    jobs=opt_ints, submit=opt_ints, wall=opt_floats, rank=ints,
)
schedulers = st.none() | st.builds(
    SchedulerConfig, priority=st.none() | st.sampled_from(["multifactor", "basic", "x"]),
    weights=st.dictionaries(st.sampled_from(["age", "fairshare", "qos", "tres:gpu", "x"]),
                            floats, max_size=3),
    max_age=opt_floats, usage_half_life=opt_floats, bf_interval=opt_floats,
    bf_resolution=opt_floats, bf_window=opt_floats, bf_max_job_test=opt_ints,
    queue_depth=opt_ints, preempt_exempt_time=opt_floats, calc_period=opt_floats,
    backfill=st.none() | st.sampled_from(["none", "easy", "conservative", "x"]),
    placement=st.none() | st.sampled_from(["consecutive", "best_fit", "x"]),
)
snapshots = st.builds(
    Snapshot, taken_at=floats, nodes=st.lists(nodes, max_size=5),
    partitions=st.lists(st.builds(Partition, name=names, nodes=st.lists(names, max_size=3),
                                  max_time=opt_floats, priority_tier=ints), max_size=2),
    teams=st.lists(teams, max_size=4), qos=st.lists(qos, max_size=3),
    jobs=st.lists(jobs, max_size=10), limits=st.lists(limits, max_size=3),
    scheduler=schedulers,
    shares=st.lists(st.builds(ShareNode, account=names, parent=st.none() | names,
                              raw_shares=floats, raw_usage=floats, factor=opt_floats),
                    max_size=3),
)
policies = st.builds(
    Policy,
    weights=st.builds(PriorityWeights, age=floats, fairshare=floats, qos=floats,
                      job_size=floats, partition=floats),
    max_age=floats, usage_half_life=floats, bf_window=floats, bf_resolution=floats,
    bf_max_job_test=ints, fairshare_period=floats, preemption=st.booleans(),
    main_pass=st.booleans(), strict_team_fifo=st.booleans(),
    backfill=st.sampled_from(["none", "easy", "conservative"]),
    passes=st.sampled_from(["grid", "events"]),
    priority=st.sampled_from(["computed", "source"]),
    fairshare=st.sampled_from(["classic", "fair_tree"]),
    placement=st.sampled_from(["best_fit", "spread", "consecutive"]),
)


def _answer(call: Callable[[], Any]) -> Any:
    """The core's answer, or its one error."""
    try:
        return call()
    except ValueError as exc:
        one_line(str(exc))
        return exc


@fuzz(cost=2)
@given(snapshots, st.none() | policies, st.sampled_from([0.0, 60.0, 86400.0, 1e12]) | floats)
def test_predict_on_hostile_snapshots_answers_or_is_one_value_error(
    snap: Snapshot, policy: Policy | None, horizon: float
) -> None:
    got = _answer(lambda: scheduler_core.predict(snap, policy, horizon))
    batch = _answer(lambda: scheduler_core.predict_batch(snap, policy, horizon))
    if not isinstance(got, Exception):
        # The lazy rows hold the same answer, each row decoding as it is read.
        assert not isinstance(batch, Exception)
        assert batch.to_list() == got
        for p in got:
            assert p.start is None or not math.isnan(p.start), p


def _sim_jobs() -> st.SearchStrategy[list[SimJob]]:
    return st.lists(st.builds(
        SimJob, id=names, submit_time=floats, duration=floats, request=resources, team=names,
        qos=names, time_limit=opt_floats, nodes_requested=ints, gang=st.none() | names,
    ), max_size=8)


@fuzz(cost=2)
@given(_sim_jobs(), st.none() | policies, snapshots, opt_floats, opt_floats)
def test_simulate_on_hostile_jobs_answers_or_is_one_value_error(
    jobs: list[SimJob], policy: Policy | None, cluster: Snapshot, start: float | None,
    until: float | None,
) -> None:
    _answer(lambda: scheduler_core.simulate(jobs, policy, cluster=cluster, start=start,
                                            until=until))


@fuzz()
@given(
    st.lists(st.tuples(names, floats), max_size=4),
    st.lists(st.tuples(st.sampled_from(["submit", "finish", "x", ""]), names, floats),
             max_size=8),
)
def test_fifo_simulate_answers_or_is_one_value_error(
    caps: list[tuple[str, float]], events: list[tuple[str, str, float]]
) -> None:
    _answer(lambda: fifo_simulate(caps, events))


# ---- bytes -----------------------------------------------------------------------------
def _real_snapshot() -> Snapshot:
    """A demo cluster a few steps in: nodes, teams, running and pending jobs."""
    from quotatop.simulation.scenario import load_scenario
    from quotatop.simulation.scenario_source import ScenarioSource

    src = ScenarioSource(load_scenario(DEMO / "split_60_30_10.toml"), loop=False)
    snap = src.collect()
    for _ in range(3):
        snap = src.collect()
    return snap


_SNAPSHOT = Named(to_msgpack(_real_snapshot()), "demo snapshot")
_POLICY = msgspec.msgpack.encode(Policy())


@st.composite
def snapshot_bytes(draw: st.DrawFn) -> bytes:
    """msgpack a snapshot decoder is handed: a real snapshot's with a few positions
    changed (wrong types, hostile values, keys twice, strings that are not UTF-8), or
    its bytes edited, or bytes of anything."""
    kind = draw(st.sampled_from(["tree", "tree", "bytes", "noise"]))
    if kind == "tree":
        doc = msgspec.msgpack.decode(_SNAPSHOT)
        return pack_msgpack(draw(mutated_tree(doc)))
    if kind == "bytes":
        return draw(mutated_bytes(_SNAPSHOT, max_edits=8))
    return draw(st.binary(max_size=200))


@st.composite
def policy_bytes(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["real", "tree", "bytes"]))
    if kind == "real":
        return _POLICY
    if kind == "tree":
        return pack_msgpack(draw(mutated_tree(msgspec.msgpack.decode(_POLICY), max_edits=3)))
    return draw(mutated_bytes(_POLICY))


@fuzz()
@given(snapshot_bytes(), policy_bytes(), st.sampled_from([3600.0, 0.0]) | floats)
def test_the_core_bytes_entry_points_answer_or_are_one_value_error(
    snap: bytes, policy: bytes, horizon: float
) -> None:
    _answer(lambda: snapshot_stats(snap))
    _answer(lambda: snapshot_stats_owned(snap))
    _answer(lambda: check_policy(policy))
    got = _answer(lambda: predict_msgpack(snap, policy, horizon))
    rows = _answer(lambda: predict_rows_msgpack(snap, policy, horizon))
    if not isinstance(got, Exception):
        # What the core writes, the Python side reads back.
        scheduler_core.predict(snap, policy, horizon)
        assert not isinstance(rows, Exception)
    sim = pack_msgpack({"cluster": msgspec.msgpack.decode(_SNAPSHOT), "jobs": []})
    _answer(lambda: simulate_msgpack(snap, policy))
    _answer(lambda: simulate_msgpack(sim, policy))


@fuzz()
@given(st.integers(1, 100_000), st.sampled_from([b"\x91", b"\x81\xa1a", b"\xdc\x00\x01"]))
def test_nesting_beyond_any_limit_is_one_value_error(depth: int, opener: bytes) -> None:
    # Deep enough to overflow a recursive decoder's stack: the core's decoders count
    # depth and refuse (an abort here would end the whole run, not fail one test).
    data = b"\x81\xa4meta" + opener * depth + b"\xc0"
    _answer(lambda: snapshot_stats(data))
    _answer(lambda: snapshot_stats_owned(data))
    _answer(lambda: predict_msgpack(data, _POLICY, 60.0))
    _answer(lambda: check_policy(opener * depth + b"\xc0"))
    _answer(lambda: simulate_msgpack(data, _POLICY))


def test_found_a_name_with_a_line_break_is_still_a_one_line_error() -> None:
    # Found by this suite: the core quotes names as they are, so a node or resource named
    # with a line break made a ValueError of two lines (scheduler_core.predict escapes it).
    snap = Snapshot(nodes=[Node(name="a\nb", capacity={"gpu": 8.0},
                                allocated={"gpu\r": math.nan})])
    for call in (lambda: scheduler_core.predict(snap),
                 lambda: scheduler_core.predict_batch(snap),
                 lambda: scheduler_core.simulate([], cluster=snap)):
        try:
            call()
        except ValueError as exc:
            one_line(str(exc))
            assert "\\n" in str(exc) or "\\r" in str(exc), str(exc)
        else:
            raise AssertionError("a NaN allocation was accepted")
