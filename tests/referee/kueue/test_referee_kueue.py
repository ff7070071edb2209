"""Kueue's own scheduler and preemption test cases, held against the collector and the core.

The cases (``*.toml`` beside this file) restate kubernetes-sigs/kueue table-driven tests
as facts, each naming the upstream test function, case and the commit read; no upstream
code. Each case is turned into the objects a Kubernetes API server with Kueue would
serve (ResourceFlavors, ClusterQueues, LocalQueues, Workloads with their pods, Nodes,
PriorityClasses), read by the Kubernetes collector's own ``_build`` (``collectors/k8s``),
and predicted by the core (``scheduler_core.predict`` with the policy the collector's
snapshot selects, ``site_policy``). Asserted: the set of pending workloads admitted in
the first cycle, the flavor each gets (see FLAVORS below), which ClusterQueues borrow
after it, and the set of workloads preempted for them.

Kueue checks quota only; its tests have no nodes. The cluster a case runs on is stated
by the file (``nodes``): ``"pool"`` is one node per cohort holding exactly the cohort's
nominal quota (Kueue's premise that the quota is the capacity, so that a cohort whose
quota is lent out is also physically full); ``"ample"`` is nodes that never bind, so
that only quota decides.

A case whose outcome rests on a feature the collector or the core does not model is
listed under ``status = "not_modelled"`` with the reason, and is not run; one the core
gets wrong on a modelled feature is ``status = "xfail"`` with the reason, and runs as
a strict xfail (a fix makes it fail until the mark is removed). ``test_counts`` prints
the counts.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from quotatop.collectors.k8s.collector import KubernetesCollector
from quotatop.collectors.k8s.config import KubernetesConfig
from quotatop.collectors.k8s.quantity import parse_quantity, to_model_units
from quotatop.collectors.model import Snapshot
from quotatop.scheduler_core import predict
from quotatop.scheduler_core.site import site_policy

HERE = Path(__file__).parent
FILES = sorted(HERE.glob("*.toml"))
NOW = 1_800_000_000.0
NS = "default"
STATUSES = ("run", "xfail", "not_modelled")
# FLAVORS: the core assigns no flavor to cpu or memory (a ClusterQueue's flavors of one
# resource are summed into one quota, docs/core.md). A case is run only where the flavor
# Kueue assigns is the only one its ClusterQueue offers for that resource; the flavor
# asserted is then that one, and the workload must be placed on that flavor's nodes.


def _load() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for path in FILES:
        doc = tomllib.loads(path.read_text())
        doc["_file"] = path.name
        for case in doc.get("case", []):
            out.append((doc, case))
    return out


CASES = _load()


def _id(doc: dict[str, Any], case: dict[str, Any]) -> str:
    commit = case.get("commit", doc["commit"])
    return f"{commit[:8]}:{case.get('test', doc['test'])}/{case['name']}"


def _params() -> list[Any]:
    out = []
    for doc, case in CASES:
        status = case.get("status", "run")
        marks: list[Any] = []
        if status == "xfail":
            marks.append(pytest.mark.xfail(reason=case["reason"], strict=True))
        elif status == "not_modelled":
            marks.append(pytest.mark.skip(reason=f"not modelled: {case['reason']}"))
        out.append(pytest.param(doc, case, id=_id(doc, case), marks=marks))
    return out


# --- the objects ------------------------------------------------------------------------


def _cq_object(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A ClusterQueue as the API serves it, from the file's compact quota table:
    ``quotas = [[flavor, resource, nominal, borrowingLimit?, lendingLimit?], ...]`` per
    resource group (``groups``), ``cohort``, ``preemption``, ``namespace_selector``
    (a LabelSelector; {} selects every namespace, as Kueue's test wrapper sets it)."""
    groups = []
    for group in spec["groups"]:
        flavors: dict[str, list[dict[str, Any]]] = {}
        covered: list[str] = []
        for row in group:
            flavor, resource, nominal = row[0], row[1], row[2]
            res: dict[str, Any] = {"name": resource, "nominalQuota": nominal}
            if len(row) > 3 and row[3] != "":
                res["borrowingLimit"] = row[3]
            if len(row) > 4 and row[4] != "":
                res["lendingLimit"] = row[4]
            flavors.setdefault(flavor, []).append(res)
            if resource not in covered:
                covered.append(resource)
        groups.append({
            "coveredResources": covered,
            "flavors": [{"name": f, "resources": r} for f, r in flavors.items()],
        })
    body: dict[str, Any] = {"resourceGroups": groups,
                            "namespaceSelector": spec.get("namespace_selector", {})}
    if spec.get("cohort"):
        body["cohort"] = spec["cohort"]
    if spec.get("preemption"):
        body["preemption"] = spec["preemption"]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
        "metadata": {"name": name}, "spec": body, "status": {},
    }


