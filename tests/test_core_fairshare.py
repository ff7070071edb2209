"""The core's ``fairshare``: each team's shares, usage, level and factor at a snapshot,
the numbers its jobs' fair-share factors come from (what the Priority tree shows)."""

from __future__ import annotations

import math

import pytest

from quotatop import scheduler_core
from quotatop.collectors.model import FairShare, Job, Node, Snapshot, Team
from quotatop.scheduler_core.policy import Policy


def snap(teams: list[Team]) -> Snapshot:
    return Snapshot(taken_at=1000.0, teams=teams,
                    nodes=[Node(name="n1", capacity={"gpu": 8.0, "cpu": 64.0})],
                    jobs=[Job(id="1", team=teams[0].name, request={"gpu": 1.0},
                              submit_time=900.0)])


def test_classic_factor_is_two_to_the_minus_usage_over_shares() -> None:
    teams = [Team(name="a", shares=2.0, fairshare=FairShare(raw_usage=300.0)),
             Team(name="b", shares=1.0, fairshare=FairShare(raw_usage=100.0)),
             Team(name="idle", shares=1.0)]
    rows = scheduler_core.fairshare(snap(teams), Policy(fairshare="classic"))
    assert [r.team for r in rows] == ["a", "b", "idle"]
    a, b, idle = rows
    assert (a.norm_shares, a.norm_usage) == pytest.approx((0.5, 0.75))
    assert a.level_fs == pytest.approx(0.5 / 0.75)
    assert a.factor == pytest.approx(2 ** (-0.75 / 0.5))
    assert b.factor == pytest.approx(2 ** (-0.25 / 0.25))
    assert idle.norm_usage == 0.0 and math.isinf(idle.level_fs) and idle.factor == 1.0


def test_fair_tree_levels_are_among_siblings_and_accounts_hold_their_subtree() -> None:
    teams = [Team(name="org", shares=1.0),
             Team(name="x", parent="org", shares=1.0, fairshare=FairShare(raw_usage=30.0)),
             Team(name="y", parent="org", shares=3.0, fairshare=FairShare(raw_usage=10.0)),
             Team(name="z", shares=1.0, fairshare=FairShare(raw_usage=40.0))]
    rows = {r.team: r for r in scheduler_core.fairshare(snap(teams),
                                                         Policy(fairshare="fair_tree"))}
    # org holds x and y's 40 against z's 40: an even level at the top.
    assert (rows["org"].norm_shares, rows["org"].norm_usage) == pytest.approx((0.5, 0.5))
    assert (rows["x"].norm_shares, rows["x"].norm_usage) == pytest.approx((0.25, 0.75))
    assert rows["y"].level_fs == pytest.approx(0.75 / 0.25)
    # Depth first, siblings by level (org and z tie at 1.0, by name): org, y, x, z.
    assert [rows[n].factor for n in ("org", "y", "x", "z")] == [1.0, 0.75, 0.5, 0.25]


def test_a_bad_snapshot_is_a_one_line_value_error() -> None:
    with pytest.raises(ValueError) as e:
        scheduler_core.fairshare(b"\xc1not msgpack")
    assert "\n" not in str(e.value)
