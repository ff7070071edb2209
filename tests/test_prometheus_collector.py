"""The Prometheus collector against a real Prometheus scraping a known exporter."""

from __future__ import annotations

import itertools
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.fixtures_k8s_prom import (  # noqa: F401  (pytest fixtures)
    BASIC_AUTH,
    prometheus_server,
    prometheus_server_basic_auth,
)
from harness.prometheus_server import PrometheusServer, free_port
from harness.team_exporter import KUEUE, QUOTAS, expected
from quotatop.collectors.model import Snapshot, to_json
from quotatop.collectors.prometheus_source import (
    PrometheusCollector,
    PrometheusConfig,
    allocation_vs_utilization,
    find_underused,
    redact_url,
)

ROOT = Path(__file__).resolve().parent.parent


def _config(url: str, **kw: object) -> PrometheusConfig:
    base: dict[str, object] = {
        "url": url,
        "range_seconds": 30.0,
        "step_seconds": 1.0,
        "rate_window": "5s",
        "timeout": 5.0,
    }
    base.update(kw)
    return PrometheusConfig(**base)  # type: ignore[arg-type]


def _by(snap: Snapshot, metric: str, label: str) -> dict[str, list[tuple[float, float]]]:
    return {
        s.labels[label]: s.points
        for s in snap.utilization
        if s.metric == metric and label in s.labels
    }


def _status(snap: Snapshot, name: str):  # type: ignore[no-untyped-def]
    found = [s for s in snap.status if s.name == f"prometheus:{name}"]
    assert found, f"no status for {name}: {[s.name for s in snap.status]}"
    return found[0]


@pytest.fixture(scope="module")
def default_snapshot(prometheus_server: PrometheusServer) -> Snapshot:  # noqa: F811
    # rate() over 5s ramps up while the series is younger than the window: wait it out.
    time.sleep(max(0.0, prometheus_server.first_scrape_at + 7 - time.time()))
    col = PrometheusCollector(_config(prometheus_server.url))
    try:
        return col.collect()
    finally:
        col.close()


def test_default_queries_return_known_values(default_snapshot: Snapshot) -> None:
    snap = default_snapshot
    exp = expected()
    assert not snap.stale, snap.stale_reason
    util = _by(snap, "team_gpu_util", "namespace")
    assert set(util) == set(exp.util_by_team)
    for team, points in util.items():
        assert points, team
        assert all(v == pytest.approx(exp.util_by_team[team]) for _, v in points)
    node_util = _by(snap, "node_gpu_util", "Hostname")
    assert {n: p[-1][1] for n, p in node_util.items()} == pytest.approx(exp.util_by_node)
    held = {t: p[-1][1] for t, p in _by(snap, "team_gpu_requested", "namespace").items()}
    assert held == pytest.approx(exp.gpus_by_team)
    hard = {t: p[-1][1] for t, p in _by(snap, "team_gpu_quota_hard", "namespace").items()}
    assert hard == {ns: q["requests.nvidia.com/gpu"][0] for ns, q in QUOTAS.items()}
    used = {t: p[-1][1] for t, p in _by(snap, "team_gpu_quota_used", "namespace").items()}
    assert used == {ns: q["requests.nvidia.com/gpu"][1] for ns, q in QUOTAS.items()}
    cq_usage = {t: p[-1][1] for t, p in _by(snap, "cq_gpu_usage", "cluster_queue").items()}
    assert cq_usage == {cq: v[2] for cq, v in KUEUE.items()}
    cq_nominal = {t: p[-1][1] for t, p in _by(snap, "cq_gpu_nominal", "cluster_queue").items()}
    assert cq_nominal == {cq: v[1] for cq, v in KUEUE.items()}
    pending = {t: p[-1][1] for t, p in _by(snap, "cq_pending_workloads", "cluster_queue").items()}
    assert pending == {cq: v[3] for cq, v in KUEUE.items()}


