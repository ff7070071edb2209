"""A small Kubernetes API server on 127.0.0.1 that speaks the real wire format.

Debian has no kube-apiserver and no PyPI package serves the API faithfully enough
(see docs/testing-kubernetes.md), so this one implements just what a read-only
client relies on, shaped as the API reference defines it:

* discovery: /version, /api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>;
* get and list (``<Kind>List`` with ``metadata.resourceVersion``; built-in list items
  without kind/apiVersion, custom-resource items with them, as the real server does),
  ``limit``/``continue`` paging, ``labelSelector`` (=, ==, !=, exists);
* watch (``?watch=true&resourceVersion=N``): chunked newline-delimited JSON events
  ADDED/MODIFIED/DELETED/BOOKMARK after N; N older than the compacted history gives
  the real server's ``ERROR`` event with a 410 ``Expired`` Status;
  ``timeoutSeconds`` ends the stream;
* bearer-token authentication (401 Unauthorized Status) and per-resource RBAC denial
  (403 Forbidden Status worded as the real authorizer words it);
* a record of every request (method, path, query) so tests can prove a client only reads;
* Kueue at v1beta1 and/or v1beta2 (one store, converted to the version asked for, as
  Kueue's conversion webhook does) and Kueue's visibility API (pending positions); see
  ``kueue_api.py``.

Tests change the cluster through Python methods (``apply``, ``patch``, ``delete``,
``compact``, ``drop_watches``, ``pause``/``resume``); each change bumps the one global
resourceVersion and is delivered to open watches.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import kueue_api
from .kube_defaults import apply_defaults, apply_limit_ranges

Obj = dict[str, Any]


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool
    short: tuple[str, ...] = ()

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def builtin(self) -> bool:
        return not self.group.endswith("x-k8s.io")

    @property
    def singular(self) -> str:
        return self.kind.lower()


CORE = [
    ResourceType("", "v1", "namespaces", "Namespace", False, ("ns",)),
    ResourceType("", "v1", "nodes", "Node", False, ("no",)),
    ResourceType("", "v1", "pods", "Pod", True, ("po",)),
    ResourceType("", "v1", "resourcequotas", "ResourceQuota", True, ("quota",)),
    ResourceType("", "v1", "limitranges", "LimitRange", True, ("limits",)),
    ResourceType("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
]
KUEUE_V1BETA1 = [
    ResourceType("kueue.x-k8s.io", "v1beta1", "clusterqueues", "ClusterQueue", False, ("cq",)),
    ResourceType("kueue.x-k8s.io", "v1beta1", "localqueues", "LocalQueue", True, ("lq",)),
    ResourceType("kueue.x-k8s.io", "v1beta1", "workloads", "Workload", True, ("wl",)),
    ResourceType("kueue.x-k8s.io", "v1beta1", "resourceflavors", "ResourceFlavor", False, ("rf",)),
    ResourceType("kueue.x-k8s.io", "v1alpha1", "cohorts", "Cohort", False),
]


def _status(code: int, reason: str, message: str, details: Obj | None = None) -> Obj:
    out: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        out["details"] = details
    return out


def _now_rfc3339() -> str:
    return datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class _Event:
    rv: int
    rtype: ResourceType
    type: str
    obj: Obj


class _Watch:
    """One open watch stream; the handler thread waits on the server's condition."""

    def __init__(self) -> None:
        self.closed = False


class _Selector:
    def __init__(self, text: str | None) -> None:
        self.terms: list[tuple[str, str, str | None]] = []
        for part in (text or "").split(","):
            part = part.strip()
            if not part:
                continue
            if "!=" in part:
                k, v = part.split("!=", 1)
                self.terms.append((k.strip(), "!=", v.strip()))
            elif "=" in part:
                k, v = part.split("==", 1) if "==" in part else part.split("=", 1)
                self.terms.append((k.strip(), "=", v.strip()))
            elif part.startswith("!"):
                self.terms.append((part[1:].strip(), "!exists", None))
            else:
                self.terms.append((part, "exists", None))

    def matches(self, obj: Obj) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        for key, op, val in self.terms:
            have = labels.get(key)
            if (
                (op == "=" and have != val)
                or (op == "!=" and have == val)
                or (op == "exists" and key not in labels)
                or (op == "!exists" and key in labels)
            ):
                return False
        return True


