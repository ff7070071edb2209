"""Utilization history from Prometheus, and allocation beside utilization per team.

Quotas say what a team holds; DCGM says what its GPUs actually do. This source
fetches both as ``Series`` (for sparklines and the Overview) and turns the pair
into findings such as "ml-research holds 40 GPUs at 5% utilization".

A collect has one overall deadline (``timeout``, ``collectors/deadline.py``) for all
its queries, connect, headers and body together, each query given what is left: a
server that answers a byte a second is cut off at the deadline, not once per byte,
and one that answers each query just under the timeout ends the round at the timeout,
not after nine of them. A round cut at its deadline is stale as a whole. The answer
is bounded in size and checked for shape; a malformed answer is a source error (the
banner, and the last good data stays on screen), never an exception out of
``collect``. The HTTP client is the standard library's, loaded on the first collect.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit

import msgspec

from quotatop.collectors.deadline import Deadline, DeadlineExpired, TooLarge, read_capped
from quotatop.collectors.human import human_duration
from quotatop.collectors.model import Series, Snapshot, SourceStatus, Team
from quotatop.collectors.untrusted import redact_url as redact_url  # re-exported: the one

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
    max_answer_bytes: int = 32 << 20  # a query's answer larger than this is refused
    # A query of more series than this is refused whole: a team or node per series, and
    # no cluster has 20,000 teams; 200k series cost 1.7 GB and 20 s before this bound.
    max_series: int = 20_000
    # A round's series hold at most this many points in all (a point is ~110 bytes kept,
    # so ~220 MB): 20,000 series of an hour's 61 points each, over nine queries, were
    # 11M points, 1.2 GB. The query that would pass it is refused. A large real round
    # (1,000 teams and 5,000 nodes, an hour at 60 s) is some 0.7M points.
    max_points: int = 2_000_000


@dataclass(frozen=True)
class TeamEfficiency:
    team: str
    gpus_held: float
    avg_util_percent: float | None  # None: no utilization series for the team

    def describe(self) -> str:
        util = "unknown" if self.avg_util_percent is None else f"{self.avg_util_percent:.0f}%"
        return f"{self.team} holds {self.gpus_held:g} GPUs at {util} utilization"


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


class _TimedOut(_Unreachable):
    """The collect's one deadline ran out: the round is incomplete, so it is stale."""


class _Read1:
    """``resp`` read as ``read_capped`` reads: ``read1``, so that a chunk is what has
    come, not a wait for 64 KiB of a server that sends a byte at a time."""

    def __init__(self, resp: object) -> None:
        self.read = resp.read1  # type: ignore[attr-defined]


class _Malformed(RuntimeError):
    """Prometheus answered, but not with a query result."""


class _OverBudget(RuntimeError):
    """The round's points would pass max_points: its budget is spent (the points this
    query decoded were the work), so a later query does not decode as many again."""


# A GPU count (quota, usage, requests) above this is not a count but a broken answer:
# the largest clusters hold some 1e5 GPUs, so 1e6 for one team (or one ClusterQueue) is
# ten times any real one and still far below where a chart's arithmetic overflows
# (plotext rounds through x * 1e8: 1e308 became inf and killed the TUI, issue #35).
MAX_GPUS = 1e6
GPU_COUNT_METRICS = frozenset({"team_gpu_requested", "team_gpu_quota_hard",
                               "team_gpu_quota_used", "cq_gpu_usage", "cq_gpu_nominal"})
# One series per team: these are read as the team's one value (_teams, efficiencies).
TEAM_METRICS = frozenset({"team_gpu_util", "team_gpu_requested", "team_gpu_quota_hard",
                          "team_gpu_quota_used"})
# A sample time outside [0, the year 10000) is not a time (the chart's clock labels
# cannot print it); Prometheus writes Unix seconds.
MAX_TIME = 253402300800.0


class _Item(msgspec.Struct):
    """One series of a query_range answer; the fields Prometheus always writes."""

    metric: dict[str, str] = {}
    values: list[tuple[float | str, float | str]] = []


_object_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])
_list_decoder = msgspec.json.Decoder(list[msgspec.Raw])
_item_decoder = msgspec.json.Decoder(_Item)
_JSON_TYPES = {ord("["): "list", ord("{"): "dict", ord('"'): "str", ord("t"): "bool",
               ord("f"): "bool", ord("n"): "NoneType"}


