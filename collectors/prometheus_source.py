"""Utilization history from Prometheus, and allocation beside utilization per team.

Quotas say what a team holds; DCGM says what its GPUs actually do. This source
fetches both as ``Series`` (for sparklines and the Overview) and turns the pair
into findings such as "ml-research holds 40 GPUs at 5% utilization".

``prometheus_api_client`` (and requests with it) is imported on the first
collect, never at module import: the TUI must not pay for a source it does not use.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from collectors.model import Series, Snapshot, SourceStatus, Team

# Groups of default queries. ``{team}`` is the label that names a team (the
# namespace for kube-state-metrics and DCGM's pod mapping) and ``{window}`` the
# rate() window; both are filled in from the config.
DEFAULT_QUERIES: dict[str, tuple[str, str]] = {
    # name: (group, PromQL)
    "team_gpu_util": ("dcgm", "avg by ({team}) (DCGM_FI_DEV_GPU_UTIL)"),
    "node_gpu_util": ("dcgm", "avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)"),
    "team_gpu_requested": (
        "kube-state-metrics",
        'sum by ({team}) (kube_pod_container_resource_requests{{resource="nvidia_com_gpu"}})',
    ),
    "team_gpu_quota_hard": (
        "kube-state-metrics",
        'sum by ({team}) (kube_resourcequota{{resource="requests.nvidia.com/gpu",type="hard"}})',
    ),
    "team_gpu_quota_used": (
        "kube-state-metrics",
        'sum by ({team}) (kube_resourcequota{{resource="requests.nvidia.com/gpu",type="used"}})',
    ),
    "cq_gpu_usage": (
        "kueue",
        'sum by (cluster_queue) (kueue_cluster_queue_resource_usage{{resource="nvidia.com/gpu"}})',
    ),
    "cq_gpu_nominal": (
        "kueue",
        'sum by (cluster_queue) (kueue_cluster_queue_nominal_quota{{resource="nvidia.com/gpu"}})',
    ),
    "cq_pending_workloads": ("kueue", "sum by (cluster_queue) (kueue_pending_workloads)"),
    "node_cpu_util": (
        "node-exporter",
        '1 - avg by (instance) (rate(node_cpu_seconds_total{{mode="idle"}}[{window}]))',
    ),
    # prometheus-slurm-exporter; off by default since most k8s clusters lack it.
    "slurm_account_cpus": ("slurm", "sum by (account) (slurm_account_cpus_running)"),
    "slurm_gpu_util": ("slurm", "slurm_gpus_utilization"),
}

DEFAULT_GROUPS = ("dcgm", "kube-state-metrics", "kueue", "node-exporter")


@dataclass
class PrometheusConfig:
    url: str = "http://127.0.0.1:9090"
    groups: tuple[str, ...] = DEFAULT_GROUPS
    # Override or add queries by name; an empty string disables a default.
    queries: dict[str, str] = field(default_factory=dict)
    team_label: str = "namespace"
    range_seconds: float = 3600.0
    step_seconds: float = 60.0
    rate_window: str = "5m"
    timeout: float = 5.0
    # Credentials come from a file or an environment variable, never the config itself,
    # so a config file can be shared without leaking them.
    bearer_token_file: str | None = None
    bearer_token_env: str | None = None
    basic_user: str | None = None
    basic_password_file: str | None = None
    basic_password_env: str | None = None
    # The monthly-review finding: at least this many GPUs held at most this utilization.
    underused_min_gpus: float = 8.0
    underused_max_util: float = 20.0
    cluster: str = ""


@dataclass(frozen=True)
class TeamEfficiency:
    team: str
    gpus_held: float
    avg_util_percent: float | None  # None: no utilization series for the team

    def describe(self) -> str:
        util = "unknown" if self.avg_util_percent is None else f"{self.avg_util_percent:.0f}%"
        return f"{self.team} holds {self.gpus_held:g} GPUs at {util} utilization"


def redact_url(url: str) -> str:
    """The URL without user:password@, fit for a status line."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def _read_secret(path: str | None, env: str | None, what: str) -> str | None:
    if path:
        try:
            with open(path, encoding="utf-8") as fh:
                return fh.read().strip()
        except OSError as exc:
            raise ValueError(f"cannot read {what} file {path}: {exc.strerror}") from None
    if env:
        value = os.environ.get(env)
        if value is None:
            raise ValueError(f"{what} environment variable {env} is not set")
        return value.strip()
    return None


