"""Listed Kubernetes/Kueue objects → the snapshot model: pure functions, no client.

Teams are namespaces (or the value of a namespace label); ResourceQuota gives each
one its max and usage, LimitRange its per-job limit; Pods are jobs, Nodes nodes,
PriorityClasses QoS. With Kueue, every ClusterQueue is a team too (see
``collectors/k8s/kueue.py``), the namespaces feeding it via LocalQueues become its
children, and Workloads replace the pods they own as jobs.

``listed`` is every object listed, by plural (``"pods"``, ``"clusterqueues"``…);
a plural not listed (Kueue absent, access forbidden) is simply empty."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from quotatop.collectors.k8s.config import KubernetesConfig
from quotatop.collectors.k8s.kueue import cluster_queue_to_team, cohort_to_team, workload_to_job
from quotatop.collectors.k8s.pods import condition, parse_time, pod_requests, pod_state, qos_class
from quotatop.collectors.k8s.quantity import (
    MIB,
    convert,
    convert_quota,
    quota_key,
    resource_key,
)
from quotatop.collectors.k8s.quota import quota_charge
from quotatop.collectors.k8s.visibility import Positions
from quotatop.collectors.model import PENDING, PREEMPTED, Job, Node, QoS, QuotaObject, Team

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"

Obj = dict[str, Any]
Listed = Mapping[str, list[Obj]]


def namespace_teams(listed: Listed, config: KubernetesConfig) -> dict[str, str]:
    """Namespace → the team it belongs to, for every namespace shown.

    A ClusterQueue is a team of its own name, and a namespace is often named as the
    queue it feeds ("sales" feeding ClusterQueue "sales", as in Kueue's own tests): such a
    namespace's team is "<name> (namespace)", so that the two stay apart (one name
    listed twice is refused by the core, and the namespace would be its own parent)."""
    out: dict[str, str] = {}
    label = config.team_label
    queues = {(cq.get("metadata") or {}).get("name") for cq in listed.get("clusterqueues", [])}
    for ns in listed.get("namespaces", []):
        meta = ns.get("metadata") or {}
        name = meta.get("name", "")
        if not config.shown(name):
            continue
        if label is None:
            out[name] = name
        elif (team := (meta.get("labels") or {}).get(label)) is not None:
            out[name] = team
    return {ns: f"{team} (namespace)" if team in queues else team for ns, team in out.items()}


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a Kubernetes LabelSelector (matchLabels, matchExpressions with In,
    NotIn, Exists, DoesNotExist) selects an object with these labels; {} selects all."""
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key", ""), expr.get("operator")
        values = expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False  # an operator the API server refuses: selects nothing
    return True


def localqueue_map(listed: Listed) -> dict[tuple[str, str], str]:
    """(namespace, LocalQueue) → the ClusterQueue it feeds."""
    return {
        (lq["metadata"].get("namespace", ""), lq["metadata"]["name"]): (
            (lq.get("spec") or {}).get("clusterQueue", "")
        )
        for lq in listed.get("localqueues", [])
    }


def quota_used(rq: Obj, listed: Listed, now: float | None) -> tuple[dict[str, Any] | None, bool]:
    """A ResourceQuota's usage as its status states it, or, where the quota controller
    has not synced it yet (no ``status.used``), as the namespace's pods charge it
    (``collectors/k8s/quota.py``), for the resources the quota limits. The flag says
    the usage was computed here."""
    status = rq.get("status") or {}
    if isinstance(status.get("used"), Mapping):
        return status["used"], False
    if now is None:
        return None, False
    hard = status.get("hard") or (rq.get("spec") or {}).get("hard") or {}
    used = {k: 0.0 for k in hard}
    for pod in listed.get("pods", []):
        for k, v in quota_charge(rq, pod, now).items():
            used[k] += v
    return used, True


