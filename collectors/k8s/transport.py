"""Bounds on every request the collector sends but a watch: one overall deadline
(connect, headers and body together) and a size cap on the answer.

urllib3's read timeout is per read, so a server that trickles a byte a second holds a
request for ever. ``install`` gives an ``ApiClient``'s pool connections that attach
their socket to the calling thread's ``Deadline`` (``collectors/deadline.py``) as they
send a request; when the deadline fires, the socket is shut and the blocked read ends.
A watch runs under a deadline with no timeout: it is long-lived by design, and only
``cut()`` (the reflector stopping) ends it early.

``bounded_body`` runs one call under a deadline and reads its answer in chunks, up to
``cap`` bytes; it raises ``Refused``, whose message is one line, for either bound.

An error answer (non-2xx) the kubernetes client reads whole itself, before any caller
sees it (``ApiClient`` with ``_preload_content=False`` reads it to raise ``ApiException``
from it): ``install`` also makes its REST client read such a body first, in chunks, up to
``ERROR_CAP`` (a Status is a few hundred bytes), under the thread's deadline, and refuse
a larger one."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from quotatop.collectors.deadline import Deadline, DeadlineExpired, TooLarge, read_capped
from quotatop.collectors.k8s.exec_plugin import PluginError

_local = threading.local()
ERROR_CAP = 1 << 20  # an error answer's body (a Status) larger than this is refused


class Refused(Exception):
    """A request cut at its deadline (``timed_out``) or refused as too large."""

    def __init__(self, message: str, *, timed_out: bool) -> None:
        super().__init__(message)
        self.timed_out = timed_out


def _path(url: str) -> str:
    return urlsplit(url).path or url.partition("?")[0]


def _attach(conn: Any, url: str) -> None:
    dl: Deadline | None = getattr(_local, "deadline", None)
    if dl is not None:
        _local.path = _path(url)
        dl.attach(conn)


def install(api_client: Any) -> None:
    """Make the client's connections honour the calling thread's ``Deadline``."""
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    class _OnDeadline:
        """The connections' one change: their socket joins the thread's Deadline."""

        def request(self, method: str, url: str, *a: Any, **kw: Any) -> None:
            _attach(self, url)
            super().request(method, url, *a, **kw)  # type: ignore[misc]
            dl = getattr(_local, "deadline", None)
            if dl is not None and dl.expired.is_set():
                dl.attach(self)  # fired while connecting, before there was a socket

    class _Conn(_OnDeadline, HTTPConnection):
        pass

    class _TLSConn(_OnDeadline, HTTPSConnection):
        pass

    class _Pool(HTTPConnectionPool):
        ConnectionCls = _Conn

    class _TLSPool(HTTPSConnectionPool):
        ConnectionCls = _TLSConn

    rest = api_client.rest_client
    manager = rest.pool_manager
    manager.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}
    manager.clear()
    request = rest.request

    def request_capping_errors(*args: Any, **kwargs: Any) -> Any:
        resp = request(*args, **kwargs)
        status = getattr(resp, "status", 200)
        if isinstance(status, int) and not 200 <= status <= 299 and resp.data is None:
            # Read here, capped: RESTResponse.read() then hands back this, not all of it.
            resp.data = _error_body(resp, status)
        return resp

    rest.request = request_capping_errors


def _error_body(resp: Any, status: int) -> bytes:
    """A non-2xx answer's body, read in chunks up to ERROR_CAP under the thread's
    deadline; Refused past the cap (DeadlineExpired once the deadline has fired)."""
    raw = getattr(resp, "response", resp)
    try:
        return read_capped(raw, ERROR_CAP, getattr(_local, "deadline", None))
    except TooLarge:
        _close(raw)
        where = last_path()
        raise Refused(f"HTTP {status} answer larger than {_mib(ERROR_CAP)}"
                      + (f" from {where}" if where else ""), timed_out=False) from None


@contextlib.contextmanager
def under(deadline: Deadline) -> Iterator[Deadline]:
    """Requests this thread sends inside the block are cut with ``deadline``."""
    prev = getattr(_local, "deadline", None)
    _local.deadline, _local.path = deadline, None
    try:
        yield deadline
    finally:
        _local.deadline = prev


def last_path() -> str | None:
    """The path of the last request sent under a deadline by this thread."""
    return getattr(_local, "path", None)


def _close(resp: Any) -> None:
    for name in ("close", "release_conn"):
        with contextlib.suppress(Exception):
            getattr(resp, name)()


def bounded_body(
    call: Callable[[], Any],
    *,
    timeout: float,
    cap: int,
    deadline: Deadline | None = None,
    check: Callable[[Any], None] | None = None,
) -> bytes:
    """The body of ``call()``'s response (urllib3's, sent with ``_preload_content=False``),
    within ``timeout`` seconds and ``cap`` bytes. ``check`` raises for an error status."""
    dl = deadline or Deadline(timeout)
    resp = None
    with dl, under(dl):
        try:
            resp = call()
            raw = getattr(resp, "response", resp)  # call_api hands a RESTResponse
            if check is not None:
                check(resp)
            body = read_capped(raw, cap, dl)
        except TooLarge:
            _close(getattr(resp, "response", resp))
            where = last_path()
            raise Refused(
                f"answer larger than {_mib(cap)}" + (f" from {where}" if where else ""),
                timed_out=False,
            ) from None
        except Exception as exc:
            # A PluginError is the exec plugin's own bound (it ran for an expired token
            # before the request was sent): its line names the plugin, not a timeout.
            if isinstance(exc, PluginError) or not (
                    dl.expired.is_set() or isinstance(exc, DeadlineExpired)):
                raise
            _close(getattr(resp, "response", resp))
            where = last_path()
            raise Refused(
                f"timed out after {timeout:g}s" + (f" waiting for {where}" if where else ""),
                timed_out=True,
            ) from None
    with contextlib.suppress(Exception):
        raw.release_conn()
    return body


def _mib(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"
