"""GPU utilization through a real Prometheus (tests/harness/prometheus_server.py): the
harness exporter's DCGM series, scraped, queried and joined to jobs by node and GPU index
(Slurm) and by namespace and pod (Kubernetes)."""

from __future__ import annotations

import time

import pytest

from harness.fixtures_k8s_prom import prometheus_server  # noqa: F401  (pytest fixture)
from harness.prometheus_server import PrometheusServer
from harness.team_exporter import TEAMS
from quotatop.collectors.gpu_prometheus import (
    NVIDIA_GPU_EXPORTER,
    GpuSeriesNames,
    GpuUtilCollector,
    gpu_series,
)
from quotatop.collectors.model import Job, Series, Snapshot
from quotatop.collectors.prometheus_source import PrometheusCollector, PrometheusConfig


class _Jobs:
    """A cluster source of fixed jobs, as Slurm or Kubernetes would report them."""

    name = "fixed"

    def __init__(self, jobs: list[Job]) -> None:
        self.jobs = jobs

    def collect(self) -> Snapshot:
        return Snapshot(source="fixed", taken_at=time.time(), jobs=self.jobs)


def _collector(url: str, jobs: list[Job]) -> GpuUtilCollector:
    prom = PrometheusCollector(PrometheusConfig(url=url, step_seconds=1.0, timeout=10.0))
    return GpuUtilCollector(_Jobs(jobs), prom, window=600.0)


def test_each_job_gets_the_utilization_of_the_gpus_it_holds(
        prometheus_server: PrometheusServer) -> None:  # noqa: F811
    long_ago = time.time() - 3600
    jobs = [
        # Slurm: by node and GPU index.
        Job(id="1", user="ann", team="ml-research", state="running", start_time=long_ago,
            gpus={"gpu01": [0, 1, 2, 3]}),
        Job(id="2", user="bo", team="vision", state="running", start_time=long_ago,
            gpus={"gpu06": [0, 1], "gpu07": [5]}),
        # Kubernetes: the exporter's pod mapping, no indices known to the source.
        Job(id="nlp/nlp-train-gpu08", team="nlp", state="running", start_time=long_ago,
            request={"gpu": 8.0}),
    ]
    snap = _collector(prometheus_server.url, jobs).collect()
    got = {u.job: u for u in snap.gpu_util}
    assert set(got) == {"1", "2", "nlp/nlp-train-gpu08"}, snap.warnings
    assert got["1"].mean_util_percent == pytest.approx(TEAMS["ml-research"][2])
    assert got["2"].mean_util_percent == pytest.approx(TEAMS["vision"][2])
    assert got["nlp/nlp-train-gpu08"].mean_util_percent == pytest.approx(TEAMS["nlp"][2])
    assert sorted(got["2"].gpus) == ["gpu06:0", "gpu06:1", "gpu07:5"]
    assert len(got["nlp/nlp-train-gpu08"].gpus) == 8
    assert got["1"].observed_gpu_seconds > 0
    assert any(s.name == "gpu-util:DCGM_FI_DEV_GPU_UTIL" and s.ok for s in snap.status)


def test_prometheus_down_leaves_the_source_snapshot_with_a_status() -> None:
    snap = _collector("http://127.0.0.1:9", [Job(id="1", start_time=0.0,
                                                 gpus={"a": [0]})]).collect()
    assert snap.gpu_util == [] and [j.id for j in snap.jobs] == ["1"]
    assert not snap.status[0].ok and "gpu-util" in snap.status[0].name


def test_labels_that_name_no_gpu_are_refused_by_name() -> None:
    warnings: list[str] = []
    out = gpu_series([Series(metric="util", labels={"Hostname": "a", "gpu": "x\x1b"}),
                      Series(metric="util", labels={"Hostname": "a", "gpu": "3"},
                             points=[(0.0, 5.0)])], GpuSeriesNames(), warnings)
    assert [(s.node, s.gpu) for s in out] == [("a", 3)]
    assert "1 series name no GPU" in warnings[0] and "\x1b" not in warnings[0]


def test_nvidia_gpu_exporter_fallback_reads_instance_and_minor_number() -> None:
    warnings: list[str] = []
    (s,) = gpu_series([Series(metric="fb", labels={"instance": "node3:9445",
                                                   "minor_number": "2"},
                              points=[(0.0, float(3 << 20))])], NVIDIA_GPU_EXPORTER, warnings)
    assert (s.node, s.gpu, s.points) == ("node3", 2, [(0.0, 3.0)])