def _json_type(raw: bytes | msgspec.Raw) -> str:
    """The Python name of a JSON value's type from its first byte (as json.loads named it)."""
    data = bytes(memoryview(raw)[:64]).lstrip()  # never a copy of a 32 MiB answer
    return _JSON_TYPES.get(data[0], "number") if data else "nothing"


def _decoded(raw: msgspec.Raw | None) -> object:
    try:
        return msgspec.json.decode(raw) if raw is not None else None
    except (msgspec.DecodeError, RecursionError):
        return None


def _where(exc: msgspec.ValidationError, i: int) -> str:
    """msgspec's "Expected `str`, got `int` - at `$.metric.a`" as
    "data.result[3].metric.a: expected `str`, got `int`"."""
    msg, _, path = str(exc).partition(" - at `")
    msg = msg[:1].lower() + msg[1:]
    return " ".join(f"data.result[{i}]{path.rstrip('`')[1:]}: {msg}".split())[:160]


def _series_name(labels: dict[str, str], team_label: str, name: str) -> str:
    if name in TEAM_METRICS or name in GPU_COUNT_METRICS:
        for key in (team_label, "cluster_queue"):
            if key in labels:
                what = "team" if key == team_label else "cluster queue"
                return f"{what} {labels[key][:60]}"
    text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"series {{{text}}}"[:80]


def _refused_line(name: str, refused: list[str]) -> str:
    """The one warning for a query's refused series: the reason itself for one, the
    count and the first three for more (200k bad series are one line, not 200k)."""
    if len(refused) == 1:
        return f"prometheus: {name} {refused[0]}, ignored"
    return (f"prometheus: {name}: {len(refused)} series ignored: "
            f"{'; '.join(refused[:3])}{'; ...' if len(refused) > 3 else ''}")[:300]


def _parse_matrix(body: bytes, name: str, *, team_label: str = "namespace",
                  max_series: int = 20_000, max_points: int | None = None,
                  warnings: list[str] | None = None) -> list[Series]:
    """The series of a ``query_range`` answer; _Malformed (one line) when it is not one.

    Decoded with msgspec, the series list first as raw slices of the body: 200k small
    series took json.loads 1.7 GB and 20 s over nine queries, past any deadline. An
    answer of more than ``max_series`` series is refused whole (RuntimeError), before
    one is decoded, and so is one whose points pass ``max_points``, as soon as they
    do. A series holding an impossible value (a GPU count that is negative
    or above MAX_GPUS, a time that is not one) is left out, and so is a second series of
    the same labels (or of the same team, for a per-team metric): each is named in one
    line appended to ``warnings``, never kept as data."""
    try:
        doc = _object_decoder.decode(body)
    except msgspec.ValidationError:
        raise _Malformed(f"malformed answer: a JSON {_json_type(body)}, not an object") from None
    except (msgspec.DecodeError, RecursionError):
        raise _Malformed("malformed answer: not JSON") from None
    if _decoded(doc.get("status")) == "error":
        err = f"{_decoded(doc.get('errorType')) or 'error'}: {_decoded(doc.get('error')) or ''}"
        raise RuntimeError(" ".join(str(err).split())[:200])
    try:
        data = _object_decoder.decode(doc["data"]) if "data" in doc else {}
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        data = {}
    if "result" not in data:
        raise _Malformed("malformed answer: no data.result")
    try:
        result = _list_decoder.decode(data["result"])
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        raise _Malformed(f"malformed answer: data.result is a {_json_type(data['result'])}, "
                         "not a list") from None
    del doc, data
    if len(result) > max_series:
        raise RuntimeError(f"{name}: {len(result)} series, more than {max_series}")
    counts = name in GPU_COUNT_METRICS
    per_team = name in TEAM_METRICS
    out: list[Series] = []
    seen: dict[object, dict[str, str]] = {}
    refused: list[str] = []
    total = 0
    for i, raw in enumerate(result):
        try:
            item = _item_decoder.decode(raw)
        except msgspec.ValidationError as exc:
            raise _Malformed(f"malformed answer: {_where(exc, i)}") from None
        except (msgspec.DecodeError, RecursionError):
            raise _Malformed(f"malformed answer: data.result[{i}] is not JSON") from None
        labels = item.metric
        total += len(item.values)
        if max_points is not None and total > max_points:
            raise _OverBudget(f"{name}: more than {max_points} points, refused")
        points = []
        bad: str | None = None
        gap: str | None = None  # the first NaN/Inf value of a series that is not a count
        for pair in item.values:
            try:
                t, value = float(pair[0]), float(pair[1])
            except (TypeError, ValueError, OverflowError):
                raise _Malformed(
                    f"malformed answer: data.result[{i}].values holds {str(list(pair))[:40]!r}, "
                    "not [time, number]") from None
            if not math.isfinite(t):
                bad = bad or f"{pair[0]} is not a time"
                continue
            if not math.isfinite(value):
                # A GPU count of ±Inf or NaN is as broken as one of 1e308: the series is
                # refused by name. Elsewhere (a utilisation's 0/0) it is a gap in the
                # series, dropped, and named only if nothing else is left.
                if counts:
                    bad = bad or f"{pair[1]} is not a GPU count"
                gap = gap or str(pair[1])
                continue
            if bad is None and not 0.0 <= t < MAX_TIME:
                bad = f"{t:g} is not a time"
            elif bad is None and counts and not 0.0 <= value <= MAX_GPUS:
                bad = f"{value:g} is not a GPU count"
            points.append((t, value))
        if bad is None and gap is not None and not points:
            bad = f"{gap} is not a number"
        who = _series_name(labels, team_label, name)
        key: object = (labels.get(team_label) if per_team and team_label in labels
                       else tuple(sorted(labels.items())))
        if bad is None and key in seen:
            bad = ("a second series of the same labels" if seen[key] == labels
                   else "a second series of the team") + " (the first kept)"
        if bad is not None:
            refused.append(f"for {who}: {bad}")
            continue
        seen[key] = labels
        out.append(Series(metric=name, labels=labels, points=points))
    if refused and warnings is not None:
        warnings.append(_refused_line(name, refused))
    return out