def last_value(series: Series) -> float | None:
    return series.points[-1][1] if series.points else None


def mean_value(series: Series) -> float | None:
    if not series.points:
        return None
    return sum(v for _, v in series.points) / len(series.points)


def allocation_vs_utilization(
    series: list[Series],
    *,
    team_label: str = "namespace",
    alloc_metric: str = "team_gpu_requested",
    util_metric: str = "team_gpu_util",
) -> list[TeamEfficiency]:
    """Per team: GPUs held now (latest allocation) and mean GPU utilization over the range."""
    held: dict[str, float] = {}
    util: dict[str, float] = {}
    for s in series:
        team = s.labels.get(team_label)
        if team is None:
            continue
        if s.metric == alloc_metric and (v := last_value(s)) is not None:
            held[team] = v
        elif s.metric == util_metric and (v := mean_value(s)) is not None:
            util[team] = v
    return [
        TeamEfficiency(team=t, gpus_held=held[t], avg_util_percent=util.get(t))
        for t in sorted(held, key=lambda t: (-held[t], t))
    ]


def find_underused(
    efficiencies: list[TeamEfficiency], *, min_gpus: float = 8.0, max_util: float = 20.0
) -> list[TeamEfficiency]:
    """Teams holding at least ``min_gpus`` GPUs at no more than ``max_util`` percent."""
    return [
        e
        for e in efficiencies
        if e.gpus_held >= min_gpus
        and e.avg_util_percent is not None
        and e.avg_util_percent <= max_util
    ]


class _Unreachable(Exception):
    """Prometheus itself did not answer; later queries this round would not either."""


def _prom_error(content: bytes | str) -> str:
    """Prometheus' own one-line error out of an error body, or a short excerpt."""
    text = content.decode(errors="replace") if isinstance(content, bytes) else content
    try:
        body = json.loads(text)
        return f"{body.get('errorType', 'error')}: {body.get('error', '')}".strip()
    except ValueError:
        return " ".join(text.split())[:160]


