"""A byte at a time: what the fake servers (fake_kube, fake_prometheus) answer in their
trickle modes, so that a client's deadline, not its per-read timeout, has to cut them."""

from __future__ import annotations

import threading
from typing import BinaryIO


def trickle(out: BinaryIO, data: bytes, every: float, give_up_after: float,
            closing: threading.Event) -> None:
    """Write ``data`` to ``out`` one byte every ``every`` seconds, for at most
    ``give_up_after`` seconds; ``closing`` set (the server's close()) ends it at once,
    as does a client that went away."""
    for i, byte in enumerate(data):
        if i * every > give_up_after:
            return
        try:
            out.write(bytes([byte]))
            out.flush()
        except OSError:
            return
        if closing.wait(every):  # the sleep, cut short by close()
            return
