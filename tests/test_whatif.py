"""`quotatop whatif` (docs/review.md): a raised max shortens the capped team's predicted
waits, the admin commands are exactly Slurm's, bad --set is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.fixtures_k8s_prom import kube_api  # noqa: F401  (pytest fixture)
from harness.kube_apiserver import KubeAPIServer
from quotatop.cli import main
from quotatop.collectors.errors import UserError
from quotatop.collectors.model import QuotaObject, Snapshot, Team
from quotatop.review.whatif import apply_changes, k8s_commands, parse_set, slurm_commands

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


# ---- the Kueue and ResourceQuota patches: the same numbers as the Slurm command ---------

def _patch(line: str) -> dict:
    """The JSON of a printed `kubectl patch … -p '{…}'` line."""
    return json.loads(line.rsplit(" -p ", 1)[1].strip("'"))


def _cq_resource(commands: list[str], name: str) -> dict:
    line = next(c for c in commands if c.startswith(f"kubectl patch clusterqueue {name} "))
    [group] = _patch(line)["spec"]["resourceGroups"]
    [flavor] = group["flavors"]
    [res] = flavor["resources"]
    return {"flavor": flavor["name"], **res}


def _slurm_max(commands: list[str], name: str) -> float:
    line = next(c for c in commands if c.startswith(f"sacctmgr modify account {name} "))
    return float(line.rsplit("gres/gpu=", 1)[1])


def _usable(res: dict) -> float:
    """Kueue's maximum usable: nominalQuota + borrowingLimit."""
    return float(res["nominalQuota"]) + float(res.get("borrowingLimit", 0))


def test_a_max_below_the_guarantee_lowers_nominal_quota_to_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    # The bundled demo: exp is guaranteed 30 GPUs; a max of 24 must cap it at 24 in
    # Kueue as in Slurm, not leave nominalQuota 30 with borrowingLimit 0 (a max of 30).
    assert main(["whatif", "--source", "demo", "--set", "team=exp max.gpu=24",
                 "--json"]) == 0
    commands = json.loads(capsys.readouterr().out)["commands"]
    res = _cq_resource(commands, "exp")
    assert _usable(res) == _slurm_max(commands, "exp") == 24
    assert float(res["nominalQuota"]) <= _usable(res)
    assert any("lowers nominalQuota to 24" in c for c in commands)


def test_a_max_above_the_guarantee_is_nominal_plus_borrowing_limit() -> None:
    snap = Snapshot(source="k8s", teams=[Team(
        name="cq", cohort="ai", guarantee={"gpu": 16}, max={"gpu": 24},
        quota_objects=[QuotaObject(kind="clusterqueue", name="cq",
                                   keys={"gpu": "nvidia.com/gpu"}, flavors={"gpu": ["a100"]})])])
    change = parse_set("team=cq max.gpu=40")
    res = _cq_resource(k8s_commands([change], snap), "cq")
    assert res == {"flavor": "a100", "name": "nvidia.com/gpu", "nominalQuota": "16",
                   "borrowingLimit": "24"}
    assert _usable(res) == _slurm_max(slurm_commands([change]), "cq")
    after = {t.name: t for t in apply_changes(snap, [change]).teams}["cq"]
    assert (after.guarantee, after.max) == ({"gpu": 16}, {"gpu": 40})


def _k8s_whatif(kube_api: KubeAPIServer, tmp_path: Path,  # noqa: F811
                capsys: pytest.CaptureFixture[str], change: str) -> list[str]:
    kc = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    assert main(["whatif", "--source", "k8s", "--kubeconfig", str(kc), "--set", change,
                 "--json"]) == 0
    return json.loads(capsys.readouterr().out)["commands"]


def test_kueue_clusterqueue_patch_on_the_test_server(
        kube_api: KubeAPIServer, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    # cq-ml-research: nominalQuota 32 GPUs on the h100 flavor, in cohort ai.
    commands = _k8s_whatif(kube_api, tmp_path, capsys, "team=cq-ml-research max.gpu=24")
    res = _cq_resource(commands, "cq-ml-research")
    assert res["flavor"] == "h100" and res["name"] == "nvidia.com/gpu"
    target = _slurm_max(slurm_commands([parse_set("team=cq-ml-research max.gpu=24")]),
                        "cq-ml-research")
    assert _usable(res) == target == 24 and float(res["nominalQuota"]) == 24


def test_a_namespace_team_gets_its_resourcequota_patched(
        kube_api: KubeAPIServer, tmp_path: Path,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    # ml-research is a namespace whose GPU limit is ResourceQuota team-quota's
    # requests.nvidia.com/gpu: that object is patched, not a ClusterQueue of its name.
    commands = _k8s_whatif(kube_api, tmp_path, capsys, "team=ml-research max.gpu=24")
    assert not any("clusterqueue" in c for c in commands)
    [line] = [c for c in commands if c.startswith("kubectl patch resourcequota ")]
    assert line.startswith("kubectl patch resourcequota team-quota -n ml-research ")
    hard = _patch(line)["spec"]["hard"]
    target = _slurm_max(slurm_commands([parse_set("team=ml-research max.gpu=24")]),
                        "ml-research")
    assert hard == {"requests.nvidia.com/gpu": "24"} and float(hard[
        "requests.nvidia.com/gpu"]) == target