def to_teams(
    listed: Listed,
    ns_team: Mapping[str, str],
    lq_cq: Mapping[tuple[str, str], str],
    now: float | None = None,
) -> list[Team]:
    """Namespace teams with their quotas and limits, ClusterQueues and cohorts.

    ``now`` lets a quota without a synced status take its usage from the pods (a pod
    stuck terminating stops counting at its deletion deadline, which needs the time)."""
    teams: dict[str, Team] = {}
    for ns, team in ns_team.items():
        t = teams.setdefault(team, Team(name=team, usage={}, source_notes=[],
                                        quota_objects=[]))
        if team != ns:
            t.source_notes.append(f"namespace {ns}")
    quota_max: dict[str, dict[str, float]] = {}
    for rq in listed.get("resourcequotas", []):
        ns = rq["metadata"].get("namespace", "")
        team = ns_team.get(ns)
        if team is None:
            continue
        t = teams[team]
        spec = rq.get("spec") or {}
        status = rq.get("status") or {}
        hard = convert_quota(status.get("hard") or spec.get("hard"))
        raw_used, computed = quota_used(rq, listed, now)
        used = convert_quota(raw_used)
        if computed:
            t.source_notes.append(
                f"quota {ns}/{rq['metadata']['name']}: usage computed from the pods "
                "(the quota controller has not stated it yet)"
            )
        scopes = list(spec.get("scopes") or [])
        for expr in (spec.get("scopeSelector") or {}).get("matchExpressions") or []:
            vals = ",".join(expr.get("values") or [])
            scopes.append(f"{expr.get('scopeName')} {expr.get('operator')} {vals}".strip())
        if scopes:
            # A scoped quota limits only matching pods: beside the team max, not in it.
            t.source_notes.append(
                f"quota {ns}/{rq['metadata']['name']} [{'; '.join(scopes)}]: "
                + ", ".join(f"{k} {used.get(k, 0):g}/{v:g}" for k, v in sorted(hard.items()))
            )
            continue
        # The keys as the quota writes them (requests.nvidia.com/gpu or the bare name),
        # for a command that would patch its spec.hard (quotatop whatif).
        raw_hard = spec.get("hard") or status.get("hard") or {}
        t.quota_objects.append(QuotaObject(
            kind="resourcequota", name=rq["metadata"]["name"], namespace=ns,
            keys={quota_key(k): k for k in raw_hard}))
        qm = quota_max.setdefault(team, {})
        for k, v in hard.items():
            # Several unscoped quotas in a namespace all apply: the tightest wins;
            # several namespaces of one team add up.
            qm[k] = min(qm.get(k, v), v) if team == ns else qm.get(k, 0.0) + v
        for k, v in used.items():
            t.usage[k] = t.usage.get(k, 0.0) + v
    for team, qm in quota_max.items():
        teams[team].max = qm
        teams[team].source_notes.append("ResourceQuota: a hard max, no guarantee")
    for lr in listed.get("limitranges", []):
        ns = lr["metadata"].get("namespace", "")
        team = ns_team.get(ns)
        if team is None:
            continue
        t = teams[team]
        by_type = {lim.get("type"): lim for lim in (lr.get("spec") or {}).get("limits") or []}
        chosen = by_type.get("Pod") or by_type.get("Container")
        if chosen and chosen.get("max"):
            t.per_job_limit = convert(chosen["max"])
        for ltype, lim in by_type.items():
            parts = []
            for field_name in ("min", "max", "default", "defaultRequest"):
                if lim.get(field_name):
                    vals = ", ".join(f"{k}={v}" for k, v in sorted(lim[field_name].items()))
                    parts.append(f"{field_name} {vals}")
            if lim.get("maxLimitRequestRatio"):
                ratio = ", ".join(
                    f"{k}={v}" for k, v in sorted(lim["maxLimitRequestRatio"].items())
                )
                parts.append(f"maxLimitRequestRatio {ratio}")
            if parts:
                t.source_notes.append(f"LimitRange {ltype}: " + "; ".join(parts))
    # Kueue: ClusterQueues are teams; a namespace feeding exactly one becomes its child.
    feeders: dict[str, list[str]] = {}
    for (ns, _lq), cq in lq_cq.items():
        if cq and ns in ns_team:
            feeders.setdefault(cq, [])
            if ns not in feeders[cq]:
                feeders[cq].append(ns)
    for team_name, t in teams.items():
        cqs = {cq for (ns, _), cq in lq_cq.items() if ns_team.get(ns) == team_name and cq}
        if len(cqs) == 1:
            t.parent = next(iter(cqs))
        elif len(cqs) > 1:
            t.source_notes.append("feeds ClusterQueues " + ", ".join(sorted(cqs)))
    flavors = {f["metadata"]["name"]: f for f in listed.get("resourceflavors", [])}
    out = list(teams.values())
    for cq in listed.get("clusterqueues", []):
        name = cq["metadata"]["name"]
        out.append(cluster_queue_to_team(cq, flavors, feeders.get(name, [])))
    out += [cohort_to_team(c) for c in listed.get("cohorts", [])]
    # Kueue creates a cohort implicitly when a ClusterQueue or Cohort names one that
    # has no object of its own: it exists, with no quota. Add it, so that every
    # parent named is a team (the core refuses a parent it does not know).
    known = {t.name for t in out}
    for name in sorted({t.parent for t in out if t.parent and t.parent not in known}):
        out.append(Team(name=name, source_notes=["Kueue cohort (implicit: no object)"]))
    return sorted(out, key=lambda t: t.name)


