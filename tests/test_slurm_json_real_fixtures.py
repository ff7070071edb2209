"""Real 23.02+ JSON (squeue/sinfo --json CLI output, slurmrestd responses of the same
data_parser) decoded through the public entry points. Every expected value below was
read off the raw fixture; see tests/fixtures/slurm/README.md for where each comes from."""

from __future__ import annotations

from pathlib import Path

import pytest

from quotatop.collectors.slurm.json_decode import decode_sacct, decode_sinfo, decode_squeue

NEWER = Path(__file__).resolve().parent / "fixtures" / "slurm" / "23.02+"


def _read(rel: str) -> bytes:
    return (NEWER / rel).read_bytes()


# ---- 23.02 (data_parser v0.0.39): CLI output, meta says "plugins" and "Slurm" -------
def test_squeue_2302_cli_output() -> None:
    jobs, info = decode_squeue(_read("23.02-v0.0.39/squeue_dataparser.json"))
    assert (info.version, info.release, info.warnings, info.errors) == (39, "23.02.4", [], [])
    assert [j.id for j in jobs] == ["52175550", "52173767", "52410472"]
    held, done, held2 = jobs
    # 23.02 still prints job_state as a plain string and times as plain ints.
    assert (held.state, held.reason) == ("pending", "JobHeldUser")
    assert (held.array_parent, held.array_task) == ("52173767", "1470")
    assert (held.user, held.team, held.qos, held.partition) == ("wshenyi", "rvs", "normal", "hw-m")
    assert held.request == {"cpu": 1, "memory": 4096}  # mem=4G
    assert held.priority == 0 and held.time_limit == 120 * 60
    assert (held.submit_time, held.eligible_time) == (1694675236, 1694675357)
    assert held.estimated_start is None and held.start_time is None and held.nodes == []
    assert (done.state, done.reason, done.priority) == ("completed", None, 48)
    assert (done.array_parent, done.array_task) == ("52173767", "2000")
    assert (done.start_time, done.end_time, done.nodes) == (1694675238, 1694675491, ["cs66"])
    assert (held2.state, held2.array_parent, held2.array_task) == ("pending", "52409104", "1078")


def test_sinfo_2302_cli_rows_merge_partitions() -> None:
    nodes, info, exact = decode_sinfo(_read("23.02-v0.0.39/sinfo_dataparser.json"))
    assert (info.version, info.release, exact) == (39, "23.02.4", False)
    assert len(nodes) == 1
    cs11 = nodes[0]
    assert (cs11.name, cs11.partitions, cs11.state) == ("cs11", ["hw", "hw-h"], "mixed")
    assert cs11.capacity == {"cpu": 64, "memory": 770000}
    assert cs11.gpu_type is None and cs11.gpus_used_indices == [] and cs11.reason is None


def test_sinfo_2302_with_escaped_slashes() -> None:
    # Slurm's own serializer writes "data_parser\/v0.0.39"; the decoder must still see 39.
    data = _read("23.02-v0.0.39/exporter_sinfo_dataparser.json")
    assert b"data_parser\\/v0.0.39" in data
    nodes, info, exact = decode_sinfo(data)
    assert (info.version, info.release, exact) == (39, "23.02.5", False)
    assert [(n.name, n.partitions, n.state) for n in nodes] == [
        ("localhost", ["debug"], "allocated")
    ]
    assert nodes[0].capacity == {"cpu": 1, "memory": 1}


# ---- 23.11 (v0.0.40) -------------------------------------------------------------
def test_node_2311_two_gpu_types() -> None:
    nodes, info, exact = decode_sinfo(_read("23.11-v0.0.40/slurm-node-with-gpus-mixed.json"))
    assert (info.version, info.release, exact) == (40, "23.11.10", True)
    (ia1,) = nodes
    assert (ia1.name, ia1.partitions, ia1.state) == ("ia1", ["standard"], "allocated")
    # tres has no gres/gpu: GPUs are counted from gres "gpu:h100:2,gpu:h200:4".
    assert ia1.capacity == {"cpu": 32, "memory": 524288, "gpu": 6, "gpu:h100": 2, "gpu:h200": 4}
    # gres_used "gpu:h100:1(IDX:0),gpu:h200:0(IDX:N/A)"
    assert ia1.allocated == {"gpu": 1, "gpu:h100": 1}
    assert ia1.gpu_type == "h100" and ia1.gpus_used_indices == [0]