def _included(doc: dict[str, Any], case: dict[str, Any]) -> list[str]:
    """The ClusterQueues of the case: those its workloads, its LocalQueues and its
    ``queues`` name, with every other member of their cohorts (a cohort lends only among
    its members)."""
    cqs = {**doc.get("cluster_queues", {}), **case.get("cluster_queues", {})}
    named = set(case.get("queues", []))
    for wl in [*case.get("admitted", []), *case.get("pending", [])]:
        if wl.get("cq") in cqs:
            named.add(wl["cq"])
    for _ns, _lq, cq in case.get("local_queues", []):
        if cq in cqs:
            named.add(cq)
    cohorts = {cqs[n].get("cohort") for n in named if cqs[n].get("cohort")}
    return sorted(n for n, s in cqs.items() if n in named or s.get("cohort") in cohorts)


def _queues(doc: dict[str, Any], case: dict[str, Any]) -> dict[str, dict[str, Any]]:
    cqs = {**doc.get("cluster_queues", {}), **case.get("cluster_queues", {})}
    return {n: cqs[n] for n in _included(doc, case)}


def _local_queues(doc: dict[str, Any], case: dict[str, Any],
                  auto: bool = True) -> list[tuple[str, str, str]]:
    """(namespace, LocalQueue, ClusterQueue): those the file and case state, and for a
    workload naming no queue, ``lq-<its ClusterQueue>`` in its namespace."""
    out = [tuple(x) for x in [*doc.get("local_queues", []), *case.get("local_queues", [])]]
    if auto:
        for wl in [*case.get("admitted", []), *case.get("pending", [])]:
            if "queue" not in wl and wl.get("cq"):
                out.append((wl.get("ns", NS), f"lq-{wl['cq']}", wl["cq"]))
    return sorted(set(out))  # type: ignore[arg-type]


def _key(job_id: str) -> str:
    """A workload's name in the case: ``name`` in the default namespace, else ``ns/name``."""
    ns, _, name = job_id.partition("/")
    return name if ns == NS else job_id


def _pods(wl: dict[str, Any]) -> list[dict[str, Any]]:
    sets = wl.get("podsets") or [{"name": "main", "count": wl.get("count", 1),
                                  "requests": wl["requests"]}]
    return sets


def _template(requests: dict[str, str]) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "resources": {"requests": dict(requests)}}]}}


