"""A test exporter serving known per-team and per-node series for Prometheus to scrape.

The values are fixed and published in ``EXPECTED`` so tests can check what comes
back through Prometheus and the collector, not what the exporter thinks it sent.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Gauge, start_http_server
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

# team -> (nodes, gpus per node, utilization percent). ml-research is the
# "holding 40 GPUs at 5%" team the monthly review is meant to find.
TEAMS: dict[str, tuple[list[str], int, float]] = {
    "ml-research": (["gpu01", "gpu02", "gpu03", "gpu04", "gpu05"], 8, 5.0),
    "vision": (["gpu06", "gpu07"], 8, 85.0),
    "nlp": (["gpu08"], 8, 60.0),
}

# namespace -> (hard, used) for requests.nvidia.com/gpu and requests.cpu.
QUOTAS: dict[str, dict[str, tuple[float, float]]] = {
    "ml-research": {"requests.nvidia.com/gpu": (48, 40), "requests.cpu": (512, 320)},
    "vision": {"requests.nvidia.com/gpu": (16, 16), "requests.cpu": (128, 96)},
    "nlp": {"requests.nvidia.com/gpu": (16, 8), "requests.cpu": (128, 40)},
}

# cluster_queue -> (cohort, nominal gpu, usage gpu, pending workloads)
KUEUE: dict[str, tuple[str, float, float, int]] = {
    "cq-ml-research": ("ai", 32, 40, 3),
    "cq-vision": ("ai", 16, 16, 1),
    "cq-nlp": ("ai", 16, 8, 0),
}


@dataclass
class Expected:
    gpus_by_team: dict[str, float] = field(default_factory=dict)
    util_by_team: dict[str, float] = field(default_factory=dict)
    util_by_node: dict[str, float] = field(default_factory=dict)


def expected() -> Expected:
    exp = Expected()
    for team, (nodes, per_node, util) in TEAMS.items():
        exp.gpus_by_team[team] = float(len(nodes) * per_node)
        exp.util_by_team[team] = util
        for node in nodes:
            exp.util_by_node[node] = util
    return exp


class _NodeCpu(Collector):
    """node_cpu_seconds_total counting up in real time, so rate() has a known value."""

    def __init__(self, started: float) -> None:
        self._started = started

    def collect(self):  # type: ignore[no-untyped-def]
        import time

        elapsed = time.time() - self._started
        fam = CounterMetricFamily(
            "node_cpu_seconds", "cpu seconds", labels=["instance", "cpu", "mode"]
        )
        for nodes, _per_node, util in TEAMS.values():
            busy = util / 100.0
            for node in nodes:
                # Per-CPU counters, each cpu advancing one second per second in total, so
                # 1 - rate(idle) is the node's busy fraction exactly as with node-exporter.
                for cpu in ("0", "1"):
                    fam.add_metric([node, cpu, "idle"], elapsed * (1 - busy) + 1000)
                    fam.add_metric([node, cpu, "user"], elapsed * busy + 1000)
        yield fam


def build_registry(started: float) -> CollectorRegistry:
    reg = CollectorRegistry()
    dcgm = Gauge(
        "DCGM_FI_DEV_GPU_UTIL",
        "GPU utilization (in %).",
        ["gpu", "UUID", "Hostname", "namespace", "pod"],
        registry=reg,
    )
    req = Gauge(
        "kube_pod_container_resource_requests",
        "requests",
        ["namespace", "pod", "container", "node", "resource", "unit"],
        registry=reg,
    )
    for team, (nodes, per_node, util) in TEAMS.items():
        for node in nodes:
            pod = f"{team}-train-{node}"
            for i in range(per_node):
                dcgm.labels(str(i), f"GPU-{node}-{i}", node, team, pod).set(util)
            req.labels(team, pod, "main", node, "nvidia_com_gpu", "integer").set(per_node)
            req.labels(team, pod, "main", node, "cpu", "core").set(16)
    rq = Gauge(
        "kube_resourcequota",
        "quota",
        ["namespace", "resourcequota", "resource", "type"],
        registry=reg,
    )
    for ns, res in QUOTAS.items():
        for resource, (hard, used) in res.items():
            rq.labels(ns, "team-quota", resource, "hard").set(hard)
            rq.labels(ns, "team-quota", resource, "used").set(used)
    usage = Gauge(
        "kueue_cluster_queue_resource_usage",
        "usage",
        ["cohort", "cluster_queue", "flavor", "resource"],
        registry=reg,
    )
    nominal = Gauge(
        "kueue_cluster_queue_nominal_quota",
        "nominal",
        ["cohort", "cluster_queue", "flavor", "resource"],
        registry=reg,
    )
    pending = Gauge("kueue_pending_workloads", "pending", ["cluster_queue", "status"], registry=reg)
    for cq, (cohort, nom, used, pend) in KUEUE.items():
        usage.labels(cohort, cq, "h100", "nvidia.com/gpu").set(used)
        nominal.labels(cohort, cq, "h100", "nvidia.com/gpu").set(nom)
        pending.labels(cq, "active").set(pend)
        pending.labels(cq, "inadmissible").set(0)
    reg.register(_NodeCpu(started))
    return reg


class TeamExporter:
    """The exporter on 127.0.0.1:<port> in a thread of this process."""

    def __init__(self, port: int = 0) -> None:
        self._want_port = port
        self.port: int = 0
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> int:
        import time

        reg = build_registry(time.time())
        server, thread = start_http_server(self._want_port, addr="127.0.0.1", registry=reg)
        self._server, self._thread = server, thread
        self.port = server.server_port
        return self.port

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


if __name__ == "__main__":
    import sys
    import time

    exp = TeamExporter(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    print(f"serving on 127.0.0.1:{exp.start()}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        exp.stop()