class KubeAPIServer:
    """State, auth and the HTTP front end. Thread-safe; ``stop`` ends what ``start`` began."""

    def __init__(
        self,
        *,
        kueue: bool = True,
        kueue_versions: tuple[str, ...] = ("v1beta1",),
        visibility: bool = True,
        tokens: dict[str, str] | None = None,
        bookmark_interval: float = 0.5,
        default_watch_timeout: float = 30.0,
    ) -> None:
        self.tokens: dict[str, str] = dict(tokens or {"test-token-for-quotatop": "quotatop-viewer"})
        self.bookmark_interval = bookmark_interval
        self.default_watch_timeout = default_watch_timeout
        self.resources: list[ResourceType] = list(CORE)
        if kueue:
            for rt in KUEUE_V1BETA1:
                # "Unknown CRD version" tests serve Kueue only under versions the client
                # does not know (e.g. v9); cohorts keep their own version.
                if rt.plural == "cohorts":
                    self.resources.append(rt)
                    if "v1beta2" in kueue_versions:  # v1beta2 Kueue serves Cohort there too
                        self.resources.append(
                            ResourceType(rt.group, "v1beta2", rt.plural, rt.kind, False)
                        )
                    continue
                for ver in kueue_versions:
                    self.resources.append(
                        ResourceType(rt.group, ver, rt.plural, rt.kind, rt.namespaced, rt.short)
                    )
        # The visibility API is served by Kueue itself (an aggregated API), per version.
        self.visibility_versions: tuple[str, ...] = (
            tuple(v for v in kueue_versions if v in kueue_api.CONVERTIBLE)
            if kueue and visibility
            else ()
        )
        self._lock = threading.Condition()
        self._rv = 1000
        self._objects: dict[str, dict[tuple[str, str], Obj]] = {}
        self._events: list[_Event] = []
        self._compacted_rv = self._rv  # events at or below this are gone
        self._denied: set[tuple[str, str]] = set()  # (plural, verb) denied; verb "*" = all
        self._watches: set[_Watch] = set()
        self.requests: list[tuple[str, str, str]] = []
        self._conns: set[Any] = set()  # open client sockets, cut by pause()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # --- lifecycle ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, port: int = 0) -> KubeAPIServer:
        server = self

        class Handler(_Handler):
            api = server

        httpd = ThreadingHTTPServer(("127.0.0.1", port or self.port), Handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self.port = httpd.server_port
        self._thread = threading.Thread(target=httpd.serve_forever, name="kube-api", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.drop_watches()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def pause(self) -> None:
        """The API server goes away (connections refused, open ones cut); state is kept."""
        self.stop()
        # Keep-alive connections outlive the listening socket: cut them too.
        with self._lock:
            conns = list(self._conns)
        for sock in conns:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def resume(self) -> None:
        self.start(self.port)

    def __enter__(self) -> KubeAPIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def write_kubeconfig(
        self, path: Path, token: str | None = None, *, user: str = "quotatop-viewer"
    ) -> Path:
        if token is None:
            token = next(iter(self.tokens))
        path.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
                    "users": [{"name": user, "user": {"token": token}}],
                    "contexts": [
                        {
                            "name": "fake",
                            "context": {"cluster": "fake", "user": user, "namespace": "default"},
                        }
                    ],
                    "current-context": "fake",
                },
                indent=2,
            )
        )
        return path

    # --- test controls -----------------------------------------------------------------

    def find(self, plural: str, group: str | None = None) -> ResourceType:
        for rt in self.resources:
            if rt.plural == plural and (group is None or rt.group == group):
                return rt
        raise KeyError(plural)

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    def deny(self, plural: str, verb: str = "*") -> None:
        with self._lock:
            self._denied.add((plural, verb))

    def allow(self, plural: str, verb: str = "*") -> None:
        with self._lock:
            self._denied.discard((plural, verb))

    def _rtype_for(self, obj: Obj) -> ResourceType:
        group, _, version = obj["apiVersion"].rpartition("/")
        for rt in self.resources:
            if rt.kind == obj["kind"] and rt.group == group and rt.version == version:
                return rt
        raise KeyError(f"{obj['apiVersion']} {obj['kind']} is not served")

    def _served_as(self, obj: Obj) -> tuple[ResourceType, Obj]:
        """The type that stores ``obj``; a Kueue object at a version not served is
        converted to one that is, as Kueue's conversion webhook would."""
        try:
            return self._rtype_for(obj), obj
        except KeyError:
            group, _, version = obj["apiVersion"].rpartition("/")
            if group != kueue_api.KUEUE_GROUP or version not in kueue_api.CONVERTIBLE:
                raise
            for rt in self.resources:
                if (
                    rt.group == group
                    and rt.kind == obj["kind"]
                    and rt.version in kueue_api.CONVERTIBLE
                ):
                    return rt, kueue_api.convert(obj, rt.version)
            raise

    def apply(self, obj: Obj) -> Obj:
        """Create or replace; stamps uid/creationTimestamp/resourceVersion as the server does."""
        rtype, obj = self._served_as(obj)
        obj = copy.deepcopy(obj)
        apply_defaults(obj)
        meta = obj.setdefault("metadata", {})
        if obj.get("kind") == "Pod":
            ns = meta.get("namespace", "default")
            with self._lock:
                ranges = [
                    copy.deepcopy(lr)
                    for (lr_ns, _), lr in self._objects.get("limitranges", {}).items()
                    if lr_ns == ns
                ]
            apply_limit_ranges(obj, ranges)
        if rtype.namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        key = (meta.get("namespace", ""), meta["name"])
        with self._lock:
            store = self._objects.setdefault(rtype.plural, {})
            old = store.get(key)
            self._rv += 1
            if old is None:
                meta.setdefault("uid", str(uuid.uuid4()))
                meta.setdefault("creationTimestamp", _now_rfc3339())
                meta.setdefault("generation", 1)
            else:
                meta["uid"] = old["metadata"]["uid"]
                meta["creationTimestamp"] = old["metadata"]["creationTimestamp"]
                meta["generation"] = old["metadata"].get("generation", 1) + 1
            meta["resourceVersion"] = str(self._rv)
            store[key] = obj
            self._emit(rtype, "ADDED" if old is None else "MODIFIED", obj)
            return copy.deepcopy(obj)

    def get(self, plural: str, namespace: str, name: str) -> Obj:
        with self._lock:
            return copy.deepcopy(self._objects[plural][(namespace, name)])

    def patch(self, plural: str, namespace: str, name: str, change: Callable[[Obj], None]) -> Obj:
        obj = self.get(plural, namespace, name)
        change(obj)
        return self.apply(obj)

    def delete(self, plural: str, namespace: str, name: str) -> None:
        rtype = self.find(plural)
        with self._lock:
            obj = self._objects[plural].pop((namespace, name))
            self._rv += 1
            obj["metadata"]["resourceVersion"] = str(self._rv)
            self._emit(rtype, "DELETED", obj)

    def compact(self) -> int:
        """Forget the event history (etcd compaction): older resourceVersions now get 410."""
        with self._lock:
            self._events.clear()
            self._compacted_rv = self._rv
            return self._rv

    def drop_watches(self) -> None:
        """Cut every open watch stream, as a load-balancer or apiserver restart would."""
        with self._lock:
            for w in self._watches:
                w.closed = True
            self._lock.notify_all()

    def open_watches(self) -> int:
        with self._lock:
            return len(self._watches)

    def _emit(self, rtype: ResourceType, etype: str, obj: Obj) -> None:
        self._events.append(_Event(self._rv, rtype, etype, copy.deepcopy(obj)))
        self._lock.notify_all()

    # --- request handling helpers ------------------------------------------------------

    def authenticate(self, header: str | None) -> str | None:
        if not header or not header.startswith("Bearer "):
            return None
        return self.tokens.get(header[len("Bearer ") :].strip())

    def forbidden(self, user: str, verb: str, rtype: ResourceType, ns: str | None) -> Obj | None:
        with self._lock:
            denied = (rtype.plural, "*") in self._denied or (rtype.plural, verb) in self._denied
        if not denied:
            return None
        scope = f'in the namespace "{ns}"' if ns else "at the cluster scope"
        return _status(
            403,
            "Forbidden",
            f'{rtype.plural} is forbidden: User "{user}" cannot {verb} resource '
            f'"{rtype.plural}" in API group "{rtype.group}" {scope}',
            {"group": rtype.group, "kind": rtype.plural},
        )

    def list_objects(
        self, rtype: ResourceType, ns: str | None, selector: _Selector
    ) -> tuple[int, list[Obj]]:
        with self._lock:
            store = self._objects.get(rtype.plural, {})
            items = [
                copy.deepcopy(o)
                for (ons, _), o in sorted(store.items())
                if (ns is None or ons == ns) and selector.matches(o)
            ]
            return self._rv, items

    def watch_events(
        self,
        rtype: ResourceType,
        ns: str | None,
        selector: _Selector,
        since: int | None,
        timeout: float,
        bookmarks: bool,
    ) -> Iterator[Obj]:
        """Events after ``since`` (or synthetic ADDED for the current state when None)."""
        deadline = time.monotonic() + timeout
        watch = _Watch()

        def relevant(ev: _Event) -> bool:
            meta = ev.obj.get("metadata", {})
            return (
                ev.rtype.plural == rtype.plural
                and (ns is None or meta.get("namespace") == ns)
                and selector.matches(ev.obj)
            )

        with self._lock:
            if since is not None and since < self._compacted_rv:
                yield {
                    "type": "ERROR",
                    "object": _status(
                        410,
                        "Expired",
                        f"too old resource version: {since} ({self._compacted_rv})",
                    ),
                }
                return
            self._watches.add(watch)
            if since is None:
                cursor = self._rv
                initial = [
                    copy.deepcopy(o)
                    for (ons, _), o in sorted(self._objects.get(rtype.plural, {}).items())
                    if (ns is None or ons == ns) and selector.matches(o)
                ]
            else:
                cursor = since
                initial = []
        try:
            for obj in initial:
                yield {"type": "ADDED", "object": obj}
            last_sent = time.monotonic()
            while True:
                with self._lock:
                    pending = [e for e in self._events if e.rv > cursor]
                    if not pending and not watch.closed:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            return
                        wait = min(remaining, self.bookmark_interval) if bookmarks else remaining
                        self._lock.wait(timeout=wait)
                        pending = [e for e in self._events if e.rv > cursor]
                    if watch.closed:
                        return
                    current = self._rv
                for ev in pending:
                    cursor = ev.rv
                    if relevant(ev):
                        last_sent = time.monotonic()
                        yield {"type": ev.type, "object": ev.obj}
                if time.monotonic() >= deadline:
                    return
                if bookmarks and time.monotonic() - last_sent >= self.bookmark_interval:
                    cursor = max(cursor, current)
                    last_sent = time.monotonic()
                    yield {
                        "type": "BOOKMARK",
                        "object": {
                            "kind": rtype.kind,
                            "apiVersion": rtype.group_version,
                            "metadata": {"resourceVersion": str(cursor)},
                        },
                    }
        finally:
            with self._lock:
                self._watches.discard(watch)

    # --- discovery ---------------------------------------------------------------------

    def groups(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for rt in self.resources:
            if rt.group and rt.version not in out.setdefault(rt.group, []):
                out[rt.group].append(rt.version)
        if self.visibility_versions:
            out[kueue_api.VISIBILITY_GROUP] = list(self.visibility_versions)
        return out

    def pending_workloads(self, cq: str) -> list[Obj] | None:
        """Kueue's queue for ``cq`` (None: no such ClusterQueue)."""
        with self._lock:
            if ("", cq) not in self._objects.get("clusterqueues", {}):
                return None
            workloads = [copy.deepcopy(o) for o in self._objects.get("workloads", {}).values()]
            lqs = [copy.deepcopy(o) for o in self._objects.get("localqueues", {}).values()]
        return kueue_api.pending_in_cluster_queue(cq, workloads, lqs)

    def local_queue_target(self, namespace: str, name: str) -> str | None:
        with self._lock:
            lq = self._objects.get("localqueues", {}).get((namespace, name))
        return None if lq is None else (lq.get("spec") or {}).get("clusterQueue")

    def resource_list(self, group: str, version: str) -> Obj | None:
        if group == kueue_api.VISIBILITY_GROUP:
            return kueue_api.discovery(version) if version in self.visibility_versions else None
        found = [r for r in self.resources if r.group == group and r.version == version]
        if not found:
            return None
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": [
                {
                    "name": r.plural,
                    "singularName": r.singular,
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": ["get", "list", "watch"],
                    "shortNames": list(r.short),
                }
                for r in found
            ],
        }

    def group_obj(self, group: str) -> Obj:
        versions = self.groups()[group]
        gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


