"""Kueue (kueue.x-k8s.io v1beta1 and v1beta2) objects mapped onto the one team and job model.

The two versions differ where we read them: v1beta2 renames ClusterQueue
``spec.cohort`` to ``spec.cohortName`` and replaces Workload ``spec.priorityClassName``
/ ``priorityClassSource`` with ``spec.priorityClassRef`` {group, kind, name}.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quotatop.collectors.k8s.pods import condition, parse_time, pod_requests
from quotatop.collectors.k8s.quantity import parse_quantity, resource_key, to_model_units
from quotatop.collectors.model import (
    COMPLETED,
    FAILED,
    PENDING,
    PREEMPTED,
    RUNNING,
    Job,
    Node,
    Partition,
    QuotaObject,
    Team,
    TeamPreemption,
)

Obj = Mapping[str, Any]
GPU = "nvidia.com/gpu"


def _q(name: str, value: Any) -> float | None:
    try:
        return to_model_units(name, value)
    except (ValueError, TypeError):
        return None


def _add(into: dict[str, float], key: str, value: float) -> None:
    into[key] = into.get(key, 0.0) + value


def flavor_gpu_key(flavor: str, flavors: Mapping[str, Obj]) -> str:
    """``gpu:<product>`` from the flavor's nodeLabels, else ``gpu:<flavor name>``."""
    labels = ((flavors.get(flavor) or {}).get("spec") or {}).get("nodeLabels") or {}
    product = labels.get("nvidia.com/gpu.product")
    return f"gpu:{product}" if product else f"gpu:{flavor}"


def cluster_queue_partition(cq: Obj, flavors: Mapping[str, Obj], nodes: list[Node]) -> Partition:
    """The nodes a ClusterQueue's workloads can land on: those matching the nodeLabels
    of one of its ResourceFlavors (a flavor without labels matches every node; a
    flavor that does not exist matches none). Jobs carry their ClusterQueue as the
    partition, so the core places them only there."""
    names: set[str] = set()
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for fl in group.get("flavors") or []:
            flavor = flavors.get(fl.get("name", ""))
            if flavor is None:
                continue
            want = (flavor.get("spec") or {}).get("nodeLabels") or {}
            names |= {n.name for n in nodes
                      if all(n.labels.get(k) == v for k, v in want.items())}
    return Partition(name=cq["metadata"]["name"], nodes=[n.name for n in nodes if n.name in names])


# Kueue's spec.preemption values, in the core's words (TeamPreemption); a field left
# out is Kueue's API default: Never.
_WITHIN = {"Never": "never", "LowerPriority": "lower_priority",
           "LowerOrNewerEqualPriority": "lower_or_newer_equal"}
_RECLAIM = {"Never": "never", "LowerPriority": "lower_priority", "Any": "any"}
_BORROW = {"Never": "never", "LowerPriority": "lower_priority"}


def cluster_queue_preemption(spec: Obj, notes: list[str]) -> TeamPreemption:
    """A ClusterQueue's ``spec.preemption`` as the team's stated policy: whom its
    workloads may preempt in the queue (withinClusterQueue), among the cohort's
    borrowers (reclaimWithinCohort) and while borrowing (borrowWithinCohort)."""
    pre = spec.get("preemption") or {}
    bwc = pre.get("borrowWithinCohort") or {}

    def read(field: str, table: Mapping[str, str], value: Any) -> str:
        if value is None:
            return "never"
        if value not in table:
            notes.append(f"preemption.{field} {value!r} not known: read as Never")
            return "never"
        return table[value]

    threshold = bwc.get("maxPriorityThreshold")
    try:
        max_priority = float(threshold) if threshold is not None else None
    except (TypeError, ValueError):
        notes.append(f"unparseable borrowWithinCohort.maxPriorityThreshold {threshold!r}")
        max_priority = None
    return TeamPreemption(
        within=read("withinClusterQueue", _WITHIN, pre.get("withinClusterQueue")),
        reclaim=read("reclaimWithinCohort", _RECLAIM, pre.get("reclaimWithinCohort")),
        borrow_within=read("borrowWithinCohort.policy", _BORROW, bwc.get("policy")),
        borrow_max_priority=max_priority,
    )


