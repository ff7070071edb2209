"""Pod requests, QoS class and state, computed the way Kubernetes computes them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from quotatop.collectors.k8s.quantity import parse_quantity
from quotatop.collectors.model import COMPLETED, FAILED, PENDING, PREEMPTED, RUNNING

Obj = Mapping[str, Any]


def _quantities(resources: Mapping[str, Any] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value in (resources or {}).items():
        try:
            out[name] = parse_quantity(value)
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


def _add(into: dict[str, float], more: Mapping[str, float]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0.0) + v


def pod_requests(pod: Obj) -> dict[str, float]:
    """Effective pod requests in base units (k8s.io/component-helpers PodRequests).

    Regular containers sum; each init container runs alone after the sidecars
    started before it, so the pod needs the max of those and of (containers +
    all sidecars); then the RuntimeClass overhead is added on top.
    """
    spec = pod.get("spec") or {}
    total: dict[str, float] = {}
    for c in spec.get("containers") or []:
        _add(total, container_requests(c))
    sidecars: dict[str, float] = {}
    init_peak: dict[str, float] = {}
    for c in spec.get("initContainers") or []:
        req = container_requests(c)
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
    _add(total, _quantities(spec.get("overhead")))
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
