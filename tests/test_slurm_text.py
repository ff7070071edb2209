"""Text parsers (sprio, sshare, sacctmgr, scontrol, squeue -O) on the real 22.05 output,
and on garbage: a wrong line is a one-line ParseError, never a shifted column."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quotatop.collectors.slurm import sacctmgr, scontrol, sprio, squeue_text, sshare
from quotatop.collectors.slurm.errors import ParseError

V2205 = Path(__file__).resolve().parent / "fixtures" / "slurm" / "22.05"


def _t(name: str) -> str:
    return (V2205 / name).read_text()


def test_sprio() -> None:
    rows = {r.job_id: r for r in sprio.parse_sprio(_t("sprio.txt"))}
    assert sorted(rows, key=int) == ["11", "12", "13", "14", "21"]
    r = rows["21"]
    assert r.priority == 5170 and r.user == "alice" and r.partition == "gpu"
    assert (r.factors.qos, r.factors.job_size, r.factors.partition) == (5000, 70, 100)
    assert rows["14"].factors.nice == -100000  # submitted with --nice
    for row in rows.values():
        f = row.factors
        total = f.age + f.assoc + f.fairshare + f.job_size + f.partition + f.qos + f.tres + f.nice
        assert max(total, 1) == row.priority  # Slurm floors a priority at 1


def test_sprio_weights() -> None:
    w = sprio.parse_sprio_weights(_t("sprio_weights.txt"))
    assert w["fairshare"] == 10000 and w["qos"] == 5000 and w["age"] == 1000


def test_sshare_tree() -> None:
    rows = sshare.parse_sshare(_t("sshare.txt"))
    accounts = {r.account: r for r in rows if r.user is None}
    assert {"root", "prod", "exp", "elastic", "nlp-prod", "vision-exp"} <= set(accounts)
    assert accounts["root"].depth == 0 and accounts["prod"].depth == 1
    assert accounts["vision-prod"].depth == 2
    assert accounts["prod"].fairshare.raw_shares == 60
    assert accounts["prod"].fairshare.norm_shares == pytest.approx(0.6)
    assert accounts["elastic"].fairshare.norm_shares == pytest.approx(0.1)
    users = [r for r in rows if r.user]
    assert {(r.account, r.user) for r in users} >= {("nlp-prod", "bob"), ("vision-exp", "carol")}
    assert all(r.fairshare.factor is not None for r in users)


def test_sacctmgr_assoc_tree_and_limits() -> None:
    rows = sacctmgr.parse_assoc(_t("sacctmgr_assoc.txt"))
    acct = {a.account: a for a in rows if a.user is None}
    assert {a: acct[a].parent for a in ("prod", "exp", "elastic", "vision-prod")} == {
        "prod": "root",
        "exp": "root",
        "elastic": "root",
        "vision-prod": "prod",
    }
    assert (acct["prod"].shares, acct["exp"].shares, acct["elastic"].shares) == (60, 30, 10)
    assert acct["vision-prod"].grp_tres == {"gpu": 32}
    assert acct["vision-exp"].grp_tres == {"gpu": 8}
    assert acct["elastic-pool"].grp_tres == {"gpu": 24}
    users = [a for a in rows if a.user]
    assert all(u.qos == ["high", "low", "normal"] for u in users)


def test_sacctmgr_qos() -> None:
    q = {r.name: r for r in sacctmgr.parse_qos(_t("sacctmgr_qos.txt"))}
    assert (q["high"].priority, q["normal"].priority, q["low"].priority) == (1000, 100, 10)
    assert q["high"].preempt == ["low"] and q["high"].preempt_mode == "requeue"
    assert q["high"].grp_tres == {"gpu": 8} and q["high"].max_submit_per_user == 2
    assert q["normal"].max_tres_per_user == {"gpu": 16}
    assert q["low"].max_wall == 86400


def test_sacctmgr_tres() -> None:
    names = sacctmgr.parse_tres_table(_t("sacctmgr_tres.txt"))
    assert {"cpu", "mem", "gres/gpu", "gres/gpu:h100", "gres/gpu:a100"} <= set(names)


def test_scontrol_partitions_nodes_jobs_config() -> None:
    parts = {p.name: p for p in scontrol.parse_partitions(_t("scontrol_partition.txt"))}
    assert parts["gpu"].default and not parts["interactive"].default
    assert parts["gpu"].max_time == 3 * 86400 and parts["interactive"].max_time == 4 * 3600
    assert parts["interactive"].priority_job_factor == 10
    assert parts["gpu"].nodes == [f"gpu{i:02d}" for i in range(1, 9)]
    nodes = scontrol.parse_nodes(_t("scontrol_node.txt"))
    assert len(nodes) == 8 and nodes[0].gpus_used_indices == list(range(8))
    assert nodes[0].capacity["gpu:h100"] == 8 and nodes[4].gpu_type == "a100"
    jobs = {j["JobId"]: j for j in scontrol.parse_jobs(_t("scontrol_job.txt"))}
    assert jobs["18"]["_node_gres"] == "gpu07=gpu:a100:8(IDX:0-7)"
    assert jobs["17"]["ArrayTaskId"] == "4-7%2"
    config = scontrol.parse_config(_t("scontrol_config.txt"))
    assert config["PreemptType"] == "preempt/qos" and config["ClusterName"] == "quotatop"


def test_scontrol_values_with_spaces() -> None:
    rec = scontrol.parse_record(
        "NodeName=n1 OS=Linux 6.1 #1 SMP Arch=x86_64 Reason=bad gpu [root@2026]"
    )
    assert dict(rec) == {
        "NodeName": "n1",
        "OS": "Linux 6.1 #1 SMP",
        "Arch": "x86_64",
        "Reason": "bad gpu [root@2026]",
    }


def test_squeue_text() -> None:
    rows = {r["JobID"]: r for r in squeue_text.parse_squeue_text(_t("squeue.txt"))}
    assert rows["17"]["JobArrayID"] == "17_[4-7%2]" and rows["17"]["Reason"] == "JobArrayTaskLimit"
    assert rows["15"]["Dependency"] == "afterok:10(unfulfilled)"
    assert rows["13"]["SchedNodes"] == "gpu01"  # where backfill plans to start it
    assert rows["21"]["Name"] == "wrap"


def test_squeue_text_job_name_with_bar() -> None:
    line = _t("squeue.txt").splitlines()[0].replace("|wrap|", "|a|b c|")
    assert squeue_text.parse_squeue_text(line)[0]["Name"] == "a|b c"


PARSERS = [
    (sprio.parse_sprio, "sprio.txt"),
    (sshare.parse_sshare, "sshare.txt"),
    (sacctmgr.parse_assoc, "sacctmgr_assoc.txt"),
    (sacctmgr.parse_qos, "sacctmgr_qos.txt"),
    (sacctmgr.parse_tres_table, "sacctmgr_tres.txt"),
    (scontrol.parse_partitions, "scontrol_partition.txt"),
    (scontrol.parse_nodes, "scontrol_node.txt"),
    (scontrol.parse_jobs, "scontrol_job.txt"),
    (squeue_text.parse_squeue_text, "squeue.txt"),
]


@pytest.mark.parametrize(("parse", "name"), PARSERS, ids=[n for _, n in PARSERS])
def test_garbage_line_is_rejected(parse, name: str) -> None:
    text = _t(name) + "slurm_load_jobs error: Socket timed out on send/recv operation\n"
    with pytest.raises(ParseError) as info:
        parse(text)
    assert "\n" not in str(info.value)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_mutated_text_never_crashes(data: st.DataObject) -> None:
    parse, name = data.draw(st.sampled_from(PARSERS))
    text = list(_t(name))
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(text) - 1))
        text[at : at + data.draw(st.integers(0, 5))] = data.draw(
            st.text(alphabet="|=,:()[]-0123456789aZ \n", max_size=5)
        )
    try:
        parse("".join(text))
    except ParseError as exc:
        assert "\n" not in str(exc)


def test_one_squeue_text_answer_expands_a_bounded_number_of_hosts() -> None:
    from quotatop.collectors.slurm.hostlist import MAX_ANSWER_HOSTS, MAX_HOSTS, HostBudget
    from quotatop.collectors.slurm.mapping import job_from_text

    rows = squeue_text.parse_squeue_text(_t("squeue.txt"))
    running = dict(next(r for r in rows if r["State"] == "RUNNING"),
                   NodeList=f"gpu[1-{MAX_HOSTS}]")
    budget = HostBudget("squeue")  # the collector's one per answer (_jobs_from_text)
    for _ in range(MAX_ANSWER_HOSTS // MAX_HOSTS):
        assert len(job_from_text(running, budget=budget).nodes) == MAX_HOSTS
    with pytest.raises(ParseError, match=f"more than {MAX_ANSWER_HOSTS} hosts in one squeue"):
        job_from_text(running, budget=budget)
