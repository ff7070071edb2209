"""`quotatop web`'s sessions: one TUI process per websocket, owned by the server.

textual-serve (1.1) starts each session's command through ``/bin/sh -c`` in the server's
process group and, when the websocket goes, only asks the TUI to quit and waits on its
stdout for as long as that takes: a TUI that does not hear (its pipe full, its loop
blocked) lived on, and ``web`` ending orphaned it (issue #35). Here the server owns them:

- each session is ``python -m quotatop …`` started directly (no shell: one process, not
  two) in a session and process group of its own, so that signals reach it and what it
  forks, and nothing of the server's terminal does;
- when its websocket closes, cleanly or not, and when ``web`` stops (SIGTERM, SIGINT,
  the end of ``serve``), the group gets SIGTERM, then SIGKILL :data:`KILL_AFTER` seconds
  later if the TUI has not ended; ``web`` killed outright (SIGKILL) closes the TUI's
  stdin, and the TUI's driver (tui/web_driver.py) ends on that EOF;
- at most ``max_sessions`` run at once; the page and the websocket beyond that get
  HTTP 503 and a page saying so, and a session's slot is free again once its TUI is gone;
- secrets never go on a command line (``ps`` shows it to every user of the machine):
  ``--prometheus-url`` travels in the environment (:data:`PROMETHEUS_URL_ENV`).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import html
import logging
import os
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

from quotatop.collectors import procgroups
from quotatop.collectors.untrusted import (
    printable,
    printable_lines,
    redact_url,
    redact_urls_in,
)
from quotatop.source_flags import PROMETHEUS_URL_ENV

log = logging.getLogger("quotatop.web")

KILL_AFTER = 2.0  # seconds between SIGTERM and SIGKILL of a session's process group
DEFAULT_MAX_SESSIONS = 4
DRIVER = "quotatop.tui.web_driver:SessionWebDriver"
# The terminal sizes a browser may ask for: the TUI allocates a screen of this many cells.
MAX_COLUMNS, MAX_ROWS = 1000, 500
# Flags whose value may hold a secret, and the environment variable that carries it.
SECRET_FLAGS = {"--prometheus-url": PROMETHEUS_URL_ENV}


def session_launch(forwarded: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """(argv, environment additions) of a session's TUI for the forwarded TUI flags
    (as web.py's _Forward stores them: each flag by its canonical name, then its
    words): every secret-bearing flag is taken out of argv into the environment."""
    argv, env = [sys.executable, "-m", "quotatop"], {}
    words = list(forwarded)
    i = 0
    while i < len(words):
        word = words[i]
        if word in SECRET_FLAGS and i + 1 < len(words):
            env[SECRET_FLAGS[word]] = words[i + 1]
            i += 2
            continue
        argv.append(word)
        i += 1
    return argv, env


class PrintableStream:
    """A session's stderr as textual-serve reads it (``read(n)``), with every character
    that is not printable escaped (collectors/untrusted.py) and its line breaks kept:
    textual-serve writes what it read to the server's terminal as it is, and a TUI's
    stderr may quote what a cluster sent (a job name with ESC in it). UTF-8 split
    between two reads is decoded whole."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self._stream = stream
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    async def read(self, n: int = -1) -> bytes:
        while True:
            data = await self._stream.read(n)
            text = self._decoder.decode(data, final=not data)
            # b"" is the end of the stream: never returned for half a character.
            if text or not data:
                return printable_lines(text).encode()


def shown_command(argv: Sequence[str]) -> str:
    """A session's command as the banner prints it: one line, no credentials."""
    return printable(redact_urls_in(shlex.join(argv)))


def refusal_page(max_sessions: int) -> str:
    n = "1 session" if max_sessions == 1 else f"{max_sessions} sessions"
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>quotatop: busy"
            "</title></head><body><h1>quotatop web is full</h1>"
            f"<p>All {html.escape(n)} of this server are in use (<code>--max-sessions "
            f"{max_sessions}</code>). Close another tab of it, or try again later.</p>"
            "</body></html>\n")


def _clamp(value: str, default: int, top: int) -> int:
    try:
        n = int(value)
    except ValueError:
        return default
    return min(max(n, 1), top)


async def end_group(process: asyncio.subprocess.Process, grace: float = KILL_AFTER) -> None:
    """SIGTERM ``process``'s group (it leads one), SIGKILL it ``grace`` s later if the
    leader has not exited, and wait for the leader."""
    pgid = process.pid
    try:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), grace)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signal.SIGKILL)
                await process.wait()
    finally:
        # Once reaped, the pid may be handed out again: no killpg after this point.
        procgroups.discard(pgid)