def to_nodes(listed: Listed) -> list[Node]:
    nodes: list[Node] = []
    for n in listed.get("nodes", []):
        meta = n.get("metadata") or {}
        spec = n.get("spec") or {}
        status = n.get("status") or {}
        labels = dict(meta.get("labels") or {})
        product = labels.get(GPU_PRODUCT_LABEL)
        cap = node_resources(status.get("capacity"), product)
        alloc = node_resources(status.get("allocatable"), product)
        taints = [
            f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}"
            for t in spec.get("taints") or []
        ]
        ready = condition(n, "Ready")
        state, reason = "idle", None
        if ready is None or ready.get("status") != "True":
            state = "down"
            reason = (ready or {}).get("message") or "NotReady"
        elif spec.get("unschedulable"):
            state, reason = "drain", "cordoned (spec.unschedulable)"
        nodes.append(
            Node(
                name=meta.get("name", ""),
                state=state,
                capacity=cap or dict(alloc),
                allocatable=alloc or dict(cap),
                gpu_type=product,
                labels=labels,
                taints=taints,
                reason=reason,
            )
        )
    return sorted(nodes, key=lambda x: x.name)


def to_qos(listed: Listed) -> list[QoS]:
    """PriorityClasses as QoS: each preempts every lower one unless it never preempts."""
    pcs = listed.get("priorityclasses", [])
    out: list[QoS] = []
    for pc in pcs:
        value = int(pc.get("value", 0))
        never = pc.get("preemptionPolicy") == "Never"
        lower = [
            p["metadata"]["name"] for p in pcs if int(p.get("value", 0)) < value and not never
        ]
        out.append(
            QoS(
                name=pc["metadata"]["name"],
                priority=value,
                preempts=sorted(lower),
                preempt_mode="off" if never else "requeue",
            )
        )
    return sorted(out, key=lambda q: -q.priority)


