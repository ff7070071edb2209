"""List-then-watch of one resource into an in-memory store (client-go's reflector, small).

A refresh reads the store; it never relists. The thread lists once (paged), then
watches from the list's resourceVersion; a watch that ends is resumed from the
last resourceVersion seen (events or bookmarks); a 410 Expired relists; a lost
connection keeps the store (shown stale) and retries with exponential backoff.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from quotatop.collectors.deadline import Deadline, TooLarge, read_capped
from quotatop.collectors.k8s import transport
from quotatop.collectors.k8s.exec_plugin import PluginError
from quotatop.collectors.untrusted import redact_url

Obj = dict[str, Any]

# Error kinds: the collector decides per kind whether the whole snapshot is stale
# (connection, unauthorized) or only one resource is missing (forbidden, notfound).
CONNECTION = "connection"
UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
REFUSED = "refused"  # an answer past max_answer_bytes: what is shown lacks it, so stale
NOTFOUND = "notfound"
OTHER = "other"


class _Gone(Exception):
    """The resourceVersion we hold is too old: relist."""


def _status_message(body: Any) -> str | None:
    try:
        data = json.loads(body) if isinstance(body, str | bytes) else None
    except ValueError:
        return None
    if isinstance(data, dict):
        msg = data.get("message")
        return str(msg) if msg else None
    return None


def classify(exc: BaseException, what: str, server: str) -> tuple[str, str]:
    """(kind, one-line message) for an exception raised by the kubernetes client."""
    from kubernetes.client.exceptions import ApiException

    server = redact_url(server)  # a kubeconfig's server URL may carry user:password@

    if isinstance(exc, transport.Refused):  # its message is ours, one line, with the path
        return (CONNECTION if exc.timed_out else REFUSED), str(exc)
    if isinstance(exc, PluginError):  # the exec plugin, rerun for an expired token
        return UNAUTHORIZED, str(exc)

    if isinstance(exc, ApiException):
        status = int(exc.status or 0)
        msg = _status_message(exc.body)
        if status == 401:
            return UNAUTHORIZED, (
                "the API server rejected the credentials (401 Unauthorized): "
                "token expired or invalid, check the kubeconfig"
            )
        if status == 403:
            return FORBIDDEN, f"RBAC denies {what} (403): {msg or exc.reason}"
        if status == 404:
            return NOTFOUND, f"{what}: not served by this cluster (404)"
        if status == 410:
            return OTHER, f"{what}: resourceVersion expired (410)"
        return OTHER, f"{what}: HTTP {status} {msg or exc.reason or ''}".strip()
    # urllib3 wraps refused/reset connections and timeouts; their text can be long and
    # carries object reprs, so say it in our words.
    name = type(exc).__name__
    text = str(exc)
    if "Connection refused" in text or "NewConnectionError" in text:
        return CONNECTION, f"cannot connect to the API server at {server} (connection refused)"
    if "timed out" in text.lower() or "Timeout" in name:
        return CONNECTION, f"the API server at {server} timed out"
    return CONNECTION, f"lost connection to the API server at {server} ({name})"


class Reflector:
    def __init__(
        self,
        key: str,
        list_fn: Callable[..., Any],
        *,
        server: str,
        page_size: int = 500,
        watch_timeout: float = 60.0,
        connect_timeout: float = 5.0,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        max_answer_bytes: int = 64 << 20,
    ) -> None:
        self.key = key
        self._list_fn = list_fn
        self._server = server
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.connect_timeout = connect_timeout
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.max_answer_bytes = max_answer_bytes
        self._lock = threading.Lock()
        self._store: dict[tuple[str, str], Obj] = {}
        self.resource_version: str | None = None
        self.synced = threading.Event()  # set after the first successful list
        self.error: str | None = None
        self.error_kind: str | None = None
        self.lists = 0  # how many full lists (tests: a refresh must not relist)
        self.watches = 0
        self.list_latency_ms: float | None = None
        self.changes = 0
        self.attempt = 0
        self._stop = threading.Event()
        self._resp: Any = None
        self._deadline: Deadline | None = None  # the request in flight: stop() cuts it
        self._thread: threading.Thread | None = None

    # --- public --------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"k8s-{self.key}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        deadline = self._deadline
        if deadline is not None:  # a list, or a watch still waiting for its headers
            deadline.cut()
        resp = self._resp
        if resp is not None:
            # Unblock a read in progress; the server also ends the watch at its timeout.
            with contextlib.suppress(Exception):
                resp.shutdown()
            with contextlib.suppress(Exception):
                resp.close()
        if self._thread is not None:
            self._thread.join(timeout)

    def items(self) -> list[Obj]:
        with self._lock:
            return list(self._store.values())

    # --- the loop ------------------------------------------------------------------------

    def _run(self) -> None:
        delay = self.backoff_initial
        while not self._stop.is_set():
            try:
                if self.resource_version is None:
                    self._list()
                self._set_ok()
                delay = self.backoff_initial
                self._watch()
            except _Gone:
                self.resource_version = None  # relist at once: nothing is wrong with the link
                continue
            except Exception as exc:  # the client raises many types; all mean "retry later"
                if self._stop.is_set():
                    return
                kind, message = classify(exc, self.key, self._server)
                if kind == OTHER and "410" in message:
                    self.resource_version = None
                    continue
                self.attempt += 1
                with self._lock:
                    self.error, self.error_kind = message, kind
                self._stop.wait(delay)
                delay = min(delay * 2, self.backoff_max)

    def _set_ok(self) -> None:
        with self._lock:
            self.error = self.error_kind = None
            self.attempt = 0

    def _list(self) -> None:
        t0 = time.perf_counter()
        items: dict[tuple[str, str], Obj] = {}
        cont: str | None = None
        rv = None
        while True:
            kwargs: dict[str, Any] = {
                "limit": self.page_size,
                "_preload_content": False,
                "_request_timeout": (self.connect_timeout, self.connect_timeout),
            }
            if cont:
                kwargs["_continue"] = cont
            # Each page within connect_timeout overall and max_answer_bytes, read in chunks.
            self._deadline = Deadline(self.connect_timeout)
            if self._stop.is_set():
                return
            try:
                data = transport.bounded_body(
                    lambda kwargs=kwargs: self._list_fn(**kwargs),
                    timeout=self.connect_timeout,
                    cap=self.max_answer_bytes,
                    deadline=self._deadline,
                    check=check_response,
                )
            finally:
                self._deadline = None
            body = json.loads(data)
            for item in body.get("items") or []:
                items[_key(item)] = item
            meta = body.get("metadata") or {}
            rv = meta.get("resourceVersion")
            cont = meta.get("continue")
            if not cont:
                break
        with self._lock:
            self._store = items
            self.resource_version = rv
            self.lists += 1
            self.changes += 1
        self.list_latency_ms = (time.perf_counter() - t0) * 1000.0
        self.synced.set()

    def _watch(self) -> None:
        from kubernetes.watch.watch import iter_resp_lines

        # No overall deadline (a watch is long-lived), but stop() can cut it even while
        # the server trickles its headers, before there is a response to shut.
        self._deadline = deadline = Deadline(None)
        if self._stop.is_set():
            return
        try:
            with transport.under(deadline):
                resp = self._list_fn(
                    watch=True,
                    resource_version=self.resource_version,
                    allow_watch_bookmarks=True,
                    timeout_seconds=int(self.watch_timeout),
                    _preload_content=False,
                    # Read timeout past the server's own end of the watch: silence is trouble.
                    _request_timeout=(self.connect_timeout, self.watch_timeout + 10),
                )
        finally:
            self._deadline = None
        check_response(resp)
        self._resp = resp
        if self._stop.is_set():
            return
        self.watches += 1
        try:
            for line in iter_resp_lines(resp):
                if self._stop.is_set():
                    return
                if not line or not line.strip():
                    continue
                event = json.loads(line)
                self._apply(event)
        finally:
            self._resp = None
            with contextlib.suppress(Exception):
                resp.release_conn()

    def _apply(self, event: Obj) -> None:
        etype = event.get("type")
        obj = event.get("object") or {}
        if etype == "ERROR":
            if obj.get("code") == 410:
                raise _Gone()
            from kubernetes.client.exceptions import ApiException

            raise ApiException(status=obj.get("code"), reason=obj.get("reason"))
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        with self._lock:
            if etype in ("ADDED", "MODIFIED"):
                self._store[_key(obj)] = obj
                self.changes += 1
            elif etype == "DELETED":
                self._store.pop(_key(obj), None)
                self.changes += 1
            if rv:
                self.resource_version = rv


def check_response(resp: Any) -> None:
    """With _preload_content=False the client hands back error responses: raise them."""
    status = getattr(resp, "status", 200)
    if isinstance(status, int) and not 200 <= status <= 299:
        from kubernetes.client.exceptions import ApiException

        try:
            # The error body (a Status) is not read until asked for; urllib3's ``data``
            # would read all of it, so a capped read. A RESTResponse keeps what it read.
            raw = getattr(resp, "response", None)
            data = getattr(resp, "data", None) if raw is not None else None
            if data is None:
                data = read_capped(raw if raw is not None else resp, transport.ERROR_CAP)
            body = data.decode("utf-8", errors="replace")
        except TooLarge:
            body = None
        except Exception:
            body = None
        with contextlib.suppress(Exception):
            resp.release_conn()
        raise ApiException(status=status, reason=getattr(resp, "reason", None), body=body)


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")
