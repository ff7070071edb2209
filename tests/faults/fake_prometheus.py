"""A Prometheus stand-in on 127.0.0.1: a threaded http.server whose ``mode`` says how
it answers every query, switchable while a collector polls it.

* ``good``: one matrix series (team ``a`` holds 7 GPUs);
* ``hang``: accepts the connection, reads the request and never answers;
* ``slow``: the ``good`` answer, each one after ``slow_by`` seconds (``answered``
  counts the answers sent whole);
* ``trickle-body``: a 200 whose body comes one byte every ``trickle_every`` seconds;
* ``trickle-headers``: the status line, then headers one byte at a time;
* ``500``: HTTP 500 with Prometheus's error object;
* any key of ``MALFORMED``: a 200 whose body is not a usable answer;
* any key of ``IMPOSSIBLE``: a 200 of well-formed series, one of them an impossible
  value (team ``a``) beside team ``b``'s good 3 GPUs;
* ``many-series``: a 200 of ``series`` small series (team ``ns-000000`` and on), made
  when asked, each of ``points`` points: 15 MiB at 200,000 of 3, under the 32 MiB bound.

``close()`` wakes every handler still hanging or trickling, so a test ends at once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from faults.trickle import trickle

GOOD = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
    {"metric": {"namespace": "a"}, "values": [[1.0, "7"]]}]}}).encode()
MALFORMED = {
    "not-json": b"<html>oops</html>",
    "not-an-object": b"[1, 2, 3]",
    "no-data-result": json.dumps({"status": "success", "data": {}}).encode(),
    "result-not-a-list": json.dumps({"status": "success",
                                     "data": {"result": {"a": 1}}}).encode(),
    "values-not-numbers": json.dumps({"status": "success", "data": {"result": [
        {"metric": {"namespace": "a"}, "values": [[1.0, "seven"]]}]}}).encode(),
    "huge": b"[" + b"1," * 200_000 + b"1]",
}


def _matrix(*series: tuple[dict[str, str], list[list[object]]]) -> bytes:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": labels, "values": values} for labels, values in series]}}).encode()


_B = ({"namespace": "b"}, [[1.0, "3"]])
IMPOSSIBLE = {
    "huge-value": _matrix(({"namespace": "a"}, [[1.0, "1e308"]]), _B),
    "huge-time": _matrix(({"namespace": "a"}, [[1e308, "7"]]), _B),
    "negative-value": _matrix(({"namespace": "a"}, [[1.0, "7"], [2.0, "-4"]]), _B),
    # Prometheus's own spellings of the non-finite values (#35 X2: the team vanished).
    "inf-value": _matrix(({"namespace": "a"}, [[1.0, "7"], [2.0, "+Inf"]]), _B),
    "minus-inf-value": _matrix(({"namespace": "a"}, [[1.0, "-Inf"]]), _B),
    "nan-value": _matrix(({"namespace": "a"}, [[1.0, "NaN"]]), _B),
    # The same labels twice (Prometheus never answers so): the second is refused.
    "duplicate-series": _matrix(({"namespace": "a"}, [[1.0, "7"]]), _B,
                                ({"namespace": "a"}, [[1.0, "9000"]])),
}


def many_series(n: int, points: int = 3) -> bytes:
    """``n`` series of ``points`` points each, written as Prometheus writes them."""
    values = b",".join(b'[%d.0,"%d"]' % (1 + k, k % 8) for k in range(points))
    parts = [b'{"status":"success","data":{"resultType":"matrix","result":[']
    parts.append(b",".join(
        b'{"metric":{"namespace":"ns-%06d"},"values":[%s]}' % (i, values) for i in range(n)))
    parts.append(b"]}}")
    return b"".join(parts)


ERROR_500 = b'{"status":"error","errorType":"internal","error":"boom"}'
MODES = ("good", "hang", "slow", "trickle-body", "trickle-headers", "500", "many-series",
         *MALFORMED, *IMPOSSIBLE)


class FakePrometheus:
    """Serves on ``url`` from a daemon thread until ``close()``."""

    def __init__(self, mode: str = "good", *, trickle_every: float = 1.0,
                 trickle_for: float = 30.0, series: int = 200_000, points: int = 3,
                 slow_by: float = 0.5) -> None:
        fake = self
        self.mode = mode
        self.trickle_every = trickle_every  # seconds between two trickled bytes
        self.trickle_for = trickle_for  # a trickle gives up after this long
        self.requests = 0
        self.answered = 0  # answers written whole (``slow`` and the plain answers)
        self.slow_by = slow_by  # how long ``slow`` waits before each answer
        self.series = series  # how many series ``many-series`` answers
        self.points = points  # and how many points each
        self._many: tuple[tuple[int, int], bytes] | None = None  # made once per shape
        self._closing = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.requests += 1
                mode = fake.mode
                if mode == "hang":
                    fake._closing.wait()
                    return
                if mode == "trickle-body":
                    self.send_response(200)
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    self._trickle()
                    return
                if mode == "trickle-headers":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                    self._trickle(b"X-Slow: " + b"a" * 10_000)
                    return
                if mode == "slow" and fake._closing.wait(fake.slow_by):
                    return
                if mode == "500":
                    status, body = 500, ERROR_500
                elif mode == "many-series":
                    status, body = 200, fake._many_series()
                else:
                    status, body = 200, (GOOD if mode in ("good", "slow") else
                                         IMPOSSIBLE.get(mode) or MALFORMED[mode])
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                    self.wfile.flush()
                except OSError:
                    return  # the client gave up on it: not answered
                fake.answered += 1

            def _trickle(self, data: bytes = b"x" * 100_000) -> None:
                trickle(self.wfile, data, fake.trickle_every, fake.trickle_for, fake._closing)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                       name="fake prometheus")
        self.thread.start()

    def _many_series(self) -> bytes:
        shape = (self.series, self.points)
        if self._many is None or self._many[0] != shape:
            self._many = (shape, many_series(*shape))
        return self._many[1]

    def close(self) -> None:
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@contextmanager
def fake_prometheus(mode: str = "good", **kw: float) -> Iterator[FakePrometheus]:
    fake = FakePrometheus(mode, **kw)
    try:
        yield fake
    finally:
        fake.close()