def _prom_error(content: bytes | str) -> str:
    """Prometheus' own one-line error out of an error body, or a short excerpt."""
    text = content.decode(errors="replace") if isinstance(content, bytes) else content
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        body = None
    # Found by tests/fuzz: an error body of JSON that is not an object ("null", "[1]")
    # raised AttributeError out of collect().
    if not isinstance(body, dict):
        return " ".join(text.split())[:160]
    return " ".join(f"{body.get('errorType', 'error')}: {body.get('error', '')}".split())[:200]


class PrometheusCollector:
    """Collector over a Prometheus HTTP API. ``collect`` never raises for an outage."""

    name = "prometheus"

    def __init__(self, config: PrometheusConfig | None = None) -> None:
        self.config = config or PrometheusConfig()
        self._queries = self._resolve_queries()
        self._headers: dict[str, str] = {}
        self._auth: tuple[str, str] | None = None
        self._config_error: str | None = None
        self._last_good: list[Series] = []
        self._last_teams: list[Team] = []
        self._interrupted = False  # interrupt(): no more requests
        self._deadline: Deadline | None = None  # the collect's: interrupt() cuts it
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

    def _auth_headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", **self._headers}
        if self._auth is not None:
            import base64

            pair = f"{self._auth[0]}:{self._auth[1]}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        return headers

    def _get(self, path: str, params: dict[str, str], deadline: Deadline) -> tuple[int, bytes]:
        """One GET within what is left of the collect's ``deadline``: (status, body).
        _TimedOut when it runs out (connect, headers and body together), _Unreachable
        when the server does not answer at all, _Malformed when the answer is too large."""
        import http.client
        from urllib.parse import urlencode

        cfg = self.config
        left = deadline.remaining()
        if self._interrupted:  # interrupted before (or as) this request began
            raise _Unreachable("not asked, quotatop is quitting")
        if left is not None and left <= 0.0:
            raise _TimedOut(f"timed out after {cfg.timeout:g}s")
        parts = urlsplit(cfg.url)
        host, port = parts.hostname or "", parts.port
        target = f"{parts.path.rstrip('/')}{path}?{urlencode(params)}"
        # The socket timeout is what is left too: a connect that never reaches the
        # server (no socket to shut yet) still ends by the collect's deadline.
        if parts.scheme == "https":
            import ssl

            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                host, port, timeout=left, context=ssl.create_default_context())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=left)
        try:
            conn.connect()
            # The socket itself, not conn: getresponse() drops conn.sock once the server
            # says it will close (HTTP/1.0), and the body is read from it after that.
            # Attached after an expiry, it is shut at once.
            if conn.sock is not None:
                deadline.attach(conn.sock)
            deadline.check()
            conn.request("GET", target, headers=self._auth_headers())
            resp = conn.getresponse()
            body = read_capped(_Read1(resp), cfg.max_answer_bytes, deadline)
            return resp.status, body
        except TooLarge:
            raise _Malformed(f"answer larger than {cfg.max_answer_bytes >> 20} MiB") from None
        except (DeadlineExpired, OSError, http.client.HTTPException, ValueError) as exc:
            if (deadline.expired.is_set() or isinstance(exc, DeadlineExpired | TimeoutError)
                    or deadline.remaining() == 0.0):
                raise _TimedOut(f"timed out after {cfg.timeout:g}s") from None
            if isinstance(exc, ConnectionRefusedError):
                raise _Unreachable(f"connection refused at {redact_url(cfg.url)}") from None
            if isinstance(exc, http.client.RemoteDisconnected):
                raise _Unreachable(f"{redact_url(cfg.url)} closed the connection "
                                   "without answering") from None
            if isinstance(exc, http.client.HTTPException):
                raise _Malformed(f"malformed answer ({type(exc).__name__})") from None
            raise _Unreachable(self._describe_connection_error(exc)) from None
        finally:
            conn.close()

    def _run_query(self, name: str, promql: str, start: datetime, end: datetime,
                   deadline: Deadline, warnings: list[str] | None = None,
                   max_points: int | None = None) -> list[Series]:
        status, body = self._get("/api/v1/query_range", {
            "query": promql, "start": f"{start.timestamp():.3f}",
            "end": f"{end.timestamp():.3f}", "step": f"{self.config.step_seconds:g}"},
            deadline)
        if status == 401:
            raise RuntimeError("HTTP 401 unauthorized: check the bearer token or basic auth")
        if status == 403:
            raise RuntimeError("HTTP 403 forbidden")
        if status != 200:
            raise RuntimeError(f"HTTP {status} {_prom_error(body[:4096])}".strip())
        return _parse_matrix(body, name, team_label=self.config.team_label,
                             max_series=self.config.max_series, max_points=max_points,
                             warnings=warnings)

    def _describe_connection_error(self, exc: BaseException) -> str:
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
        # One deadline for the whole round, each query given what is left: a server that
        # answered each of nine queries just under the timeout made a collect 9x it.
        deadline = self._deadline = Deadline(float(self.config.timeout)).start()
        try:
            return self._collect_round(snap, now, deadline)
        finally:
            self._deadline = None
            deadline.cancel()

    def _collect_round(self, snap: Snapshot, now: float, deadline: Deadline) -> Snapshot:
        end = datetime.fromtimestamp(now, tz=UTC)
        start = datetime.fromtimestamp(now - self.config.range_seconds, tz=UTC)
        series: list[Series] = []
        refused: list[str] = []  # one line per query of the series left out
        points = 0  # kept this round, against max_points
        unreachable: str | None = None
        timed_out = False  # the round's deadline ran out: what came back is not all
        failed: str | None = None  # the first query error (HTTP, malformed answer)
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
                got = self._run_query(name, promql, start, end, deadline, refused,
                                      self.config.max_points - points)
            except _Unreachable as exc:
                unreachable = str(exc)
                timed_out = isinstance(exc, _TimedOut)
                err = unreachable
                got = None
            except RuntimeError as exc:
                err = str(exc)
                if isinstance(exc, _OverBudget):
                    points = self.config.max_points
                    err = f"{name}: more than {points} points this round, refused"
                failed = failed or err
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
                points += sum(len(s.points) for s in got)
                snap.status.append(
                    SourceStatus(name=f"prometheus:{name}", ok=True, latency_ms=latency, at=now)
                )
        if timed_out or (not series and (unreachable or failed)):
            # Nothing usable came back: the last good data stays, marked stale.
            snap.warnings = refused
            return self._stale(snap, f"prometheus: {unreachable or failed}")
        snap.utilization = series
        snap.teams = self._teams(series)
        snap.warnings = [*refused, *self._findings(series)]
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
        # A note for people, beside the TUI's durations: the one human format.
        return human_duration(self.config.range_seconds)

    def interrupt(self) -> None:
        """The viewer is quitting: the query in flight is cut now (as at its deadline)
        and no other is asked, so the collect waiting on a hung or trickling server
        returns at once instead of after ``timeout``: Textual's ``run()`` joins the
        collect thread before it returns. Safe from any thread; for good. A connect
        that has not reached the server yet still ends at its own timeout."""
        self._interrupted = True
        deadline = self._deadline
        if deadline is not None:
            deadline.cut()

    def close(self) -> None:
        """Nothing stays open: each query has its own connection."""
