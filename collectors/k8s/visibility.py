"""Kueue's visibility API (``visibility.kueue.x-k8s.io``): where each pending workload
stands in its queues.

It is an aggregated API served by Kueue, not a CRD, so it cannot be watched: the
collector polls it (every ``visibility_interval`` seconds). Admins may read the
ClusterQueue summary; batch users usually only their namespace's LocalQueues, so a 403
on a ClusterQueue falls back to the LocalQueues that feed it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from quotatop.collectors.k8s import reflector as rf

GROUP = "visibility.kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")  # preferred first; both have the same summary shape
NOT_SERVED = "not served by this cluster: Kueue queue positions not shown"

Obj = dict[str, Any]
# (namespace, workload name) -> (position in ClusterQueue, position in LocalQueue)
Positions = dict[tuple[str, str], tuple[int, int]]


def _position(value: Any) -> bool:
    # An int32 in Kueue's API. Found by tests/fuzz: an int past 2^64 (or a bool, an int to
    # isinstance) became Job.queue_position and a recording could not write the frame.
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31


def parse_summary(body: Mapping[str, Any]) -> Positions:
    """Positions out of a ``PendingWorkloadsSummary`` (items lacking a position are skipped)."""
    out: Positions = {}
    for item in body.get("items") or []:
        meta = item.get("metadata") or {}
        in_cq, in_lq = item.get("positionInClusterQueue"), item.get("positionInLocalQueue")
        if not (_position(in_cq) and _position(in_lq)) or not meta.get("name"):
            continue
        out[(meta.get("namespace", ""), meta["name"])] = (in_cq, in_lq)
    return out


@dataclass
class PollResult:
    positions: Positions = field(default_factory=dict)
    served: bool = True
    errors: list[str] = field(default_factory=list)
    latency_ms: float | None = None


def poll(
    get_json: Callable[[str], Obj],
    version: str,
    cluster_queues: Iterable[str],
    local_queues: Mapping[str, list[tuple[str, str]]],
    server: str,
) -> PollResult:
    """One round over every ClusterQueue. ``local_queues``: CQ -> [(namespace, LocalQueue)]."""
    from kubernetes.client.exceptions import ApiException

    result = PollResult()
    started = time.monotonic()
    base = f"/apis/{GROUP}/{version}"
    for cq in sorted(cluster_queues):
        try:
            result.positions.update(
                parse_summary(get_json(f"{base}/clusterqueues/{cq}/pendingworkloads"))
            )
            continue
        except ApiException as exc:
            if exc.status == 404 and not _names_queue(exc):
                result.served = False
                break
            if exc.status != 403:
                result.errors.append(_say(exc, f"pending workloads of {cq}", server))
                continue
            denied = _say(exc, f"pending workloads of {cq}", server)
        except Exception as exc:
            result.errors.append(_say(exc, f"pending workloads of {cq}", server))
            break  # the API server is not answering: the rest would not either
        fetched, lq_errors = 0, []
        for ns, lq in local_queues.get(cq, []):
            path = f"{base}/namespaces/{ns}/localqueues/{lq}/pendingworkloads"
            try:
                result.positions.update(parse_summary(get_json(path)))
                fetched += 1
            except ApiException as exc:
                if exc.status != 404:
                    lq_errors.append(_say(exc, f"pending workloads of {ns}/{lq}", server))
            except Exception as exc:
                lq_errors.append(_say(exc, f"pending workloads of {ns}/{lq}", server))
                break
        result.errors += lq_errors if fetched else [denied, *lq_errors]
    result.latency_ms = (time.monotonic() - started) * 1000.0
    return result


def _names_queue(exc: Any) -> bool:
    """A 404 about one queue (Kueue does not know it yet), not about the whole API."""
    import json

    try:
        details = json.loads(exc.body or "{}").get("details") or {}
    except (ValueError, AttributeError):
        return False
    return details.get("kind") in ("clusterqueue", "localqueue")


def _say(exc: BaseException, what: str, server: str) -> str:
    return rf.classify(exc, what, server)[1]
