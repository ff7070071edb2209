"""A Kubernetes API server stand-in on 127.0.0.1, for the collector's bounds: a threaded
http.server whose ``mode`` says how it answers, switchable while a collector polls it.

* ``good``: the least valid answers: ``/apis`` with no groups, one namespace, every
  other list empty (with a resourceVersion), and watches held open, silent, until
  their ``timeoutSeconds`` or ``close()``;
* ``trickle-headers``: the status line, then headers one byte every ``trickle_every``;
* ``trickle-body``: a 200 whose body comes one byte every ``trickle_every`` seconds;
* ``huge``: a 200 list whose body streams ``huge_bytes`` (600 MB by default), made a
  chunk at a time as it is sent, never held whole;
* ``huge-error``: the same, as an HTTP 500 whose Status body never ends.

The mode applies to the requests whose path is ``only`` (None: every path) and which
are watches or not as ``on`` says (``"list"``, ``"watch"`` or ``"any"``); every other
request is answered as in ``good``. ``write_kubeconfig`` points a kubeconfig at it
(with a token, or the ``user`` given: an exec credential plugin).
``close()`` wakes every handler still trickling or holding a watch.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from faults.trickle import trickle

MODES = ("good", "trickle-headers", "trickle-body", "huge", "huge-error")
NAMESPACE = {"metadata": {"name": "team-a", "resourceVersion": "1"}}


def _list(path: str) -> bytes:
    items = [NAMESPACE] if path.rstrip("/") == "/api/v1/namespaces" else []
    return json.dumps({"kind": "List", "apiVersion": "v1",
                       "metadata": {"resourceVersion": "1"}, "items": items}).encode()


class FakeKube:
    """Serves on ``url`` from a daemon thread until ``close()``."""

    def __init__(self, mode: str = "good", *, only: str | None = None, on: str = "any",
                 trickle_every: float = 1.0, trickle_for: float = 60.0,
                 huge_bytes: int = 600 << 20) -> None:
        fake = self
        self.mode = mode
        self.only = only
        self.on = on
        self.trickle_every = trickle_every
        self.trickle_for = trickle_for
        self.huge_bytes = huge_bytes
        self.requests: list[str] = []
        self.sent_huge = 0  # bytes of the huge answers sent so far
        self._closing = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                watch = query.get("watch", [""])[0] in ("true", "1")
                fake.requests.append(self.path)
                mode = fake.mode
                applies = (fake.only is None or parts.path == fake.only) and (
                    fake.on == "any" or (fake.on == "watch") == watch)
                if not applies:
                    mode = "good"
                if mode == "trickle-headers":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                    self._trickle(b"X-Slow: " + b"a" * 100_000)
                    return
                if mode == "trickle-body":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    self._trickle(b'{"kind":"List","items":[' + b" " * 99_000)
                    return
                if mode in ("huge", "huge-error"):
                    self._huge(error=mode == "huge-error")
                    return
                if watch:
                    self._quiet_watch(float(query.get("timeoutSeconds", ["60"])[0]))
                    return
                body = json.dumps({"kind": "APIGroupList", "groups": []}).encode() \
                    if parts.path.rstrip("/") == "/apis" else _list(parts.path)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _trickle(self, data: bytes) -> None:
                trickle(self.wfile, data, fake.trickle_every, fake.trickle_for, fake._closing)

            def _huge(self, error: bool = False) -> None:
                self.send_response(500 if error else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(fake.huge_bytes))
                self.end_headers()
                head = (b'{"kind":"Status","status":"Failure","code":500,"message":"' if error
                        else b'{"kind":"List","metadata":{"resourceVersion":"1"},"items":[],"x":"')
                block = b"a" * (1 << 20)  # the one block, sent again and again
                sent = 0
                try:
                    self.wfile.write(head)
                    sent = len(head)
                    while sent < fake.huge_bytes and not fake._closing.is_set():
                        part = block[: fake.huge_bytes - sent]
                        self.wfile.write(part)
                        sent += len(part)
                        fake.sent_huge += len(part)
                except OSError:
                    return
                self.close_connection = True

            def _quiet_watch(self, seconds: float) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                fake._closing.wait(seconds)
                with suppress(OSError):
                    self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                       name="fake kube-apiserver")
        self.thread.start()

    def write_kubeconfig(self, path: Path, user: dict[str, object] | None = None) -> Path:
        """A kubeconfig of this server; ``user`` in place of the token (an ``exec``)."""
        path.write_text(json.dumps({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "viewer", "user": user or {"token": "fake-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "viewer"}}],
            "current-context": "fake",
        }))
        return path

    def close(self) -> None:
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@contextmanager
def fake_kube(mode: str = "good", **kw: object) -> Iterator[FakeKube]:
    fake = FakeKube(mode, **kw)  # type: ignore[arg-type]
    try:
        yield fake
    finally:
        fake.close()
