"""Kueue's visibility API (pending positions) and Kueue v1beta2 beside v1beta1, through the
official client against tests/harness/kube_apiserver."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import kueue_api
from harness.kube_apiserver import KubeAPIServer, seed, seed_objects
from quotatop.collectors.k8s.collector import KubernetesCollector, KubernetesConfig
from quotatop.collectors.k8s.kueue import cluster_queue_to_team, workload_to_job
from quotatop.collectors.model import Snapshot

pytest.importorskip("kubernetes")

TOKEN = "test-token-for-quotatop"
VIS = "/apis/visibility.kueue.x-k8s.io"


@pytest.fixture
def server_factory() -> Iterator:  # type: ignore[type-arg]
    started: list[KubeAPIServer] = []

    def make(**kw: object) -> KubeAPIServer:
        s = KubeAPIServer(**kw).start()  # type: ignore[arg-type]
        seed(s)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()


def collect(
    server: KubeAPIServer, tmp_path: Path, *, twice: bool = False, **kw: object
) -> Snapshot:
    kc = server.write_kubeconfig(tmp_path / "kubeconfig", TOKEN)
    opts: dict[str, object] = {"kubeconfig": str(kc), "watch_timeout": 3.0, "sync_timeout": 5.0}
    opts.update(kw)
    col = KubernetesCollector(KubernetesConfig(**opts))  # type: ignore[arg-type]
    try:
        snap = col.collect()
        if twice:
            snap = col.collect()
        return snap
    finally:
        col.close()


def get(server: KubeAPIServer, path: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    req = urllib.request.Request(server.url + path, headers={"Authorization": f"Bearer {TOKEN}"})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def jobs(snap: Snapshot) -> dict[str, object]:
    return {j.id: j for j in snap.jobs}


# --- the test server speaks the visibility API as Kueue does -------------------------------


def test_visibility_summary_shape_and_paging(server_factory) -> None:  # type: ignore[no-untyped-def]
    s = server_factory()
    code, body = get(s, f"{VIS}/v1beta1/clusterqueues/cq-nlp/pendingworkloads")
    assert code == 200
    assert body["kind"] == "PendingWorkloadsSummary"
    assert body["apiVersion"] == "visibility.kueue.x-k8s.io/v1beta1"
    names = [
        (i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"])
        for i in body["items"]
    ]
    assert names == [("job-big-5c2d1", 0, 0), ("job-small-7d3e4", 1, 1)]  # priority 100 > 50
    first = body["items"][0]
    assert first["priority"] == 100 and first["localQueueName"] == "default"
    assert first["metadata"]["namespace"] == "nlp" and "creationTimestamp" in first["metadata"]
    code, page = get(s, f"{VIS}/v1beta1/clusterqueues/cq-nlp/pendingworkloads?offset=1&limit=1")
    assert [i["positionInClusterQueue"] for i in page["items"]] == [1]
    code, lq = get(s, f"{VIS}/v1beta1/namespaces/nlp/localqueues/default/pendingworkloads")
    assert code == 200 and [i["positionInLocalQueue"] for i in lq["items"]] == [0, 1]
    # An admitted workload holds quota: not pending, so cq-ml-research's queue is empty.
    code, ml = get(s, f"{VIS}/v1beta1/clusterqueues/cq-ml-research/pendingworkloads")
    assert code == 200 and ml["items"] == []
    code, missing = get(s, f"{VIS}/v1beta1/clusterqueues/nope/pendingworkloads")
    assert (
        code == 404 and missing["kind"] == "Status" and missing["details"]["kind"] == "clusterqueue"
    )
    code, disc = get(s, f"{VIS}/v1beta1")
    assert {r["name"] for r in disc["resources"]} >= {
        "clusterqueues/pendingworkloads",
        "localqueues/pendingworkloads",
    }


def test_visibility_off_is_not_served(server_factory) -> None:  # type: ignore[no-untyped-def]
    s = server_factory(visibility=False)
    code, body = get(s, f"{VIS}/v1beta1/clusterqueues/cq-nlp/pendingworkloads")
    assert code == 404 and body["reason"] == "NotFound"
    _, groups = get(s, "/apis")
    assert "visibility.kueue.x-k8s.io" not in {g["name"] for g in groups["groups"]}


# --- the collector maps positions onto jobs -----------------------------------------------


def test_positions_land_on_pending_workloads(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    snap = collect(server_factory(), tmp_path)
    js = jobs(snap)
    big, small = js["nlp/job-big-5c2d1"], js["nlp/job-small-7d3e4"]
    assert (big.queue_position, big.local_queue_position) == (0, 0)  # type: ignore[attr-defined]
    assert (small.queue_position, small.local_queue_position) == (1, 1)  # type: ignore[attr-defined]
    assert js["ml-research/job-train-3b1a2"].queue_position is None  # type: ignore[attr-defined]
    assert js["nlp/big-train"].queue_position is None  # a plain pod: no Kueue queue
    vis = [st for st in snap.status if st.name == "k8s:visibility"]
    assert len(vis) == 1 and vis[0].ok and vis[0].error is None


def test_visibility_not_served_is_a_note_not_an_error(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    snap = collect(server_factory(visibility=False), tmp_path)
    assert not snap.stale and all(st.ok for st in snap.status)
    assert "queue positions not shown" in snap.meta["k8s:visibility"]
    assert all(j.queue_position is None for j in snap.jobs)
    assert jobs(snap)["nlp/job-big-5c2d1"].state == "pending"  # the rest is intact


def test_visibility_listed_but_404_is_a_note(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    s = server_factory()
    kc = s.write_kubeconfig(tmp_path / "kc", TOKEN)
    cfg = KubernetesConfig(kubeconfig=str(kc), watch_timeout=3.0, visibility_interval=0.0)
    col = KubernetesCollector(cfg)
    try:
        first = col.collect()
        s.visibility_versions = ()  # Kueue's visibility server goes away after discovery
        later = col.collect()
    finally:
        col.close()
    assert jobs(first)["nlp/job-big-5c2d1"].queue_position == 0
    assert all(st.ok for st in later.status) and not later.stale
    assert "(404)" in later.meta["k8s:visibility"]
    assert all(j.queue_position is None for j in later.jobs)


def test_rbac_on_cluster_queue_falls_back_to_local_queues(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    s = server_factory()
    s.deny("clusterqueues/pendingworkloads")
    snap = collect(s, tmp_path)
    assert jobs(snap)["nlp/job-small-7d3e4"].queue_position == 1
    assert all(st.ok for st in snap.status)
    s.deny("localqueues/pendingworkloads")
    snap = collect(s, tmp_path)
    (vis,) = [st for st in snap.status if st.name == "k8s:visibility"]
    assert not vis.ok and "RBAC denies pending workloads of " in (vis.error or "")
    assert "(and 5 more queue(s))" in (vis.error or "")  # 3 ClusterQueues + 3 LocalQueues
    assert 'cannot get resource "clusterqueues/pendingworkloads"' in (vis.error or "")
    assert not snap.stale and jobs(snap)["nlp/job-big-5c2d1"].state == "pending"


def test_visibility_is_polled_at_its_interval_with_gets_only(
    server_factory, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    s = server_factory()
    collect(s, tmp_path, twice=True, visibility_interval=600.0)
    vis = [r for r in s.requests if r[1].startswith(VIS + "/")]
    cq_calls = [r for r in vis if r[1].endswith("/pendingworkloads")]
    assert len(cq_calls) == 3  # one round over three ClusterQueues, not two
    assert all(method == "GET" for method, _, _ in s.requests)


def test_visibility_can_be_switched_off(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    s = server_factory()
    snap = collect(s, tmp_path, visibility=False)
    assert not any(r[1].startswith(VIS) for r in s.requests)
    assert "k8s:visibility" not in snap.meta and all(j.queue_position is None for j in snap.jobs)


# --- Kueue v1beta2 ------------------------------------------------------------------------


def test_conversion_renames_the_fields_that_differ() -> None:
    objs = {
        o["metadata"]["name"]: o
        for o in seed_objects()
        if o["kind"] in ("ClusterQueue", "Workload")
    }
    cq2 = kueue_api.convert(objs["cq-nlp"], "v1beta2")
    assert cq2["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert cq2["spec"]["cohortName"] == "ai" and "cohort" not in cq2["spec"]
    wl2 = kueue_api.convert(objs["job-train-3b1a2"], "v1beta2")
    assert wl2["spec"]["priorityClassRef"] == {
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "name": "high",
    }
    assert "priorityClassName" not in wl2["spec"] and "priorityClassSource" not in wl2["spec"]
    assert kueue_api.convert(wl2, "v1beta1")["spec"] == objs["job-train-3b1a2"]["spec"]
    assert kueue_api.convert(cq2, "v1beta1") == objs["cq-nlp"]


def test_v1beta2_mapping_reads_the_new_fields() -> None:
    objs = {
        o["metadata"]["name"]: o
        for o in seed_objects()
        if o["kind"] in ("ClusterQueue", "Workload")
    }
    team = cluster_queue_to_team(kueue_api.convert(objs["cq-ml-research"], "v1beta2"), {}, [])
    assert team.cohort == "ai" and team.max is not None and team.max["gpu"] == 48
    job = workload_to_job(kueue_api.convert(objs["job-train-3b1a2"], "v1beta2"), "ml", None)
    assert job.qos == "high" and job.priority == 1000
    wpc = kueue_api.convert(objs["job-train-3b1a2"], "v1beta2")
    wpc["spec"]["priorityClassRef"] = {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "batch-low",
    }
    assert workload_to_job(wpc, "ml", None).qos == "batch-low"


def test_kueue_served_only_at_v1beta2(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    s = server_factory(kueue_versions=("v1beta2",))
    code, raw = get(s, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq-ml-research")
    assert code == 200 and raw["spec"]["cohortName"] == "ai" and "cohort" not in raw["spec"]
    snap = collect(s, tmp_path)
    assert snap.meta["kueue"] == "kueue.x-k8s.io/v1beta2" and not snap.warnings
    teams = {t.name: t for t in snap.teams}
    assert teams["cq-ml-research"].cohort == "ai"
    assert teams["cq-ml-research"].borrowed["gpu"] == 8
    assert teams["ai"].parent == "org"  # the Cohort, read at v1beta2
    js = jobs(snap)
    assert js["ml-research/job-train-3b1a2"].qos == "high"  # from priorityClassRef
    assert js["nlp/job-small-7d3e4"].queue_position == 1  # visibility v1beta2
    assert any("/apis/kueue.x-k8s.io/v1beta2/cohorts" in r[1] for r in s.requests)
    assert any(r[1].startswith(VIS + "/v1beta2/") for r in s.requests)


def test_both_versions_served_prefers_v1beta2_with_the_same_result(
    server_factory, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    both = collect(server_factory(kueue_versions=("v1beta1", "v1beta2")), tmp_path)
    old = collect(server_factory(kueue_versions=("v1beta1",)), tmp_path)
    assert both.meta["kueue"].endswith("/v1beta2") and old.meta["kueue"].endswith("/v1beta1")

    def essence(snap: Snapshot) -> object:
        return (
            sorted(
                (t.name, t.cohort, t.guarantee, t.max, t.borrowed)
                for t in snap.teams
                if t.name.startswith("cq-")
            ),
            sorted((j.id, j.state, j.qos, j.queue_position) for j in snap.jobs),
        )

    assert essence(both) == essence(old)


def test_predictions_start_from_the_stated_positions(server_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The core orders cq-nlp's queue by the positions the visibility API states: the
    order follows them, and when the stated places are swapped, so is the order. (The
    snapshot's implicit cohort "org", named by cohort "ai" with no object of its own,
    is a team too: the core refuses a parent it does not know.)"""
    import msgspec

    from quotatop import scheduler_core
    from quotatop.scheduler_core.site import site_policy

    snap = collect(server_factory(), tmp_path)
    # The seeded a100 nodes are drained or down; back up, they can run cq-nlp's queue.
    snap = msgspec.structs.replace(snap, nodes=[
        msgspec.structs.replace(n, state="idle") if n.state in ("drain", "down") else n
        for n in snap.nodes])
    pos = {j.id: j.queue_position for j in snap.jobs
           if j.queue_position is not None and j.id.startswith("nlp/")}
    assert pos == {"nlp/job-big-5c2d1": 0, "nlp/job-small-7d3e4": 1}

    def first(s: Snapshot) -> list[str]:
        """The cq-nlp jobs that start now: 16 GPUs of quota hold one of them, not both."""
        rows = scheduler_core.predict(s, site_policy(s), 7 * 86400)
        return [p.job_id for p in rows if p.job_id in pos and p.state == "starts_now"]

    assert first(snap) == ["nlp/job-big-5c2d1"]
    swapped = msgspec.structs.replace(snap, jobs=[
        msgspec.structs.replace(j, queue_position=1 - pos[j.id]) if j.id in pos else j
        for j in snap.jobs])
    assert first(swapped) == ["nlp/job-small-7d3e4"]
