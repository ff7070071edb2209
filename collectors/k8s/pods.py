"""Pod requests, QoS class and state, computed the way Kubernetes computes them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from quotatop.collectors.k8s.quantity import parse_quantity
from quotatop.collectors.model import COMPLETED, FAILED, PENDING, PREEMPTED, RUNNING

Obj = Mapping[str, Any]

# Kubernetes charges a resize in progress at the larger of spec and status
# (InPlacePodVerticalScaling, on by default since 1.33); a server without the feature
# never reports container resources in status, so reading them is always right.
STATUS_RESOURCES = True
# Pod-level spec.resources (PodLevelResources) replace the containers' sum for these.
POD_LEVEL_RESOURCES = ("cpu", "memory")


def _milli_ceil(value: float) -> float:
    """The API server rounds every quantity up to milli scale (SetDefaults_ResourceList):
    "1n" is stored as "1m". The tolerance keeps 0.1 from becoming 0.101."""
    scaled = value * 1000.0
    if abs(scaled) >= 2.0**52:
        return value  # an integer already at this magnitude
    return math.ceil(scaled - 1e-6) / 1000.0


def _quantities(resources: Mapping[str, Any] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    if not isinstance(resources, Mapping):
        return out
    for name, value in resources.items():
        try:
            out[name] = _milli_ceil(parse_quantity(value))
        except ValueError:
            continue
    return out


def container_requests(container: Obj) -> dict[str, float]:
    """Requests with the API server's defaulting: a limit without a request is the request."""
    res = container.get("resources") or {}
    req = _quantities(res.get("requests"))
    for name, value in _quantities(res.get("limits")).items():
        req.setdefault(name, value)
    return req


def container_limits(container: Obj) -> dict[str, float]:
    return _quantities((container.get("resources") or {}).get("limits"))


def _resize_infeasible(pod: Obj) -> bool:
    status = pod.get("status") or {}
    if status.get("resize") == "Infeasible":  # before 1.33
        return True
    return any(
        c.get("type") == "PodResizePending" and c.get("reason") == "Infeasible"
        for c in status.get("conditions") or []
    )


def _statuses(pod: Obj) -> dict[str, Mapping[str, Any]]:
    status = pod.get("status") or {}
    out: dict[str, Mapping[str, Any]] = {}
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or []:
            if isinstance(cs, Mapping):
                out[str(cs.get("name", ""))] = cs
    return out


def _with_status(
    container: Obj, statuses: Mapping[str, Mapping[str, Any]], infeasible: bool
) -> dict[str, float]:
    """A container's request during an in-place resize (determineContainerReqs): the
    larger of what the spec asks, what the kubelet reports and what it allocated; when
    the resize is infeasible the spec's new ask is never granted, so it is left out."""
    spec_req = container_requests(container)
    cs = statuses.get(str(container.get("name", "")))
    if cs is None or not isinstance(cs.get("resources"), Mapping):
        return spec_req
    reported = _quantities(cs["resources"].get("requests"))
    allocated = _quantities(cs.get("allocatedResources"))
    out = {} if infeasible else dict(spec_req)
    for more in (reported, allocated):
        for k, v in more.items():
            out[k] = max(out.get(k, v), v)
    return out


def _add(into: dict[str, float], more: Mapping[str, float]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0.0) + v


def _aggregate(
    spec: Obj, per_container: Any
) -> dict[str, float]:
    """Regular containers sum; each init container runs alone after the sidecars
    started before it, so the pod needs the max of those and of (containers + all
    sidecars)."""
    total: dict[str, float] = {}
    for c in spec.get("containers") or []:
        _add(total, per_container(c))
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for c in spec.get("initContainers") or []:
        req = per_container(c)
        if c.get("restartPolicy") == "Always":
            _add(sidecars, req)
            current = dict(sidecars)
        else:
            current = dict(sidecars)
            _add(current, req)
        for k, v in current.items():
            init_peak[k] = max(init_peak.get(k, 0.0), v)
    _add(total, sidecars)
    for k, v in init_peak.items():
        total[k] = max(total.get(k, 0.0), v)
    return total


