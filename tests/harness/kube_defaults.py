"""The API server's defaulting of what it stores (pkg/apis/core/v1/defaults.go), for
the fields quotatop reads: a real server never serves an object without it.

* Pod: each container's and init container's limit without a request becomes the
  request (SetDefaults_Pod); an explicit request, 0 included, is kept.
* LimitRange, items of type Container (SetDefaults_LimitRangeItem): a missing default
  limit is the max; a missing default request is the default limit, else the min.

and, at pod creation, the LimitRanger admission plugin
(plugin/pkg/admission/limitranger): each container's missing requests come from the
namespace's Container items' defaultRequest, its missing limits from their default.
It runs after the decoding defaults, so a limit given alone has already become the
request by then.

Quantities keep their text: the milli-scale rounding the server also applies is left to
the reader (collectors/k8s/pods.py rounds as it parses).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def _default_container(container: Obj) -> None:
    res = container.get("resources")
    if not isinstance(res, dict) or not isinstance(res.get("limits"), dict):
        return
    requests = res.setdefault("requests", {})
    if isinstance(requests, dict):
        for name, value in res["limits"].items():
            requests.setdefault(name, value)


def _default_limit_range_item(item: Obj) -> None:
    if item.get("type") != "Container":
        return
    default = item.setdefault("default", {})
    default_request = item.setdefault("defaultRequest", {})
    for name, value in (item.get("max") or {}).items():
        default.setdefault(name, value)
    for name, value in default.items():
        default_request.setdefault(name, value)
    for name, value in (item.get("min") or {}).items():
        default_request.setdefault(name, value)


def apply_defaults(obj: Obj) -> None:
    """Default ``obj`` in place, as the API server does before storing it."""
    kind, spec = obj.get("kind"), obj.get("spec")
    if not isinstance(spec, dict):
        return
    if kind == "Pod":
        for key in ("initContainers", "containers"):
            for c in spec.get(key) or []:
                if isinstance(c, dict):
                    _default_container(c)
    elif kind == "LimitRange":
        for item in spec.get("limits") or []:
            if isinstance(item, dict):
                _default_limit_range_item(item)


def apply_limit_ranges(pod: Obj, limit_ranges: list[Obj]) -> None:
    """LimitRanger's defaults merged into the pod's containers, in place: only what the
    container leaves unset (mergePodResourceRequirements)."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    requests: Obj = {}
    limits: Obj = {}
    for lr in limit_ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            if isinstance(item, dict) and item.get("type") == "Container":
                requests.update(item.get("defaultRequest") or {})
                limits.update(item.get("default") or {})
    if not requests and not limits:
        return
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            if not isinstance(c, dict):
                continue
            res = c.setdefault("resources", {})
            if not isinstance(res, dict):
                continue
            for field_name, defaults in (("requests", requests), ("limits", limits)):
                if defaults:
                    have = res.setdefault(field_name, {})
                    if isinstance(have, dict):
                        for name, value in defaults.items():
                            have.setdefault(name, value)