def test_node_cpu_rate_matches_exporter(default_snapshot: Snapshot) -> None:
    cpu = _by(default_snapshot, "node_cpu_util", "instance")
    exp = expected().util_by_node
    assert set(cpu) == set(exp)
    for node, points in cpu.items():
        assert points[-1][1] == pytest.approx(exp[node] / 100.0, abs=0.03), node


def test_points_lie_in_the_requested_range(default_snapshot: Snapshot) -> None:
    snap = default_snapshot
    for s in snap.utilization:
        times = [t for t, _ in s.points]
        assert times == sorted(times)
        assert times[0] >= snap.taken_at - 30 - 1
        assert times[-1] <= snap.taken_at + 1
        # Step 1s: consecutive points are one second apart (Prometheus aligns to step).
        assert all(b - a == pytest.approx(1.0) for a, b in itertools.pairwise(times))


def test_every_default_query_reports_ok(default_snapshot: Snapshot) -> None:
    bad = [(s.name, s.error) for s in default_snapshot.status if not s.ok]
    assert bad == []
    assert all(s.latency_ms is not None and s.latency_ms >= 0 for s in default_snapshot.status)


def test_allocation_beside_utilization_finds_the_idle_team(default_snapshot: Snapshot) -> None:
    eff = allocation_vs_utilization(default_snapshot.utilization)
    by_team = {e.team: e for e in eff}
    assert by_team["ml-research"].gpus_held == 40
    assert by_team["ml-research"].avg_util_percent == pytest.approx(5.0)
    assert [e.team for e in find_underused(eff)] == ["ml-research"]
    assert default_snapshot.warnings == ["ml-research holds 40 GPUs at 5% utilization"]
    teams = {t.name: t for t in default_snapshot.teams}
    assert teams["ml-research"].usage == {"gpu": 40.0}
    assert teams["ml-research"].max == {"gpu": 48.0}
    assert teams["ml-research"].guarantee is None  # Prometheus has no guarantee notion
    # The snapshot survives the JSON round trip the CLI uses.
    assert json.loads(to_json(default_snapshot))["source"] == "prometheus"


def test_failing_and_empty_queries_are_statuses_not_errors(
    prometheus_server: PrometheusServer,  # noqa: F811
) -> None:
    col = PrometheusCollector(
        _config(
            prometheus_server.url,
            groups=("dcgm",),
            queries={"broken": "sum((", "nothing": "no_such_metric_anywhere"},
        )
    )
    snap = col.collect()
    assert not snap.stale
    broken = _status(snap, "broken")
    assert not broken.ok
    assert broken.error is not None and "HTTP 400" in broken.error and "bad_data" in broken.error
    assert "\n" not in broken.error
    nothing = _status(snap, "nothing")
    assert not nothing.ok and nothing.error == "query returned no data"
    assert _status(snap, "team_gpu_util").ok
    assert any(s.metric == "team_gpu_util" for s in snap.utilization)


def test_disabling_a_default_and_opting_into_slurm(prometheus_server: PrometheusServer) -> None:  # noqa: F811
    col = PrometheusCollector(
        _config(prometheus_server.url, groups=("slurm", "dcgm"), queries={"node_gpu_util": ""})
    )
    snap = col.collect()
    names = {s.name for s in snap.status}
    assert "prometheus:node_gpu_util" not in names
    # This cluster has no Slurm exporter: reported, not fatal.
    assert not _status(snap, "slurm_account_cpus").ok
    assert _status(snap, "team_gpu_util").ok


