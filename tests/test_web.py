"""`quotatop web` in a real browser.

The server runs as `quotatop web --source demo` in its own process group; headless
Chromium opens it and is driven over the Chrome DevTools Protocol (CDP, the
websocket-client package that kubernetes already brings). A canvas holds the
terminal's pixels, not text, so the test reads the text the way xterm.js holds it:
its buffer. The Overview must show its title and the team names of the default demo
scenario (read from the scenario file); a screenshot is kept and checked for pixels.

Waits are bounded and polled; nothing asserts how long anything took.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, skip_or_fail
from quotatop.simulation.scenario import load_scenario
from quotatop.sources import DEFAULT_SCENARIO
from quotatop.tui.views_registry import VIEW_TITLES

pytestmark = pytest.mark.timeout(120)  # a hung browser fails the test, not the run

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
SERVER_WAIT = 30.0  # seconds for the server's port to answer
BROWSER_WAIT = 20.0  # seconds for Chromium's DevTools port
RENDER_WAIT = 45.0  # seconds for the Overview to appear in the terminal

# textual-serve's page keeps its xterm.js Terminal in a closure (`this.terminal =
# new Terminal(...)` in its client class). Before any page script runs, a setter on
# Object.prototype catches every object that stores a `terminal` that looks like an
# xterm.js Terminal, and makes the property an ordinary one again on that object.
CATCH_TERMINAL_JS = """
(() => {
  window.__xterms = [];
  Object.defineProperty(Object.prototype, "terminal", {
    configurable: true,
    set(value) {
      Object.defineProperty(this, "terminal",
        {value, writable: true, configurable: true, enumerable: true});
      if (value && value.buffer && value.buffer.active) window.__xterms.push(value);
    },
  });
})();
"""

# The screen as text, through xterm.js's public buffer API.
READ_SCREEN_JS = """
(() => {
  const t = (window.__xterms || [])[0];
  if (!t) return null;
  const b = t.buffer.active, lines = [];
  for (let i = 0; i < b.length; i++) {
    const line = b.getLine(i);
    lines.push(line ? line.translateToString(true) : "");
  }
  return {cols: t.cols, rows: t.rows, text: lines.join("\\n")};
})()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group (the server lets its TUIs quit), then SIGKILL it."""
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
            # The leader is gone; its children may linger in the group: kill them too.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            return


def _log_tail(path: Path, n: int = 2000) -> str:
    return path.read_text(errors="replace")[-n:] if path.exists() else ""


@pytest.fixture
def web_server(web_process: tuple[str, subprocess.Popen[bytes]]) -> str:
    """`quotatop web --source demo` on a free loopback port: its URL."""
    return web_process[0]


@pytest.fixture
def web_process(tmp_path: Path,
                quotatop_cmd: list[str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`quotatop web --source demo` on a free loopback port: its URL and process."""
    port = _free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([*quotatop_cmd, "web", "--source", "demo", "--port", str(port)],
                                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + SERVER_WAIT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"quotatop web exited {proc.returncode}: {_log_tail(log)}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"quotatop web did not answer in {SERVER_WAIT:g}s: {_log_tail(log)}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/", proc
    finally:
        _kill_group(proc)


class DevTools:
    """A minimal CDP client on one page target: commands in, results out."""

    def __init__(self, ws_url: str) -> None:
        import websocket  # websocket-client

        # Chromium refuses DevTools websockets with a foreign Origin; send none.
        self.ws = websocket.create_connection(ws_url, timeout=15, suppress_origin=True)
        self.next_id = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:  # skip events until our answer
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                result: dict[str, Any] = msg.get("result", {})
                return result

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()


@pytest.fixture
def browser(chromium: tuple[DevTools, subprocess.Popen[bytes]]) -> DevTools:
    """Headless Chromium's blank page, driven over DevTools."""
    return chromium[0]


@pytest.fixture
def chromium(tmp_path: Path) -> Iterator[tuple[DevTools, subprocess.Popen[bytes]]]:
    """Headless Chromium with DevTools on a port it picks: its blank page, its process
    (the leader of a process group of its own)."""
    exe = next((p for n in CHROMIUM_NAMES if (p := shutil.which(n))), None)
    if exe is None:
        skip_or_fail("no chromium on PATH (scripts/install-system-deps.sh installs it)")
    pytest.importorskip("websocket", reason="websocket-client (a kubernetes dependency)")
    profile = tmp_path / "chromium-profile"
    log = tmp_path / "chromium.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
             f"--user-data-dir={profile}", "--remote-debugging-port=0",  # 0: it picks a port
             "--remote-debugging-address=127.0.0.1",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-background-networking",
             # The page links a Google Fonts stylesheet and connects on window.onload,
             # which waits for it: fail every name lookup at once (the server is an IP
             # literal, excluded) so a network that drops packets cannot stall the test.
             "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "about:blank"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    devtools: DevTools | None = None
    try:
        # Chromium writes the port it chose into DevToolsActivePort in the profile.
        active = profile / "DevToolsActivePort"
        deadline = time.monotonic() + BROWSER_WAIT
        pages: list[dict[str, Any]] = []
        while not pages:
            if proc.poll() is not None:
                pytest.fail(f"chromium exited {proc.returncode}: {_log_tail(log)}")
            if time.monotonic() > deadline:
                pytest.fail(f"chromium DevTools not up in {BROWSER_WAIT:g}s: {_log_tail(log)}")
            time.sleep(0.2)
            with contextlib.suppress(OSError, ValueError, IndexError):
                port = int(active.read_text().split()[0])
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list",
                                            timeout=2) as r:
                    pages = [t for t in json.load(r) if t.get("type") == "page"]
        devtools = DevTools(pages[0]["webSocketDebuggerUrl"])
        yield devtools, proc
    finally:
        if devtools is not None:
            with contextlib.suppress(Exception):
                devtools.call("Browser.close")
            devtools.close()
        _kill_group(proc)


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of raw pixel bytes) of an 8-bit, non-interlaced RGB(A) PNG:
    enough of a decoder to count colours without an imaging library."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, head = 8, bytearray(), b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            head = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", head)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(bytes(idat)), width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif f == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev, strict=True))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def _colours(width: int, rows: list[bytes]) -> dict[bytes, int]:
    bpp = len(rows[0]) // width
    counts: dict[bytes, int] = {}
    for row in rows:
        for x in range(0, len(row), bpp):
            px = row[x:x + 3]
            counts[px] = counts.get(px, 0) + 1
    return counts