def cluster_queue_to_team(cq: Obj, flavors: Mapping[str, Obj], feeders: list[str]) -> Team:
    spec = cq.get("spec") or {}
    status = cq.get("status") or {}
    name = cq["metadata"]["name"]
    cohort = spec.get("cohort") or spec.get("cohortName")  # v1beta2 renames it
    guarantee: dict[str, float] = {}
    maximum: dict[str, float] = {}
    lendable: dict[str, float] = {}
    unlimited: set[str] = set()
    any_lending = False
    notes: list[str] = []
    where = QuotaObject(kind="clusterqueue", name=name, keys={}, flavors={})
    for group in spec.get("resourceGroups") or []:
        for fl in group.get("flavors") or []:
            fname = fl.get("name", "")
            for res in fl.get("resources") or []:
                rname = res.get("name", "")
                nominal = _q(rname, res.get("nominalQuota", 0)) or 0.0
                keys = [resource_key(rname)]
                if rname == GPU:
                    keys.append(flavor_gpu_key(fname, flavors))
                borrow_raw = res.get("borrowingLimit")
                lend_raw = res.get("lendingLimit")
                for key in keys:  # which flavors a patch of this resource names
                    where.keys.setdefault(key, rname)
                    where.flavors.setdefault(key, []).append(fname)
                for key in keys:
                    _add(guarantee, key, nominal)
                    if cohort and borrow_raw is None:
                        unlimited.add(key)  # may borrow all the cohort's unused quota
                    else:
                        borrow = _q(rname, borrow_raw) if (cohort and borrow_raw) else 0.0
                        _add(maximum, key, nominal + (borrow or 0.0))
                    if lend_raw is not None:
                        any_lending = True
                        _add(lendable, key, _q(rname, lend_raw) or 0.0)
                    else:
                        _add(lendable, key, nominal)
                parts = [f"nominal {res.get('nominalQuota')}"]
                if borrow_raw is not None:
                    parts.append(f"borrowingLimit {borrow_raw}")
                if lend_raw is not None:
                    parts.append(f"lendingLimit {lend_raw}")
                notes.append(f"flavor {fname} {rname}: " + ", ".join(parts))
    for key in unlimited:
        maximum.pop(key, None)
    if unlimited:
        notes.append(
            "no borrowingLimit for " + ", ".join(sorted(unlimited)) + f": may borrow from {cohort}"
        )
    usage: dict[str, float] = {}
    borrowed: dict[str, float] = {}
    for fl in status.get("flavorsUsage") or []:
        fname = fl.get("name", "")
        for res in fl.get("resources") or []:
            rname = res.get("name", "")
            keys = [resource_key(rname)]
            if rname == GPU:
                keys.append(flavor_gpu_key(fname, flavors))
            total = _q(rname, res.get("total", 0)) or 0.0
            lent = _q(rname, res.get("borrowed", 0)) or 0.0
            for key in keys:
                _add(usage, key, total)
                if lent:
                    _add(borrowed, key, lent)
    for key, value in sorted(borrowed.items()):
        if ":" not in key:
            notes.append(f"borrowing {value:g} {key} from cohort {cohort}")
    preemption = spec.get("preemption") or {}
    if preemption:
        bwc = (preemption.get("borrowWithinCohort") or {}).get("policy")
        notes.append(
            "preemption: reclaimWithinCohort="
            f"{preemption.get('reclaimWithinCohort', 'Never')}, withinClusterQueue="
            f"{preemption.get('withinClusterQueue', 'Never')}"
            + (f", borrowWithinCohort={bwc}" if bwc else "")
        )
    if feeders:
        notes.append("fed by LocalQueues in " + ", ".join(sorted(feeders)))
    for key in ("pendingWorkloads", "admittedWorkloads"):
        if key in status:
            notes.append(f"{key} {status[key]}")
    weight_raw = (spec.get("fairSharing") or {}).get("weight")
    weight = 1.0
    if weight_raw is not None:
        try:
            weight = parse_quantity(weight_raw)
        except ValueError:
            notes.append(f"unparseable fairSharing.weight {weight_raw!r}")
    return Team(
        name=name,
        cohort=cohort,
        guarantee=guarantee,
        max=maximum or None,
        lendable=lendable if any_lending else None,
        weight=weight,
        usage=usage,
        borrowed=borrowed,
        preemption=cluster_queue_preemption(spec, notes),
        # Kueue admits no workload asking for a resource the queue does not cover.
        quota_exhaustive=True,
        source_notes=notes,
        quota_objects=[where],
    )


