"""`quotatop whatif` (docs/review.md): a raised max shortens the capped team's predicted
waits, the admin commands are exactly Slurm's, bad --set is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quotatop.cli import main
from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Snapshot, Team
from quotatop.review.whatif import apply_changes, parse_set, slurm_commands

# The bundled 60/30/10 demo's cluster (25 nodes × 4 GPUs), but exp is capped at 40 GPUs
# and asks for 80: 10 of its 4-GPU jobs run, 10 wait on the cap with 60 GPUs idle. With
# max 80 nothing holds them, so they must start at once: the mean wait must drop.
CAPPED = """
[scenario]
name = "capped"
description = "exp capped at 40 of 100 GPUs"
policy = "multifactor"
unit = "gpu"

[settings]
bf_resolution = 1

[[nodes]]
name = "gpu"
count = 25
gpu = 4
cpu = 32
memory = 256000

[[teams]]
name = "exp"
guarantee = 30
max = 40

[[teams]]
name = "prod"
guarantee = 60
max = 100

[[jobs]]
id = "exp"
team = "exp"
count = 20
gpu = 4
duration = 3600
"""


def test_raising_a_max_lowers_that_teams_mean_wait(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "capped.toml"
    scenario.write_text(CAPPED)
    assert main(["whatif", "--source", "demo", str(scenario), "--set", "team=exp max.gpu=80",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    exp = next(t for t in out["teams"] if t["team"] == "exp")
    assert exp["pending"] == 10
    assert exp["mean_wait_before"] == pytest.approx(3600.0)  # behind the running ten
    assert exp["mean_wait_after"] == pytest.approx(0.0)
    assert exp["mean_wait_after"] < exp["mean_wait_before"]
    assert len(out["movers"]) == 10 and all(m["moved"] == pytest.approx(-3600.0)
                                            for m in out["movers"])
    assert "sacctmgr modify account exp set GrpTRES=gres/gpu=80" in out["commands"]
    # The text form says the same.
    assert main(["whatif", "--source", "demo", str(scenario), "--set",
                 "team=exp max.gpu=80"]) == 0
    assert "60m → 0s" in capsys.readouterr().out


def test_the_printed_slurm_commands_are_exact() -> None:
    changes = [parse_set("team=vision-exp max.gpu=24"),
               parse_set("team=nlp max.gpu=16 max.cpu=128 shares=200"),
               parse_set("qos=high priority=500 grp.gpu=8"),
               parse_set("node=gpu03 state=drain reason='disk failing'")]
    assert slurm_commands(changes) == [
        "sacctmgr modify account vision-exp set GrpTRES=gres/gpu=24",
        "sacctmgr modify account nlp set GrpTRES=gres/gpu=16,cpu=128",
        "sacctmgr modify account nlp set Fairshare=200",
        "sacctmgr modify qos high set Priority=500 GrpTRES=gres/gpu=8",
        "scontrol update nodename=gpu03 state=drain reason='disk failing'",
    ]


@pytest.mark.parametrize("bad, says", [
    ("team=exp max.gpu=lots", "is not a number"),
    ("team=exp max.gpu", "is not key=value"),
    ("team=exp colour=red", "unknown team setting"),
    ("exp max.gpu=8", "expected team=NAME"),
    ("node=gpu01 state=melt", "state=drain|resume"),
    ("add_nodes=2", "like=NODE"),
    ("team=exp max.gpu=-4", "must be a finite number"),
])
def test_bad_set_is_one_line_exit_2(bad: str, says: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", "--source", "demo", "--set", bad]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and err.startswith("quotatop: --set"), err


def test_changes_make_a_new_snapshot_and_name_unknown_objects() -> None:
    snap = Snapshot(teams=[Team(name="exp", max={"gpu": 40})])
    after = apply_changes(snap, [parse_set("team=exp max.gpu=80")])
    assert after.teams[0].max == {"gpu": 80} and snap.teams[0].max == {"gpu": 40}
    with pytest.raises(UserError, match="no team 'typo'"):
        apply_changes(snap, [parse_set("team=typo max.gpu=1")])