def test_sacct_2311_failed_job() -> None:
    jobs, info = decode_sacct(_read("23.11-v0.0.40/slurmdb-job-failed.json"))
    assert (info.version, info.release) == (40, "23.11.10")
    (j,) = jobs
    assert (j.id, j.state, j.user, j.team, j.partition) == (
        "510",
        "failed",
        "bparks",
        "optic",
        "standard",
    )
    assert j.request == {"cpu": 1, "memory": 512} and j.nodes == ["cn2"]
    assert (j.submit_time, j.start_time, j.end_time) == (1746621139, 1746621142, 1746621143)
    assert j.time_limit == 60 and j.priority == 454


# ---- 24.05 (v0.0.41) -------------------------------------------------------------
def test_squeue_2405_gpus_per_job_counted() -> None:
    jobs, info = decode_squeue(_read("24.05-v0.0.41/slurm-job-gpus-running.json"))
    assert (info.version, info.release) == (41, "24.05.3")
    (j,) = jobs
    assert (j.id, j.state, j.user, j.team, j.partition) == (
        "9",
        "running",
        "dperez",
        "acoustic",
        "gpu",
    )
    # tres_req_str "cpu=1,mem=512M,node=1,billing=1" omits the GPUs; tres_per_job has them.
    assert j.request == {"cpu": 1, "memory": 512, "gpu": 4}
    assert (j.start_time, j.end_time, j.nodes) == (1762529652, 1762529712, ["gpu1"])
    assert j.priority == 272 and j.time_limit == 60 and j.reason is None


def test_node_2405_gpu_model() -> None:
    nodes, info, exact = decode_sinfo(_read("24.05-v0.0.41/slurm-node-with-gpus-model-mixed.json"))
    assert (info.version, info.release, exact) == (41, "24.05.3", True)
    (n,) = nodes
    assert (n.name, n.partitions, n.state) == ("gpu1", ["normal"], "allocated")
    assert n.capacity == {"cpu": 32, "memory": 524288, "gpu": 4, "gpu:h100": 4}
    assert n.allocated == {"gpu": 1, "gpu:h100": 1}
    assert n.gpu_type == "h100" and n.gpus_used_indices == [0]


def test_sacct_2405_completed_job() -> None:
    jobs, info = decode_sacct(_read("24.05-v0.0.41/slurmdb-job-completed.json"))
    assert (info.version, info.release) == (41, "24.05.3")
    (j,) = jobs
    assert (j.id, j.name, j.state, j.user, j.team) == (
        "13367",
        "allocation",
        "completed",
        "madams",
        "acoustic",
    )
    assert j.request == {"cpu": 1, "memory": 512} and j.nodes == ["cn1"]
    assert (j.start_time, j.end_time, j.priority) == (1780141363, 1780141364, 90)


# ---- 24.11 (v0.0.40): the first fixture, now with its GPUs ------------------------
def test_squeue_2411_pending_gpu_job_requests_its_gpus() -> None:
    jobs, info = decode_squeue(_read("24.11-v0.0.40/slurm-job-gpus-pending.json"))
    assert (info.version, info.release) == (40, "24.11.0")
    (j,) = jobs
    assert (j.id, j.state, j.reason) == ("1297", "pending", "BeginTime")
    assert j.request == {"cpu": 1, "memory": 512, "gpu": 4}  # tres_per_job "gres/gpu:4"
    assert j.estimated_start == j.eligible_time == 1746623425


# ---- 25.05 (v0.0.42) -------------------------------------------------------------
@pytest.mark.parametrize(
    ("rel", "job_id", "nodes", "want"),
    [
        # --gpus=4: tres_per_job "gres/gpu:4"
        ("slurm-job-gpus-running.json", "4784", ["gpu1"], {"gpu": 4}),
        # --gpus-per-node=1 on 2 nodes: tres_per_node "gres/gpu:1" x node_count 2
        ("slurm-job-gpus-per-node.json", "4788", ["gpu1", "gpu2"], {"gpu": 2}),
        # --gpus-per-task=2 with 2 tasks: tres_per_task "gres/gpu=2" x tasks 2
        ("slurm-job-gpus-per-task.json", "4789", ["gpu1"], {"gpu": 4}),
    ],
)
def test_squeue_2505_gpu_requests(
    rel: str, job_id: str, nodes: list[str], want: dict[str, float]
) -> None:
    jobs, info = decode_squeue(_read(f"25.05-v0.0.42/{rel}"))
    assert (info.version, info.release) == (42, "25.05.4")
    (j,) = jobs
    assert (j.id, j.state, j.nodes) == (job_id, "running", nodes)
    assert {k: v for k, v in j.request.items() if k.startswith("gpu")} == want


