"""One overall deadline for one HTTP request, and a body read under a size cap.

A socket timeout is per read: a server that sends one byte a second never trips it.
``Deadline`` is the whole request's bound instead: when it fires, every socket attached
to it is shut down, which wakes the read blocked on it. One deadline may bound several
requests in turn (a Prometheus collect's queries), each given ``remaining()``. ``cut()``
may also be called early, from any thread (a collector that stops). ``read_capped``
reads a body in chunks, so an answer past the cap is refused after ``cap`` bytes, not
held whole first."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any

CHUNK = 1 << 16


class DeadlineExpired(Exception):
    """The deadline fired (or ``cut()`` was called) before the request ended."""


class TooLarge(Exception):
    """The answer passed the size cap; ``size`` is how much was read."""


class Deadline:
    """``timeout`` seconds from ``start()`` (None: never; ``cut()`` only)."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self.expired = threading.Event()
        self._lock = threading.Lock()
        self._socks: list[Any] = []  # objects with a ``sock`` attribute, or sockets
        self._timer: threading.Timer | None = None
        self._end: float | None = None

    def start(self) -> Deadline:
        if self.timeout is not None:
            self._end = time.monotonic() + self.timeout
            self._timer = threading.Timer(self.timeout, self.cut)
            self._timer.daemon = True
            self._timer.start()
        return self

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._socks.clear()

    def __enter__(self) -> Deadline:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cancel()

    def attach(self, holder: Any) -> None:
        """Shut ``holder``'s socket when the deadline fires (at once if it has)."""
        with self._lock:
            self._socks.append(holder)
        if self.expired.is_set():
            _shut(holder)

    def remaining(self) -> float | None:
        """Seconds left (0.0 once it has fired); None for a deadline of no timeout.
        One deadline may bound several requests in turn: each gets what is left."""
        if self.expired.is_set():
            return 0.0
        if self._end is None:
            return None
        return max(0.0, self._end - time.monotonic())

    def check(self) -> None:
        if self.expired.is_set() or (self._end is not None and time.monotonic() >= self._end):
            raise DeadlineExpired

    def cut(self) -> None:
        self.expired.set()
        with self._lock:
            holders = list(self._socks)
        for holder in holders:
            _shut(holder)


def _shut(holder: Any) -> None:
    sock = holder if isinstance(holder, socket.socket) else getattr(holder, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def read_capped(resp: Any, cap: int, deadline: Deadline | None = None) -> bytes:
    """The body of ``resp`` (anything with ``read(amt)``), read a chunk at a time;
    TooLarge once it passes ``cap`` bytes, DeadlineExpired once ``deadline`` has."""
    chunks: list[bytes] = []
    size = 0
    while True:
        if deadline is not None:
            deadline.check()
        chunk = resp.read(CHUNK)
        if not chunk:
            break
        size += len(chunk)
        if size > cap:
            chunks.clear()
            raise TooLarge(size)
        chunks.append(chunk)
    if deadline is not None:
        deadline.check()  # a cut read ends like the end of the body: it was not
    return b"".join(chunks)
