"""The snapshot model round-trips and crosses into the Rust core intact."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from quotatop import scheduler_core
from quotatop.collectors.model import (
    Job,
    Node,
    Snapshot,
    Team,
    from_json,
    from_msgpack,
    to_json,
    to_msgpack,
)

resources = st.dictionaries(st.sampled_from(["cpu", "memory", "gpu", "gpu:h100", "gpu:a100"]),
                            st.floats(min_value=0, max_value=1e6, allow_nan=False), max_size=5)
jobs = st.builds(Job, id=st.text(min_size=1, max_size=8), team=st.sampled_from(["a", "b"]),
                 state=st.sampled_from(["pending", "running"]), request=resources)
snapshots = st.builds(
    Snapshot,
    nodes=st.lists(st.builds(Node, name=st.text(min_size=1, max_size=6), capacity=resources),
                   max_size=4),
    teams=st.lists(st.builds(Team, name=st.text(min_size=1, max_size=6),
                             guarantee=st.none() | resources, max=st.none() | resources),
                   max_size=3),
    jobs=st.lists(jobs, max_size=20),
)


@given(snapshots)
def test_roundtrip_msgpack_and_json(snap: Snapshot) -> None:
    assert from_msgpack(to_msgpack(snap)) == snap
    assert from_json(to_json(snap)) == snap


@given(snapshots)
def test_rust_sees_what_python_encoded(snap: Snapshot) -> None:
    stats = scheduler_core.snapshot_stats(to_msgpack(snap))
    assert stats["jobs"] == len(snap.jobs)
    assert stats["nodes"] == len(snap.nodes)
    assert stats["teams"] == len(snap.teams)
    assert stats["pending"] == sum(j.state == "pending" for j in snap.jobs)
    expected = sum(j.request.get("gpu", 0.0) for j in snap.jobs)
    assert abs(stats["requested_gpus"] - expected) <= 1e-6 * max(1.0, expected)


def test_rust_rejects_garbage_with_a_value_error() -> None:
    import pytest

    with pytest.raises(ValueError, match="snapshot does not decode"):
        scheduler_core.snapshot_stats(b"\xc1not msgpack")


def test_missing_guarantee_means_no_notion() -> None:
    team = Team(name="slurm-acct", max={"gpu": 16})
    assert team.guarantee is None
    assert b"guarantee" not in to_json(Snapshot(teams=[team]))
