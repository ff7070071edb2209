"""quotatop.sources: one registry builds every collector from a name and options."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.fixtures_k8s_prom import kube_api, prometheus_server  # noqa: F401  (fixtures)
from harness.kube_apiserver import KubeAPIServer
from harness.prometheus_server import PrometheusServer
from harness.team_exporter import QUOTAS
from quotatop.collectors.errors import UserError
from quotatop.sources import (
    DEFAULT_SCENARIO,
    SOURCES,
    SourceOptions,
    open_source,
    options_from_mapping,
)

ROOT = Path(__file__).resolve().parent.parent


def test_import_pulls_in_no_backend() -> None:
    code = (
        "import sys, quotatop.sources\n"
        "heavy = ['kubernetes', 'prometheus_api_client', 'textual',"
        " 'quotatop.collectors.slurm', 'quotatop.collectors.k8s.collector',"
        " 'quotatop.collectors.prometheus_source', 'quotatop.recording.replay_source',"
        " 'quotatop.simulation.scenario_source']\n"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


def test_demo_plays_the_bundled_scenario_by_default() -> None:
    col = open_source("demo", SourceOptions())
    try:
        first, second = col.collect(), col.collect()
    finally:
        col.close()
    assert col.name == f"demo:{DEFAULT_SCENARIO.stem}" == "demo:tour"
    assert first.meta["step"] == "1" and second.meta["step"] == "2"
    assert {t.name for t in first.teams}  # the default demo's teams


def test_demo_with_a_missing_scenario_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such scenario file"):
        open_source("demo", SourceOptions(scenario=str(tmp_path / "nope.toml")))


def test_k8s_against_the_test_api_server(kube_api: KubeAPIServer, tmp_path: Path) -> None:  # noqa: F811
    kc = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    col = open_source("k8s", SourceOptions(kubeconfig=str(kc), team_label="quotatop.io/team"))
    try:
        snap = col.collect()
    finally:
        col.close()
    assert snap.source == "k8s" and not snap.stale, snap.stale_reason
    assert {"ml", "vision", "nlp"} <= {t.name for t in snap.teams}  # team_label reached it
    assert {j.id for j in snap.jobs} >= {"nlp/job-big-5c2d1"}


def test_k8s_with_a_missing_kubeconfig_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"kubeconfig .*nope: no such file"):
        open_source("k8s", SourceOptions(kubeconfig=str(tmp_path / "nope")))


def test_prometheus_against_the_real_prometheus(prometheus_server: PrometheusServer) -> None:  # noqa: F811
    col = open_source(
        "prometheus",
        SourceOptions(
            prometheus_url=prometheus_server.url,
            prometheus_groups=["kube-state-metrics"],
            prometheus_queries={"team_gpu_requested": ""},  # an override disables a default
            timeout=5.0,
        ),
    )
    try:
        snap = col.collect()
    finally:
        col.close()
    assert snap.source == "prometheus" and not snap.stale, snap.stale_reason
    metrics = {s.metric for s in snap.utilization}
    assert metrics == {"team_gpu_quota_hard", "team_gpu_quota_used"}  # only that group, minus one
    hard = {
        s.labels["namespace"]: s.points[-1][1]
        for s in snap.utilization
        if s.metric == "team_gpu_quota_hard"
    }
    assert hard == {ns: q["requests.nvidia.com/gpu"][0] for ns, q in QUOTAS.items()}


def test_prometheus_credentials_by_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QT_TEST_TOKEN", raising=False)
    opts = SourceOptions(
        prometheus_url="http://127.0.0.1:9", prometheus_bearer_token_env="QT_TEST_TOKEN"
    )
    with pytest.raises(UserError, match="environment variable QT_TEST_TOKEN is not set"):
        open_source("prometheus", opts)
    monkeypatch.setenv("QT_TEST_TOKEN", "s3cret-value")
    col = open_source("prometheus", opts)
    try:
        assert "s3cret-value" not in repr(col)
    finally:
        col.close()


@pytest.mark.parametrize(
    ("name", "opts", "message"),
    [
        (
            "nope",
            SourceOptions(),
            r"unknown source 'nope' \(known: demo, slurm, k8s, prometheus, replay, live\)",
        ),
        ("prometheus", SourceOptions(), "needs a URL"),
        ("prometheus", SourceOptions(prometheus_url="localhost:9090"), "not an http"),
        ("replay", SourceOptions(), "needs a recording"),
        ("live", SourceOptions(), "needs the recording a poller writes"),
        ("live", SourceOptions(recording="x", live_stale_after=0), "live_stale_after must be"),
        ("demo", SourceOptions(timeout=0), "timeout must be a positive"),
        ("demo", SourceOptions(refresh=-1), "refresh must be a positive"),
        ("k8s", SourceOptions(kueue_visibility_interval=-1), "cannot be negative"),
    ],
)
def test_bad_choices_are_one_line_user_errors(name: str, opts: SourceOptions, message: str) -> None:
    with pytest.raises(UserError, match=message) as info:
        open_source(name, opts)
    assert "\n" not in str(info.value)


def test_replay_of_a_missing_recording(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such recording"):
        open_source("replay", SourceOptions(recording=str(tmp_path / "x.qtrec")))


def test_options_from_a_table_name_the_bad_key() -> None:
    assert options_from_mapping({"ssh_host": "login1"}).ssh_host == "login1"
    with pytest.raises(UserError, match="opts: timeout: Expected `float`, got `str`"):
        options_from_mapping({"timeout": "soon"}, "opts")
    with pytest.raises(UserError, match="unknown field `sshhost`"):
        options_from_mapping({"sshhost": "login1"})


def test_every_registered_source_is_buildable_or_refuses_cleanly() -> None:
    # Guards the registry itself: each name resolves to a builder, none is a stub.
    for name in SOURCES:
        try:
            col = open_source(name, SourceOptions(prometheus_url="http://127.0.0.1:9"))
        except UserError:
            continue  # replay without a recording
        try:
            assert hasattr(col, "collect") and hasattr(col, "close")
        finally:
            col.close()
