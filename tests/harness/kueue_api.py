"""Kueue behaviour for the test API server: version conversion and the visibility API.

Conversion: Kueue serves its CRDs at several versions from one storage version, with a
conversion webhook; the test server stores one object per name and converts it to the
version a request names. The fields that differ between v1beta1 and v1beta2 where
quotatop reads them (apis/kueue/v1beta2 in kubernetes-sigs/kueue):

* ClusterQueue ``spec.cohort`` (v1beta1) is ``spec.cohortName`` (v1beta2);
* Workload ``spec.priorityClassName`` + ``spec.priorityClassSource`` (v1beta1) are
  ``spec.priorityClassRef`` {group, kind, name} (v1beta2);
* Cohort ``spec.parent`` (v1alpha1, v1beta1: the CRD schemas in
  tests/referee/schemas/kueue-crd-excerpts.json) is ``spec.parentName`` (v1beta2).

Visibility: Kueue's aggregated API ``visibility.kueue.x-k8s.io`` (pkg/visibility) answers
``GET .../clusterqueues/{name}/pendingworkloads`` and
``GET .../namespaces/{ns}/localqueues/{name}/pendingworkloads`` with a
``PendingWorkloadsSummary`` whose items carry ``positionInClusterQueue`` and
``positionInLocalQueue`` (both from 0), honouring ``offset`` and ``limit`` (1000 by default).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

Obj = dict[str, Any]

KUEUE_GROUP = "kueue.x-k8s.io"
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
CONVERTIBLE = ("v1beta1", "v1beta2")
DEFAULT_PENDING_LIMIT = 1000

_POD_PC = ("scheduling.k8s.io", "PriorityClass")
_WORKLOAD_PC = (KUEUE_GROUP, "WorkloadPriorityClass")
_SOURCE_OF = {
    _POD_PC: "scheduling.k8s.io/priorityclass",
    _WORKLOAD_PC: "kueue.x-k8s.io/workloadpriorityclass",
}


def convert(obj: Obj, version: str) -> Obj:
    """``obj`` as Kueue would serve it at ``version`` (unchanged when not convertible)."""
    group, _, have = str(obj.get("apiVersion", "")).rpartition("/")
    if group != KUEUE_GROUP or have == version or version not in CONVERTIBLE:
        return obj
    out = copy.deepcopy(obj)
    out["apiVersion"] = f"{group}/{version}"
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    kind = out.get("kind")
    if version == "v1beta2":
        if kind == "Cohort" and "parent" in spec:
            spec["parentName"] = spec.pop("parent")
        if kind == "ClusterQueue" and "cohort" in spec:
            spec["cohortName"] = spec.pop("cohort")
        if kind == "Workload":
            name = spec.pop("priorityClassName", None)
            source = spec.pop("priorityClassSource", None)
            if name:
                g, k = _WORKLOAD_PC if source == _SOURCE_OF[_WORKLOAD_PC] else _POD_PC
                spec["priorityClassRef"] = {"group": g, "kind": k, "name": name}
    else:
        if kind == "Cohort" and "parentName" in spec:
            spec["parent"] = spec.pop("parentName")
        if kind == "ClusterQueue" and "cohortName" in spec:
            spec["cohort"] = spec.pop("cohortName")
        if kind == "Workload" and (ref := spec.pop("priorityClassRef", None)):
            spec["priorityClassName"] = ref.get("name")
            spec["priorityClassSource"] = _SOURCE_OF.get(
                (ref.get("group"), ref.get("kind")), _SOURCE_OF[_POD_PC]
            )
    return out


def _true(wl: Obj, ctype: str) -> bool:
    return any(
        c.get("type") == ctype and c.get("status") == "True"
        for c in (wl.get("status") or {}).get("conditions") or []
    )


def pending_in_cluster_queue(
    cq: str, workloads: Iterable[Obj], localqueues: Iterable[Obj]
) -> list[Obj]:
    """The ClusterQueue's pending workloads in Kueue's queue order.

    Pending: queued through a LocalQueue that points at ``cq``, active, holding no quota
    reservation and not finished (an evicted workload is requeued, so it counts). Order:
    priority, highest first, then creation time (BestEffortFIFO and StrictFIFO agree).
    """
    lq_cq = {
        ((lq.get("metadata") or {}).get("namespace", ""), lq["metadata"]["name"]): (
            (lq.get("spec") or {}).get("clusterQueue")
        )
        for lq in localqueues
    }
    out = []
    for wl in workloads:
        meta, spec = wl.get("metadata") or {}, wl.get("spec") or {}
        if lq_cq.get((meta.get("namespace", ""), spec.get("queueName", ""))) != cq:
            continue
        if spec.get("active") is False or _true(wl, "QuotaReserved") or _true(wl, "Finished"):
            continue
        out.append(wl)
    out.sort(
        key=lambda w: (
            -int((w.get("spec") or {}).get("priority") or 0),
            w["metadata"].get("creationTimestamp", ""),
            w["metadata"].get("namespace", ""),
            w["metadata"]["name"],
        )
    )
    return out


def _pending_item(wl: Obj, in_lq: int, in_cq: int) -> Obj:
    meta = wl.get("metadata") or {}
    refs = [
        {k: r[k] for k in ("apiVersion", "kind", "name", "uid") if k in r}
        for r in meta.get("ownerReferences") or []
    ]
    item_meta: Obj = {
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "creationTimestamp": meta.get("creationTimestamp"),
    }
    if refs:
        item_meta["ownerReferences"] = refs
    return {
        "metadata": item_meta,
        "priority": int((wl.get("spec") or {}).get("priority") or 0),
        "localQueueName": (wl.get("spec") or {}).get("queueName", ""),
        "positionInClusterQueue": in_cq,
        "positionInLocalQueue": in_lq,
    }


def summary(version: str, items: list[Obj]) -> Obj:
    return {
        "kind": "PendingWorkloadsSummary",
        "apiVersion": f"{VISIBILITY_GROUP}/{version}",
        "metadata": {"creationTimestamp": None},
        "items": items,
    }


def cluster_queue_summary(pending: list[Obj], offset: int, limit: int) -> list[Obj]:
    # As Kueue does, the LocalQueue position counts by queue name alone.
    per_lq: dict[str, int] = {}
    items = []
    for index, wl in enumerate(pending[: offset + limit]):
        lq = (wl.get("spec") or {}).get("queueName", "")
        pos = per_lq.get(lq, 0)
        per_lq[lq] = pos + 1
        if index >= offset:
            items.append(_pending_item(wl, pos, index))
    return items


def local_queue_summary(
    pending: list[Obj], namespace: str, name: str, offset: int, limit: int
) -> list[Obj]:
    items: list[Obj] = []
    skipped = 0
    for index, wl in enumerate(pending):
        if len(items) >= limit:
            break
        meta, spec = wl.get("metadata") or {}, wl.get("spec") or {}
        if meta.get("namespace") != namespace or spec.get("queueName") != name:
            continue
        if skipped < offset:
            skipped += 1
            continue
        items.append(_pending_item(wl, len(items) + offset, index))
    return items


def discovery(version: str) -> Obj:
    def res(name: str, kind: str, namespaced: bool, verbs: list[str]) -> Obj:
        return {
            "name": name,
            "singularName": "",
            "namespaced": namespaced,
            "kind": kind,
            "verbs": verbs,
        }

    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{VISIBILITY_GROUP}/{version}",
        "resources": [
            res("clusterqueues", "ClusterQueue", False, []),
            res("clusterqueues/pendingworkloads", "PendingWorkloadsSummary", False, ["get"]),
            res("localqueues", "LocalQueue", True, []),
            res("localqueues/pendingworkloads", "PendingWorkloadsSummary", True, ["get"]),
        ],
    }