def _workload(wl: dict[str, Any], admitted: bool, index: int) -> dict[str, Any]:
    name, ns = wl["name"], wl.get("ns", NS)
    created = NOW - 1000 + index + float(wl.get("created", 0))
    spec: dict[str, Any] = {
        "queueName": wl.get("queue") or f"lq-{wl['cq']}",
        "podSets": [{"name": ps["name"], "count": ps["count"],
                     "template": _template(ps["requests"])} for ps in _pods(wl)],
        "priority": int(wl.get("priority", 0)),
        "priorityClassName": _pc_name(int(wl.get("priority", 0))),
        "priorityClassSource": "scheduling.k8s.io/priorityclass",
    }
    obj: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
        "metadata": {"name": name, "namespace": ns, "uid": f"wl-{ns}-{name}",
                     "creationTimestamp": _ts(created),
                     "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job",
                                          "name": name, "uid": f"job-{ns}-{name}",
                                          "controller": True}]},
        "spec": spec,
        "status": {},
    }
    if admitted:
        at = _ts(NOW - 500 + index + float(wl.get("admitted_at", 0)))
        obj["status"] = {
            "admission": {
                "clusterQueue": wl["cq"],
                "podSetAssignments": [{
                    "name": ps["name"], "count": ps["count"],
                    "flavors": {r: wl["flavors"][r] for r in ps["requests"]},
                    "resourceUsage": {r: _times(v, ps["count"])
                                      for r, v in ps["requests"].items()},
                } for ps in _pods(wl)],
            },
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                 "lastTransitionTime": at},
                {"type": "Admitted", "status": "True", "reason": "Admitted",
                 "lastTransitionTime": at},
            ],
        }
    return obj


def _times(value: str, count: int) -> str:
    return value if count == 1 else _text(_base(value) * count)


def _pc_name(priority: int) -> str:
    return f"prio-m{-priority}" if priority < 0 else f"prio-{priority}"