class _Handler(BaseHTTPRequestHandler):
    api: KubeAPIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: the request record is self.api.requests

    def setup(self) -> None:
        super().setup()
        with self.api._lock:
            self.api._conns.add(self.connection)

    def finish(self) -> None:
        with self.api._lock:
            self.api._conns.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    # Every method is recorded; only GET is served, as the collector must only read.
    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _send_json(self, code: int, body: Obj) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.write(data)

    def _serve(self, method: str) -> None:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        self.api.requests.append((method, parts.path, parts.query))
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        user = self.api.authenticate(self.headers.get("Authorization"))
        if user is None:
            self._send_json(401, _status(401, "Unauthorized", "Unauthorized"))
            return
        try:
            self._route(method, parts.path.rstrip("/") or "/", query, user)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _route(self, method: str, path: str, query: dict[str, str], user: str) -> None:
        api = self.api
        segs = [s for s in path.split("/") if s]
        if path == "/version":
            self._send_json(
                200,
                {  # every field of version.Info is required in the OpenAPI
                    "major": "1",
                    "minor": "30",
                    "gitVersion": "v1.30.0-quotatop-test",
                    "gitCommit": "0000000000000000000000000000000000000000",
                    "gitTreeState": "clean",
                    "buildDate": "2024-04-17T00:00:00Z",
                    "goVersion": "go1.22.2",
                    "compiler": "gc",
                    "platform": "linux/amd64",
                },
            )
            return
        if segs == ["api"]:
            self._send_json(
                200,
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}
                    ],
                },
            )
            return
        if segs == ["apis"]:
            self._send_json(
                200,
                {
                    "kind": "APIGroupList",
                    "apiVersion": "v1",
                    "groups": [api.group_obj(g) for g in api.groups()],
                },
            )
            return
        if len(segs) == 2 and segs[0] == "apis":
            if segs[1] in api.groups():
                self._send_json(
                    200, {"kind": "APIGroup", "apiVersion": "v1", **api.group_obj(segs[1])}
                )
            else:
                self._not_found(path)
            return
        if segs[:1] == ["api"]:
            group, rest = "", segs[1:]
        elif segs[:1] == ["apis"] and len(segs) >= 3:
            group, rest = segs[1], segs[2:]
        else:
            self._not_found(path)
            return
        version, rest = rest[0], rest[1:]
        if group == kueue_api.VISIBILITY_GROUP and rest:
            self._visibility(method, version, rest, query, user)
            return
        if not rest:
            body = api.resource_list(group, version)
            if body is None:
                self._not_found(path)
            else:
                self._send_json(200, body)
            return
        ns: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        plural, name = rest[0], (rest[1] if len(rest) > 1 else None)
        rtype = next(
            (
                r
                for r in api.resources
                if r.group == group and r.version == version and r.plural == plural
            ),
            None,
        )
        if rtype is None or len(rest) > 2 or (ns is not None and not rtype.namespaced):
            self._not_found(path)
            return
        watching = query.get("watch") in ("true", "1")
        verb = "watch" if watching else ("get" if name else "list")
        if method != "GET":
            verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
        if (denial := api.forbidden(user, verb, rtype, ns)) is not None:
            self._send_json(403, denial)
            return
        if method != "GET":
            # This server is read-only on purpose: a client that writes is a bug here.
            self._send_json(
                405,
                _status(
                    405, "MethodNotAllowed", f"{method} is not supported by the test API server"
                ),
            )
            return
        selector = _Selector(query.get("labelSelector"))
        if name is not None:
            try:
                obj = api.get(rtype.plural, ns or "", name)
            except KeyError:
                self._send_json(
                    404,
                    _status(
                        404,
                        "NotFound",
                        f'{rtype.plural} "{name}" not found',
                        {"name": name, "group": rtype.group, "kind": rtype.plural},
                    ),
                )
                return
            obj.setdefault("apiVersion", rtype.group_version)
            obj.setdefault("kind", rtype.kind)
            self._send_json(200, kueue_api.convert(obj, rtype.version))
            return
        if watching:
            self._watch(rtype, ns, selector, query)
            return
        self._list(rtype, ns, selector, query)

    def _visibility(
        self, method: str, version: str, rest: list[str], query: dict[str, str], user: str
    ) -> None:
        api = self.api
        ns: str | None = None
        if rest[:1] == ["namespaces"] and len(rest) == 5:
            ns, rest = rest[1], rest[2:]
        shapes = {"clusterqueues": False, "localqueues": True}
        if (
            version not in api.visibility_versions
            or len(rest) != 3
            or rest[0] not in shapes
            or rest[2] != "pendingworkloads"
            or shapes[rest[0]] != (ns is not None)
        ):
            self._not_found("/".join(["", "apis", kueue_api.VISIBILITY_GROUP, version, *rest]))
            return
        plural, name = rest[0], rest[1]
        sub = ResourceType(kueue_api.VISIBILITY_GROUP, version, f"{plural}/pendingworkloads",
                           "PendingWorkloadsSummary", ns is not None)
        verb = "get" if method == "GET" else method.lower()
        if (denial := api.forbidden(user, verb, sub, ns)) is not None:
            denial["message"] = (
                f'{plural}.{kueue_api.VISIBILITY_GROUP} "{name}" is forbidden: ' + denial["message"]
                .split(" is forbidden: ", 1)[1]
            )
            self._send_json(403, denial)
            return
        if method != "GET":
            self._send_json(405, _status(405, "MethodNotAllowed", f"{method} is not supported"))
            return
        try:
            offset = int(query.get("offset") or 0)
            limit = int(query.get("limit") or 0) or kueue_api.DEFAULT_PENDING_LIMIT
        except ValueError:
            self._send_json(400, _status(400, "BadRequest", "offset and limit must be integers"))
            return
        cq = name if ns is None else api.local_queue_target(ns, name)
        pending = api.pending_workloads(cq) if cq else None
        if pending is None:
            kind = plural[:-1]
            self._send_json(
                404,
                _status(
                    404,
                    "NotFound",
                    f'{kind}.{kueue_api.VISIBILITY_GROUP} "{name}" not found',
                    {"name": name, "group": kueue_api.VISIBILITY_GROUP, "kind": kind},
                ),
            )
            return
        if ns is None:
            items = kueue_api.cluster_queue_summary(pending, offset, limit)
        else:
            items = kueue_api.local_queue_summary(pending, ns, name, offset, limit)
        self._send_json(200, kueue_api.summary(version, items))

    def _not_found(self, path: str) -> None:
        self._send_json(
            404,
            _status(404, "NotFound", f"the server could not find the requested resource ({path})"),
        )

    def _list(
        self, rtype: ResourceType, ns: str | None, sel: _Selector, query: dict[str, str]
    ) -> None:
        rv, items = self.api.list_objects(rtype, ns, sel)
        start = 0
        if cont := query.get("continue"):
            try:
                token = json.loads(base64.urlsafe_b64decode(cont.encode()))
                start, rv = int(token["start"]), int(token["rv"])
            except (ValueError, KeyError):
                self._send_json(400, _status(400, "BadRequest", "continue key is not valid"))
                return
        limit = int(query.get("limit") or 0)
        page = items[start : start + limit] if limit else items[start:]
        meta: Obj = {"resourceVersion": str(rv)}
        if limit and start + limit < len(items):
            meta["continue"] = base64.urlsafe_b64encode(
                json.dumps({"start": start + limit, "rv": rv}).encode()
            ).decode()
            meta["remainingItemCount"] = len(items) - start - limit
        if rtype.builtin:
            # Typed Go lists leave kind/apiVersion off their items; CRD lists keep them.
            for item in page:
                item.pop("kind", None)
                item.pop("apiVersion", None)
        else:
            page = [kueue_api.convert(item, rtype.version) for item in page]
        self._send_json(
            200,
            {
                "kind": f"{rtype.kind}List",
                "apiVersion": rtype.group_version,
                "metadata": meta,
                "items": page,
            },
        )

    def _watch(
        self, rtype: ResourceType, ns: str | None, sel: _Selector, query: dict[str, str]
    ) -> None:
        raw_rv = query.get("resourceVersion")
        since: int | None
        if raw_rv in (None, "", "0"):
            since = None
        else:
            try:
                since = int(raw_rv)  # type: ignore[arg-type]
            except ValueError:
                self._send_json(
                    400, _status(400, "BadRequest", f"invalid resource version: {raw_rv}")
                )
                return
        timeout = float(query.get("timeoutSeconds") or self.api.default_watch_timeout)
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.flush()
        for event in self.api.watch_events(rtype, ns, sel, since, timeout, bookmarks):
            if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                event = {**event, "object": kueue_api.convert(event["object"], rtype.version)}
            self._chunk(json.dumps(event).encode() + b"\n")
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


