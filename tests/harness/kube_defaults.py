"""The API server's defaulting of what it stores (pkg/apis/core/v1/defaults.go), for
the fields quotatop reads: a real server never serves an object without it.

* Pod: each container's and init container's limit without a request becomes the
  request (SetDefaults_Pod); an explicit request, 0 included, is kept.
* LimitRange, items of type Container (SetDefaults_LimitRangeItem): a missing default
  limit is the max; a missing default request is the default limit, else the min.

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