def _ts(t: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _node(name: str, capacity: dict[str, str], labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {},
        "status": {"capacity": {**capacity, "pods": "110"},
                   "allocatable": {**capacity, "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


AMPLE = {"cpu": "100000", "memory": "1000Ti", "nvidia.com/gpu": "10000"}


def _nodes(doc: dict[str, Any], case: dict[str, Any],
           queues: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The nodes, and which node each cohort's (or lone ClusterQueue's) pool is."""
    mode = case.get("nodes", doc["nodes"])
    pools: dict[str, list[str]] = {}
    for name, spec in queues.items():
        pools.setdefault(spec.get("cohort") or name, []).append(name)
    nodes: list[dict[str, Any]] = []
    pool_of: dict[str, str] = {}
    if mode == "ample":
        wls = [*case.get("admitted", []), *case.get("pending", [])]
        most = sum(ps["count"] for wl in wls for ps in _pods(wl)) or 1
        for i in range(most):
            nodes.append(_node(f"n{i}", AMPLE, {}))
        return nodes, pool_of
    assert mode == "pool", mode
    # The flavors carry no node labels, so every queue may use every node: one pool only,
    # or a queue could run on another cohort's capacity.
    assert len(pools) == 1, f"pool nodes need the case's queues in one cohort: {pools}"
    for pool, members in sorted(pools.items()):
        total: dict[str, float] = {}
        for member in members:
            for group in queues[member]["groups"]:
                for row in group:
                    total[row[1]] = total.get(row[1], 0.0) + _base(row[2])
        capacity = {k: AMPLE.get(k, "100000") for k in AMPLE}
        capacity.update({k: _text(v) for k, v in total.items()})
        nodes.append(_node(f"pool-{pool}", capacity, {"referee/pool": pool}))
        for member in members:
            pool_of[member] = f"pool-{pool}"
    return nodes, pool_of


def _base(value: str) -> float:
    return parse_quantity(value)


def _text(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".") or "0"


def _listed(doc: dict[str, Any], case: dict[str, Any]) -> tuple[dict[str, list[Any]],
                                                                 dict[str, str]]:
    queues = _queues(doc, case)
    nodes, pool_of = _nodes(doc, case, queues)
    flavors = doc.get("flavors", {})
    workloads: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    priorities: set[int] = set()
    slot = 0
    for i, wl in enumerate(case.get("admitted", [])):
        workloads.append(_workload(wl, True, i))
        priorities.add(int(wl.get("priority", 0)))
        for ps in _pods(wl):
            for k in range(ps["count"]):
                node = pool_of.get(wl.get("cq", "")) or nodes[slot % len(nodes)]["metadata"]["name"]
                slot += 1
                pods.append({
                    "metadata": {"name": f"{wl['name']}-{ps['name']}-{k}",
                                 "namespace": wl.get("ns", NS),
                                 "ownerReferences": [{"uid": f"job-{wl.get('ns', NS)}-{wl['name']}",
                                                      "controller": True, "kind": "Job"}],
                                 "creationTimestamp": _ts(NOW - 500)},
                    "spec": {"nodeName": node, "priority": int(wl.get("priority", 0)),
                             **_template(ps["requests"])["spec"]},
                    "status": {"phase": "Running", "startTime": _ts(NOW - 400 + i)},
                })
    for j, wl in enumerate(case.get("pending", [])):
        workloads.append(_workload(wl, False, 100 + j))
        priorities.add(int(wl.get("priority", 0)))
    listed: dict[str, list[Any]] = {
        # Namespaces with the labels the file states (``namespace_labels``).
        "namespaces": [{"metadata": {"name": n, "labels": doc.get("namespace_labels", {})
                                     .get(n, {})}} for n in sorted(
            {NS, *(wl.get("ns", NS) for wl in [*case.get("admitted", []),
                                                *case.get("pending", [])])})],
        "nodes": nodes,
        "resourceflavors": [
            {"metadata": {"name": f}, "spec": {"nodeLabels": labels} if labels else {}}
            for f, labels in flavors.items()
        ],
        "clusterqueues": [_cq_object(n, s) for n, s in queues.items()],
        "localqueues": [{"metadata": {"name": lq, "namespace": ns},
                         "spec": {"clusterQueue": cq}}
                        for ns, lq, cq in _local_queues(doc, case)],
        "workloads": workloads,
        "pods": pods,
        "priorityclasses": [{"metadata": {"name": _pc_name(p)}, "value": p}
                            for p in sorted(priorities)],
        # Cohort objects (parent, own quota), at v1beta1 as the collector reads them.
        "cohorts": [{"metadata": {"name": n}, "spec": {
            **({"parentName": c["parent"]} if c.get("parent") else {}),
            "resourceGroups": _cq_object(n, {"groups": c.get("groups", [])})["spec"][
                "resourceGroups"]}} for n, c in case.get("cohorts", {}).items()],
        "resourcequotas": [], "limitranges": [],
    }
    return listed, pool_of


class _Listed:
    """What a synced reflector offers ``KubernetesCollector._build``."""

    def __init__(self, items: list[Any]) -> None:
        self._items = items
        self.error: str | None = None
        self.error_kind: str | None = None
        self.list_latency_ms = 0.0
        self.attempt = 0

    def items(self) -> list[Any]:
        return self._items


def snapshot_of(listed: dict[str, list[Any]]) -> Snapshot:
    """The snapshot the Kubernetes collector builds from these objects."""
    col = KubernetesCollector(KubernetesConfig(visibility=False))
    col.reflectors = {k: _Listed(v) for k, v in listed.items()}  # type: ignore[misc]
    col._kueue_version = "v1beta1"
    return col._build(NOW)


# --- the outcome ------------------------------------------------------------------------


def outcome(doc: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    """What the core predicts for the case's first cycle."""
    listed, pool_of = _listed(doc, case)
    snap = snapshot_of(listed)
    preds = predict(snap, site_policy(snap), horizon=3600.0)
    jobs = {j.id: j for j in snap.jobs}
    admitted: dict[str, list[str]] = {}
    preempted: set[str] = set()
    for p in preds:
        if p.start is not None and p.start <= NOW + 1e-6:
            admitted[_key(p.job_id)] = p.nodes
            preempted |= {_key(v.job_id) for v in p.preempts}
    # ClusterQueue usage after the cycle, in model units, and who is over nominal.
    teams = {t.name: t for t in snap.teams}
    usage: dict[str, dict[str, float]] = {}
    for j in snap.jobs:
        name = _key(j.id)
        holds = (j.state == "running" and name not in preempted) or name in admitted
        if holds:
            tally = usage.setdefault(j.team, {})
            for k, v in j.request.items():
                tally[k] = tally.get(k, 0.0) + v
    borrowing = sorted(
        cq for cq, used in usage.items()
        if any(v > (teams[cq].guarantee or {}).get(k, 0.0) + 1e-9
               for k, v in used.items() if ":" not in k)
    )
    return {"admitted": admitted, "preempted": preempted, "borrowing": borrowing,
            "jobs": jobs, "pool_of": pool_of, "snap": snap}


def _offered(doc: dict[str, Any], case: dict[str, Any], cq: str, resource: str) -> list[str]:
    spec = _queues(doc, case)[cq]
    return [row[0] for group in spec["groups"] for row in group if row[1] == resource]


def _cohort_lendable(doc: dict[str, Any], case: dict[str, Any]) -> None:
    """What the cohort's members can lend, as the snapshot's teams state it: each one's
    lendable (its lendingLimit) or, with none, its whole guarantee."""
    listed, _ = _listed(doc, case)
    snap = snapshot_of(listed)
    want = case["want"]
    total: dict[str, float] = {}
    for t in snap.teams:
        if t.cohort == want["cohort"]:
            for k, v in (t.lendable or t.guarantee or {}).items():
                total[k] = total.get(k, 0.0) + min(v, (t.guarantee or {}).get(k, v))
    expect = {k: to_model_units(k, v) for k, v in want["lendable"].items()}
    assert total == pytest.approx(expect), f"lendable: got {total}, want {expect}"


@pytest.mark.parametrize(("doc", "case"), _params())
def test_case(doc: dict[str, Any], case: dict[str, Any]) -> None:
    if case.get("kind") == "cohort_lendable":
        return _cohort_lendable(doc, case)
    want = case["want"]
    got = outcome(doc, case)
    pending = {_key(f"{wl.get('ns', NS)}/{wl['name']}"): wl for wl in case.get("pending", [])}
    if "admitted" in want:  # not where the upstream test does not say
        assert sorted(got["admitted"]) == sorted(want["admitted"]), (
            f"admitted: got {sorted(got['admitted'])}, want {want['admitted']}"
        )
    assert sorted(got["preempted"]) == sorted(want.get("preempted", [])), (
        f"preempted: got {sorted(got['preempted'])}, want {want.get('preempted', [])}"
    )
    for name, flavors in want.get("flavors", {}).items():
        wl = pending[name]
        for resource, flavor in flavors.items():
            # The only flavor the queue offers for it (else the case is not modelled).
            assert _offered(doc, case, wl["cq"], resource) == [flavor], (name, resource)
        nodes = got["admitted"][name]
        pool = got["pool_of"].get(wl["cq"])
        if pool is not None:
            assert nodes == [pool], f"{name} placed on {nodes}, not its flavor's {pool}"
        part = next(p for p in got["snap"].partitions if p.name == wl["cq"])
        assert set(nodes) <= set(part.nodes), f"{name} placed outside its ClusterQueue"
    if "borrowing" in want:
        assert got["borrowing"] == sorted(want["borrowing"]), (
            f"borrowing: got {got['borrowing']}, want {want['borrowing']}"
        )


def test_counts() -> None:
    """At least 60 cases listed, each from a named upstream test at a named commit; the
    count modelled, passing and not modelled is printed."""
    by: dict[str, int] = dict.fromkeys(STATUSES, 0)
    for doc, case in CASES:
        assert len(doc["commit"]) == 40 and doc["upstream_file"] and doc["nodes"]
        assert len(case.get("commit", doc["commit"])) == 40
        status = case.get("status", "run")
        assert status in STATUSES, status
        if status != "run":
            assert case.get("reason"), case["name"]
        assert "want" in case, case["name"]
        by[status] += 1
    names = [_id(doc, case) for doc, case in CASES]
    assert len(names) == len(set(names)), "a case listed twice"
    listed = len(CASES)
    modelled = by["run"] + by["xfail"]
    print(f"\nKueue referee: {listed} cases listed, {modelled} modelled "
          f"({by['run']} expected to pass, {by['xfail']} xfail), "
          f"{by['not_modelled']} not modelled; "
          f"{by['run'] / listed:.0%} of the listed cases modelled and passing")
    assert listed >= 60
