"""What a pod charges to a ResourceQuota, computed as Kubernetes' pod evaluator does.

The quota controller (pkg/quota/v1/evaluator/core/pods.go in kubernetes/kubernetes)
states a namespace's usage in ``ResourceQuota.status.used``. This module restates that
accounting so that the collector can compute a namespace's usage from the pods it
lists where the API states none (a quota the controller has not synced yet), and so
that tests/referee/k8s_quota can hold it against Kubernetes' own test cases:

* ``count/pods`` counts every pod, terminal or not (the generic object count);
* every other key counts only pods that still hold resources: not Succeeded/Failed, and
  not stuck terminating past ``deletionTimestamp + deletionGracePeriodSeconds``;
* ``cpu``/``memory``/``ephemeral-storage`` are charged as both ``X`` and
  ``requests.X`` (the pod's effective request) and ``limits.X`` (its effective limit);
  hugepages as ``hugepages-*`` and ``requests.hugepages-*``; an extended resource
  (``nvidia.com/gpu``) only as ``requests.<name>``;
* a pod's effective request: containers add up, an init container's peak counts if
  larger, RuntimeClass overhead is added, pod-level ``spec.resources`` (cpu, memory)
  replace the containers' sum, and a resize in progress charges the larger of the
  spec and the container status (see ``pods.pod_requests``).

Values are in base units (cores, bytes, counts), keyed by the quota's resource names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from quotatop.collectors.k8s.pods import (
    STATUS_RESOURCES,
    parse_time,
    pod_limits,
    pod_requests,
    qos_class,
)

Obj = Mapping[str, Any]

COUNT_PODS = "count/pods"
# Charged as X, requests.X and limits.X (podComputeUsageHelper).
_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_HUGEPAGES = "hugepages-"
# DRA's implicit extended resources live under a kubernetes.io domain yet are extended.
_IMPLICIT_EXTENDED = "deviceclass.resource.kubernetes.io/"


def is_extended_resource(name: str) -> bool:
    """An extended resource (nvidia.com/gpu): outside the kubernetes.io domains."""
    if name.startswith("requests."):
        return False
    if name.startswith(_IMPLICIT_EXTENDED):
        return True
    return "/" in name and "kubernetes.io/" not in name


def holds_quota(pod: Obj, now: float) -> bool:
    """Whether the pod still counts toward quota (QuotaV1Pod): not terminal, and not
    stuck terminating past its grace period (a lost node's pods must not block the
    namespace from starting replacements)."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return False
    meta = pod.get("metadata") or {}
    deleted = parse_time(meta.get("deletionTimestamp"))
    grace = meta.get("deletionGracePeriodSeconds")
    numeric = isinstance(grace, int | float) and not isinstance(grace, bool)
    return not (deleted is not None and numeric and now > deleted + float(grace))


def pod_usage(
    pod: Obj, now: float, *, status_resources: bool = STATUS_RESOURCES
) -> dict[str, float]:
    """The usage one pod charges, by quota resource name (the evaluator's Usage)."""
    out: dict[str, float] = {COUNT_PODS: 1.0}
    if not holds_quota(pod, now):
        return out
    out["pods"] = 1.0
    requests = pod_requests(pod, status_resources=status_resources)
    limits = pod_limits(pod)
    for name in _COMPUTE:
        if name in requests:
            out[name] = requests[name]
            out[f"requests.{name}"] = requests[name]
        if name in limits:
            out[f"limits.{name}"] = limits[name]
    for name, value in requests.items():
        if name.startswith(_HUGEPAGES):
            out[name] = value
            out[f"requests.{name}"] = value
        elif is_extended_resource(name):
            out[f"requests.{name}"] = value
    return out


def _scope_matches(pod: Obj, scope: str, operator: str | None, values: list[str]) -> bool:
    spec = pod.get("spec") or {}
    if scope == "Terminating":
        deadline = spec.get("activeDeadlineSeconds")
        return deadline is not None and deadline >= 0
    if scope == "NotTerminating":
        deadline = spec.get("activeDeadlineSeconds")
        return deadline is None or deadline < 0
    if scope == "BestEffort":
        return qos_class(pod) == "BestEffort"
    if scope == "NotBestEffort":
        return qos_class(pod) != "BestEffort"
    if scope == "PriorityClass":
        pc = spec.get("priorityClassName") or ""
        if operator in (None, "", "Exists"):
            return bool(pc)
        if operator == "DoesNotExist":
            return not pc
        if operator == "In":
            return pc in values
        if operator == "NotIn":
            return pc not in values
        return False
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(spec)
    return False  # a scope this reader does not know matches nothing, as in the evaluator


def _cross_namespace_affinity(spec: Obj) -> bool:
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = affinity.get(kind) or {}
        required = terms.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        preferred = [
            (w or {}).get("podAffinityTerm") or {}
            for w in terms.get("preferredDuringSchedulingIgnoredDuringExecution") or []
        ]
        for term in [*required, *preferred]:
            if term.get("namespaces") or term.get("namespaceSelector") is not None:
                return True
    return False


def quota_selects(quota: Obj, pod: Obj) -> bool:
    """Whether a ResourceQuota's scopes (and scopeSelector) all match the pod."""
    spec = quota.get("spec") or {}
    wanted: list[tuple[str, str | None, list[str]]] = [
        (str(s), None, []) for s in spec.get("scopes") or []
    ]
    for expr in (spec.get("scopeSelector") or {}).get("matchExpressions") or []:
        wanted.append(
            (str(expr.get("scopeName", "")), expr.get("operator"), list(expr.get("values") or []))
        )
    return all(_scope_matches(pod, s, op, vals) for s, op, vals in wanted)


def namespace_usage(
    pods: Iterable[Obj], now: float, quota: Obj | None = None,
    *, status_resources: bool = STATUS_RESOURCES,
) -> dict[str, float]:
    """The usage the pods charge together (UsageStats); only the pods the quota's scopes
    select when a quota is given. Pods of other namespaces are the caller's to leave out."""
    total: dict[str, float] = {}
    for pod in pods:
        if quota is not None and not quota_selects(quota, pod):
            continue
        for key, value in pod_usage(pod, now, status_resources=status_resources).items():
            total[key] = total.get(key, 0.0) + value
    return total


def quota_charge(quota: Obj, pod: Obj, now: float) -> dict[str, float]:
    """What the pod charges to this ResourceQuota: nothing outside its namespace or
    scopes, else its usage for the resources the quota limits (status.hard, or
    spec.hard before the controller synced it)."""
    q_ns = (quota.get("metadata") or {}).get("namespace", "")
    if (pod.get("metadata") or {}).get("namespace", "") != q_ns or not quota_selects(quota, pod):
        return {}
    hard = (quota.get("status") or {}).get("hard") or (quota.get("spec") or {}).get("hard") or {}
    usage = pod_usage(pod, now)
    return {k: usage.get(k, 0.0) for k in hard}
