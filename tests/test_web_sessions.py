"""`quotatop web` owns its sessions' processes (issue #35), without a browser.

The server runs as a real `quotatop web` process; sessions are opened with plain
websockets (websocket-client), as a browser's page would. Its sessions' TUIs are found
as the server's children in /proc. The driver tests run one TUI under the session driver
(tui/web_driver.py) with pipes, as the server runs it.

Every wait is a poll with a deadline: the tests say what must end, never how fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from faults.fake_prometheus import fake_prometheus

from conftest import IN_CI, ROOT

try:
    import textual_serve  # noqa: F401 - `quotatop web` needs it
    import websocket  # websocket-client, the dev extra
except ImportError as e:  # under CI a missing one fails (conftest.skip_or_fail)
    if IN_CI:
        raise
    pytest.skip(f"{e.name} is not installed", allow_module_level=True)

pytestmark = pytest.mark.timeout(180)

START_WAIT = 30.0  # seconds for the server to answer, a session's TUI to start
END_WAIT = 20.0  # seconds for processes that must end to be gone (a loaded machine)
SECRET = "s3cr3t-pa55"  # the test's own fake password


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _alive(pid: int) -> bool:
    """True while ``pid`` is a process that has not exited (a zombie has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid and fields[0] != "Z":
                    out.append(int(entry))
    return out


def _wait_until(what: str, check: Any, wait: float = END_WAIT) -> Any:
    deadline = time.monotonic() + wait
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"not within {wait:g}s: {what}")
        time.sleep(0.2)


@dataclass
class Web:
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def connect(self) -> Any:
        return websocket.create_connection(
            f"ws://127.0.0.1:{self.port}/ws?width=100&height=30", timeout=15)

    def sessions(self) -> list[int]:
        return _children(self.proc.pid)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def _start_web(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Web:
    port = _free_port()
    log = tmp_path / f"web-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "quotatop", "web", "--port", str(port),
                                 *args], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                env={**os.environ, "COLUMNS": "300", **(env or {})})
    web = Web(proc, port, log)

    def up() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"quotatop web exited {proc.returncode}: {web.output()[-2000:]}")
        try:
            with urllib.request.urlopen(web.url, timeout=2):
                return True
        except OSError:
            return False

    _wait_until("quotatop web answers", up, START_WAIT)
    return web


@pytest.fixture
def start_web(tmp_path: Path) -> Iterator[Any]:
    started: list[Web] = []
    seen: set[int] = set()

    def start(*args: str, env: dict[str, str] | None = None) -> Web:
        web = _start_web(tmp_path, *args, env=env)
        started.append(web)
        return web

    yield start
    for web in started:
        seen.update(web.sessions())
        with contextlib.suppress(ProcessLookupError):
            os.killpg(web.proc.pid, signal.SIGKILL)
        web.proc.wait()
    for pid in seen:  # a failed test leaves nothing behind either
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


def _open_session(web: Web) -> tuple[Any, int]:
    """A websocket with its TUI running (it has drawn something); its TUI's pid."""
    before = set(web.sessions())
    ws = web.connect()
    ws.recv()  # the TUI's first frame: its process is up
    pids = _wait_until("the session's TUI is a child of web",
                       lambda: set(web.sessions()) - before, START_WAIT)
    (pid,) = pids
    return ws, pid


def _drop(ws: Any) -> None:
    """Close the TCP connection with a reset and no websocket close: a killed browser."""
    ws.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
    ws.sock.close()


def test_each_session_is_one_process_in_a_group_of_its_own(start_web: Any) -> None:
    web = start_web("--source", "demo")
    ws, pid = _open_session(web)
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert cmdline[:3] == [sys.executable.encode(), b"-m", b"quotatop"], cmdline  # no shell
    assert os.getpgid(pid) == pid and os.getsid(pid) == pid
    ws.close()


