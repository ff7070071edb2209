"""KubernetesCollector: Kubernetes (and Kueue, when its CRDs are served) as a quotatop source.

Every resource is listed once and then watched (see ``collectors/k8s/reflector.py``):
a refresh reads memory and does not relist; ``collectors/k8s/mapping.py`` turns what is
listed into the snapshot. Kueue's pending positions cannot be watched: they are polled
every ``visibility_interval`` seconds. Only get/list/watch are ever sent.
The ``kubernetes`` client is imported when the collector starts, not at import.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from typing import Any

from quotatop.collectors.k8s import mapping as mp
from quotatop.collectors.k8s import reflector as rf
from quotatop.collectors.k8s import visibility as vis
from quotatop.collectors.k8s.client import SetupError, get_json, load_client
from quotatop.collectors.k8s.config import KubernetesConfig
from quotatop.collectors.k8s.discovery import (
    KUEUE_GROUP,
    KUEUE_PLURALS,
    cohort_version,
    discover_kueue,
    discover_visibility,
)
from quotatop.collectors.k8s.kueue import cluster_queue_partition, fill_unseen_usage
from quotatop.collectors.model import Snapshot, SourceStatus
from quotatop.collectors.untrusted import redact_url

Obj = dict[str, Any]


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
        return f"KubernetesCollector(server={redact_url(self._server)!r})"

    # --- setup ---------------------------------------------------------------------------

    def _get_json(self, path: str) -> Obj:
        c = self.config
        return get_json(self._api_client, self._server, path, c.connect_timeout,
                        c.max_answer_bytes)

    def _start(self) -> None:
        from kubernetes import client

        self._api_client, self._server = load_client(self.config)
        core = client.CoreV1Api(self._api_client)
        sched = client.SchedulingV1Api(self._api_client)
        custom = client.CustomObjectsApi(self._api_client)
        groups = self._get_json("/apis").get("groups") or []
        kueue_version, kueue_note = discover_kueue(groups, self.config.kueue)
        self._kueue_version = kueue_version
        if kueue_note is not None:
            self._kueue_note = kueue_note
        self._visibility_version, visibility_note = discover_visibility(
            groups, kueue_version, self.config.visibility
        )
        if visibility_note is not None:
            self._visibility_note = visibility_note
        fns: dict[str, Callable[..., Any]] = {
            "namespaces": core.list_namespace,
            "resourcequotas": core.list_resource_quota_for_all_namespaces,
            "limitranges": core.list_limit_range_for_all_namespaces,
            "pods": core.list_pod_for_all_namespaces,
            "nodes": core.list_node,
            "priorityclasses": sched.list_priority_class,
        }
        if kueue_version is not None:
            for plural in KUEUE_PLURALS:
                fns[plural] = functools.partial(
                    custom.list_cluster_custom_object, KUEUE_GROUP, kueue_version, plural
                )
            cohorts = cohort_version(self._get_json, kueue_version)
            if cohorts is not None:
                fns["cohorts"] = functools.partial(
                    custom.list_cluster_custom_object, KUEUE_GROUP, cohorts, "cohorts"
                )
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
                max_answer_bytes=c.max_answer_bytes,
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
            except SetupError as exc:
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

    def _listed(self) -> dict[str, list[Obj]]:
        return {key: r.items() for key, r in self.reflectors.items()}

    def _build(self, now: float) -> Snapshot:
        snap = Snapshot(
            cluster=self.config.cluster,
            source=self.name,
            taken_at=now,
            # Redacted: the snapshot is shown, recorded and exported.
            meta={"server": redact_url(self._server), **self.config.extra},
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
            if err is not None and kind in (rf.CONNECTION, rf.UNAUTHORIZED, rf.REFUSED):
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

        listed = self._listed()
        ns_team = mp.namespace_teams(listed, self.config)
        lq_cq = mp.localqueue_map(listed)
        snap.nodes = mp.to_nodes(listed)
        snap.qos = mp.to_qos(listed)
        snap.teams = mp.to_teams(listed, ns_team, lq_cq, now)
        queues_listed = all(
            key in self.reflectors and self.reflectors[key].error is None
            for key in ("localqueues", "clusterqueues")
        )
        snap.jobs = mp.to_jobs(listed, self.config, ns_team, lq_cq, queues_listed)
        cluster_queues = listed.get("clusterqueues", [])
        fill_unseen_usage(snap.teams, snap.jobs, {cq["metadata"]["name"] for cq in cluster_queues})
        flavors = {f["metadata"]["name"]: f for f in listed.get("resourceflavors", [])}
        snap.partitions = [cluster_queue_partition(cq, flavors, snap.nodes)
                           for cq in cluster_queues]
        mp.fill_node_allocation(snap.nodes, listed)
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
            listed = self.reflectors.get("clusterqueues")
            cqs = [cq["metadata"]["name"] for cq in (listed.items() if listed else [])]
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
        mp.apply_positions(snap.jobs, last.positions)

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


__all__ = ["KubernetesCollector", "KubernetesConfig"]
