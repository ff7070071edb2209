"""squeue/sinfo/sacct --json of both schema generations, decoded with msgspec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quotatop.collectors.slurm.errors import ParseError
from quotatop.collectors.slurm.json_decode import decode_sacct, decode_sinfo, decode_squeue

FIX = Path(__file__).resolve().parent / "fixtures" / "slurm"
V2205 = FIX / "22.05"
NEWER = sorted((FIX / "23.02+").glob("*/*.json"))


def _read(name: str) -> bytes:
    return (V2205 / name).read_bytes()


def test_squeue_2205_matches_the_raw_document() -> None:
    raw = json.loads(_read("squeue.json"))
    jobs, info = decode_squeue(_read("squeue.json"))
    assert info.version == 38 and info.release == "22.05.8" and not info.warnings
    assert [j.id for j in jobs] == [str(r["job_id"]) for r in raw["jobs"]]
    for job, r in zip(jobs, raw["jobs"], strict=True):
        assert job.user == r["user_name"] and job.team == r["account"] and job.qos == r["qos"]
        assert job.state == r["job_state"].lower() or (r["job_state"], job.state) in {
            ("COMPLETED", "completed"),
            ("FAILED", "failed"),
        }
        assert job.reason == (None if r["state_reason"] == "None" else r["state_reason"])
        assert job.time_limit == r["time_limit"] * 60
        if r["job_state"] == "PENDING":
            assert job.estimated_start == (r["start_time"] or None)
            assert job.nodes == []
        else:
            assert job.start_time == r["start_time"]
    by_id = {j.id: j for j in jobs}
    assert by_id["13"].request == {"cpu": 8, "memory": 65536, "gpu": 8, "gpu:h100": 8}
    assert by_id["15"].dependency == "afterok:10(unfulfilled)"
    assert by_id["15"].estimated_start is None
    assert (by_id["17"].array_parent, by_id["17"].array_task) == ("17", "4-7%2")
    assert (by_id["19"].array_parent, by_id["19"].array_task) == ("17", "2")
    assert by_id["16"].eligible_time == by_id["16"].estimated_start  # --begin
    assert by_id["18"].nodes == ["gpu07"]


def test_sinfo_2205_nodes() -> None:
    nodes, info, exact = decode_sinfo(_read("sinfo.json"))
    assert exact and info.version == 38
    assert [n.name for n in nodes] == [f"gpu{i:02d}" for i in range(1, 9)]
    for n in nodes:
        gtype = "h100" if n.name <= "gpu04" else "a100"
        assert n.gpu_type == gtype
        assert n.capacity == {"cpu": 64, "memory": 1_000_000, "gpu": 8, f"gpu:{gtype}": 8}
        assert n.partitions == ["gpu", "interactive"]
        assert n.gpus_used_indices == list(range(8))
        assert n.state == "mixed"
    assert nodes[7].allocated["cpu"] == 12  # the two array tasks share gpu08


def test_sacct_2205_history_with_preempted_run() -> None:
    jobs, info = decode_sacct(_read("sacct.json"))
    assert info.version == 38
    states = {(j.id, j.state) for j in jobs}
    assert ("1", "completed") in states and ("2", "failed") in states
    assert ("3", "preempted") in states
    pre = next(j for j in jobs if j.state == "preempted")
    assert pre.nodes == ["gpu07"] and pre.request["gpu:a100"] == 8


@pytest.mark.skipif(not NEWER, reason="no 23.02+ fixture yet")
@pytest.mark.parametrize("path", NEWER, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_newer_schema_fixtures(path: Path) -> None:
    raw = json.loads(path.read_bytes())
    plugin = raw["meta"].get("plugin") or raw["meta"]["plugins"]  # 23.02 CLI: "plugins"
    want = int(plugin["data_parser"].rsplit(".", 1)[1])
    if "jobs" in raw and "job_state" in (raw["jobs"] or [{}])[0]:
        jobs, info = decode_squeue(path.read_bytes())
        assert info.version == want
        for job, r in zip(jobs, raw["jobs"], strict=True):
            assert job.id == str(r["job_id"])
            assert job.priority == r["priority"]["number"]
            lim = r["time_limit"]
            assert job.time_limit == (
                lim["number"] * 60 if lim["set"] and not lim["infinite"] else None
            )
            state = r["job_state"] if isinstance(r["job_state"], str) else r["job_state"][0]
            assert job.state == {"PENDING": "pending", "RUNNING": "running"}.get(state, job.state)
    elif "jobs" in raw:  # slurmdb (sacct) records
        jobs, info = decode_sacct(path.read_bytes())
        assert info.version == want
        assert [j.id for j in jobs] == [str(r["job_id"]) for r in raw["jobs"]]
    elif "nodes" in raw:
        nodes, info, exact = decode_sinfo(path.read_bytes())
        assert info.version == want
        assert exact and [n.name for n in nodes] == [r["name"] for r in raw["nodes"]]
    else:  # sinfo --json rows
        nodes, info, exact = decode_sinfo(path.read_bytes())
        assert info.version == want and not exact
        assert {n.name for n in nodes} == {h for r in raw["sinfo"] for h in r["nodes"]["nodes"]}


def _wrapped(n: object) -> dict[str, object]:
    return {"set": n is not None, "infinite": False, "number": n or 0}


def _as_v40(doc: dict) -> bytes:
    """The 22.05 jobs re-expressed in the 23.02+ shape (wrapped numbers, state lists)."""
    out = {
        "meta": {
            "plugin": {"type": "", "data_parser": "data_parser/v0.0.40"},
            "slurm": {
                "version": {"major": "23", "minor": "11", "micro": "1"},
                "release": "23.11.1",
            },
        },
        "errors": [],
        "warnings": [],
        "jobs": [],
    }
    for r in doc["jobs"]:
        r = dict(r)
        for k in (
            "priority",
            "time_limit",
            "submit_time",
            "start_time",
            "end_time",
            "eligible_time",
            "node_count",
            "array_job_id",
            "array_task_id",
            "array_max_tasks",
            "cpus",
        ):
            r[k] = _wrapped(r.get(k))
        r["job_state"] = [r["job_state"]]
        out["jobs"].append(r)
    return json.dumps(out).encode()


def test_both_generations_decode_to_the_same_jobs() -> None:
    old, _ = decode_squeue(_read("squeue.json"))
    new, info = decode_squeue(_as_v40(json.loads(_read("squeue.json"))))
    assert info.version == 40
    assert new == old


def test_unknown_newer_schema_reads_as_closest_with_warning() -> None:
    doc = json.loads(_as_v40(json.loads(_read("squeue.json"))))
    doc["meta"]["plugin"]["data_parser"] = "data_parser/v0.0.45"
    jobs, info = decode_squeue(json.dumps(doc).encode())
    assert info.version == 42 and len(jobs) == 21
    assert info.warnings == [
        "squeue: schema v0.0.45 unknown; read as v0.0.42 (fields may be missing)"
    ]


def test_unknown_fields_are_ignored() -> None:
    doc = json.loads(_read("squeue.json"))
    doc["brand_new"] = {"x": [1, 2]}
    for j in doc["jobs"]:
        j["future_field"] = {"nested": True}
    jobs, _ = decode_squeue(json.dumps(doc).encode())
    assert len(jobs) == 21


def test_sinfo_grouped_rows_of_2302() -> None:
    doc = {
        "meta": {"plugin": {"data_parser": "data_parser/v0.0.39"}},
        "sinfo": [
            {
                "nodes": {"nodes": ["gpu01", "gpu02"], "total": 2},
                "node": {"state": ["MIXED"]},
                "cpus": {"allocated": 16, "total": 64},
                "memory": {"maximum": 1000000},
                "partition": {"name": "gpu"},
                "gres": {"total": "gpu:h100:8", "used": ""},
            },
            {
                "nodes": {"nodes": ["gpu01", "gpu02"]},
                "node": {"state": ["MIXED"]},
                "partition": {"name": "interactive"},
                "gres": {"total": "gpu:h100:8"},
            },
        ],
    }
    nodes, info, exact = decode_sinfo(json.dumps(doc).encode())
    assert not exact and info.version == 39
    assert [(n.name, n.partitions) for n in nodes] == [
        ("gpu01", ["gpu", "interactive"]),
        ("gpu02", ["gpu", "interactive"]),
    ]
    assert nodes[0].capacity == {"cpu": 64, "memory": 1000000, "gpu": 8, "gpu:h100": 8}


@pytest.mark.parametrize("cut", [0, 1, 100, 5000, -3])
def test_truncated_json_is_a_parse_error(cut: int) -> None:
    data = _read("squeue.json")
    with pytest.raises(ParseError) as info:
        decode_squeue(data[:cut])
    assert "\n" not in str(info.value)


def test_missing_meta_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="meta"):
        decode_squeue(b'{"jobs": []}')


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_json_never_crashes(data: st.DataObject) -> None:
    raw = bytearray(_read(data.draw(st.sampled_from(["squeue.json", "sinfo.json", "sacct.json"]))))
    for _ in range(data.draw(st.integers(1, 5))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at : at + data.draw(st.integers(0, 8))] = data.draw(st.binary(max_size=8))
    for decode in (decode_squeue, decode_sinfo, decode_sacct):
        try:
            decode(bytes(raw))
        except ParseError as exc:
            assert "\n" not in str(exc)


# ---- wrapped numbers and records that cannot stand (issue #35) ---------------------------


def _v40_with(job: int, **fields: object) -> bytes:
    """The 22.05 jobs in the 23.02+ shape, job index ``job`` with ``fields`` replaced."""
    doc = json.loads(_as_v40(json.loads(_read("squeue.json"))))
    doc["jobs"][job].update(fields)
    return json.dumps(doc).encode()


def _wrap(**num: object) -> dict[str, object]:
    return {"set": True, "infinite": False, **num}


@pytest.mark.parametrize(("field", "value", "attr", "want"), [
    # Slurm's INFINITE: no limit; not a number of minutes.
    ("time_limit", _wrap(infinite=True, number=0), "time_limit", None),
    ("time_limit", _wrap(set=False, number=60), "time_limit", None),
    ("priority", _wrap(set=False, number=7), "priority", None),
    ("priority", _wrap(infinite=True, number=7), "priority", None),
    ("node_count", _wrap(set=False, number=3), "nodes_requested", 1),
    ("time_limit", _wrap(number=90), "time_limit", 90 * 60.0),
])
def test_unset_and_infinite_numbers_mean_no_value(field: str, value: object, attr: str,
                                                  want: object) -> None:
    jobs, info = decode_squeue(_v40_with(2, **{field: value}))
    assert len(jobs) == 21 and not info.warnings
    assert getattr(jobs[2], attr) == want


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("time_limit", _wrap(number=-5), "negative time limit -5"),
    ("priority", _wrap(number=-1), "negative priority -1"),
    ("node_count", _wrap(number=-2), "negative node count -2"),
    ("time_limit", -5, "negative time limit -5"),  # plain, as some releases print it
    ("time_limit", {"set": True, "infinite": False}, "set, but no number"),
    ("priority", _wrap(number=None), "set, but no number"),
    ("time_limit", _wrap(number="60"), "Expected `float | null`, got `str`"),
    ("priority", _wrap(number=True), "Expected `float | null`, got `bool`"),
    ("node_count", "two", "Expected `int | float | object | null`, got `str`"),
    ("nodes", "gpu[001-999999]", "more than 100000 hosts"),
    # Times: none is infinite, not finite, before 1970 or after 9999 (#35, 2b).
    ("submit_time", _wrap(infinite=True, number=0), "submit time infinite"),
    ("submit_time", _wrap(number=1e308), "submit time 1e+308 after year 9999"),
    ("submit_time", _wrap(number=-1e12), "submit time -1e+12 before 1970"),
    ("eligible_time", _wrap(number=-5), "eligible time -5 before 1970"),
    ("start_time", _wrap(number=253_402_300_800), "start time 2.53402e+11 after year 9999"),
    ("end_time", _wrap(infinite=True, number=0), "end time infinite"),
    # What Slurm cannot hold: its time limit and priority are uint32; the core's
    # bound on a job's node count (#35, 2d).
    ("time_limit", _wrap(number=1e308), "time limit 1e+308 above 4294967293"),
    ("priority", _wrap(number=1e308), "priority 1e+308 above 4294967293"),
    ("node_count", _wrap(number=1e9), "node count 1e+09 above 1000000"),
])
def test_a_record_that_cannot_stand_is_skipped_with_its_reason(field: str, value: object,
                                                               reason: str) -> None:
    # Job index 3 is job 4, running on gpu08.
    jobs, info = decode_squeue(_v40_with(3, **{field: value}))
    assert "4" not in {j.id for j in jobs} and len(jobs) == 20
    assert len(info.warnings) == 1, info.warnings
    assert info.warnings[0].startswith("squeue: skipped 1 ")
    assert reason in info.warnings[0] and "job 4" in info.warnings[0], info.warnings


@pytest.mark.parametrize("field", ["time_limit", "priority", "node_count"])
def test_a_negative_2205_number_skips_its_record(field: str) -> None:
    doc = json.loads(_read("squeue.json"))
    doc["jobs"][3][field] = -3
    jobs, info = decode_squeue(json.dumps(doc).encode())
    assert "4" not in {j.id for j in jobs} and len(jobs) == 20
    assert f"job 4: negative {field.replace('_', ' ')} -3" in info.warnings[0]


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("submit_time", -5, "submit time -5 before 1970"),
    ("eligible_time", -5, "eligible time -5 before 1970"),
    ("end_time", 10**15, "end time 1e+15 after year 9999"),
    ("time_limit", 2**40, "time limit 1.09951e+12 above 4294967293"),
    ("node_count", 10**9, "node count 1e+09 above 1000000"),
])
def test_an_impossible_2205_value_skips_its_record(field: str, value: int, reason: str) -> None:
    doc = json.loads(_read("squeue.json"))
    doc["jobs"][3][field] = value
    jobs, info = decode_squeue(json.dumps(doc).encode())
    assert "4" not in {j.id for j in jobs} and len(jobs) == 20
    assert f"job 4: {reason}" in info.warnings[0], info.warnings
    assert "4" in info.refused


def test_a_2205_sentinel_is_no_value() -> None:
    doc = json.loads(_read("squeue.json"))
    doc["jobs"][3].update(node_count=0xFFFFFFFE, time_limit=0xFFFFFFFF, end_time=0xFFFFFFFE)
    jobs, info = decode_squeue(json.dumps(doc).encode())
    job = next(j for j in jobs if j.id == "4")
    assert (job.nodes_requested, job.time_limit, job.end_time) == (1, None, None)
    assert not info.warnings


def test_many_skipped_records_say_how_many_more_and_name_a_bound_first() -> None:
    doc = json.loads(_as_v40(json.loads(_read("squeue.json"))))
    for i in range(5):
        doc["jobs"][i]["time_limit"] = _wrap(number=-1)
    doc["jobs"][6]["nodes"] = "gpu[001-999999]"  # running: its list is expanded
    jobs, info = decode_squeue(json.dumps(doc).encode())
    assert len(jobs) == 15
    (warning,) = info.warnings
    assert warning.startswith("squeue: skipped 6 record(s): job 7: ")
    assert "more than 100000 hosts (the bound on one hostlist)" in warning
    assert warning.endswith(" (and 3 more)"), warning


def test_one_answer_expands_a_bounded_number_of_hosts() -> None:
    from quotatop.collectors.slurm.hostlist import MAX_ANSWER_HOSTS, MAX_HOSTS

    doc = json.loads(_as_v40(json.loads(_read("squeue.json"))))
    running = dict(doc["jobs"][3], nodes=f"gpu[1-{MAX_HOSTS}]")
    fit = MAX_ANSWER_HOSTS // MAX_HOSTS
    doc["jobs"] = [dict(running, job_id=1000 + i) for i in range(fit + 5)]
    jobs, info = decode_squeue(json.dumps(doc).encode())
    assert len(jobs) == fit and sum(len(j.nodes) for j in jobs) == MAX_ANSWER_HOSTS
    (warning,) = info.warnings
    assert warning.startswith(f"squeue: skipped 5 record(s): job {1000 + fit}: ")
    assert f"more than {MAX_ANSWER_HOSTS} hosts in one squeue answer" in warning
    assert len(info.refused) == 5


@pytest.mark.parametrize("shape", ["22.05", "23.11"])
def test_a_duplicate_job_id_keeps_the_first_and_names_the_rest(shape: str) -> None:
    doc = json.loads(_read("squeue.json") if shape == "22.05"
                     else _as_v40(json.loads(_read("squeue.json"))))
    first = doc["jobs"][3]
    twin = dict(doc["jobs"][4], job_id=first["job_id"])
    doc["jobs"] += [twin, dict(twin)]
    jobs, info = decode_squeue(json.dumps(doc).encode())
    ids = [j.id for j in jobs]
    assert len(ids) == len(set(ids)) == 21
    assert next(j for j in jobs if j.id == "4").nodes == ["gpu08"]  # the first record's
    assert info.warnings == ["squeue: skipped 2 record(s) of a job id already listed "
                             "(the first kept): 4, 4"]


def test_a_grouped_sinfo_row_with_a_broken_number_is_skipped_with_its_reason() -> None:
    row = {"nodes": {"nodes": ["gpu01"]}, "node": {"state": ["IDLE"]},
           "partition": {"name": "gpu"}, "gres": {"total": "gpu:8"}}
    doc = {"meta": {"plugin": {"data_parser": "data_parser/v0.0.40"}},
           "sinfo": [dict(row, cpus={"total": {"set": True, "infinite": False}}),
                     dict(row, nodes={"nodes": ["gpu02"]}, cpus={"total": 64})]}
    nodes, info, _ = decode_sinfo(json.dumps(doc).encode())
    assert [n.name for n in nodes] == ["gpu02"]
    assert info.warnings == ["sinfo: skipped 1 record(s): nodes gpu01: set, but no number"]


def test_the_reason_reaches_the_snapshot() -> None:
    from slurm_fixture_runner import FixtureRunner

    from quotatop.collectors.slurm.collector import SlurmCollector

    runner = FixtureRunner()
    doc = json.loads(_read("squeue.json"))
    doc["jobs"][3]["time_limit"] = -5
    doc["jobs"].append(dict(doc["jobs"][5]))
    runner.override["squeue.json"] = json.dumps(doc).encode()
    snap = SlurmCollector(runner).collect()
    assert any("job 4: negative time limit -5" in w for w in snap.warnings), snap.warnings
    assert any("job id already listed (the first kept): 6" in w for w in snap.warnings)
    assert len([j for j in snap.jobs if j.id == "6"]) == 1


def test_a_refused_job_does_not_come_back_from_the_history() -> None:
    from slurm_fixture_runner import FixtureRunner

    from quotatop.collectors.slurm.collector import SlurmCollector

    # Job 3 is pending in squeue and has a preempted run in sacct (a terminal record,
    # which the history merges in for a job squeue no longer lists).
    runner = FixtureRunner()
    doc = json.loads(_read("squeue.json"))
    assert doc["jobs"][2]["job_id"] == 3
    doc["jobs"][2]["time_limit"] = -1
    runner.override["squeue.json"] = json.dumps(doc).encode()
    snap = SlurmCollector(runner).collect()
    assert any("job 3: negative time limit -1" in w for w in snap.warnings), snap.warnings
    assert "3" not in {j.id for j in snap.jobs}


def test_a_job_on_nodes_the_cluster_does_not_have_is_refused_by_name() -> None:
    from slurm_fixture_runner import FixtureRunner

    from quotatop.collectors.slurm.collector import SlurmCollector

    runner = FixtureRunner()
    doc = json.loads(_read("squeue.json"))
    assert doc["jobs"][3]["job_id"] == 4 and doc["jobs"][3]["job_state"] == "RUNNING"
    doc["jobs"][3]["nodes"] = "gpu[07-12]"  # sinfo lists gpu01 … gpu08
    runner.override["squeue.json"] = json.dumps(doc).encode()
    snap = SlurmCollector(runner).collect()
    assert "4" not in {j.id for j in snap.jobs}
    assert ("squeue: skipped 1 record(s): job 4: runs on 4 node(s) sinfo does not list "
            "(gpu09, gpu10, …)") in snap.warnings, snap.warnings