@pytest.mark.parametrize("close", ["clean", "dropped"])
def test_a_closed_websocket_ends_its_tui(start_web: Any, close: str) -> None:
    web = start_web("--source", "demo")
    ws, pid = _open_session(web)
    ws.close() if close == "clean" else _drop(ws)
    _wait_until(f"TUI {pid} gone after a {close} close", lambda: not _alive(pid))
    assert web.proc.poll() is None  # the server serves on


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_web_stopped_leaves_no_process(start_web: Any, sig: signal.Signals) -> None:
    web = start_web("--source", "demo")
    sessions = [_open_session(web) for _ in range(2)]
    pids = [pid for _, pid in sessions]
    web.proc.send_signal(sig)
    _wait_until(f"web ends on {sig.name}", lambda: web.proc.poll() is not None)
    _wait_until(f"no TUI left of {pids}", lambda: not any(map(_alive, pids)))
    assert web.proc.returncode == 0, web.output()[-2000:]


def test_web_killed_leaves_no_process(start_web: Any) -> None:
    """SIGKILL gives web no say: its TUIs see their stdin close and end."""
    web = start_web("--source", "demo")
    pids = [_open_session(web)[1] for _ in range(2)]
    web.proc.kill()
    web.proc.wait()
    _wait_until(f"no TUI left of {pids} after web's SIGKILL", lambda: not any(map(_alive, pids)))