def make_server(forwarded: Sequence[str], host: str, port: int, public_url: str,
                max_sessions: int) -> Any:
    """textual-serve's Server with sessions owned as the module docstring says."""
    from aiohttp import web
    from textual_serve.app_service import AppService
    from textual_serve.server import LOGO, Server

    argv, secrets = session_launch(forwarded)

    class Session(AppService):  # type: ignore[misc]
        """One browser session's TUI process."""

        def __init__(self, on_end: Callable[[Session], None], **kwargs: Any) -> None:
            super().__init__(shlex.join(argv), **kwargs)
            self._on_end = on_end
            self._ending: asyncio.Future[None] | None = None

        def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
            env: dict[str, str] = super()._build_environment(width=width, height=height)
            env.update(secrets)
            env["TEXTUAL_DRIVER"] = DRIVER
            return env

        async def _open_app_process(self, width: int = 80, height: int = 24) -> Any:
            self._process = process = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=self._build_environment(width, height),
                start_new_session=True)
            # Registered with procgroups: its atexit and SIGHUP handler SIGKILL what is
            # left should the server end some way that skips stop().
            procgroups.add(process.pid)
            self._stdin = process.stdin
            assert process.stderr is not None
            process.stderr = PrintableStream(process.stderr)  # type: ignore[assignment]
            return process

        async def stop(self) -> None:
            """End the TUI (idempotent; the handler calls it from two places)."""
            if self._ending is None:
                self._ending = asyncio.ensure_future(self._end())
            # Shielded: a handler cancelled again while it waits must not leave the
            # process running nor its slot counted.
            await asyncio.shield(self._ending)

        async def _end(self) -> None:
            try:
                with contextlib.suppress(Exception):
                    await self._download_manager.cancel_app_downloads(
                        app_service_id=self.app_service_id)
                if self._process is not None:
                    await end_group(self._process)
                if self._task is not None:
                    # Its stdout is at EOF once the TUI is gone; a bound, should anything
                    # else hold the pipe open.
                    with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                        await asyncio.wait_for(self._task, KILL_AFTER)
                    self._task = None
                # Its TUI gone, the websocket goes too: the handler stops waiting on the
                # browser, and a server shutting down is not held up by open tabs.
                with contextlib.suppress(Exception):
                    await self.remote_close()
            finally:
                self._on_end(self)

    class SessionServer(Server):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(shlex.join(argv), host=host, port=port, title="quotatop",
                             public_url=public_url)
            self.max_sessions = max_sessions
            self.sessions: set[Session] = set()

        async def on_startup(self, app: Any) -> None:
            # textual-serve's banner prints the command as run; this one without secrets
            # (there are none in argv, but a URL's userinfo is redacted all the same).
            self.console.print(LOGO, highlight=False)
            # markup=False: a path with "[" in it is text, not a style tag.
            self.console.print(f"Serving {shown_command(argv)!r} on "
                               f"{redact_url(self.public_url)} (at most "
                               f"{self.max_sessions} sessions)", markup=False,
                               highlight=False)
            self.console.print("\n[cyan]Press Ctrl+C to quit")

        async def on_shutdown(self, app: Any) -> None:
            await asyncio.gather(*(s.stop() for s in list(self.sessions)),
                                 return_exceptions=True)

        def _full(self) -> Any:
            return web.Response(status=503, text=refusal_page(self.max_sessions),
                                content_type="text/html", headers={"Retry-After": "10"})

        async def handle_index(self, request: Any) -> Any:
            if len(self.sessions) >= self.max_sessions:
                return self._full()
            return await super().handle_index(request)

        async def handle_websocket(self, request: Any) -> Any:
            if len(self.sessions) >= self.max_sessions:
                log.warning("refused a session: %d of %d in use", len(self.sessions),
                            self.max_sessions)
                return self._full()
            websocket = web.WebSocketResponse(heartbeat=15)
            width = _clamp(request.query.get("width", "80"), 80, MAX_COLUMNS)
            height = _clamp(request.query.get("height", "24"), 24, MAX_ROWS)
            session = Session(self.sessions.discard, write_bytes=websocket.send_bytes,
                              write_str=websocket.send_str, close=websocket.close,
                              download_manager=self.download_manager, debug=self.debug)
            # Counted before the first await, so concurrent handshakes cannot overshoot.
            self.sessions.add(session)
            try:
                await websocket.prepare(request)
                await session.start(width, height)
                await self._process_messages(websocket, session)
            except asyncio.CancelledError:
                pass
            except Exception as error:  # a malformed message ends this session only
                log.warning("session ended: %s", printable(str(error))[:200])
            finally:
                await session.stop()
                with contextlib.suppress(Exception):
                    await websocket.close()
            return websocket

    return SessionServer()