def _pod_level(spec: Obj, field_name: str) -> dict[str, float]:
    res = spec.get("resources") or {}
    if not isinstance(res, Mapping):
        return {}
    out = _quantities(res.get(field_name))
    if field_name == "requests":  # pod-level limits default pod-level requests too
        for k, v in _quantities(res.get("limits")).items():
            out.setdefault(k, v)
    return {k: v for k, v in out.items() if k in POD_LEVEL_RESOURCES}


def pod_requests(pod: Obj, *, status_resources: bool = STATUS_RESOURCES) -> dict[str, float]:
    """Effective pod requests in base units (k8s.io/component-helpers PodRequests).

    The containers' aggregate (see ``_aggregate``; during an in-place resize each
    container at the larger of spec and status), pod-level ``spec.resources`` replacing
    it for cpu and memory, then the RuntimeClass overhead on top.
    """
    spec = pod.get("spec") or {}
    if status_resources:
        statuses = _statuses(pod)
        infeasible = _resize_infeasible(pod)
        total = _aggregate(spec, lambda c: _with_status(c, statuses, infeasible))
    else:
        total = _aggregate(spec, container_requests)
    total.update(_pod_level(spec, "requests"))
    _add(total, _quantities(spec.get("overhead")))
    return total


def pod_limits(pod: Obj) -> dict[str, float]:
    """Effective pod limits (PodLimits): aggregated as requests are, pod-level limits
    replacing cpu and memory, and the overhead added only to limits that are set (a
    missing limit is unbounded; overhead does not make it bounded)."""
    spec = pod.get("spec") or {}
    total = _aggregate(spec, container_limits)
    total.update(_pod_level(spec, "limits"))
    for k, v in _quantities(spec.get("overhead")).items():
        if k in total:
            total[k] += v
    return total


def qos_class(pod: Obj) -> str:
    """status.qosClass, or the class computed as pkg/apis/core/helper/qos does."""
    given = (pod.get("status") or {}).get("qosClass")
    if given:
        return str(given)
    spec = pod.get("spec") or {}
    requests: dict[str, float] = {}
    limits: dict[str, float] = {}
    guaranteed = True
    for c in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        res = c.get("resources") or {}
        # Only cpu and memory decide the class; zero quantities count as unset. Requests
        # are the defaulted ones (a bare limit is also the request), as the API stores them.
        for name, value in container_requests(c).items():
            if name in ("cpu", "memory") and value != 0:
                requests[name] = requests.get(name, 0.0) + value
        found = set()
        for name, value in _quantities(res.get("limits")).items():
            if name in ("cpu", "memory") and value != 0:
                found.add(name)
                limits[name] = limits.get(name, 0.0) + value
        if found != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, value in requests.items():
            if limits.get(name) != value:
                guaranteed = False
                break
    return "Guaranteed" if guaranteed else "Burstable"


def parse_time(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def condition(obj: Obj, ctype: str) -> Mapping[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return cond
    return None


def pod_state(pod: Obj) -> tuple[str, str | None]:
    """(model state, reason in the source's words)."""
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    target = condition(pod, "DisruptionTarget")
    if (
        target is not None
        and target.get("status") == "True"
        and target.get("reason") == "PreemptionByScheduler"
    ):
        return PREEMPTED, target.get("message") or "preempted by the scheduler"
    if phase == "Pending":
        sched = condition(pod, "PodScheduled")
        if sched is not None and sched.get("status") == "False":
            return PENDING, sched.get("message") or sched.get("reason")
        return PENDING, status.get("reason")
    if phase == "Running":
        return RUNNING, None
    if phase == "Succeeded":
        return COMPLETED, None
    if phase == "Failed":
        if status.get("reason") == "Evicted":
            return PREEMPTED, status.get("message") or "Evicted"
        return FAILED, status.get("reason") or status.get("message")
    return RUNNING, f"phase {phase}"  # Unknown: the node stopped reporting