def _status(url: str, **headers: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                    timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_sessions_beyond_the_cap_get_the_full_page(start_web: Any) -> None:
    web = start_web("--source", "demo", "--max-sessions", "2")
    first, second = _open_session(web), _open_session(web)
    assert "(at most 2 sessions)" in web.output()
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        web.connect()
    assert refused.value.status_code == 503
    assert b"quotatop web is full" in (refused.value.resp_body or b"")
    assert len(web.sessions()) == 2  # the refused one started nothing
    status, page = _status(web.url)
    assert status == 503 and "All 2 sessions of this server are in use" in page
    # A session closed frees its slot once its TUI is gone.
    _drop(first[0])
    _wait_until("the closed session's TUI gone", lambda: not _alive(first[1]))
    _wait_until("the page served again", lambda: _status(web.url)[0] == 200)
    third = _open_session(web)
    assert len(web.sessions()) == 2
    for ws, _ in (second, third):
        ws.close()


def test_max_sessions_from_the_config_file(start_web: Any, tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text("[web]\nmax_sessions = 1\n")
    web = start_web("--source", "demo", "--config", str(cfg))
    ws, _ = _open_session(web)
    with pytest.raises(websocket.WebSocketBadStatusException):
        web.connect()
    ws.close()


@pytest.mark.parametrize("value", ["0", "many"])
def test_a_bad_max_sessions_fails_in_one_line(value: str) -> None:
    r = subprocess.run([sys.executable, "-m", "quotatop", "web", "--max-sessions", value,
                        "--port", str(_free_port())], cwd=ROOT, capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r
    assert "--max-sessions" in r.stderr and r.stdout == ""


def test_a_bad_max_sessions_in_the_config_is_refused(tmp_path: Path) -> None:
    from quotatop.collectors.errors import UserError
    from quotatop.config import parse_config

    assert parse_config("[web]\nmax_sessions = 3\n").web.max_sessions == 3
    with pytest.raises(UserError, match=r"web\.max_sessions"):
        parse_config("[web]\nmax_sessions = 0\n")


def test_no_secret_in_the_banner_nor_a_session_command_line(start_web: Any) -> None:
    with fake_prometheus() as prom:  # answers web's own first look at the source
        url = prom.url.replace("http://", f"http://viewer:{SECRET}@") + "/"
        web = start_web("--source", "prometheus", "--prometheus-url", url, "--timeout", "1")
        ws, pid = _open_session(web)
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    ws.close()
    assert SECRET.encode() not in cmdline, cmdline
    assert b"--prometheus-url" not in cmdline  # it travels in the environment instead
    assert f"QUOTATOP_PROMETHEUS_URL={url}".encode() in environ
    banner = web.output()
    assert "Serving" in banner and SECRET not in banner, banner


def _page_text(ws: Any, want: str, wait: float = START_WAIT) -> str:
    """What the session drew, until ``want`` is among it or ``wait`` is over."""
    seen, deadline = "", time.monotonic() + wait
    while want not in seen and time.monotonic() < deadline:
        with contextlib.suppress(websocket.WebSocketTimeoutException):
            frame = ws.recv()
            seen += frame if isinstance(frame, str) else frame.decode(errors="replace")
            # a redraw moves the cursor between words; the words themselves stay whole
    return seen


def test_an_unreachable_cluster_is_the_pages_banner_not_a_closed_page(start_web: Any) -> None:
    """`quotatop` in a terminal says it in one line and exits 2; a web session has no
    terminal (its stderr is the server's), so its page opens on the stale banner."""
    # Up when web starts (web refuses a cluster it cannot reach then, as `quotatop`
    # does), gone by the time the session asks.
    with fake_prometheus() as prom:
        web = start_web("--source", "prometheus", "--prometheus-url", prom.url,
                        "--timeout", "1")
    ws, pid = _open_session(web)
    try:
        seen = _page_text(ws, "source stale")
        assert "source stale" in seen, seen[-2000:]
        assert _alive(pid)
    finally:
        ws.close()


def test_the_prometheus_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a session reads: the variable stands for the flag; the flag wins over it."""
    from quotatop.cli import build_parser
    from quotatop.source_flags import source_overrides

    monkeypatch.setenv("QUOTATOP_PROMETHEUS_URL", "http://from-env:9090")
    args = build_parser().parse_args(["--source", "prometheus"])
    assert source_overrides(args, "prometheus")["prometheus_url"] == "http://from-env:9090"
    args = build_parser().parse_args(["--prometheus-url", "http://flag:9090"])
    assert source_overrides(args, "prometheus")["prometheus_url"] == "http://flag:9090"


def test_session_launch_moves_secret_flags_out_of_argv() -> None:
    from quotatop.commands.web_sessions import session_launch

    argv, env = session_launch(["--source", "prometheus", "--prometheus-url", "http://u:p@h/",
                                "--refresh", "2"])
    assert argv == [sys.executable, "-m", "quotatop", "--source", "prometheus",
                    "--refresh", "2"]
    assert env == {"QUOTATOP_PROMETHEUS_URL": "http://u:p@h/"}


# The driver on its own: one TUI with pipes, as the server runs it.

@pytest.fixture
def tui(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "TEXTUAL_DRIVER": "quotatop.tui.web_driver:SessionWebDriver",
           "COLUMNS": "100", "ROWS": "30"}
    proc = subprocess.Popen([sys.executable, "-m", "quotatop", "--source", "demo"],
                            cwd=tmp_path, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    assert proc.stdout is not None
    try:
        assert proc.stdout.readline() == b"__GANGLION__\n"  # WebDriver's prelude: it runs
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _drain(proc: subprocess.Popen[bytes]) -> None:
    """Read the TUI's frames in a thread, as the server does, until EOF."""
    out = proc.stdout
    assert out is not None
    threading.Thread(target=lambda: [None for _ in iter(lambda: out.read1(65536), b"")],
                     daemon=True).start()


def test_eof_on_stdin_ends_the_tui(tui: subprocess.Popen[bytes]) -> None:
    _drain(tui)
    assert tui.stdin is not None
    tui.stdin.close()
    _wait_until("the TUI ends on EOF", lambda: tui.poll() is not None)
    assert tui.returncode == 0


def test_sigterm_ends_a_tui_whose_output_nobody_reads(tui: subprocess.Popen[bytes]) -> None:
    """The server stopped reading: the pipe fills and the TUI blocks writing a frame.
    Textual's own handler would never run; this one ends it, by itself (143), not by
    anyone's SIGKILL."""
    import fcntl

    assert tui.stdout is not None and tui.stdin is not None  # nobody reads stdout now
    # The smallest pipe Linux gives (one page), so that one frame fills it.
    with contextlib.suppress(OSError):  # EBUSY: more than that unread already
        fcntl.fcntl(tui.stdout.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)
    sizes = iter(range(10**6))

    def blocked() -> bool:
        """Whether the TUI's main thread waits in a write to its pipe (the kernel's
        wchan; /proc/PID/syscall where wchan is hidden: write(1, …) on x86-64); if not,
        a resize, which makes it draw its whole screen again."""
        with contextlib.suppress(OSError):
            if "pipe_write" in Path(f"/proc/{tui.pid}/wchan").read_text():
                return True
        with contextlib.suppress(OSError):
            if Path(f"/proc/{tui.pid}/syscall").read_text().startswith("1 0x1 "):
                return True
        meta = json.dumps({"type": "resize", "width": 100 + next(sizes) % 2 * 20,
                           "height": 30}).encode()
        tui.stdin.write(b"M" + len(meta).to_bytes(4, "big") + meta)
        tui.stdin.flush()
        return False

    _wait_until("the TUI blocked writing to its full pipe", blocked, START_WAIT)
    tui.send_signal(signal.SIGTERM)
    _wait_until("the TUI ends on SIGTERM", lambda: tui.poll() is not None)
    assert tui.returncode == 143


def test_sigterm_ends_a_tui_in_use(tui: subprocess.Popen[bytes]) -> None:
    _drain(tui)
    tui.send_signal(signal.SIGTERM)
    _wait_until("the TUI ends on SIGTERM", lambda: tui.poll() is not None)
    assert tui.returncode in (0, 143), tui.returncode  # quit, or the watchdog's exit


def test_a_closed_stdout_ends_the_tui(tui: subprocess.Popen[bytes]) -> None:
    """The server gone, its end of the TUI's stdout closed: the next frame fails (EPIPE)
    and the TUI ends. (Textual's own driver ends here too, the error escaping a frame;
    the session driver catches that error, and this holds it to ending all the same.)"""
    assert tui.stdout is not None and tui.stdin is not None
    tui.stdout.close()

    def ended() -> bool:
        if tui.poll() is not None:
            return True
        meta = json.dumps({"type": "resize", "width": 90, "height": 30}).encode()
        with contextlib.suppress(OSError):  # a resize: a frame to write
            tui.stdin.write(b"M" + len(meta).to_bytes(4, "big") + meta)
            tui.stdin.flush()
        return False

    _wait_until("the TUI ends on a closed stdout", ended)
    assert tui.returncode in (0, 143), tui.returncode


@pytest.mark.parametrize("size", [(10**9, 10**9), ("wide", None)])
def test_a_browser_cannot_size_the_screen_out_of_bounds(tui: subprocess.Popen[bytes],
                                                        size: tuple[Any, Any]) -> None:
    """A resize from the page (any browser can send one) is clamped or dropped: the TUI
    draws on and stays small. (Textual's own driver, sent 1e9 × 1e9, peaked at 1.26 GB
    RSS here before falling back.)"""
    from quotatop.tui.web_driver import MAX_COLUMNS, MAX_ROWS

    assert tui.stdin is not None
    _drain(tui)
    meta = json.dumps({"type": "resize", "width": size[0], "height": size[1]}).encode()
    tui.stdin.write(b"M" + len(meta).to_bytes(4, "big") + meta)
    tui.stdin.flush()
    # A bounded resize after it: once the TUI has drawn that one, it has handled the first.
    meta = json.dumps({"type": "resize", "width": 90, "height": 30}).encode()
    tui.stdin.write(b"M" + len(meta).to_bytes(4, "big") + meta)
    tui.stdin.flush()
    time.sleep(2)  # not a speed claim: some frames later, then look at the process
    assert tui.poll() is None, "the TUI died of a resize"
    peak_kib = int(next(line.split()[1] for line in  # VmHWM: the peak RSS so far
                        Path(f"/proc/{tui.pid}/status").read_text().splitlines()
                        if line.startswith("VmHWM:")))
    assert peak_kib < 500 * 1024, f"peak {peak_kib} KiB after a resize to {size}"
    assert (MAX_COLUMNS, MAX_ROWS) == (1000, 500)  # the bounds docs/web.md gives