def to_jobs(
    listed: Listed,
    config: KubernetesConfig,
    ns_team: Mapping[str, str],
    lq_cq: Mapping[tuple[str, str], str],
    queues_listed: bool = True,
) -> list[Job]:
    """Workloads, and the pods no Workload owns, as jobs.

    A pending Workload whose LocalQueue or ClusterQueue does not exist is ``held``:
    Kueue admits it to no queue. ``queues_listed`` false (the queues could not be
    listed) marks none so."""
    jobs: list[Job] = []
    wl_by_owner: dict[str, Job] = {}
    cq_names = {(cq.get("metadata") or {}).get("name") for cq in listed.get("clusterqueues", [])}
    # A ClusterQueue admits workloads only of the namespaces its namespaceSelector
    # selects; one that states none is not checked here.
    selectors = {
        cq["metadata"]["name"]: sel for cq in listed.get("clusterqueues", [])
        if isinstance(sel := (cq.get("spec") or {}).get("namespaceSelector"), Mapping)
    }
    ns_labels = {
        (n.get("metadata") or {}).get("name", ""): (n.get("metadata") or {}).get("labels") or {}
        for n in listed.get("namespaces", [])
    }
    for wl in listed.get("workloads", []):
        meta = wl.get("metadata") or {}
        ns = meta.get("namespace", "")
        if not config.shown(ns):
            continue
        queue = (wl.get("spec") or {}).get("queueName", "")
        cq = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or (
            lq_cq.get((ns, queue))
        )
        # Kueue charges a workload's quota, borrowing and preemption to its
        # ClusterQueue, not to its namespace: the CQ is the team the core checks.
        job = workload_to_job(wl, cq or ns_team.get(ns, ns), cq)
        if queues_listed and job.state in (PENDING, PREEMPTED):
            if cq is None:
                job.held = (f"LocalQueue {ns}/{queue} does not exist" if queue
                            else "names no LocalQueue") + ": Kueue admits it to no queue"
            elif cq not in cq_names:
                job.held = f"ClusterQueue {cq} does not exist: Kueue admits it to no queue"
            elif cq in selectors and ns in ns_labels and not selector_matches(
                selectors[cq], ns_labels[ns]
            ):
                job.held = (f"namespace {ns} is not selected by ClusterQueue {cq}'s "
                            "namespaceSelector: Kueue does not admit it there")
        jobs.append(job)
        for ref in meta.get("ownerReferences") or []:
            if ref.get("uid"):
                wl_by_owner[ref["uid"]] = job
    for pod in listed.get("pods", []):
        meta = pod.get("metadata") or {}
        ns = meta.get("namespace", "")
        if not config.shown(ns):
            continue
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        owner = next(
            (r["uid"] for r in meta.get("ownerReferences") or [] if r.get("controller")),
            None,
        )
        wl_job = wl_by_owner.get(owner or "")
        if wl_job is not None:
            # The Workload is the job Kueue admits; its pods add only where they run.
            if spec.get("nodeName") and spec["nodeName"] not in wl_job.nodes:
                wl_job.nodes.append(spec["nodeName"])
            started = parse_time(status.get("startTime"))
            if started and (wl_job.start_time is None or started < wl_job.start_time):
                wl_job.start_time = started
            continue
        state, reason = pod_state(pod)
        jobs.append(
            Job(
                id=f"{ns}/{meta.get('name', '')}",
                name=meta.get("name", ""),
                team=ns_team.get(ns, ns),
                qos=spec.get("priorityClassName") or "default",
                state=state,
                request=model_request(pod_requests(pod)),
                submit_time=parse_time(meta.get("creationTimestamp")) or 0.0,
                start_time=parse_time(status.get("startTime")),
                priority=float(spec["priority"]) if spec.get("priority") is not None else None,
                reason=reason,
                nodes=[spec["nodeName"]] if spec.get("nodeName") else [],
                qos_class=qos_class(pod),
                gang=(meta.get("labels") or {}).get("kueue.x-k8s.io/pod-group-name"),
            )
        )
    for job in jobs:
        job.nodes.sort()
    return sorted(jobs, key=lambda j: j.id)


def fill_node_allocation(nodes: list[Node], listed: Listed) -> None:
    """Add the running pods' requests to their nodes and set each node's state by it."""
    by_name = {n.name: n for n in nodes}
    for pod in listed.get("pods", []):
        spec = pod.get("spec") or {}
        node = by_name.get(spec.get("nodeName") or "")
        phase = (pod.get("status") or {}).get("phase")
        if node is None or phase in ("Succeeded", "Failed"):
            continue
        for k, v in model_request(pod_requests(pod)).items():
            node.allocated[k] = node.allocated.get(k, 0.0) + v
            if k == "gpu" and node.gpu_type:
                key = f"gpu:{node.gpu_type}"
                node.allocated[key] = node.allocated.get(key, 0.0) + v
    for node in nodes:
        if node.state in ("down", "drain"):
            continue
        used = node.allocated.get("gpu", 0.0) or node.allocated.get("cpu", 0.0)
        # Pods can only ever get the allocatable part: full at allocatable, not capacity.
        usable = node.allocatable or node.capacity
        cap = usable.get("gpu", 0.0) if node.allocated.get("gpu") else usable.get("cpu", 0.0)
        if used <= 0:
            node.state = "idle"
        elif cap and used >= cap:
            node.state = "allocated"
        else:
            node.state = "mixed"


def apply_positions(jobs: list[Job], positions: Positions) -> None:
    """Give pending jobs the queue positions Kueue's visibility API states."""
    for job in jobs:
        ns, _, name = job.id.partition("/")
        pos = positions.get((ns, name))
        if pos is not None and job.state in (PENDING, PREEMPTED):
            job.queue_position, job.local_queue_position = pos


def node_resources(raw: Mapping[str, Any] | None, product: str | None) -> dict[str, float]:
    out = convert(raw)
    out.pop("pods", None)
    if product and "gpu" in out:
        out[f"gpu:{product}"] = out["gpu"]
    return out


def model_request(raw: Mapping[str, float]) -> dict[str, float]:
    """Base-unit pod requests → model units (memory MiB; nvidia.com/gpu → gpu)."""
    out: dict[str, float] = {}
    for name, value in raw.items():
        if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
            out[resource_key(name)] = value / MIB
        else:
            out[resource_key(name)] = value
    return out