class PrometheusCollector:
    """Collector over a Prometheus HTTP API. ``collect`` never raises for an outage."""

    name = "prometheus"

    def __init__(self, config: PrometheusConfig | None = None) -> None:
        self.config = config or PrometheusConfig()
        self._queries = self._resolve_queries()
        self._headers: dict[str, str] = {}
        self._auth: tuple[str, str] | None = None
        self._config_error: str | None = None
        self._client: Any = None
        self._last_good: list[Series] = []
        self._last_teams: list[Team] = []
        try:
            self._load_credentials()
        except ValueError as exc:
            self._config_error = str(exc)

    def __repr__(self) -> str:  # never show credentials
        return f"PrometheusCollector(url={redact_url(self.config.url)!r})"

    def _resolve_queries(self) -> dict[str, str]:
        cfg = self.config
        out: dict[str, str] = {}
        for name, (group, promql) in DEFAULT_QUERIES.items():
            if group in cfg.groups:
                out[name] = promql.format(team=cfg.team_label, window=cfg.rate_window)
        for name, promql in cfg.queries.items():
            if promql:
                out[name] = promql
            else:
                out.pop(name, None)
        return out

    def _load_credentials(self) -> None:
        cfg = self.config
        token = _read_secret(cfg.bearer_token_file, cfg.bearer_token_env, "bearer token")
        if token:
            self._headers = {"Authorization": f"Bearer {token}"}
        password = _read_secret(cfg.basic_password_file, cfg.basic_password_env, "password")
        if cfg.basic_user is not None:
            self._auth = (cfg.basic_user, password or "")

    def _connect(self) -> Any:
        if self._client is None:
            from prometheus_api_client import PrometheusConnect
            from urllib3.util.retry import Retry

            # No client-side retries: a refresh that fails is reported at once and
            # the next refresh is the retry, so a slow server cannot stall the UI.
            self._client = PrometheusConnect(
                url=self.config.url.rstrip("/"),
                headers=self._headers or None,
                auth=self._auth,
                retry=Retry(total=0, connect=0, read=0, redirect=0, status=0),
                timeout=self.config.timeout,  # type: ignore[arg-type]
            )
        return self._client

    def _run_query(self, name: str, promql: str, start: datetime, end: datetime) -> list[Series]:
        import requests
        from prometheus_api_client.exceptions import PrometheusApiClientException

        client = self._connect()
        step = f"{self.config.step_seconds:g}"
        try:
            result = client.custom_query_range(promql, start_time=start, end_time=end, step=step)
        except PrometheusApiClientException as exc:
            raise RuntimeError(self._describe_http_error(str(exc))) from None
        except requests.exceptions.Timeout:
            raise _Unreachable(f"timed out after {self.config.timeout:g}s") from None
        except requests.exceptions.ConnectionError as exc:
            raise _Unreachable(self._describe_connection_error(exc)) from None
        except requests.exceptions.RequestException as exc:
            raise _Unreachable(type(exc).__name__) from None
        out: list[Series] = []
        for item in result or []:
            points = []
            for ts, raw in item.get("values", []):
                value = float(raw)
                if math.isfinite(value):  # NaN/Inf do not survive JSON and mean nothing here
                    points.append((float(ts), value))
            out.append(Series(metric=name, labels=dict(item.get("metric", {})), points=points))
        return out

    @staticmethod
    def _describe_http_error(message: str) -> str:
        m = re.match(r"HTTP Status Code (\d+) \((b?['\"].*['\"])\)$", message, re.S)
        if not m:
            return message.splitlines()[0][:200]
        code = int(m.group(1))
        body = m.group(2)
        try:
            import ast

            content = ast.literal_eval(body)
        except (ValueError, SyntaxError):
            content = body
        if code == 401:
            return "HTTP 401 unauthorized: check the bearer token or basic auth"
        if code == 403:
            return "HTTP 403 forbidden"
        return f"HTTP {code} {_prom_error(content)}"

    def _describe_connection_error(self, exc: Exception) -> str:
        text = str(exc)
        if "Connection refused" in text:
            return f"connection refused at {redact_url(self.config.url)}"
        if "timed out" in text.lower():
            return f"timed out after {self.config.timeout:g}s"
        return f"cannot connect to {redact_url(self.config.url)}"

    def collect(self) -> Snapshot:
        now = time.time()
        snap = Snapshot(
            cluster=self.config.cluster,
            source=self.name,
            taken_at=now,
            meta={"prometheus_url": redact_url(self.config.url)},
        )
        if self._config_error is not None:
            snap.status.append(
                SourceStatus(name="prometheus", ok=False, error=self._config_error, at=now)
            )
            return self._stale(snap, f"prometheus: {self._config_error}")
        end = datetime.fromtimestamp(now, tz=UTC)
        start = datetime.fromtimestamp(now - self.config.range_seconds, tz=UTC)
        series: list[Series] = []
        unreachable: str | None = None
        for name, promql in self._queries.items():
            t0 = time.perf_counter()
            if unreachable is not None:
                snap.status.append(
                    SourceStatus(
                        name=f"prometheus:{name}", ok=False, error="skipped: " + unreachable, at=now
                    )
                )
                continue
            try:
                got = self._run_query(name, promql, start, end)
            except _Unreachable as exc:
                unreachable = str(exc)
                err = unreachable
                got = None
            except RuntimeError as exc:
                err = str(exc)
                got = None
            latency = (time.perf_counter() - t0) * 1000.0
            if got is None:
                snap.status.append(
                    SourceStatus(
                        name=f"prometheus:{name}", ok=False, error=err, latency_ms=latency, at=now
                    )
                )
            elif not got or not any(s.points for s in got):
                snap.status.append(
                    SourceStatus(
                        name=f"prometheus:{name}",
                        ok=False,
                        error="query returned no data",
                        latency_ms=latency,
                        at=now,
                    )
                )
            else:
                series.extend(got)
                snap.status.append(
                    SourceStatus(name=f"prometheus:{name}", ok=True, latency_ms=latency, at=now)
                )
        if unreachable is not None and not series:
            return self._stale(snap, f"prometheus: {unreachable}")
        snap.utilization = series
        snap.teams = self._teams(series)
        snap.warnings = self._findings(series)
        self._last_good, self._last_teams = series, snap.teams
        return snap

    def _stale(self, snap: Snapshot, reason: str) -> Snapshot:
        # The last good data stays on screen, marked stale with the one-line reason.
        snap.utilization = list(self._last_good)
        snap.teams = list(self._last_teams)
        snap.stale = True
        snap.stale_reason = reason
        return snap

    def efficiencies(self, series: list[Series]) -> list[TeamEfficiency]:
        alloc = "team_gpu_requested"
        if not any(s.metric == alloc for s in series):
            alloc = "team_gpu_quota_used"  # no per-pod requests: fall back to the quota's used
        return allocation_vs_utilization(
            series, team_label=self.config.team_label, alloc_metric=alloc
        )

    def _findings(self, series: list[Series]) -> list[str]:
        under = find_underused(
            self.efficiencies(series),
            min_gpus=self.config.underused_min_gpus,
            max_util=self.config.underused_max_util,
        )
        return [e.describe() for e in under]

    def _teams(self, series: list[Series]) -> list[Team]:
        """Per-team allocation as Prometheus sees it: quota hard as max, held GPUs as usage."""
        label = self.config.team_label
        latest: dict[str, dict[str, float]] = {}
        for s in series:
            team = s.labels.get(label)
            if team is None or (v := last_value(s)) is None:
                continue
            latest.setdefault(team, {})[s.metric] = v
        util = {e.team: e.avg_util_percent for e in self.efficiencies(series)}
        teams: list[Team] = []
        for name in sorted(latest):
            vals = latest[name]
            held = vals.get("team_gpu_requested", vals.get("team_gpu_quota_used"))
            hard = vals.get("team_gpu_quota_hard")
            notes = ["Prometheus: allocation from kube-state-metrics, no guarantee notion"]
            if (u := util.get(name)) is not None:
                notes.append(f"mean GPU utilization {u:.1f}% over {self._range_text()}")
            teams.append(
                Team(
                    name=name,
                    max={"gpu": hard} if hard is not None else None,
                    usage={"gpu": held} if held is not None else {},
                    source_notes=notes,
                )
            )
        return teams

    def _range_text(self) -> str:
        secs = self.config.range_seconds
        return f"{secs / 3600:g}h" if secs >= 3600 else f"{secs:g}s"

    def close(self) -> None:
        if self._client is not None:
            session = getattr(self._client, "_session", None)
            if session is not None:
                session.close()
            self._client = None


def from_mapping(options: Mapping[str, Any]) -> PrometheusCollector:
    """Build from a config table (e.g. ``[sources.prometheus]`` in quotatop's TOML)."""
    known = set(PrometheusConfig.__dataclass_fields__)
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown prometheus option(s): {', '.join(unknown)}")
    opts = dict(options)
    if "groups" in opts:
        opts["groups"] = tuple(opts["groups"])
    return PrometheusCollector(PrometheusConfig(**opts))
