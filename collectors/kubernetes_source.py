"""Kubernetes (and Kueue, when its CRDs are served) as a quotatop source.

Teams are namespaces (or the value of a namespace label); ResourceQuota gives each
one its max and usage, LimitRange its per-job limit; Pods are jobs, Nodes nodes,
PriorityClasses QoS. With Kueue, every ClusterQueue is a team too (guarantee =
nominal quota, max = nominal + borrowing limit, lendable = lending limit), the
namespaces feeding it via LocalQueues become its children, and Workloads replace
the pods they own as jobs.

Every resource is listed once and then watched (see ``collectors/k8s/reflector.py``):
a refresh reads memory and does not relist. Only get/list/watch are ever sent.
The ``kubernetes`` client is imported when the collector starts, not at import.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from collectors.k8s import reflector as rf
from collectors.k8s import visibility as vis
from collectors.k8s.kubeconfig import KubeconfigError, check_kubeconfig
from collectors.k8s.kueue import (
    cluster_queue_partition,
    cluster_queue_to_team,
    cohort_to_team,
    fill_unseen_usage,
    workload_to_job,
)
from collectors.k8s.pods import condition, parse_time, pod_requests, pod_state, qos_class
from collectors.k8s.quantity import MIB, convert, convert_quota, parse_quantity, resource_key
from collectors.model import (
    PENDING,
    PREEMPTED,
    Job,
    Node,
    QoS,
    Snapshot,
    SourceStatus,
    Team,
)

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta2", "v1beta1")  # understood by collectors/k8s/kueue.py; preferred first
SYSTEM_NAMESPACES = ("kube-system", "kube-public", "kube-node-lease", "kueue-system")
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"

Obj = dict[str, Any]


@dataclass
class KubernetesConfig:
    kubeconfig: str | None = None  # None: $KUBECONFIG or ~/.kube/config, then in-cluster
    context: str | None = None
    in_cluster: bool = False
    team_label: str | None = None  # namespace label naming the team; None: the namespace
    exclude_namespaces: tuple[str, ...] = SYSTEM_NAMESPACES
    # Only these namespaces' teams and jobs (--namespace); None: every one not excluded.
    # Cluster-scoped state (ClusterQueues, nodes) stays whole: what the others hold of a
    # ClusterQueue becomes its unseen usage.
    namespaces: tuple[str, ...] | None = None
    kueue: bool | None = None  # None: use Kueue when its CRDs are served
    watch_timeout: float = 60.0
    connect_timeout: float = 5.0
    page_size: int = 500
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    sync_timeout: float = 10.0  # how long the first collect waits for the initial lists
    visibility: bool | None = None  # Kueue pending positions; None: when the API is served
    visibility_interval: float = 10.0  # seconds between polls (it cannot be watched)
    cluster: str = ""
    extra: dict[str, str] = field(default_factory=dict)


class KubernetesCollector:
    name = "k8s"

    def __init__(self, config: KubernetesConfig | None = None) -> None:
        self.config = config or KubernetesConfig()
        self._api_client: Any = None
        self._server = ""
        self.reflectors: dict[str, rf.Reflector] = {}
        self._setup_error: str | None = None
        self._kueue_note: str | None = None
        self._kueue_version: str | None = None
        self._visibility_version: str | None = None
        self._visibility_note: str | None = None
        self._visibility: vis.PollResult | None = None
        self._visibility_at: float | None = None
        self._last: Snapshot | None = None

    def __repr__(self) -> str:  # the client config holds the token: never show it
        return f"KubernetesCollector(server={self._server!r})"

    # --- setup ---------------------------------------------------------------------------

    def _load_client(self) -> Any:
        from kubernetes import client, config
        from kubernetes.config.config_exception import ConfigException

        cfg = client.Configuration()
        path = self.config.kubeconfig or os.environ.get("KUBECONFIG") or None
        default_path = os.path.expanduser("~/.kube/config")
        try:
            if self.config.in_cluster:
                config.load_incluster_config(client_configuration=cfg)
            elif path or os.path.exists(default_path):
                path = path or default_path
                if not os.path.exists(path):
                    raise _SetupError(f"kubeconfig {path} not found")
                try:
                    check_kubeconfig(path, self.config.context)
                except KubeconfigError as exc:
                    raise _SetupError(str(exc)) from None
                config.load_kube_config(
                    config_file=path, context=self.config.context, client_configuration=cfg
                )
            else:
                try:
                    config.load_incluster_config(client_configuration=cfg)
                except ConfigException:
                    raise _SetupError(
                        "no kubeconfig (set --kubeconfig or KUBECONFIG) and not in a cluster"
                    ) from None
        except _SetupError:
            raise
        except ConfigException as exc:
            raise _SetupError(f"kubeconfig {path or ''}: {_first_line(exc)}".strip()) from None
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
            # Broken YAML, expired exec credentials and the like: one line, no traceback.
            raise _SetupError(f"kubeconfig {path or ''}: {_first_line(exc)}".strip()) from None
        # We retry with our own backoff; the client's retries would only hide outages.
        cfg.retries = 0
        # One pooled connection per watch plus the discovery calls.
        cfg.connection_pool_maxsize = 32
        self._server = cfg.host
        return client.ApiClient(cfg)

    def _get_json(self, path: str) -> Obj:
        resp = self._api_client.call_api(
            "GET",
            self._server.rstrip("/") + path,
            header_params={
                "Accept": "application/json",
                **self._auth_header(),
            },
            _request_timeout=(self.config.connect_timeout, self.config.connect_timeout),
        )
        rf.check_response(resp)
        resp.read()
        return json.loads(resp.data)

    def _auth_header(self) -> dict[str, str]:
        cfg = self._api_client.configuration
        settings = cfg.auth_settings()
        bearer = settings.get("BearerToken")
        if bearer and bearer.get("value"):
            return {bearer["key"]: bearer["value"]}
        return {}

    def _discover_kueue(self, groups: list[Obj]) -> str | None:
        """The Kueue version to use, or None (with a note when it is there but unknown)."""
        if self.config.kueue is False:
            return None
        for group in groups:
            if group.get("name") != KUEUE_GROUP:
                continue
            versions = [v.get("version") for v in group.get("versions") or []]
            for known in KUEUE_VERSIONS:
                if known in versions:
                    return known
            self._kueue_note = (
                f"Kueue API {KUEUE_GROUP} serves {', '.join(map(str, versions))}; quotatop "
                f"understands {', '.join(KUEUE_VERSIONS)}: Kueue data not shown"
            )
            return None
        if self.config.kueue:
            self._kueue_note = f"Kueue requested but {KUEUE_GROUP} is not served"
        return None

    def _discover_visibility(self, groups: list[Obj]) -> str | None:
        if self._kueue_version is None or self.config.visibility is False:
            return None
        for group in groups:
            if group.get("name") == vis.GROUP:
                versions = [v.get("version") for v in group.get("versions") or []]
                for known in vis.VERSIONS:
                    if known in versions:
                        return known
                self._visibility_note = (
                    f"{vis.GROUP} serves {', '.join(map(str, versions))}: queue positions not shown"
                )
                return None
        self._visibility_note = f"{vis.GROUP} {vis.NOT_SERVED}"
        return None

    def _kueue_has(self, version: str, plural: str) -> bool:
        try:
            body = self._get_json(f"/apis/{KUEUE_GROUP}/{version}")
        except Exception:
            return False
        return any(r.get("name") == plural for r in body.get("resources") or [])

    def _start(self) -> None:
        from kubernetes import client

        self._api_client = self._load_client()
        core = client.CoreV1Api(self._api_client)
        sched = client.SchedulingV1Api(self._api_client)
        custom = client.CustomObjectsApi(self._api_client)
        groups = self._get_json("/apis").get("groups") or []
        kueue_version = self._kueue_version = self._discover_kueue(groups)
        self._visibility_version = self._discover_visibility(groups)
        fns: dict[str, Callable[..., Any]] = {
            "namespaces": core.list_namespace,
            "resourcequotas": core.list_resource_quota_for_all_namespaces,
            "limitranges": core.list_limit_range_for_all_namespaces,
            "pods": core.list_pod_for_all_namespaces,
            "nodes": core.list_node,
            "priorityclasses": sched.list_priority_class,
        }
        if kueue_version is not None:
            for plural in ("clusterqueues", "localqueues", "workloads", "resourceflavors"):
                fns[plural] = functools.partial(
                    custom.list_cluster_custom_object, KUEUE_GROUP, kueue_version, plural
                )
            # Cohort moved from v1alpha1 to the main versions in later Kueue releases.
            for cohort_version in (kueue_version, "v1alpha1"):
                if self._kueue_has(cohort_version, "cohorts"):
                    fns["cohorts"] = functools.partial(
                        custom.list_cluster_custom_object, KUEUE_GROUP, cohort_version, "cohorts"
                    )
                    break
        c = self.config
        for key, fn in fns.items():
            r = rf.Reflector(
                key,
                fn,
                server=self._server,
                page_size=c.page_size,
                watch_timeout=c.watch_timeout,
                connect_timeout=c.connect_timeout,
                backoff_initial=c.backoff_initial,
                backoff_max=c.backoff_max,
            )
            self.reflectors[key] = r
            r.start()
        deadline = time.monotonic() + c.sync_timeout
        for r in self.reflectors.values():
            while not r.synced.is_set() and r.error is None and time.monotonic() < deadline:
                r.synced.wait(0.05)

    # --- collect -------------------------------------------------------------------------

    def collect(self) -> Snapshot:
        now = time.time()
        if not self.reflectors:
            try:
                self._setup_error = None
                self._start()
            except _SetupError as exc:
                self._setup_error = str(exc)
            except Exception as exc:
                self._setup_error = rf.classify(exc, "discovery", self._server or "?")[1]
            if self._setup_error is not None:
                self._stop_reflectors()
                return self._stale_setup(now, self._setup_error)
        snap = self._build(now)
        self._last = snap
        return snap

    def _stale_setup(self, now: float, reason: str) -> Snapshot:
        base = self._last or Snapshot(cluster=self.config.cluster, source=self.name)
        snap = Snapshot(**{f: getattr(base, f) for f in base.__struct_fields__})
        snap.taken_at = now
        snap.stale = True
        snap.stale_reason = f"k8s: {reason}"
        snap.status = [SourceStatus(name="k8s", ok=False, error=reason, at=now)]
        return snap

    def _items(self, key: str) -> list[Obj]:
        r = self.reflectors.get(key)
        return r.items() if r is not None else []

    def _build(self, now: float) -> Snapshot:
        snap = Snapshot(
            cluster=self.config.cluster,
            source=self.name,
            taken_at=now,
            meta={"server": self._server, **self.config.extra},
        )
        stale: list[str] = []
        for key, r in self.reflectors.items():
            err, kind = r.error, r.error_kind
            snap.status.append(
                SourceStatus(
                    name=f"k8s:{key}",
                    ok=err is None,
                    error=err,
                    latency_ms=r.list_latency_ms,
                    at=now,
                )
            )
            if err is not None and kind in (rf.CONNECTION, rf.UNAUTHORIZED):
                stale.append(err)
            elif err is not None and kind == rf.FORBIDDEN:
                snap.warnings.append(f"{key} not shown: {err}")
        if self._kueue_version is not None:
            snap.meta["kueue"] = f"{KUEUE_GROUP}/{self._kueue_version}"
        if self._kueue_note:
            snap.warnings.append(self._kueue_note)
            snap.status.append(SourceStatus(name="k8s:kueue", ok=False, error=self._kueue_note))
        if stale:
            retry = max((r.attempt for r in self.reflectors.values()), default=0)
            snap.stale = True
            snap.stale_reason = f"k8s: {stale[0]}; reconnecting (attempt {retry})"

        ns_team = self._namespace_teams()
        lq_cq = self._localqueue_map()
        snap.nodes = self._nodes()
        snap.qos = self._qos()
        snap.teams = self._teams(ns_team, lq_cq)
        snap.jobs = self._jobs(ns_team, lq_cq)
        fill_unseen_usage(snap.teams, snap.jobs,
                          {cq["metadata"]["name"] for cq in self._items("clusterqueues")})
        flavors = {f["metadata"]["name"]: f for f in self._items("resourceflavors")}
        snap.partitions = [cluster_queue_partition(cq, flavors, snap.nodes)
                           for cq in self._items("clusterqueues")]
        self._fill_node_allocation(snap)
        self._fill_queue_positions(snap, lq_cq, now)
        return snap

    def _fill_queue_positions(
        self, snap: Snapshot, lq_cq: Mapping[tuple[str, str], str], now: float
    ) -> None:
        if self._kueue_version is None or self.config.visibility is False:
            return
        if self._visibility_version is None:
            snap.meta["k8s:visibility"] = self._visibility_note or vis.NOT_SERVED
            snap.status.append(SourceStatus(name="k8s:visibility", ok=True, at=now))
            return
        due = (
            self._visibility_at is None
            or now - self._visibility_at >= self.config.visibility_interval
        )
        if due and not snap.stale:
            feeders: dict[str, list[tuple[str, str]]] = {}
            for (ns, lq), cq in sorted(lq_cq.items()):
                feeders.setdefault(cq, []).append((ns, lq))
            cqs = [cq["metadata"]["name"] for cq in self._items("clusterqueues")]
            result = vis.poll(self._get_json, self._visibility_version, cqs, feeders, self._server)
            self._visibility_at = now
            if not result.served:
                # Discovery listed it but it does not answer (Kueue's visibility server off).
                self._visibility_version = None
                self._visibility_note = f"{vis.GROUP} {vis.NOT_SERVED} (404)"
                self._fill_queue_positions(snap, lq_cq, now)
                return
            if not result.errors or result.positions or self._visibility is None:
                self._visibility = result
            else:  # keep the last good positions through an outage, reported below
                self._visibility.errors = result.errors
        last = self._visibility
        if last is None:
            return
        err = None
        if last.errors:  # one line: the first problem, and how many more there were
            more = len(last.errors) - 1
            err = last.errors[0] + (f" (and {more} more queue(s))" if more else "")
        snap.status.append(
            SourceStatus(
                name="k8s:visibility",
                ok=err is None,
                error=err,
                latency_ms=last.latency_ms,
                at=self._visibility_at,
            )
        )
        for job in snap.jobs:
            ns, _, name = job.id.partition("/")
            pos = last.positions.get((ns, name))
            if pos is not None and job.state in (PENDING, PREEMPTED):
                job.queue_position, job.local_queue_position = pos

    # --- mapping -------------------------------------------------------------------------

    def _shown(self, ns: str) -> bool:
        wanted = self.config.namespaces
        return ns not in self.config.exclude_namespaces and (wanted is None or ns in wanted)

    def _namespace_teams(self) -> dict[str, str]:
        out: dict[str, str] = {}
        label = self.config.team_label
        for ns in self._items("namespaces"):
            meta = ns.get("metadata") or {}
            name = meta.get("name", "")
            if not self._shown(name):
                continue
            if label is None:
                out[name] = name
            elif (team := (meta.get("labels") or {}).get(label)) is not None:
                out[name] = team
        return out

    def _localqueue_map(self) -> dict[tuple[str, str], str]:
        return {
            (lq["metadata"].get("namespace", ""), lq["metadata"]["name"]): (
                (lq.get("spec") or {}).get("clusterQueue", "")
            )
            for lq in self._items("localqueues")
        }

    def _teams(
        self, ns_team: Mapping[str, str], lq_cq: Mapping[tuple[str, str], str]
    ) -> list[Team]:
        teams: dict[str, Team] = {}
        for ns, team in ns_team.items():
            t = teams.setdefault(team, Team(name=team, usage={}, source_notes=[]))
            if team != ns:
                t.source_notes.append(f"namespace {ns}")
        quota_max: dict[str, dict[str, float]] = {}
        for rq in self._items("resourcequotas"):
            ns = rq["metadata"].get("namespace", "")
            team = ns_team.get(ns)
            if team is None:
                continue
            t = teams[team]
            spec = rq.get("spec") or {}
            status = rq.get("status") or {}
            hard = convert_quota(status.get("hard") or spec.get("hard"))
            used = convert_quota(status.get("used"))
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
        for lr in self._items("limitranges"):
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
        flavors = {f["metadata"]["name"]: f for f in self._items("resourceflavors")}
        out = list(teams.values())
        for cq in self._items("clusterqueues"):
            name = cq["metadata"]["name"]
            out.append(cluster_queue_to_team(cq, flavors, feeders.get(name, [])))
        out += [cohort_to_team(c) for c in self._items("cohorts")]
        # Kueue creates a cohort implicitly when a ClusterQueue or Cohort names one that
        # has no object of its own: it exists, with no quota. Add it, so that every
        # parent named is a team (the core refuses a parent it does not know).
        known = {t.name for t in out}
        for name in sorted({t.parent for t in out if t.parent and t.parent not in known}):
            out.append(Team(name=name, source_notes=["Kueue cohort (implicit: no object)"]))
        return sorted(out, key=lambda t: t.name)

    def _nodes(self) -> list[Node]:
        nodes: list[Node] = []
        for n in self._items("nodes"):
            meta = n.get("metadata") or {}
            spec = n.get("spec") or {}
            status = n.get("status") or {}
            labels = dict(meta.get("labels") or {})
            product = labels.get(GPU_PRODUCT_LABEL)
            cap = _node_resources(status.get("capacity"), product)
            alloc = _node_resources(status.get("allocatable"), product)
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

    def _qos(self) -> list[QoS]:
        pcs = self._items("priorityclasses")
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

    def _jobs(self, ns_team: Mapping[str, str], lq_cq: Mapping[tuple[str, str], str]) -> list[Job]:
        jobs: list[Job] = []
        wl_by_owner: dict[str, Job] = {}
        for wl in self._items("workloads"):
            meta = wl.get("metadata") or {}
            ns = meta.get("namespace", "")
            if not self._shown(ns):
                continue
            queue = (wl.get("spec") or {}).get("queueName", "")
            cq = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue") or (
                lq_cq.get((ns, queue))
            )
            # Kueue charges a workload's quota, borrowing and preemption to its
            # ClusterQueue, not to its namespace: the CQ is the team the core checks.
            job = workload_to_job(wl, cq or ns_team.get(ns, ns), cq)
            jobs.append(job)
            for ref in meta.get("ownerReferences") or []:
                if ref.get("uid"):
                    wl_by_owner[ref["uid"]] = job
        for pod in self._items("pods"):
            meta = pod.get("metadata") or {}
            ns = meta.get("namespace", "")
            if not self._shown(ns):
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
                    request=_model_request(pod_requests(pod)),
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

    def _fill_node_allocation(self, snap: Snapshot) -> None:
        by_name = {n.name: n for n in snap.nodes}
        for pod in self._items("pods"):
            spec = pod.get("spec") or {}
            node = by_name.get(spec.get("nodeName") or "")
            phase = (pod.get("status") or {}).get("phase")
            if node is None or phase in ("Succeeded", "Failed"):
                continue
            for k, v in _model_request(pod_requests(pod)).items():
                node.allocated[k] = node.allocated.get(k, 0.0) + v
                if k == "gpu" and node.gpu_type:
                    key = f"gpu:{node.gpu_type}"
                    node.allocated[key] = node.allocated.get(key, 0.0) + v
        for node in snap.nodes:
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

    def _stop_reflectors(self) -> None:
        for r in self.reflectors.values():
            r.stop()
        self.reflectors = {}

    def close(self) -> None:
        self._stop_reflectors()
        if self._api_client is not None:
            self._api_client.close()
            self._api_client = None

    def requests_summary(self) -> dict[str, int]:
        return {k: r.lists for k, r in self.reflectors.items()}


class _SetupError(Exception):
    pass


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def _node_resources(raw: Mapping[str, Any] | None, product: str | None) -> dict[str, float]:
    out = convert(raw)
    out.pop("pods", None)
    if product and "gpu" in out:
        out[f"gpu:{product}"] = out["gpu"]
    return out


def _model_request(raw: Mapping[str, float]) -> dict[str, float]:
    """Base-unit pod requests → model units (memory MiB; nvidia.com/gpu → gpu)."""
    out: dict[str, float] = {}
    for name, value in raw.items():
        if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
            out[resource_key(name)] = value / MIB
        else:
            out[resource_key(name)] = value
    return out


__all__ = ["KubernetesCollector", "KubernetesConfig", "parse_quantity"]
