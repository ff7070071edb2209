"""What the Kueue mapping tells the core beyond quotas: a ClusterQueue's preemption
policy (spec.preemption, with Kueue's defaults), that its quota names every resource it
admits, a root Cohort's own quota lent to its queues, and the pending Workloads Kueue
admits to no queue (no LocalQueue, no ClusterQueue, a namespace its selector leaves out)."""

from __future__ import annotations

from typing import Any

from quotatop.collectors.k8s.config import KubernetesConfig
from quotatop.collectors.k8s.kueue import cluster_queue_to_team, cohort_to_team
from quotatop.collectors.k8s.mapping import localqueue_map, selector_matches, to_jobs
from quotatop.collectors.model import TeamPreemption


def cq(name: str, **spec: Any) -> dict[str, Any]:
    groups = [{"coveredResources": ["cpu"], "flavors": [
        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]
    return {"metadata": {"name": name}, "spec": {"resourceGroups": groups, **spec}}


def test_preemption_policy_is_read_with_kueues_defaults() -> None:
    team = cluster_queue_to_team(cq("a", cohort="c", preemption={
        "withinClusterQueue": "LowerOrNewerEqualPriority", "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100}}), {}, [])
    assert team.preemption == TeamPreemption(
        within="lower_or_newer_equal", reclaim="any", borrow_within="lower_priority",
        borrow_max_priority=100.0)
    assert team.quota_exhaustive
    # No spec.preemption: Kueue's API defaults, Never for both.
    bare = cluster_queue_to_team(cq("b"), {}, [])
    assert bare.preemption == TeamPreemption(within="never", reclaim="never")
    odd = cluster_queue_to_team(cq("x", preemption={"withinClusterQueue": "Sometimes"}), {}, [])
    assert odd.preemption.within == "never"
    assert any("Sometimes" in n for n in odd.source_notes)


def test_a_root_cohorts_own_quota_is_lent_in_it() -> None:
    quota = {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
        {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "10"}]}]}]}
    root = cohort_to_team({"metadata": {"name": "A"}, "spec": quota})
    assert root.cohort == "A" and root.guarantee == {"cpu": 10.0}
    child = cohort_to_team({"metadata": {"name": "B"}, "spec": {**quota, "parentName": "A"}})
    assert child.cohort is None and child.parent == "A"


def test_selector_matches_labels_and_expressions() -> None:
    sel = {"matchLabels": {"team": "x"},
           "matchExpressions": [{"key": "dep", "operator": "In", "values": ["eng"]},
                                {"key": "tier", "operator": "DoesNotExist"}]}
    assert selector_matches(sel, {"team": "x", "dep": "eng"})
    assert not selector_matches(sel, {"team": "x", "dep": "sales"})
    assert not selector_matches(sel, {"team": "x", "dep": "eng", "tier": "1"})
    assert selector_matches({}, {})


def wl(name: str, ns: str, queue: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, "uid": name},
            "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1, "template": {
                "spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}}}]},
            "status": {}}


def test_workloads_kueue_admits_to_no_queue_are_held() -> None:
    sel = {"matchExpressions": [{"key": "dep", "operator": "In", "values": ["eng"]}]}
    listed = {
        "namespaces": [{"metadata": {"name": "eng", "labels": {"dep": "eng"}}},
                       {"metadata": {"name": "sales", "labels": {"dep": "sales"}}}],
        "clusterqueues": [cq("eng-q", namespaceSelector=sel)],
        "localqueues": [{"metadata": {"name": n, "namespace": ns}, "spec": {"clusterQueue": c}}
                        for ns, n, c in [("eng", "main", "eng-q"), ("sales", "blocked", "eng-q"),
                                         ("sales", "gone", "no-such-cq")]],
        "workloads": [wl("ok", "eng", "main"), wl("nolq", "sales", "missing"),
                      wl("nocq", "sales", "gone"), wl("sel", "sales", "blocked")],
    }
    ns_team = {"eng": "eng", "sales": "sales"}
    jobs = {j.name: j for j in to_jobs(listed, KubernetesConfig(), ns_team,
                                       localqueue_map(listed))}
    assert jobs["ok"].held is None and jobs["ok"].team == "eng-q"
    assert jobs["nolq"].held == (
        "LocalQueue sales/missing does not exist: Kueue admits it to no queue")
    assert jobs["nocq"].held.startswith("ClusterQueue no-such-cq does not exist")
    assert jobs["sel"].held.startswith("namespace sales is not selected by ClusterQueue eng-q")
    # Queues that could not be listed mark nothing.
    unlisted = to_jobs(listed, KubernetesConfig(), ns_team, {}, queues_listed=False)
    assert all(j.held is None for j in unlisted)
