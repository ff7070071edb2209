"""Per-GPU series from Prometheus (DCGM or nvidia_gpu_exporter), joined to a source's jobs.

Slurm and Kubernetes know which job holds which GPU; the GPU exporter knows what each GPU
does. ``GpuUtilCollector`` wraps a cluster source: it collects the source's snapshot, asks
Prometheus for the per-GPU series of the last ``window`` seconds (one range query per
series name) and attaches ``Snapshot.gpu_util`` (collectors/gpu_util.py joins them). The
inner source is untouched: a Prometheus that is down leaves its snapshot as it was, with
one named status and no utilization, never an error out of ``collect``.

Label values are cluster text: they are escaped (``printable``) before they name a GPU,
and a ``gpu`` label that is not an index is refused by name.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

import msgspec

from quotatop.collectors.deadline import Deadline
from quotatop.collectors.gpu_util import ENGINE, FB, UTIL, GpuSeries, join_gpu_util
from quotatop.collectors.model import Series, Snapshot, SourceStatus
from quotatop.collectors.prometheus_source import PrometheusCollector, _Unreachable
from quotatop.collectors.untrusted import printable


@dataclass(frozen=True)
class GpuSeriesNames:
    """Which series to read and how their labels name a GPU. Defaults are DCGM's."""

    util: str = "DCGM_FI_DEV_GPU_UTIL"  # percent
    fb: str = "DCGM_FI_DEV_FB_USED"  # MiB
    engine: str = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"  # ratio; "" when not served
    node_label: str = "Hostname"
    gpu_label: str = "gpu"
    util_scale: float = 1.0  # to percent
    fb_scale: float = 1.0  # to MiB


# nvidia_gpu_exporter (nvidia_gpu_*): duty cycle in percent, memory in bytes, the GPU's
# minor number as its index, the scrape's instance ("host:port") as its node.
NVIDIA_GPU_EXPORTER = GpuSeriesNames(
    util="nvidia_gpu_duty_cycle", fb="nvidia_gpu_memory_used_bytes", engine="",
    node_label="instance", gpu_label="minor_number", fb_scale=1.0 / (1 << 20))


def gpu_series(series: list[Series], names: GpuSeriesNames,
               warnings: list[str]) -> list[GpuSeries]:
    """Prometheus series (``metric`` = the kind: UTIL, FB or ENGINE) as per-GPU series; one
    whose labels name no GPU is refused, named in one line of ``warnings``."""
    out: list[GpuSeries] = []
    refused: list[str] = []
    scale = {UTIL: names.util_scale, FB: names.fb_scale, ENGINE: 1.0}
    for s in series:
        node = s.labels.get(names.node_label)
        gpu = s.labels.get(names.gpu_label)
        if names.node_label == "instance" and node:
            node = node.rsplit(":", 1)[0]  # host:port -> host
        if not node or gpu is None or not gpu.isdigit() or len(gpu) > 6:
            refused.append(printable(f"{s.metric} {names.node_label}={node!r} "
                                     f"{names.gpu_label}={gpu!r}")[:80])
            continue
        k = scale[s.metric]
        ns, pod = s.labels.get("namespace"), s.labels.get("pod")
        out.append(GpuSeries(
            s.metric, printable(node), int(gpu),
            [(t, v * k) for t, v in s.points] if k != 1.0 else s.points,
            namespace=printable(ns) if ns else None, pod=printable(pod) if pod else None))
    if refused:
        warnings.append(f"gpu util: {len(refused)} series name no GPU, ignored: "
                        f"{'; '.join(refused[:3])}"[:300])
    return out


class GpuUtilCollector:
    """A cluster source with each job's GPU utilization from Prometheus attached."""

    def __init__(self, inner: object, prometheus: PrometheusCollector, *,
                 names: GpuSeriesNames | None = None, window: float = 3600.0) -> None:
        self.inner = inner
        self.prometheus = prometheus
        self.names = names or GpuSeriesNames()
        self.window = window
        self.name = getattr(inner, "name", "source")

    def collect(self) -> Snapshot:
        snap: Snapshot = self.inner.collect()  # type: ignore[attr-defined]
        now = snap.taken_at or time.time()
        warnings: list[str] = []
        status: list[SourceStatus] = []
        series = self._fetch(now, warnings, status)
        if not series:
            return msgspec.structs.replace(snap, status=[*snap.status, *status],
                                           warnings=[*snap.warnings, *warnings])
        step = self.prometheus.config.step_seconds
        util, more = join_gpu_util(snap.jobs, gpu_series(series, self.names, warnings),
                                   since=now - self.window, until=now, max_hold=2 * step)
        return msgspec.structs.replace(snap, gpu_util=util, status=[*snap.status, *status],
                                       warnings=[*snap.warnings, *warnings, *more])

    def _fetch(self, now: float, warnings: list[str],
               status: list[SourceStatus]) -> list[Series]:
        prom = self.prometheus
        end = datetime.fromtimestamp(now, tz=UTC)
        start = datetime.fromtimestamp(now - self.window, tz=UTC)
        deadline = Deadline(float(prom.config.timeout)).start()
        out: list[Series] = []
        try:
            for kind, metric in ((UTIL, self.names.util), (FB, self.names.fb),
                                 (ENGINE, self.names.engine)):
                if not metric:
                    continue
                t0 = time.perf_counter()
                try:
                    got = prom._run_query(kind, metric, start, end, deadline, warnings,
                                          prom.config.max_points)
                except (_Unreachable, RuntimeError) as exc:
                    status.append(SourceStatus(name=f"gpu-util:{metric}", ok=False,
                                               error=str(exc)[:200], at=now))
                    if isinstance(exc, _Unreachable):
                        break
                    continue
                ms = (time.perf_counter() - t0) * 1000.0
                status.append(SourceStatus(name=f"gpu-util:{metric}", ok=bool(got),
                                           error=None if got else "query returned no data",
                                           latency_ms=ms, at=now))
                out.extend(got)
        finally:
            deadline.cancel()
        return out

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()
