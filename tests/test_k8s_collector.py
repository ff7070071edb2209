"""The Kubernetes/Kueue collector with the official client against tests/harness/kube_apiserver."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.fixtures_k8s_prom import kube_api  # noqa: F401  (pytest fixture)
from harness.kube_apiserver import PENDING_MESSAGE, KubeAPIServer, seed
from quotatop.collectors.k8s.collector import KubernetesCollector, KubernetesConfig
from quotatop.collectors.k8s.pods import pod_requests, qos_class
from quotatop.collectors.k8s.quantity import convert, parse_quantity
from quotatop.collectors.model import Snapshot, to_json

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "test-token-for-quotatop"


def wait_for(pred: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def api(tmp_path: Path) -> Iterator[KubeAPIServer]:
    """A fresh server per test for the ones that mutate or break it."""
    server = KubeAPIServer(bookmark_interval=0.2).start()
    seed(server)
    try:
        yield server
    finally:
        server.stop()


def make(server: KubeAPIServer, tmp_path: Path, token: str = TOKEN, **kw: object):  # type: ignore[no-untyped-def]
    kc = server.write_kubeconfig(tmp_path / "kubeconfig", token)
    opts: dict[str, object] = {
        "kubeconfig": str(kc),
        "watch_timeout": 3.0,
        "backoff_initial": 0.05,
        "backoff_max": 0.3,
        "sync_timeout": 5.0,
    }
    opts.update(kw)
    return KubernetesCollector(KubernetesConfig(**opts))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def snap(kube_api: KubeAPIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Snapshot]:  # noqa: F811
    col = make(kube_api, tmp_path_factory.mktemp("kc"))
    try:
        yield col.collect()
    finally:
        col.close()


# --- quantities and pod rules (pure) ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", 0.5),
        ("2", 2.0),
        ("1.5", 1.5),
        ("1k", 1000.0),
        ("1Ki", 1024.0),
        ("1Mi", 2.0**20),
        ("4Gi", 4 * 2.0**30),
        ("1Ti", 2.0**40),
        ("1M", 1e6),
        ("1G", 1e9),
        ("1E", 1e18),
        ("1e3", 1000.0),
        ("1E3", 1000.0),
        ("100u", 1e-4),
        ("5n", 5e-9),
        (".5", 0.5),
        ("+2", 2.0),
        (3, 3.0),
    ],
)
def test_parse_quantity(text: str | int, value: float) -> None:
    assert parse_quantity(text) == pytest.approx(value)


@pytest.mark.parametrize("bad", ["", "abc", "1Qi", "1.2.3", "m", "1 Gi"])
def test_parse_quantity_rejects_junk(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_quantity(bad)


def test_model_units() -> None:
    got = convert({"cpu": "250m", "memory": "1Gi", "nvidia.com/gpu": "2", "example.com/fpga": "1"})
    assert got == {"cpu": 0.25, "memory": 1024.0, "gpu": 2.0, "example.com/fpga": 1.0}


def _pod(containers: list[dict], init: list[dict] | None = None, **spec: object) -> dict:
    return {"spec": {"containers": containers, "initContainers": init or [], **spec}}


def _c(req: dict | None = None, lim: dict | None = None, **extra: object) -> dict:
    return {"resources": {"requests": req or {}, "limits": lim or {}}, **extra}


def test_pod_requests_follow_kubernetes_rules() -> None:
    # Init containers: max(sum(containers), max(init)).
    assert pod_requests(_pod([_c({"cpu": "1"}), _c({"cpu": "1"})], [_c({"cpu": "3"})]))["cpu"] == 3
    # Sidecars (restartPolicy Always) add to the containers and to later init containers.
    p = _pod(
        [_c({"cpu": "2"})],
        [_c({"cpu": "1"}, restartPolicy="Always"), _c({"cpu": "2500m"})],
    )
    assert pod_requests(p)["cpu"] == pytest.approx(3.5)
    # A limit without a request is the request; overhead is added.
    p = _pod([_c(None, {"nvidia.com/gpu": "4"})], overhead={"cpu": "250m"})
    assert pod_requests(p) == {"nvidia.com/gpu": 4.0, "cpu": 0.25}


def test_qos_class_computed_like_kubernetes() -> None:
    both = {"cpu": "1", "memory": "1Gi"}
    assert qos_class(_pod([_c(both, both)])) == "Guaranteed"
    assert qos_class(_pod([_c(None, both)])) == "Guaranteed"  # requests default to limits
    assert qos_class(_pod([_c(both, {"cpu": "2", "memory": "1Gi"})])) == "Burstable"
    assert qos_class(_pod([_c({"cpu": "1"})])) == "Burstable"
    assert qos_class(_pod([_c({"nvidia.com/gpu": "1"})])) == "BestEffort"  # only cpu/memory count
    assert qos_class(_pod([_c()])) == "BestEffort"
    assert qos_class(_pod([_c(both, both)], [_c({"cpu": "1"})])) == "Burstable"
    assert qos_class({"spec": {}, "status": {"qosClass": "Burstable"}}) == "Burstable"


# --- against the API server ---------------------------------------------------------------


def test_namespaces_become_teams_with_quota_and_limits(snap: Snapshot) -> None:
    assert not snap.stale, snap.stale_reason
    teams = {t.name: t for t in snap.teams}
    assert "kube-system" not in teams
    ml = teams["ml-research"]
    assert ml.max == {
        "cpu": 512.0,
        "memory": 4 * 1024 * 1024.0,
        "gpu": 48.0,
        "limits.cpu": 1000.0,
        "limits.memory": 8 * 1024 * 1024.0,
        "count/pods": 200.0,  # kept apart from "pods" (which finished pods leave)
    }
    assert ml.usage["gpu"] == 40.0 and ml.usage["memory"] == 640 * 1024.0
    assert ml.guarantee is None  # ResourceQuota has no guarantee notion
    assert ml.per_job_limit == {"cpu": 128.0, "memory": 1024 * 1024.0, "gpu": 16.0}
    assert any("[BestEffort]" in n and "pods 0/10" in n for n in ml.source_notes)
    assert any("maxLimitRequestRatio cpu=4" in n for n in ml.source_notes)
    vision = teams["vision"]
    assert vision.usage["cpu"] == 7.5
    assert any("PriorityClass In high" in n for n in vision.source_notes)
    assert vision.per_job_limit == {"cpu": 8.0, "memory": 64 * 1024.0, "gpu": 8.0}


def test_team_label_groups_namespaces(kube_api: KubeAPIServer, tmp_path: Path) -> None:  # noqa: F811
    col = make(kube_api, tmp_path, team_label="quotatop.io/team", kueue=False)
    try:
        s = col.collect()
    finally:
        col.close()
    names = {t.name for t in s.teams}
    assert names == {"ml", "vision", "nlp"}
    jobs = {j.id: j for j in s.jobs}
    assert jobs["nlp/notebook"].team == "nlp" and jobs["ml-research/train-0"].team == "ml"


def test_pods_become_jobs(snap: Snapshot) -> None:
    jobs = {j.id: j for j in snap.jobs}
    serve = jobs["vision/serve-0"]
    assert serve.qos_class == "Burstable"  # computed: status lacks qosClass
    assert serve.request == {"cpu": 4.0, "memory": 1024.0, "gpu": 8.0}  # init container rule
    assert serve.state == "running" and serve.nodes == ["gpu06"]
    assert serve.qos == "normal" and serve.priority == 100
    assert serve.start_time == pytest.approx(1714557600.0)
    assert jobs["vision/serve-1"].request["cpu"] == pytest.approx(3.5)
    nb = jobs["nlp/notebook"]
    assert nb.qos_class == "BestEffort" and nb.request == {}
    big = jobs["nlp/big-train"]
    assert big.state == "pending" and big.reason == PENDING_MESSAGE
    assert big.request["gpu"] == 16 and big.nodes == [] and big.start_time is None
    assert "0/8 nodes are available: 8 Insufficient nvidia.com/gpu." in (big.reason or "")
    assert jobs["nlp/done-ok"].state == "completed"
    assert jobs["nlp/done-fail"].state == "failed"


def test_kueue_workloads_replace_their_pods(snap: Snapshot) -> None:
    jobs = {j.id: j for j in snap.jobs}
    assert not any(j.startswith("ml-research/train-") for j in jobs)
    train = jobs["ml-research/job-train-3b1a2"]
    assert train.state == "running" and train.partition == "cq-ml-research"
    assert train.request["gpu"] == 40 and train.nodes_requested == 5
    assert train.nodes == ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05"]
    assert train.priority == 1000 and train.qos == "high"
    pend = jobs["nlp/job-big-5c2d1"]
    assert pend.state == "pending" and "insufficient unused quota" in (pend.reason or "")
    assert pend.partition == "cq-nlp"  # via the namespace's LocalQueue
    ev = jobs["vision/job-eval-9f8e7"]
    assert ev.state == "preempted" and "reclamation within the cohort" in (ev.reason or "")
    assert jobs["vision/job-old-1a2b3"].state == "completed"


def test_a_workload_is_charged_to_its_cluster_queue(snap: Snapshot) -> None:
    # Kueue checks quota, borrowing and preemption per ClusterQueue: the core must too.
    jobs = {j.id: j for j in snap.jobs}
    assert jobs["ml-research/job-train-3b1a2"].team == "cq-ml-research"
    assert jobs["nlp/job-big-5c2d1"].team == "cq-nlp"  # pending: via its LocalQueue
    teams = {t.name: t for t in snap.teams}
    # Every GPU the queue's status counts is held by a workload this reader lists.
    assert teams["cq-ml-research"].usage["gpu"] == 40.0
    assert teams["cq-ml-research"].unseen_usage == {}


def test_namespace_flag_shows_those_namespaces_and_the_rest_of_a_queue_as_unseen(
        kube_api: KubeAPIServer, tmp_path: Path) -> None:  # noqa: F811
    col = make(kube_api, tmp_path, namespaces=("nlp",))
    try:
        snap = col.collect()
    finally:
        col.close()
    assert snap.jobs and {j.id.split("/")[0] for j in snap.jobs} == {"nlp"}
    teams = {t.name: t for t in snap.teams}
    assert "ml-research" not in teams and "nlp" in teams
    # ml-research's 40 GPUs still count against its ClusterQueue, held by workloads
    # this reader no longer lists.
    ml = teams["cq-ml-research"]
    assert ml.usage["gpu"] == 40.0 and ml.unseen_usage["gpu"] == 40.0


def test_usage_the_status_states_beyond_the_listed_workloads_is_unseen() -> None:
    from quotatop.collectors.k8s.kueue import fill_unseen_usage
    from quotatop.collectors.model import Job, Team

    cq = Team(name="cq", usage={"gpu": 24.0, "gpu:h100": 24.0, "cpu": 10.0})
    ns = Team(name="ns", usage={"gpu": 99.0})  # a ResourceQuota's count: not Kueue's
    jobs = [Job(id="a", team="cq", state="running", request={"gpu": 16.0, "gpu:h100": 16.0,
                                                              "cpu": 10.0}),
            Job(id="b", team="cq", state="pending", request={"gpu": 8.0})]
    fill_unseen_usage([cq, ns], jobs, {"cq"})
    assert cq.unseen_usage == {"gpu": 8.0, "gpu:h100": 8.0}
    assert any("8 gpu" in n for n in cq.source_notes)
    assert ns.unseen_usage == {}


def test_cluster_queues_in_a_cohort_with_borrowing(snap: Snapshot) -> None:
    teams = {t.name: t for t in snap.teams}
    ml = teams["cq-ml-research"]
    assert ml.cohort == "ai" and ml.weight == 2.0
    assert ml.guarantee is not None and ml.guarantee["gpu"] == 32
    assert ml.guarantee["gpu:NVIDIA-H100-80GB-HBM3"] == 32
    assert ml.max == {"gpu": 48.0, "gpu:NVIDIA-H100-80GB-HBM3": 48.0}  # cpu/memory unlimited
    assert ml.lendable is None  # no lendingLimit: all unused guarantee may be lent
    assert ml.usage["gpu"] == 40.0
    assert "borrowing 8 gpu from cohort ai" in ml.source_notes
    assert ml.borrowed == {"gpu": 8.0, "gpu:NVIDIA-H100-80GB-HBM3": 8.0}
    assert teams["cq-nlp"].borrowed == {}
    vision = teams["cq-vision"]
    assert vision.max is None  # no borrowingLimit anywhere: may borrow without bound
    assert vision.guarantee is not None and vision.guarantee["gpu"] == 16
    assert vision.lendable is not None and vision.lendable["gpu"] == 12  # 4 (h100) + all a100
    nlp = teams["cq-nlp"]
    assert nlp.max is not None and nlp.max["gpu"] == 16  # borrowingLimit 0
    assert nlp.lendable is not None and nlp.lendable["gpu"] == 8
    assert teams["ml-research"].parent == "cq-ml-research"
    assert teams["ai"].parent == "org"


def test_nodes_and_priority_classes(snap: Snapshot) -> None:
    nodes = {n.name: n for n in snap.nodes}
    g1 = nodes["gpu01"]
    assert g1.capacity["gpu"] == 8 and g1.capacity["gpu:NVIDIA-H100-80GB-HBM3"] == 8
    assert g1.allocatable["cpu"] == 63.5 and g1.allocatable["memory"] == 1024 * 1024.0
    assert g1.capacity["cpu"] == 64.0 and g1.capacity["memory"] == 1056784.0  # status.capacity
    assert g1.allocatable["gpu:NVIDIA-H100-80GB-HBM3"] == 8
    assert g1.allocated["gpu"] == 8 and g1.state == "allocated"
    assert "nvidia.com/gpu=present:NoSchedule" in g1.taints
    assert nodes["gpu07"].state == "drain"
    assert nodes["gpu08"].state == "down" and "stopped posting" in (nodes["gpu08"].reason or "")
    assert "gpu" not in nodes["cpu01"].capacity and nodes["cpu01"].state == "mixed"
    qos = {q.name: q for q in snap.qos}
    assert qos["high"].priority == 1000 and qos["high"].preempts == ["normal", "opportunistic"]
    assert qos["opportunistic"].preempt_mode == "off" and qos["opportunistic"].preempts == []


def test_snapshot_round_trips_and_hides_the_token(snap: Snapshot) -> None:
    text = to_json(snap).decode()
    assert TOKEN not in text
    assert all(s.ok for s in snap.status), [(s.name, s.error) for s in snap.status if not s.ok]


def test_watch_not_relist_and_only_reads(api: KubeAPIServer, tmp_path: Path) -> None:
    col = make(api, tmp_path)
    try:
        col.collect()
        lists = col.requests_summary()
        assert set(lists.values()) == {1}
        api.patch("pods", "nlp", "notebook", lambda o: o["status"].update(phase="Succeeded"))
        api.delete("pods", "nlp", "done-fail")
        wait_for(
            lambda: {j.id: j.state for j in col.collect().jobs}.get("nlp/notebook") == "completed",
            what="the watch to deliver MODIFIED",
        )
        s = col.collect()
        assert "nlp/done-fail" not in {j.id for j in s.jobs}
        for _ in range(5):
            col.collect()
        assert col.requests_summary() == lists  # refreshes never relisted
        # A watch ending at its timeout is resumed from the last resourceVersion, not relisted.
        wait_for(lambda: col.reflectors["pods"].watches >= 2, timeout=10, what="a rewatch")
        assert col.reflectors["pods"].lists == 1
    finally:
        col.close()
    methods = {m for m, _, _ in api.requests}
    assert methods == {"GET"}
    verbs = {("watch=true" in q or "watch=True" in q) for _, _, q in api.requests}
    assert verbs == {True, False}
    assert not any(p.endswith(("/binding", "/eviction", "/status")) for _, p, _ in api.requests)


def test_410_gone_relists(api: KubeAPIServer, tmp_path: Path) -> None:
    col = make(api, tmp_path)
    try:
        col.collect()
        r = col.reflectors["pods"]
        assert r.lists == 1
        # While the client is away, the cluster moves on and etcd compacts: the watch
        # resumes from a resourceVersion the history no longer holds and gets 410 Expired.
        api.pause()
        api.patch("nodes", "", "cpu01", lambda o: o["metadata"]["labels"].update(y="1"))
        api.compact()
        api.resume()
        wait_for(lambda: r.lists >= 2, what="a relist after 410")
        api.patch("pods", "nlp", "notebook", lambda o: o["metadata"]["labels"].update(x="1"))
        wait_for(
            lambda: any((p["metadata"].get("labels") or {}).get("x") == "1" for p in r.items()),
            what="events after the relist",
        )
        s = col.collect()
        assert not s.stale and all(st.ok for st in s.status)
    finally:
        col.close()


def test_lost_connection_marks_stale_then_recovers(api: KubeAPIServer, tmp_path: Path) -> None:
    col = make(api, tmp_path)
    try:
        good = col.collect()
        api.pause()
        wait_for(lambda: col.collect().stale, what="stale after the API server went away")
        s = col.collect()
        assert s.stale_reason is not None and "\n" not in s.stale_reason
        assert f"the API server at {api.url}" in s.stale_reason
        assert "reconnecting (attempt" in s.stale_reason
        assert {j.id for j in s.jobs} == {j.id for j in good.jobs}  # last good data stays
        api.resume()
        wait_for(lambda: not col.collect().stale, timeout=15, what="recovery after resume")
    finally:
        col.close()


def test_rbac_denial_on_one_resource(tmp_path: Path) -> None:
    server = KubeAPIServer()
    server.deny("resourcequotas")
    server.start()
    seed(server)
    col = make(server, tmp_path)
    try:
        s = col.collect()
    finally:
        col.close()
        server.stop()
    st = {x.name: x for x in s.status}
    assert not st["k8s:resourcequotas"].ok
    err = st["k8s:resourcequotas"].error or ""
    assert err.startswith("RBAC denies resourcequotas (403)") and "forbidden" in err
    assert all(x.ok for n, x in st.items() if n != "k8s:resourcequotas")
    assert not s.stale  # the rest is fresh
    assert any(w.startswith("resourcequotas not shown") for w in s.warnings)
    assert {j.id for j in s.jobs} and {n.name for n in s.nodes}
    assert {t.name: t for t in s.teams}["ml-research"].max is None


def test_bad_token_is_one_line_and_never_shown(api: KubeAPIServer, tmp_path: Path) -> None:
    bad = "expired-token-abcdef-123456"
    col = make(api, tmp_path, token=bad)
    try:
        s = col.collect()
    finally:
        col.close()
    assert s.stale
    assert s.stale_reason is not None and "401" in s.stale_reason and "\n" not in s.stale_reason
    text = to_json(s).decode() + repr(col) + " ".join(str(x.error) for x in s.status)
    assert bad not in text and TOKEN not in text


def test_missing_and_broken_kubeconfig(tmp_path: Path) -> None:
    col = KubernetesCollector(KubernetesConfig(kubeconfig=str(tmp_path / "nope")))
    s = col.collect()
    assert s.stale and s.stale_reason == f"k8s: kubeconfig {tmp_path / 'nope'} not found"
    broken = tmp_path / "broken"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n")
    s = KubernetesCollector(KubernetesConfig(kubeconfig=str(broken))).collect()
    assert s.stale and s.stale_reason is not None and "\n" not in s.stale_reason
    assert s.stale_reason.startswith(f"k8s: kubeconfig {broken}")


def test_unknown_kueue_version_is_reported(tmp_path: Path) -> None:
    server = KubeAPIServer(kueue_versions=("v9",)).start()
    seed(server)
    col = make(server, tmp_path)
    try:
        s = col.collect()
    finally:
        col.close()
        server.stop()
    assert not any(t.name.startswith("cq-") for t in s.teams)
    assert any("quotatop understands v1beta2, v1beta1" in w for w in s.warnings)
    assert {j.id for j in s.jobs} >= {"ml-research/train-0"}  # pods are jobs again


def test_module_import_pulls_in_neither_client_nor_textual() -> None:
    code = (
        "import sys, quotatop.collectors.k8s.collector\n"
        "bad = [m for m in ('kubernetes', 'textual', 'urllib3') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)