class _Silent:
    """A TCP server that accepts and never answers: a hung Prometheus."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self._stop = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
                self.conns.append(conn)
            except OSError:
                continue

    def close(self) -> None:
        self._stop = True
        self.thread.join(timeout=2)
        for c in self.conns:
            c.close()
        self.sock.close()


def test_slow_prometheus_times_out_quickly_and_marks_stale() -> None:
    silent = _Silent()
    try:
        col = PrometheusCollector(_config(f"http://127.0.0.1:{silent.port}", timeout=0.5))
        t0 = time.monotonic()
        snap = col.collect()
        elapsed = time.monotonic() - t0
    finally:
        silent.close()
    # One query waits out the timeout; the rest are skipped rather than each waiting.
    assert elapsed < 3.0
    assert snap.stale
    assert snap.stale_reason == "prometheus: timed out after 0.5s"
    assert all(not s.ok for s in snap.status)
    assert sum(1 for s in snap.status if (s.error or "").startswith("skipped:")) >= 5


def test_down_prometheus_keeps_last_good_data(prometheus_server: PrometheusServer) -> None:  # noqa: F811
    col = PrometheusCollector(_config(prometheus_server.url, groups=("dcgm",)))
    good = col.collect()
    assert good.utilization and not good.stale
    dead = f"http://127.0.0.1:{free_port()}"
    col.close()
    col.config.url = dead  # the same collector, now pointing where nothing listens
    snap = col.collect()
    assert snap.stale
    assert snap.stale_reason == f"prometheus: connection refused at {dead}"
    assert snap.utilization == good.utilization
    assert [t.name for t in snap.teams] == [t.name for t in good.teams]


def test_basic_auth_from_env_and_file(
    prometheus_server_basic_auth: PrometheusServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user, password = BASIC_AUTH
    monkeypatch.setenv("QT_TEST_PROM_PASSWORD", password)
    col = PrometheusCollector(
        _config(
            prometheus_server_basic_auth.url,
            groups=("dcgm",),
            basic_user=user,
            basic_password_env="QT_TEST_PROM_PASSWORD",
        )
    )
    snap = col.collect()
    assert _status(snap, "team_gpu_util").ok, snap.status
    wrong = tmp_path / "password"
    wrong.write_text("wrong-password-9981\n")
    bad = PrometheusCollector(
        _config(
            prometheus_server_basic_auth.url,
            groups=("dcgm",),
            basic_user=user,
            basic_password_file=str(wrong),
        )
    )
    denied = bad.collect()
    st = _status(denied, "team_gpu_util")
    assert not st.ok and st.error == "HTTP 401 unauthorized: check the bearer token or basic auth"
    for s in (snap, denied):
        text = to_json(s).decode()
        assert password not in text and "wrong-password-9981" not in text
    assert password not in repr(col)


class _RecordingHandler(BaseHTTPRequestHandler):
    seen: list[str | None] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Authorization"))
        body = json.dumps(
            {
                "status": "success",
                "data": {
                    "resultType": "matrix",
                    "result": [{"metric": {"namespace": "a"}, "values": [[1.0, "7"]]}],
                },
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def recording_server() -> Iterator[tuple[str, type[_RecordingHandler]]]:
    handler = type("H", (_RecordingHandler,), {"seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_bearer_token_from_file_is_sent_and_never_shown(
    recording_server: tuple[str, type[_RecordingHandler]], tmp_path: Path
) -> None:
    url, handler = recording_server
    token = "tok-SECRET-4f1c9e"
    (tmp_path / "token").write_text(token + "\n")
    col = PrometheusCollector(
        _config(url, groups=("dcgm",), bearer_token_file=str(tmp_path / "token"))
    )
    snap = col.collect()
    assert handler.seen and all(h == f"Bearer {token}" for h in handler.seen)
    assert token not in to_json(snap).decode()
    assert token not in repr(col)


def test_missing_credentials_are_one_line_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QT_NO_SUCH_TOKEN", raising=False)
    col = PrometheusCollector(_config("http://127.0.0.1:9", bearer_token_env="QT_NO_SUCH_TOKEN"))
    snap = col.collect()
    assert snap.stale
    assert snap.stale_reason == (
        "prometheus: bearer token environment variable QT_NO_SUCH_TOKEN is not set"
    )


def test_redact_url_drops_userinfo() -> None:
    assert redact_url("http://u:p@127.0.0.1:9090/prom") == "http://127.0.0.1:9090/prom"
    assert redact_url("http://127.0.0.1:9090") == "http://127.0.0.1:9090"


def test_module_import_pulls_in_neither_client_nor_textual() -> None:
    code = (
        "import sys, quotatop.collectors.prometheus_source\n"
        "bad = [m for m in ('prometheus_api_client', 'requests', 'textual') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)