def fill_unseen_usage(teams: list[Team], jobs: list[Job], cluster_queues: set[str]) -> None:
    """A ClusterQueue's status states its usage (flavorsUsage): what of it no
    running job of the snapshot holds becomes the team's `unseen_usage`, so that the
    prediction starts from Kueue's own count. It is non-zero where this reader cannot
    list every namespace feeding the queue, or a workload's pods are not visible yet."""
    held: dict[str, dict[str, float]] = {}
    for job in jobs:
        if job.state == RUNNING:
            tally = held.setdefault(job.team, {})
            for key, value in job.request.items():
                tally[key] = tally.get(key, 0.0) + value
    for team in teams:
        if team.name not in cluster_queues or not team.usage:
            continue  # not a ClusterQueue: its usage is not Kueue's statement
        seen = held.get(team.name, {})
        left = {k: v - seen.get(k, 0.0) for k, v in team.usage.items()}
        # A typed key ("gpu:<flavor>") is part of the plain one; listed jobs may carry
        # only the plain key, so a typed remainder is at most the plain remainder.
        unseen = {k: min(v, left.get(k.split(":", 1)[0], v)) for k, v in left.items()}
        unseen = {k: v for k, v in unseen.items() if v > 1e-9}
        if unseen:
            team.unseen_usage = unseen
            team.source_notes.append(
                "held by workloads not listed here (ClusterQueue status): "
                + ", ".join(f"{v:g} {k}" for k, v in sorted(unseen.items()) if ":" not in k)
            )


def workload_priority_class(spec: Obj) -> str | None:
    """The priority class name under either version's field."""
    ref = spec.get("priorityClassRef") or {}
    return ref.get("name") or spec.get("priorityClassName") or None


def cohort_to_team(cohort: Obj) -> Team:
    spec = cohort.get("spec") or {}
    guarantee: dict[str, float] = {}
    for group in spec.get("resourceGroups") or []:
        for fl in group.get("flavors") or []:
            for res in fl.get("resources") or []:
                v = _q(res.get("name", ""), res.get("nominalQuota", 0))
                if v is not None:
                    _add(guarantee, resource_key(res.get("name", "")), v)
    name = cohort["metadata"]["name"]
    parent = spec.get("parentName") or spec.get("parent")
    notes = ["Kueue Cohort"]
    if guarantee and not parent:
        # A root Cohort's own nominalQuota is shared by the ClusterQueues in it: the
        # team is a member of its own cohort that holds no job and lends all of it.
        notes.append("its own quota is lent to the ClusterQueues of the cohort")
    elif guarantee:
        notes.append(f"its own quota is not lent: cohorts under {parent} are not modelled")
    return Team(
        name=name,
        parent=parent,
        cohort=name if guarantee and not parent else None,
        guarantee=guarantee or None,
        source_notes=notes,
    )


def workload_state(wl: Obj) -> tuple[str, str | None]:
    def true(ctype: str) -> Mapping[str, Any] | None:
        cond = condition(wl, ctype)
        return cond if cond is not None and cond.get("status") == "True" else None

    if fin := true("Finished"):
        ok = fin.get("reason") in ("Succeeded", "JobFinished", None)
        return (COMPLETED if ok else FAILED), fin.get("message") or None
    if pre := true("Preempted"):
        return PREEMPTED, pre.get("message") or pre.get("reason")
    if ev := true("Evicted"):
        if ev.get("reason") == "Preempted":
            return PREEMPTED, ev.get("message") or "Preempted"
        return PENDING, ev.get("message") or ev.get("reason")
    if true("Admitted"):
        return RUNNING, None
    if true("QuotaReserved"):
        return PENDING, "quota reserved, waiting for admission checks"
    qr = condition(wl, "QuotaReserved")
    if qr is not None:
        return PENDING, qr.get("message") or qr.get("reason")
    return PENDING, None


def workload_request(wl: Obj) -> dict[str, float]:
    total: dict[str, float] = {}
    for ps in (wl.get("spec") or {}).get("podSets") or []:
        count = int(ps.get("count", 1) or 1)
        per_pod = pod_requests(ps.get("template") or {})
        for name, value in per_pod.items():
            key = resource_key(name)
            base = value / (2**20) if name == "memory" else value
            _add(total, key, base * count)
    return total


def workload_to_job(wl: Obj, team: str, cluster_queue: str | None) -> Job:
    meta = wl.get("metadata") or {}
    spec = wl.get("spec") or {}
    status = wl.get("status") or {}
    state, reason = workload_state(wl)
    admission = status.get("admission") or {}
    cq = admission.get("clusterQueue") or cluster_queue
    pods = sum(int(ps.get("count", 1) or 1) for ps in spec.get("podSets") or [])
    admitted = condition(wl, "Admitted")
    start = parse_time(admitted.get("lastTransitionTime")) if admitted else None
    return Job(
        id=f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        name=meta.get("name", ""),
        team=team,
        qos=workload_priority_class(spec) or "default",
        partition=cq,
        state=state,
        request=workload_request(wl),
        nodes_requested=pods,
        submit_time=parse_time(meta.get("creationTimestamp")) or 0.0,
        start_time=start if state in (RUNNING, COMPLETED, FAILED) else None,
        priority=float(spec["priority"]) if spec.get("priority") is not None else None,
        reason=reason,
        gang=f"kueue:{meta.get('namespace', '')}/{meta.get('name', '')}",
    )
