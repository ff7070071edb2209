"""The process groups of commands still running, so that none outlives quotatop.

A collector that runs client commands (collectors/slurm/runner.py) starts each in its
own session (``start_new_session=True``), so the command and anything it forks share a
process group whose id is the command's pid. The group is registered here while it
runs. On interpreter exit (atexit, registered with the first group) and, once the CLI
or the TUI entry has called :func:`killing_on_signals`, on SIGHUP and SIGTERM, every
registered group is killed with SIGKILL. Nothing is installed at import."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from types import FrameType

_LOCK = threading.RLock()  # re-entrant: a signal handler may run while the main thread holds it
_LIVE: set[int] = set()
_atexit_registered = False


def add(pgid: int) -> None:
    """Register a running command's process group."""
    global _atexit_registered
    with _LOCK:
        if not _atexit_registered:
            atexit.register(kill_all)
            _atexit_registered = True
        _LIVE.add(pgid)


def discard(pgid: int) -> None:
    with _LOCK:
        _LIVE.discard(pgid)


def live() -> list[int]:
    """The process groups registered now."""
    with _LOCK:
        return sorted(_LIVE)


def kill(pgid: int) -> None:
    """SIGKILL one process group; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_all() -> int:
    """SIGKILL every registered group (they are dropped from the registry by the
    threads that started them, once those see the commands end). The count killed."""
    groups = live()
    for pgid in groups:
        kill(pgid)
    return len(groups)


_Handler = signal.Handlers | int | None | object


def _chain(previous: _Handler, signum: int, frame: FrameType | None) -> None:
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_IGN:
        return
    else:  # SIG_DFL, or a handler not installed from Python: die of the signal as before
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


@contextlib.contextmanager
def killing_on_signals(
    signals: Sequence[signal.Signals] = (signal.SIGHUP, signal.SIGTERM),
) -> Iterator[None]:
    """While inside, SIGHUP/SIGTERM first kill the registered groups, then do what the
    handler installed before did (a Python handler is called; the default action
    terminates the process as before; an ignored signal stays ignored). The previous
    handlers are put back on leaving. Outside the main thread this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved: dict[int, _Handler] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        kill_all()
        _chain(saved.get(signum, signal.SIG_DFL), signum, frame)

    for sig in signals:
        with contextlib.suppress(OSError, ValueError):
            saved[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, previous in saved.items():
            # Put back only what is still ours (a command may have installed its own).
            if signal.getsignal(sig) is handler:
                with contextlib.suppress(OSError, ValueError, TypeError):
                    signal.signal(sig, previous)  # type: ignore[arg-type]
