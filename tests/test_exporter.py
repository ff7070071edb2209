"""`quotatop exporter`: /metrics on the bundled demo scenarios, checked against the
snapshot the exporter polled; the command line's exits; and the real Prometheus of
tests/harness scraping the exporter and answering PromQL over what it scraped."""

from __future__ import annotations

import json
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import DEMO, ROOT, skip_or_fail
from harness.prometheus_server import ComponentUnavailable, PrometheusServer, free_port
from quotatop.cli import build_parser
from quotatop.collectors.model import PENDING, RUNNING, Snapshot, Team
from quotatop.commands.exporter import Exporter, build, serve
from quotatop.commands.predict import predict_snapshot
from quotatop.incidents import KINDS, IncidentMonitor

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _exporter(*flags: str) -> Exporter:
    """Built from the command line exactly as `quotatop exporter ...` builds it."""
    return build(build_parser().parse_args(["exporter", "--port", "0", *flags]))


@contextmanager
def _serving(exp: Exporter) -> Iterator[int]:
    server = serve(exp, "127.0.0.1", 0)
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()


def _scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def _by(samples: Samples, name: str, key: str, **fixed: str) -> dict[str, float]:
    """The samples of ``name`` whose labels include ``fixed``, keyed by label ``key``."""
    out = {}
    for (n, labels), v in samples.items():
        d = dict(labels)
        if n == name and all(d.get(k) == x for k, x in fixed.items()):
            out[d[key]] = v
    return out


def _poll_until_pending(exp: Exporter) -> list[Snapshot]:
    """Step the demo (one frame per poll) until a frame has pending jobs."""
    seen: list[Snapshot] = []
    for _ in range(200):  # a scenario's whole first pass is well under this
        seen.append(exp.poll())
        if any(j.state == PENDING for j in seen[-1].jobs):
            return seen
    raise AssertionError("the demo never had a pending job")