def test_squeue_2505_per_node_job_details() -> None:
    (j,), _ = decode_squeue(_read("25.05-v0.0.42/slurm-job-gpus-per-node.json"))
    assert j.request == {"cpu": 2, "memory": 1024, "gpu": 2}  # mem=1G
    assert (j.user, j.team, j.nodes_requested, j.priority) == ("acuevas", "acoustic", 2, 181)
    assert (j.submit_time, j.start_time, j.end_time) == (1762790662, 1762790665, 1762790725)


def test_squeue_2505_pending_begin_time() -> None:
    jobs, info = decode_squeue(_read("25.05-v0.0.42/slurm-job-pending.json"))
    assert (info.version, info.release) == (42, "25.05.4")
    (j,) = jobs
    assert (j.id, j.state, j.reason, j.user, j.team) == (
        "4774",
        "pending",
        "BeginTime",
        "rcarson",
        "optic",
    )
    assert j.request == {"cpu": 128, "memory": 65536} and j.nodes_requested == 2
    # A pending job's start_time is Slurm's estimate; its end_time is not an end.
    assert j.estimated_start == j.eligible_time == 1762793488
    assert j.start_time is None and j.end_time is None and j.nodes == []
    assert (j.submit_time, j.priority, j.time_limit) == (1762789888, 454, 60)


def test_node_2505_gpu_model_and_drain() -> None:
    nodes, info, exact = decode_sinfo(_read("25.05-v0.0.42/slurm-node-with-gpus-model-mixed.json"))
    assert (info.version, info.release, exact) == (42, "25.05.4", True)
    (n,) = nodes
    assert (n.name, n.partitions, n.state) == ("gpu1", ["gpu"], "allocated")
    assert n.capacity == {"cpu": 32, "memory": 524288, "gpu": 4, "gpu:h100": 4}
    assert n.allocated == {"gpu": 1, "gpu:h100": 1} and n.gpus_used_indices == [0]

    nodes, info, _ = decode_sinfo(_read("25.05-v0.0.42/slurm-node-drain.json"))
    (cn3,) = nodes
    # state ["IDLE", "DRAIN"]
    assert (cn3.name, cn3.state, cn3.reason) == ("cn3", "drain", "ECC memory error")
    assert cn3.capacity == {"cpu": 64, "memory": 131072} and cn3.gpu_type is None


def test_sacct_2505_running_gpu_job() -> None:
    jobs, info = decode_sacct(_read("25.05-v0.0.42/slurmdb-job-gpus-running.json"))
    assert (info.version, info.release) == (42, "25.05.4")
    (j,) = jobs
    assert (j.id, j.state, j.user, j.team, j.partition) == (
        "14307",
        "running",
        "jhayes",
        "optic",
        "gpu",
    )
    # tres.requested: cpu 1, mem 512, node 1, billing 1, gres gpu 4
    assert j.request == {"cpu": 1, "memory": 512, "gpu": 4}
    assert (j.start_time, j.end_time, j.nodes) == (1780142442, None, ["gpu1"])
    assert j.priority == 363 and j.time_limit == 60


def test_a_running_job_records_the_gpu_indices_it_holds() -> None:
    # gres_detail ["gpu:h100:4(IDX:0-3)"] on node gpu1: what DCGM's series join on.
    jobs, _ = decode_squeue(_read("24.05-v0.0.41/slurm-job-gpus-running.json"))
    assert jobs[0].gpus == {"gpu1": [0, 1, 2, 3]}


def test_gres_detail_that_does_not_pair_with_the_nodes_is_not_guessed() -> None:
    from quotatop.collectors.slurm.json_decode import job_gpus

    assert job_gpus(["a", "b"], ["gpu:2(IDX:0-1)"]) == {}
    assert job_gpus(["a", "b"], ["gpu:2(IDX:0-1)", "gpu:1(IDX:3)"]) == {"a": [0, 1], "b": [3]}