# --- seed data --------------------------------------------------------------------------
# A small GPU cluster as the real API would return it. Known values for the tests:
# ml-research holds 40 H100s (5 Guaranteed pods of 8 via one admitted Workload), vision
# runs Burstable pods (init-container and sidecar request rules), nlp has a BestEffort
# notebook and a 16-GPU pod pending with the scheduler's message.

H100 = "NVIDIA-H100-80GB-HBM3"
A100 = "NVIDIA-A100-SXM4-80GB"
PENDING_MESSAGE = (
    "0/8 nodes are available: 8 Insufficient nvidia.com/gpu. preemption: 0/8 nodes are "
    "available: 8 No preemption victims found for incoming pod."
)
TRAIN_JOB_UID = "6f1d2c9e-0000-4000-8000-00000000a001"


def _ns(name: str, team: str | None) -> Obj:
    labels = {"kubernetes.io/metadata.name": name}
    if team:
        labels["quotatop.io/team"] = team
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": labels},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _node(name: str, product: str | None, *, ready: bool = True, cordoned: bool = False) -> Obj:
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
    capacity = {"cpu": "64", "memory": "1056784Mi", "pods": "110", "ephemeral-storage": "1Ti"}
    alloc = {"cpu": "63500m", "memory": "1024Gi", "pods": "110", "ephemeral-storage": "900Gi"}
    taints: list[Obj] = []
    if product:
        labels["nvidia.com/gpu.product"] = product
        labels["nvidia.com/gpu.count"] = "8"
        capacity["nvidia.com/gpu"] = "8"
        alloc["nvidia.com/gpu"] = "8"
        taints.append({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"})
    spec: Obj = {"podCIDR": "10.244.0.0/24", "taints": taints}
    if cordoned:
        spec["unschedulable"] = True
        taints.append(
            {
                "key": "node.kubernetes.io/unschedulable",
                "effect": "NoSchedule",
                "timeAdded": "2024-05-01T10:00:00Z",
            }
        )
    ready_cond = {
        "type": "Ready",
        "status": "True" if ready else "Unknown",
        "reason": "KubeletReady" if ready else "NodeStatusUnknown",
        "message": "kubelet is posting ready status"
        if ready
        else "Kubelet stopped posting node status.",
        "lastHeartbeatTime": "2024-05-01T10:00:00Z",
        "lastTransitionTime": "2024-05-01T09:00:00Z",
    }
    if not ready:
        taints.append({"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": alloc,
            "conditions": [{"type": "MemoryPressure", "status": "False"}, ready_cond],
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": name},
            ],
            # NodeSystemInfo: every field is required in the OpenAPI.
            "nodeInfo": {
                "machineID": f"machine-{name}",
                "systemUUID": f"uuid-{name}",
                "bootID": f"boot-{name}",
                "kernelVersion": "6.1.0-18-amd64",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "containerRuntimeVersion": "containerd://1.7.13",
                "kubeletVersion": "v1.30.0",
                "kubeProxyVersion": "v1.30.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def _container(
    name: str,
    requests: Obj | None = None,
    limits: Obj | None = None,
    restart_policy: str | None = None,
) -> Obj:
    c: Obj = {"name": name, "image": "registry.example/train:1", "resources": {}}
    if requests:
        c["resources"]["requests"] = requests
    if limits:
        c["resources"]["limits"] = limits
    if restart_policy:
        c["restartPolicy"] = restart_policy
    return c


def _pod(
    ns: str,
    name: str,
    containers: list[Obj],
    *,
    node: str | None,
    phase: str,
    init: list[Obj] | None = None,
    priority_class: str | None = None,
    priority: int = 0,
    qos_in_status: str | None = None,
    owner_uid: str | None = None,
    labels: Obj | None = None,
    conditions: list[Obj] | None = None,
    start: str | None = "2024-05-01T10:00:00Z",
) -> Obj:
    spec: Obj = {
        "containers": containers,
        "restartPolicy": "Never",
        "schedulerName": "default-scheduler",
        "priority": priority,
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    if init:
        spec["initContainers"] = init
    if node:
        spec["nodeName"] = node
    if priority_class:
        spec["priorityClassName"] = priority_class
    status: Obj = {"phase": phase, "conditions": conditions or []}
    if start and phase != "Pending":
        status["startTime"] = start
    if qos_in_status:
        status["qosClass"] = qos_in_status
    meta: Obj = {"name": name, "namespace": ns, "labels": labels or {}}
    if owner_uid:
        meta["ownerReferences"] = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "train",
                "uid": owner_uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def seed_objects() -> list[Obj]:
    objs: list[Obj] = [
        _ns("ml-research", "ml"),
        _ns("vision", "vision"),
        _ns("nlp", "nlp"),
        _ns("kube-system", None),
    ]
    objs += [_node(f"gpu0{i}", H100) for i in range(1, 6)]
    objs += [
        _node("gpu06", A100),
        _node("gpu07", A100, cordoned=True),
        _node("gpu08", A100, ready=False),
        _node("cpu01", None),
    ]
    objs += [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": "production training",
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "normal"},
            "value": 100,
            "globalDefault": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "opportunistic"},
            "value": 10,
            "preemptionPolicy": "Never",
        },
    ]
    objs += [
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "team-quota", "namespace": "ml-research"},
            "spec": {
                "hard": {
                    "requests.cpu": "512",
                    "requests.memory": "4Ti",
                    "requests.nvidia.com/gpu": "48",
                    "limits.cpu": "1k",
                    "limits.memory": "8Ti",
                    "count/pods": "200",
                }
            },
            "status": {
                "hard": {
                    "requests.cpu": "512",
                    "requests.memory": "4Ti",
                    "requests.nvidia.com/gpu": "48",
                    "limits.cpu": "1k",
                    "limits.memory": "8Ti",
                    "count/pods": "200",
                },
                "used": {
                    "requests.cpu": "80",
                    "requests.memory": "640Gi",
                    "requests.nvidia.com/gpu": "40",
                    "limits.cpu": "80",
                    "limits.memory": "640Gi",
                    "count/pods": "5",
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "best-effort", "namespace": "ml-research"},
            "spec": {"hard": {"pods": "10"}, "scopes": ["BestEffort"]},
            "status": {"hard": {"pods": "10"}, "used": {"pods": "0"}},
        },
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "team-quota", "namespace": "vision"},
            "spec": {
                "hard": {
                    "requests.cpu": "128",
                    "requests.memory": "1Ti",
                    "requests.nvidia.com/gpu": "16",
                    "count/pods": "50",
                }
            },
            "status": {
                "hard": {
                    "requests.cpu": "128",
                    "requests.memory": "1Ti",
                    "requests.nvidia.com/gpu": "16",
                    "count/pods": "50",
                },
                "used": {  # serve-0 + serve-1, as the quota controller counts them
                    "requests.cpu": "7500m",
                    "requests.memory": "2304Mi",
                    "requests.nvidia.com/gpu": "8",
                    "count/pods": "2",
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "high-priority", "namespace": "vision"},
            "spec": {
                "hard": {"requests.nvidia.com/gpu": "8"},
                "scopeSelector": {
                    "matchExpressions": [
                        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}
                    ]
                },
            },
            "status": {
                "hard": {"requests.nvidia.com/gpu": "8"},
                "used": {"requests.nvidia.com/gpu": "0"},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "team-quota", "namespace": "nlp"},
            "spec": {
                "hard": {
                    "requests.cpu": "64",
                    "requests.memory": "512Gi",
                    "requests.nvidia.com/gpu": "16",
                    "count/pods": "20",
                }
            },
            "status": {
                "hard": {
                    "requests.cpu": "64",
                    "requests.memory": "512Gi",
                    "requests.nvidia.com/gpu": "16",
                    "count/pods": "20",
                },
                # A pending pod holds quota from its creation (big-train); count/pods
                # counts the finished pods too (done-ok, done-fail).
                "used": {
                    "requests.cpu": "32",
                    "requests.memory": "256Gi",
                    "requests.nvidia.com/gpu": "16",
                    "count/pods": "4",
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "limits", "namespace": "ml-research"},
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "max": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"},
                        "min": {"cpu": "100m", "memory": "64Mi"},
                        "default": {"cpu": "1", "memory": "1Gi"},
                        "defaultRequest": {"cpu": "500m", "memory": "512Mi"},
                        "maxLimitRequestRatio": {"cpu": "4"},
                    },
                    {"type": "Pod", "max": {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "16"}},
                ]
            },
        },
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {"name": "limits", "namespace": "vision"},
            "spec": {
                # A Pod item: a Container item with only a max would default every
                # container's limits (and GPU requests) to that max (LimitRanger).
                "limits": [
                    {
                        "type": "Pod",
                        "max": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"},
                    }
                ]
            },
        },
    ]
    gpu8 = {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": "8"}
    sched_ok = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]
    for i in range(5):
        objs.append(
            _pod(
                "ml-research",
                f"train-{i}",
                [_container("main", gpu8, gpu8)],
                node=f"gpu0{i + 1}",
                phase="Running",
                priority_class="high",
                priority=1000,
                # The first one lacks status.qosClass, so the collector must compute it.
                qos_in_status=None if i == 0 else "Guaranteed",
                owner_uid=TRAIN_JOB_UID,
                labels={"job-name": "train", "kueue.x-k8s.io/queue-name": "default"},
                conditions=sched_ok,
            )
        )
    objs.append(
        _pod(
            "vision",
            "serve-0",
            [
                _container(
                    "main",
                    {"cpu": "500m", "memory": "1Gi"},
                    {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "8"},
                )
            ],
            init=[_container("warmup", {"cpu": "4", "memory": "512Mi"})],
            node="gpu06",
            phase="Running",
            priority_class="normal",
            priority=100,
            conditions=sched_ok,
        )
    )
    objs.append(
        _pod(
            "vision",
            "serve-1",
            [_container("main", {"cpu": "2", "memory": "1Gi"})],
            init=[
                _container("proxy", {"cpu": "1", "memory": "256Mi"}, restart_policy="Always"),
                _container("migrate", {"cpu": "2500m", "memory": "128Mi"}),
            ],
            node="cpu01",
            phase="Running",
            priority_class="normal",
            priority=100,
            qos_in_status="Burstable",
            conditions=sched_ok,
        )
    )
    objs.append(
        _pod(
            "nlp",
            "notebook",
            [_container("jupyter")],
            node="cpu01",
            phase="Running",
            priority_class="opportunistic",
            priority=10,
            conditions=sched_ok,
        )
    )
    objs.append(
        _pod(
            "nlp",
            "big-train",
            [_container("main", {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "16"})],
            node=None,
            phase="Pending",
            priority_class="normal",
            priority=100,
            conditions=[
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": PENDING_MESSAGE,
                    "lastTransitionTime": "2024-05-01T10:05:00Z",
                }
            ],
        )
    )
    objs.append(
        _pod(
            "nlp",
            "done-ok",
            [_container("main", {"cpu": "1"})],
            node="cpu01",
            phase="Succeeded",
            qos_in_status="Burstable",
        )
    )
    objs.append(
        _pod(
            "nlp",
            "done-fail",
            [_container("main", {"cpu": "1"})],
            node="cpu01",
            phase="Failed",
            qos_in_status="Burstable",
        )
    )
    objs += _kueue_objects()
    return objs