def test_overview_renders_in_a_browser(browser: DevTools, web_server: str,
                                       tmp_path: Path) -> None:
    # (browser first: with no Chromium the test skips before starting a server)
    scenario = load_scenario(DEFAULT_SCENARIO)
    teams = [t.name for t in scenario.teams]
    assert teams, f"{DEFAULT_SCENARIO} names no teams"

    def rendered(text: str) -> list[str]:
        """What of the Overview is not on screen yet: its tab, the scenario's name (in
        the header) and, as the first word of a table row, every team."""
        firsts = {line.split()[0] for line in text.splitlines() if line.split()}
        want = [w for w in (f"1 {VIEW_TITLES[0]}", scenario.scenario.name) if w not in text]
        return want + [t for t in teams if t not in firsts]

    # The page's viewport exactly (--window-size counts the window, not the viewport).
    browser.call("Emulation.setDeviceMetricsOverride", width=1400, height=900,
                 deviceScaleFactor=1, mobile=False)
    browser.call("Page.enable")
    browser.call("Page.addScriptToEvaluateOnNewDocument", source=CATCH_TERMINAL_JS)
    browser.call("Page.navigate", url=web_server)

    screen: dict[str, Any] | None = None
    deadline = time.monotonic() + RENDER_WAIT
    while time.monotonic() < deadline:  # poll until every expected word is on screen
        screen = browser.call("Runtime.evaluate", expression=READ_SCREEN_JS,
                              returnByValue=True)["result"].get("value")
        if screen and not rendered(screen["text"]):
            break
        time.sleep(0.5)

    shot = tmp_path / "quotatop-web-overview.png"
    png = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
    # The text as of the screenshot, which the demo's replay may have moved on since.
    screen = browser.call("Runtime.evaluate", expression=READ_SCREEN_JS,
                          returnByValue=True)["result"].get("value") or screen
    shot.write_bytes(png)
    (tmp_path / "quotatop-web-overview.txt").write_text((screen or {}).get("text", ""))
    print(f"\nscreenshot: {shot}\nscreen text: {shot.with_suffix('.txt')}", file=sys.stderr)

    if screen is None:
        page = browser.call("Runtime.evaluate", returnByValue=True,
                            expression="document.body ? document.body.innerText : ''")
        pytest.fail(f"the page never created its xterm.js terminal ({shot}); it shows: "
                    f"{str(page['result'].get('value'))[:500]!r}")
    text = screen["text"]
    missing = rendered(text)
    assert not missing, (f"not on screen after {RENDER_WAIT:g}s: {missing}; the terminal "
                         f"({screen['cols']}x{screen['rows']}) shows:\n{text}")
    # The terminal filled the 1400x900 window, not the 80x24 default of the server.
    assert screen["cols"] > 80 and screen["rows"] > 24, screen

    width, height, rows = _png_pixels(png)
    assert (width, height) == (1400, 900), (width, height)
    counts = _colours(width, rows)
    dominant = max(counts.values()) / (width * height)
    assert len(counts) >= 16 and dominant < 0.98, (
        f"{shot}: {len(counts)} colours, the commonest covers {dominant:.0%}: a blank page?")


def test_web_flags_match_the_tui() -> None:
    """Every flag `quotatop` (the TUI) takes is one `quotatop web` forwards, and back."""
    from quotatop.cli import build_parser
    from quotatop.commands.web import forwarded_flags

    tui = build_parser()
    own = {o for a in tui._actions if not isinstance(a, argparse._SubParsersAction)
           for o in a.option_strings if o.startswith("--")} - {"--help", "--version"}
    assert own == {flag for flag, *_ in forwarded_flags()}


