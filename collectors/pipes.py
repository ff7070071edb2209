"""A child's stdout and stderr read together as they come, each under a size cap, never
past a deadline: what the Slurm runner does with each command it runs, and the
Kubernetes exec credential plugin with its helper. One reader, so that a bound added to
one (a cap, a stop) is added to both.

Reading both at once matters: a child that fills the pipe it is not being read on
blocks for ever, and a cap checked only after the whole answer came would have let the
answer grow without bound first."""

from __future__ import annotations

import os
import selectors
import subprocess
import threading
import time

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30


class ReadStopped(Exception):
    """Why the read stopped early, in one line: ``deadline``, ``interrupted``, or
    ``output over 64 MiB`` / ``stderr over 1 MiB``. The pipes are left unread: the
    caller kills the child."""

    def __init__(self, why: str, *, over_cap: bool = False) -> None:
        super().__init__(why)
        self.over_cap = over_cap


def size_text(n: int) -> str:
    """``1 GiB``, ``64 MiB``, ``64 KiB``: a cap as the message names it."""
    for unit, name in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if n >= unit and n % unit == 0:
            return f"{n // unit} {name}"
    return f"{n} bytes"


def read_both(proc: subprocess.Popen[bytes], deadline: float, out_cap: int, err_cap: int,
              *, stop: threading.Event | None = None, poll: float = 0.2,
              chunk: int = 1 << 16) -> tuple[bytes, bytes]:
    """``proc``'s stdout and stderr until both close (``deadline`` on the monotonic
    clock). ``stop``, when set, ends the read within ``poll`` seconds: killing a group is
    not enough to end it, since a grandchild that left the group may hold stdout open."""
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    bufs: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    sizes = dict.fromkeys(bufs, 0)
    caps = {out_fd: out_cap, err_fd: err_cap}
    with selectors.DefaultSelector() as sel:
        for fd in bufs:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise ReadStopped("deadline")
            if stop is not None:
                if stop.is_set():
                    raise ReadStopped("interrupted")
                left = min(left, poll)
            for key, _ in sel.select(timeout=left):
                try:
                    data = os.read(key.fd, chunk)
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(key.fd)
                    continue
                sizes[key.fd] += len(data)
                if sizes[key.fd] > caps[key.fd]:
                    what = "output" if key.fd == out_fd else "stderr"
                    raise ReadStopped(f"{what} over {size_text(caps[key.fd])}", over_cap=True)
                bufs[key.fd].append(data)
    return b"".join(bufs[out_fd]), b"".join(bufs[err_fd])
