"""The driver a `quotatop web` session's TUI runs under: Textual's WebDriver, made to end.

`quotatop web` (quotatop/commands/web_sessions.py) starts each session's TUI with
``TEXTUAL_DRIVER`` naming :class:`SessionWebDriver`. Textual's own WebDriver outlives its
server in three ways (issue #35), each closed here:

- **EOF on stdin** (the server closed the pipe, or died, even of SIGKILL: it held the only
  write end): Textual's input thread just returns, and the app runs on with nobody to
  show it to. Here EOF ends the app.
- **A dead stdout** (BrokenPipeError, or any OSError writing a frame): Textual lets the
  error escape from every frame it draws. Here the first failed write ends the app, and
  later frames are dropped instead of raising again.
- **SIGTERM while blocked**: Textual handles SIGTERM with ``loop.add_signal_handler``,
  whose callback runs only when the event loop runs. When the server stops reading stdout
  the pipe fills and the loop blocks in ``os.write`` for good, so SIGTERM was never acted
  on. Here SIGTERM/SIGINT/SIGHUP ask the app to exit and arm a watchdog thread that ends
  the process with ``os._exit`` if it is still alive :data:`EXIT_GRACE` seconds later.
  They are heard by a thread reading the signal wakeup fd, not only by a Python handler:
  the kernel may hand the signal to any thread, and a Python handler runs only in the
  main thread, the one that is blocked. The prelude that tells the server the TUI runs
  is written only once these are in place, so no SIGTERM falls in between.

A thread also watches the parent pid: when the server is gone (this process was
re-parented) the app ends, the same as on EOF, should some other process hold the pipe.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from types import FrameType
from typing import Any

from textual import messages
from textual.drivers.web_driver import WebDriver

from quotatop.collectors import procgroups

# Seconds from the request to exit until the process is ended regardless: under the 2 s
# the server waits before SIGKILL, so the TUI's own cleanup (procgroups, the recording)
# gets its chance first.
EXIT_GRACE = 1.5
PARENT_POLL = 0.5  # seconds between checks that the server is still our parent
EXIT_STATUS = 143  # 128 + SIGTERM, what a shell reports for a process ended by it
PRELUDE = b"__GANGLION__\n"  # WebDriver's "a Textual app runs here" line to the server
MAX_COLUMNS, MAX_ROWS = 1000, 500  # the largest screen a browser may ask for
_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class SessionWebDriver(WebDriver):
    """WebDriver that ends its app when its server goes (module docstring)."""

    def __init__(self, app: Any, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._parent = os.getppid()
        self._ending = threading.Event()
        self._loop: Any = None
        raw_write = self._write

        def write(data: bytes) -> int:
            if not self._armed:  # start_application_mode writes these once armed
                if data != PRELUDE:
                    self._held.append(data)
                return len(data)
            if self._ending.is_set() and self._output_dead:
                return len(data)  # the pipe is gone: drop the frame, do not raise again
            try:
                return int(raw_write(data))
            except OSError:
                self._output_dead = True
                self.end("stdout closed")
                return len(data)

        self._output_dead = False
        self._armed = False
        self._held: list[bytes] = []  # what WebDriver wrote before its prelude
        self._write = write  # WebDriver's write/write_meta/... all go through _write

    def start_application_mode(self) -> None:
        import asyncio

        self._loop = asyncio.get_running_loop()
        super().start_application_mode()  # what it writes is held back by write() above
        # Replace WebDriver's loop.add_signal_handler handlers (see the module docstring).
        for sig in _SIGNALS:
            self._loop.remove_signal_handler(sig)
            signal.signal(sig, self._on_signal)
        # A signal may be delivered to any thread, and a Python handler runs only in the
        # main thread, which may be the one blocked: the C-level handler's wakeup fd is
        # written whichever thread took it, so a thread of our own reads that instead.
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        threading.Thread(target=self._watch_signals, args=(read_end, previous),
                         name="quotatop-web-signals", daemon=True).start()
        threading.Thread(target=self._watch_parent, name="quotatop-web-parent",
                         daemon=True).start()
        # Only now tell the server the TUI runs: a SIGTERM from here on is ours.
        self._armed = True
        self._write(PRELUDE)
        for data in self._held:
            self._write(data)
        self._held.clear()

    def _watch_signals(self, read_end: int, previous: int) -> None:
        wanted = {int(s) for s in _SIGNALS}
        while True:
            try:
                got = os.read(read_end, 64)
            except OSError:
                return
            if not got:
                return
            if previous >= 0:  # whoever had the wakeup fd before still hears of them
                with contextlib.suppress(OSError):
                    os.write(previous, got)
            hit = [n for n in got if n in wanted]
            if hit:
                self.end(signal.Signals(hit[0]).name)

    def run_input_thread(self) -> None:
        super().run_input_thread()
        # WebDriver's loop returns on EOF as well as on a stop it asked for; only the
        # latter sets exit_event.
        if not self.exit_event.is_set():
            self.end("stdin closed")

    def on_meta(self, packet_type: str, payload: dict[str, object]) -> None:
        if packet_type == "resize":
            # The size comes from a browser: the screen is width × height cells, so a
            # size out of bounds (or not a number) is clamped (or dropped), never drawn.
            width, height = payload.get("width"), payload.get("height")
            if not all(isinstance(v, int) and not isinstance(v, bool)
                       for v in (width, height)):
                return
            payload = {**payload, "width": min(max(width, 1), MAX_COLUMNS),  # type: ignore[call-overload]
                       "height": min(max(height, 1), MAX_ROWS)}  # type: ignore[call-overload]
        super().on_meta(packet_type, payload)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        # Kill the source's commands now: a blocked main thread may never reach the
        # app's own cleanup before the watchdog ends the process.
        procgroups.kill_all()
        self.end(signal.Signals(signum).name)

    def _watch_parent(self) -> None:
        while not self._ending.wait(PARENT_POLL):
            if os.getppid() != self._parent:
                self.end("server gone")
                return

    def end(self, why: str) -> None:
        """Ask the app to exit, and make sure the process is gone EXIT_GRACE s later.
        Safe from any thread and from a signal handler; only the first call acts."""
        if self._ending.is_set():
            return
        self._ending.set()
        threading.Thread(target=self._watchdog, name="quotatop-web-exit",
                         daemon=True).start()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            # RuntimeError: the loop closed meanwhile; the watchdog ends the process.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._app.post_message, messages.ExitApp())

    def _watchdog(self) -> None:
        threading.Event().wait(EXIT_GRACE)
        procgroups.kill_all()
        os._exit(EXIT_STATUS)