def _flavor(name: str, product: str) -> Obj:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {
            "nodeLabels": {"nvidia.com/gpu.product": product},
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
            ],
        },
    }


def _res(name: str, nominal: str, borrowing: str | None = None, lending: str | None = None) -> Obj:
    out: Obj = {"name": name, "nominalQuota": nominal}
    if borrowing is not None:
        out["borrowingLimit"] = borrowing
    if lending is not None:
        out["lendingLimit"] = lending
    return out


def _usage(flavor: str, **totals: tuple[str, str]) -> Obj:
    names = {"gpu": "nvidia.com/gpu", "cpu": "cpu", "memory": "memory"}
    return {
        "name": flavor,
        "resources": [
            {"name": names[k], "total": t, "borrowed": b} for k, (t, b) in totals.items()
        ],
    }


def _cq(
    name: str,
    flavors: list[Obj],
    usage: list[Obj],
    *,
    weight: str = "1",
    admitted: int = 0,
    pending: int = 0,
) -> Obj:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohort": "ai",
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [
                {"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": flavors}
            ],
            "preemption": {
                "reclaimWithinCohort": "Any",
                "withinClusterQueue": "LowerPriority",
                "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
            },
            "fairSharing": {"weight": weight},
            "stopPolicy": "None",
        },
        "status": {
            "flavorsUsage": usage,
            "flavorsReservation": usage,
            "admittedWorkloads": admitted,
            "reservingWorkloads": admitted,
            "pendingWorkloads": pending,
            "conditions": [
                {
                    "type": "Active",
                    "status": "True",
                    "reason": "Ready",
                    "message": "Can admit new workloads",
                    "lastTransitionTime": "2024-05-01T09:00:00Z",
                }
            ],
        },
    }