def _web(quotatop_cmd: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*quotatop_cmd, "web", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("args", "says"), [
    (["--refresh", "soon"], "--refresh"),  # the TUI's parser refuses it
    (["--source", "nowhere"], "nowhere"),  # the TUI's source registry refuses it
    (["--scenario", "no-such-scenario.toml"], "no-such-scenario.toml"),  # opened first
    (["--port", "0"], "--port"),
    (["--public-url", "ftp://x"], "--public-url"),
    (["--public-url", "http://h:99999"], "--public-url"),
    # #35 4c: each session failed on a blank page instead, the reason in the server's log
    (["--source", "k8s", "--kubeconfig", "/nonexistent/kubeconfig"], "no such file"),
    (["--source", "prometheus", "--prometheus-url", "http://127.0.0.1:9/", "--timeout", "1"],
     "prometheus: no data"),
    (["--source", "slurm", "--ssh", "no-such-host.invalid", "--timeout", "2"], "slurm: no data"),
    (["--source", "demo", "--kubeconfig", "k"], "--kubeconfig applies to --source k8s only"),
])
def test_bad_input_fails_at_once_in_one_line(quotatop_cmd: list[str], args: list[str],
                                             says: str) -> None:
    r = _web(quotatop_cmd, "--port", str(_free_port()), *args)
    assert r.returncode == 2, r
    assert r.stderr.count("\n") == 1 and says in r.stderr, r.stderr
    assert r.stdout == ""  # the server never started: no banner


def test_tui_flags_before_web_are_refused(quotatop_cmd: list[str]) -> None:
    r = subprocess.run([*quotatop_cmd, "--refresh", "1", "web"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and "after `web`" in r.stderr and r.stderr.count("\n") == 1, r


def test_port_in_use_fails_in_one_line(quotatop_cmd: list[str]) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        r = _web(quotatop_cmd, "--port", str(port), "--source", "demo")
    assert r.returncode == 2, r
    assert r.stderr == f"quotatop: web: port {port} on 127.0.0.1 is in use " \
                       "(choose another with --port)\n"


def test_session_command_keeps_every_word() -> None:
    """No shell between the server and a session's TUI: odd paths stay single words."""
    from quotatop.commands.web_sessions import session_launch

    argv = ["--scenario", "my scenarios/a;b $(x).toml", "--source", "demo"]
    assert session_launch(argv) == ([sys.executable, "-m", "quotatop", *argv], {})


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("localhost", True), ("::1", True), ("0.0.0.0", False),
])
def test_loopback_hosts(host: str, loopback: bool) -> None:
    from quotatop.commands.web import _is_loopback

    if ":" in host and not socket.has_ipv6:
        pytest.skip("no IPv6")
    assert _is_loopback(host, 8000) is loopback


def _session_pids(web_pid: int) -> list[int]:
    """The web server's live children: one TUI per browser session."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == web_pid and fields[0] != "Z":
                    out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


KILLED_WAIT = 30.0  # seconds for a killed browser's TUI to be gone (heartbeat is 15 s)


def test_a_browser_killed_mid_session_leaves_no_tui(
        chromium: tuple[DevTools, subprocess.Popen[bytes]],
        web_process: tuple[str, subprocess.Popen[bytes]]) -> None:
    """Chromium killed (SIGKILL, no websocket close): the session's TUI ends with it."""
    browser, browser_proc = chromium
    url, web = web_process
    browser.call("Page.enable")
    browser.call("Page.addScriptToEvaluateOnNewDocument", source=CATCH_TERMINAL_JS)
    browser.call("Page.navigate", url=url)
    tab = f"1 {VIEW_TITLES[0]}"
    screen: dict[str, Any] | None = None
    deadline = time.monotonic() + RENDER_WAIT
    while not (screen and tab in screen["text"]):  # mid-session: the TUI has drawn
        assert time.monotonic() < deadline, f"the Overview never showed: {screen}"
        time.sleep(0.5)
        screen = browser.call("Runtime.evaluate", expression=READ_SCREEN_JS,
                              returnByValue=True)["result"].get("value")
    sessions = _session_pids(web.pid)
    assert len(sessions) == 1, sessions
    (tui,) = sessions

    # Keys that switch views, each a whole new screen to draw, then the kill at once:
    # the TUI is still drawing when its websocket is gone, as a user's would be.
    for i in range(30):
        key = str(2 + i % 2)
        for kind in ("keyDown", "keyUp"):
            browser.call("Input.dispatchKeyEvent", type=kind, key=key, text=key,
                         code=f"Digit{key}", windowsVirtualKeyCode=ord(key))
    browser.close()
    os.killpg(browser_proc.pid, signal.SIGKILL)
    browser_proc.wait()

    deadline = time.monotonic() + KILLED_WAIT
    while _alive(tui):
        assert time.monotonic() < deadline, (
            f"TUI {tui} still running {KILLED_WAIT:g}s after its browser was killed")
        time.sleep(0.2)
    assert _session_pids(web.pid) == [] and web.poll() is None  # the server serves on