def _quantile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default method)."""
    v = sorted(values)
    pos = (len(v) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def _jobs(snap: Snapshot, state: str) -> Counter[str]:
    return Counter(j.team for j in snap.jobs if j.state == state)


def test_metrics_follow_the_demo_snapshot() -> None:
    exp = _exporter("--source", "demo", "--refresh", "3600")
    snap = _poll_until_pending(exp)[-1]
    with _serving(exp) as port:
        m = _scrape(port)
    gpu = {"cluster": "demo", "resource": "gpu"}

    assert m[("quotatop_source_up", frozenset({("cluster", "demo")}))] == 1.0
    assert ("quotatop_last_success_timestamp_seconds",
            frozenset({("cluster", "demo")})) in m
    teams = {t.name: t for t in snap.teams}
    assert _by(m, "quotatop_team_quota_guarantee", "team", **gpu) == {
        n: t.guarantee["gpu"] for n, t in teams.items() if t.guarantee}
    assert _by(m, "quotatop_team_quota_max", "team", **gpu) == {
        n: t.max["gpu"] for n, t in teams.items() if t.max}
    assert _by(m, "quotatop_team_used", "team", **gpu) == {
        n: t.usage.get("gpu", 0.0) for n, t in teams.items()}
    # The scenario reports its borrowing (as Kueue does): the exporter says the same.
    borrowed = _by(m, "quotatop_team_borrowed", "team", **gpu)
    assert borrowed == {n: t.borrowed.get("gpu", 0.0) for n, t in teams.items()}
    assert sum(borrowed.values()) > 0, "the demo frame was meant to show borrowing"
    # What is borrowed is lent within the one cohort, by teams below their guarantee.
    lent = _by(m, "quotatop_team_lent", "team", **gpu)
    assert sum(lent.values()) == pytest.approx(sum(borrowed.values()))
    for n, t in teams.items():
        assert lent[n] <= max(0.0, t.guarantee["gpu"] - t.usage.get("gpu", 0.0)) + 1e-9

    pending, running = _jobs(snap, PENDING), _jobs(snap, RUNNING)
    assert _by(m, "quotatop_team_jobs_pending", "team") == {n: pending[n] for n in teams}
    assert _by(m, "quotatop_team_jobs_running", "team") == {n: running[n] for n in teams}
    assert _by(m, "quotatop_team_queue_depth", "team", **gpu) == {
        n: sum(j.request.get("gpu", 0.0) for j in snap.jobs
               if j.team == n and j.state == PENDING) for n in teams}

    # Waits: the core's predicted start minus the snapshot's time, per team.
    waits: dict[str, list[float]] = {}
    for r in predict_snapshot(snap).jobs:
        assert r.predicted_start is not None  # every job of this frame has a start
        waits.setdefault(r.team, []).append(r.predicted_start - snap.taken_at)
    assert waits, "the frame was chosen for its pending jobs"
    for q in (0.5, 0.9):
        got = _by(m, "quotatop_team_predicted_wait_seconds", "team", quantile=str(q))
        assert got == pytest.approx({n: _quantile(w, q) for n, w in waits.items()})

    # Every node of this frame is full: nothing is free, so nothing is stranded.
    assert all(n.allocated.get("gpu") == n.capacity.get("gpu") for n in snap.nodes)
    assert m[("quotatop_stranded_gpus", frozenset({("cluster", "demo")}))] == 0.0


def test_stranded_gpus_and_incidents_follow_the_fragmentation_demo() -> None:
    exp = _exporter("--source", "demo", str(DEMO / "fragmentation.toml"),
                    "--refresh", "3600", "--cluster", "lab-a")
    seen = _poll_until_pending(exp)

    def fits_in_total(snap: Snapshot) -> bool:
        free = sum(max(0.0, n.capacity.get("gpu", 0.0) - n.allocated.get("gpu", 0.0))
                   for n in snap.nodes)
        return any(j.state == PENDING and 0 < j.request.get("gpu", 0.0) <= free
                   for j in snap.jobs)

    # Step on to a frame where a pending job would fit the free GPUs in total but not
    # node by node: fragmentation, as the detector defines it.
    while not fits_in_total(seen[-1]) and len(seen) < 200:
        seen.append(exp.poll())
    snap = seen[-1]
    with _serving(exp) as port:
        m = _scrape(port)
    cluster = frozenset({("cluster", "lab-a")})

    pending = [j for j in snap.jobs if j.state == PENDING and j.request.get("gpu", 0) > 0]
    assert all(n.state not in ("down", "drain") for n in snap.nodes)
    per_node = [j.request["gpu"] / max(1, j.nodes_requested) for j in pending]
    holes = [n.capacity.get("gpu", 0.0) - n.allocated.get("gpu", 0.0) for n in snap.nodes]
    expected = sum(h for h in holes if h > 0 and h < min(per_node))
    assert expected > 0, "the scenario strands GPUs in holes no pending job fits"
    assert m[("quotatop_stranded_gpus", cluster)] == expected

    mon = IncidentMonitor()
    for s in seen:
        mon.feed(s)
    kinds = Counter(i.kind for i in mon.open_incidents())
    assert kinds["fragmentation"] >= 1
    assert _by(m, "quotatop_incidents_open", "kind", cluster="lab-a") == {
        k: float(kinds[k]) for k in KINDS}


class _Flaky:
    """A source that answers once and is then down, as a collector reports an outage:
    a stale snapshot (here without the old data, the harder case)."""

    name = "flaky"

    def __init__(self) -> None:
        self.calls = 0

    def collect(self) -> Snapshot:
        self.calls += 1
        if self.calls == 1:
            return Snapshot(source="flaky", taken_at=1000.0,
                            teams=[Team(name="a", guarantee={"gpu": 8.0})])
        return Snapshot(source="flaky", stale=True, stale_reason="flaky: connection refused")

    def close(self) -> None:
        pass


def test_a_failed_poll_keeps_the_last_good_data(capsys: pytest.CaptureFixture[str]) -> None:
    clock = iter([500.0, 600.0, 700.0])
    exp = Exporter(_Flaky(), cluster="c", refresh=60.0, clock=lambda: next(clock))
    exp.poll()
    with _serving(exp) as port:
        before = _scrape(port)
        exp.poll()
        exp.poll()
        after = _scrape(port)
    up = ("quotatop_source_up", frozenset({("cluster", "c")}))
    last = ("quotatop_last_success_timestamp_seconds", frozenset({("cluster", "c")}))
    assert (before[up], after[up]) == (1.0, 0.0)
    assert before[last] == after[last] == 500.0
    team = {k: v for k, v in before.items() if k[0].startswith("quotatop_team")}
    assert team and {k: after[k] for k in team} == team
    # Said once on stderr, not once per refresh.
    assert capsys.readouterr().err.count("connection refused") == 1


def _cli(*flags: str) -> list[str]:
    return [sys.executable, "-m", "quotatop", "exporter", *flags]


def _as_in_a_terminal() -> None:
    # A command started in the background by a shell without job control (`cmd &` in a
    # script, as a CI runner or a test loop may run pytest) has SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler: ctrl-c could never reach it.
    # The exporter is started here as from a terminal, whatever this run inherited.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "ctrl-c"])
def test_cli_serves_the_demo_and_exits_cleanly(stop: signal.Signals) -> None:
    proc = subprocess.Popen(_cli("--source", "demo", "--port", "0", "--refresh", "0.2"),
                            cwd=ROOT, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_as_in_a_terminal)
    try:
        assert proc.stderr is not None
        # "quotatop exporter: serving http://127.0.0.1:PORT/metrics ...", bounded.
        ready, _, _ = select.select([proc.stderr], [], [], 30)
        line = proc.stderr.readline() if ready else ""
        assert "127.0.0.1:" in line, f"no serving line: {line!r}"
        port = int(line.split("127.0.0.1:")[1].split("/")[0])
        m = _scrape(port)
        proc.send_signal(stop)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    from quotatop.sources import open_source

    first = open_source("demo").collect()  # the quotas are the same in every frame
    assert m[("quotatop_source_up", frozenset({("cluster", "demo")}))] == 1.0
    assert _by(m, "quotatop_team_quota_guarantee", "team", resource="gpu") == {
        t.name: t.guarantee["gpu"] for t in first.teams if t.guarantee}


def test_cli_bad_input_is_one_line_and_exit_2() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        in_use = subprocess.run(_cli("--source", "demo", "--port", str(taken)), cwd=ROOT,
                                capture_output=True, text=True, timeout=60)
    closed = free_port()  # nothing listens there: a Prometheus that is not up
    unreachable = subprocess.run(
        _cli("--source", "prometheus", "--prometheus-url", f"http://127.0.0.1:{closed}",
             "--timeout", "2", "--port", "0"),
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    bad_port = subprocess.run(_cli("--source", "demo", "--port", "65536"), cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    for r, words in ((in_use, f"127.0.0.1:{taken}"), (unreachable, "prometheus unreachable"),
                     (bad_port, "--port")):
        assert r.returncode == 2, r.stderr
        assert r.stderr.count("\n") == 1 and words in r.stderr, r.stderr


def _query(prom: PrometheusServer, promql: str) -> dict[str, float]:
    return {r["metric"].get("team", ""): float(r["value"][1])  # type: ignore[index,union-attr]
            for r in prom.query(promql)}


def test_real_prometheus_scrapes_the_exporter() -> None:
    exp = _exporter("--source", "demo", "--refresh", "3600", "--cluster", "demo-lab")
    snap = _poll_until_pending(exp)[-1]
    with _serving(exp) as port:
        own = _scrape(port)
        prom = PrometheusServer(extra_targets={"quotatop": f"127.0.0.1:{port}"})
        try:
            prom.start()
        except ComponentUnavailable as exc:
            skip_or_fail(f"prometheus: {exc}")
        try:
            # Bounded wait for the first scrape of our target to be queryable.
            deadline = time.monotonic() + 20
            got: dict[str, float] = {}
            while time.monotonic() < deadline:
                try:
                    got = _query(prom, 'sum by (team) (quotatop_team_jobs_pending'
                                       '{job="quotatop", cluster="demo-lab"})')
                except (OSError, urllib.error.URLError, ValueError, KeyError):
                    got = {}
                if len(got) == len(snap.teams):
                    break
                time.sleep(0.2)
            assert got, f"prometheus never scraped the exporter: {prom.log_tail()}"
            waits = _query(prom, 'quotatop_team_predicted_wait_seconds{quantile="0.9"}')
            up = prom.query('up{job="quotatop"}')
            targets = prom.query('quotatop_source_up{job="quotatop"}')
            # Every query of the shipped dashboard is PromQL this Prometheus accepts,
            # and those that are not filters (`> 0`) find the exporter's series.
            answers = {e: prom.query(e.replace("$cluster", ".*").replace("$team", ".*")
                                     .replace("$resource", "gpu"))
                       for e in _dashboard_exprs()}
        finally:
            prom.stop()
    pending = _jobs(snap, PENDING)
    assert got == {t.name: float(pending[t.name]) for t in snap.teams}
    assert got == _by(own, "quotatop_team_jobs_pending", "team")
    assert waits == pytest.approx(
        _by(own, "quotatop_team_predicted_wait_seconds", "team", quantile="0.9"))
    assert [float(r["value"][1]) for r in up] == [1.0]  # type: ignore[index]
    assert [e for e, res in answers.items() if not res and "> 0" not in e] == []
    assert [r["metric"] for r in targets] == [
        {"__name__": "quotatop_source_up", "cluster": "demo-lab",
         "instance": f"127.0.0.1:{port}", "job": "quotatop"}]


def _dashboard() -> dict[str, Any]:
    return json.loads((ROOT / "docs" / "grafana-quotatop.json").read_text())  # type: ignore[no-any-return]


def _dashboard_exprs() -> list[str]:
    return [t["expr"] for p in _dashboard()["panels"] for t in p.get("targets", [])]


def test_dashboard_queries_only_exported_metrics() -> None:
    """The shipped Grafana dashboard is valid JSON, uses the datasource variable and
    the cluster/team variables, and every metric it queries is one the exporter has."""
    import re

    doc = _dashboard()
    names = {v["name"] for v in doc["templating"]["list"]}
    assert {"DS_PROMETHEUS", "cluster", "team"} <= names
    exprs = _dashboard_exprs()
    assert exprs
    source = (ROOT / "quotatop" / "commands" / "exporter.py").read_text()
    for e in exprs:
        for metric in re.findall(r"quotatop_[a-z_]+", e):
            assert f'"{metric}"' in source, metric
    for p in doc["panels"]:
        if p.get("type") != "row":
            assert p["datasource"]["uid"] == "${DS_PROMETHEUS}", p["title"]