def _workload(
    ns: str,
    name: str,
    gpus: str,
    count: int,
    conditions: list[Obj],
    *,
    cq: str | None,
    owner_uid: str | None = None,
    priority: int = 100,
    priority_class: str = "normal",
) -> Obj:
    meta: Obj = {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/job-uid": "x"}}
    if owner_uid:
        meta["ownerReferences"] = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "train",
                "uid": owner_uid,
                "controller": True,
            }
        ]
    status: Obj = {"conditions": conditions}
    if cq:
        status["admission"] = {
            "clusterQueue": cq,
            "podSetAssignments": [
                {
                    "name": "main",
                    "count": count,
                    "flavors": {"nvidia.com/gpu": "h100"},
                    "resourceUsage": {"nvidia.com/gpu": str(int(gpus) * count)},
                }
            ],
        }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": meta,
        "spec": {
            "queueName": "default",
            "priority": priority,
            "priorityClassName": priority_class,
            "priorityClassSource": "scheduling.k8s.io/priorityclass",
            "active": True,
            "podSets": [
                {
                    "name": "main",
                    "count": count,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                _container(
                                    "main", {"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": gpus}
                                )
                            ],
                        }
                    },
                }
            ],
        },
        "status": status,
    }


def _cond(ctype: str, status: str, reason: str, message: str = "") -> Obj:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2024-05-01T10:00:00Z",
        "observedGeneration": 1,
    }


def _kueue_objects() -> list[Obj]:
    objs: list[Obj] = [_flavor("h100", H100), _flavor("a100", A100)]
    objs.append(
        {
            "apiVersion": "kueue.x-k8s.io/v1alpha1",
            "kind": "Cohort",
            "metadata": {"name": "ai"},
            # v1alpha1 and v1beta1 name the field parent (v1beta2: parentName)
            "spec": {"parent": "org", "resourceGroups": []},
        }
    )
    objs.append(
        _cq(
            "cq-ml-research",
            [
                {
                    "name": "h100",
                    "resources": [
                        _res("cpu", "256"),
                        _res("memory", "2Ti"),
                        _res("nvidia.com/gpu", "32", borrowing="16"),
                    ],
                }
            ],
            [_usage("h100", gpu=("40", "8"), cpu=("80", "0"), memory=("640Gi", "0"))],
            weight="2",
            admitted=1,
            pending=0,
        )
    )
    objs.append(
        _cq(
            "cq-vision",
            [
                {
                    "name": "h100",
                    "resources": [
                        _res("cpu", "64"),
                        _res("memory", "512Gi"),
                        _res("nvidia.com/gpu", "8", lending="4"),
                    ],
                },
                {
                    "name": "a100",
                    "resources": [
                        _res("cpu", "64"),
                        _res("memory", "512Gi"),
                        _res("nvidia.com/gpu", "8"),
                    ],
                },
            ],
            [
                _usage("h100", gpu=("0", "0"), cpu=("0", "0"), memory=("0", "0")),
                _usage("a100", gpu=("0", "0"), cpu=("0", "0"), memory=("0", "0")),
            ],
            admitted=0,
            pending=0,
        )
    )
    objs.append(
        _cq(
            "cq-nlp",
            [
                {
                    "name": "a100",
                    "resources": [
                        _res("cpu", "128"),
                        _res("memory", "1Ti"),
                        _res("nvidia.com/gpu", "16", borrowing="0", lending="8"),
                    ],
                }
            ],
            [_usage("a100", gpu=("0", "0"), cpu=("0", "0"), memory=("0", "0"))],
            admitted=0,
            pending=2,
        )
    )
    for ns, cq in (("ml-research", "cq-ml-research"), ("vision", "cq-vision"), ("nlp", "cq-nlp")):
        objs.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "LocalQueue",
                "metadata": {"name": "default", "namespace": ns},
                "spec": {"clusterQueue": cq, "stopPolicy": "None"},
                "status": {"admittedWorkloads": 0, "pendingWorkloads": 0},
            }
        )
    objs.append(
        _workload(
            "ml-research",
            "job-train-3b1a2",
            "8",
            5,
            [
                _cond(
                    "QuotaReserved",
                    "True",
                    "QuotaReserved",
                    "Quota reserved in ClusterQueue cq-ml-research",
                ),
                _cond("Admitted", "True", "Admitted", "The workload is admitted"),
            ],
            cq="cq-ml-research",
            owner_uid=TRAIN_JOB_UID,
            priority=1000,
            priority_class="high",
        )
    )
    objs.append(
        _workload(
            "nlp",
            "job-big-5c2d1",
            "8",
            2,
            [
                _cond(
                    "QuotaReserved",
                    "False",
                    "Pending",
                    "couldn't assign flavors to pod set main: insufficient unused quota for "
                    "nvidia.com/gpu in flavor a100, 16 more needed",
                )
            ],
            cq=None,
        )
    )
    # Queued behind job-big-5c2d1 (lower priority): position 1 in cq-nlp.
    objs.append(
        _workload(
            "nlp",
            "job-small-7d3e4",
            "4",
            1,
            [
                _cond(
                    "QuotaReserved",
                    "False",
                    "Pending",
                    "couldn't assign flavors to pod set main: insufficient unused quota for "
                    "nvidia.com/gpu in flavor a100, 4 more needed",
                )
            ],
            cq=None,
            priority=50,
        )
    )
    objs.append(
        _workload(
            "vision",
            "job-eval-9f8e7",
            "4",
            1,
            [
                _cond(
                    "QuotaReserved",
                    "False",
                    "Preempted",
                    "Preempted to accommodate a workload (UID: 1234) due to reclamation within "
                    "the cohort",
                ),
                _cond(
                    "Evicted",
                    "True",
                    "Preempted",
                    "Preempted to accommodate a workload (UID: 1234) due to reclamation within "
                    "the cohort",
                ),
                _cond(
                    "Preempted",
                    "True",
                    "InCohortReclamation",
                    "Preempted to accommodate a workload (UID: 1234) due to reclamation within "
                    "the cohort",
                ),
            ],
            cq=None,
            priority=10,
            priority_class="opportunistic",
        )
    )
    objs.append(
        _workload(
            "vision",
            "job-old-1a2b3",
            "2",
            1,
            [
                _cond("QuotaReserved", "True", "QuotaReserved", ""),
                _cond("Admitted", "True", "Admitted", ""),
                _cond("Finished", "True", "Succeeded", "Job finished successfully"),
            ],
            cq="cq-vision",
        )
    )
    return objs


def seed(server: KubeAPIServer) -> None:
    for obj in seed_objects():
        try:
            server.apply(obj)
        except KeyError:
            continue  # Kueue objects when the server runs without (or with other) Kueue APIs
