"""`quotatop web` under many websockets: processes and memory (issue #35).

Starts ``quotatop web --source demo`` from a tree (``--tree``, default this one: run it
once against an old checkout and once against this one to compare) in a scratch working
directory, opens ``--sockets`` websockets to it from loopback (40 by default), holds them
``--hold`` seconds, closes them, waits ``--after`` seconds (10), then SIGTERMs ``web``.
It prints, for the server and everything it started:

- the processes alive while the sockets are open (peak), and their summed RSS (peak);
- how many of the sockets got a session (a refused one is closed by the server);
- the processes alive ``--after`` seconds after the sockets closed;
- the processes alive 5 s after ``web`` got SIGTERM.

A process belongs to the run when its working directory is the scratch directory (every
child inherits it, an orphan included), so nothing else on the machine is counted.
Whatever is left at the end is killed by pid. The reference in the same run: the RSS of
one idle `quotatop web` before any socket (its own memory, the floor per run).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ours(marker: Path) -> dict[int, int]:
    """pid -> RSS in bytes of every process whose cwd is ``marker`` (zombies excluded)."""
    out: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{entry}/cwd") != str(marker):
                continue
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            if fields[0] == "Z":
                continue
            out[int(entry)] = int(fields[21]) * page
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tree", type=Path, default=ROOT, help="the checkout to run")
    p.add_argument("--sockets", type=int, default=40)
    p.add_argument("--hold", type=float, default=15.0, help="seconds the sockets stay open")
    p.add_argument("--after", type=float, default=10.0, help="seconds after closing")
    p.add_argument("--abrupt", action="store_true",
                   help="drop the TCP connections without a websocket close (a browser "
                        "killed), instead of closing cleanly")
    a = p.parse_args()
    import websocket  # websocket-client (a kubernetes dependency)

    marker = Path(tempfile.mkdtemp(prefix="quotatop-web-bench-")).resolve()
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=str(a.tree.resolve()))
    server = subprocess.Popen([sys.executable, "-m", "quotatop", "web", "--source", "demo",
                               "--port", str(port)], cwd=marker, env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline or server.poll() is not None:
                print("web did not start", file=sys.stderr)
                return 1
            time.sleep(0.2)
        time.sleep(1.0)
        idle_rss = sum(ours(marker).values())
        sockets = []
        for _ in range(a.sockets):
            try:
                sockets.append(websocket.create_connection(
                    f"ws://127.0.0.1:{port}/ws?width=100&height=30", timeout=10))
            except Exception as e:  # a refused handshake is a result, not an error
                sockets.append(None)
                print(f"refused: {type(e).__name__}: {str(e)[:80]}", file=sys.stderr)
        peak_n = peak_rss = 0
        end = time.monotonic() + a.hold
        while time.monotonic() < end:
            now = ours(marker)
            peak_n, peak_rss = max(peak_n, len(now)), max(peak_rss, sum(now.values()))
            time.sleep(0.5)
        # A socket has a session while the server has not closed it: poll each once.
        live = 0
        for ws in sockets:
            if ws is None:
                continue
            ws.settimeout(0.5)
            try:
                ws.ping()
                ws.recv()  # data from the TUI, or the server's close
                live += ws.connected
            except websocket.WebSocketTimeoutException:
                live += 1
            except Exception:
                pass
        for ws in sockets:
            if ws is not None:
                with contextlib.suppress(Exception):
                    if a.abrupt:  # RST, no close frame: as when the browser is killed
                        ws.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           b"\x01\x00\x00\x00\x00\x00\x00\x00")
                        ws.sock.close()
                    else:
                        ws.close()
        time.sleep(a.after)
        after = ours(marker)
        termed = time.monotonic()
        server.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=5)
        time.sleep(max(0.0, termed + 5 - time.monotonic()))
        left = ours(marker)
        print(f"tree {a.tree}  sockets {a.sockets}  hold {a.hold:g}s  "
              f"close {'abrupt' if a.abrupt else 'clean'}")
        print(f"reference: idle web RSS {idle_rss / 2**20:.0f} MiB")
        print(f"sockets with a session at the end of the hold: {live} of {a.sockets}")
        print(f"while open: peak {peak_n} processes (web included), "
              f"peak summed RSS {peak_rss / 2**20:.0f} MiB")
        print(f"{a.after:g}s after the sockets closed: {len(after)} processes "
              f"(web included)")
        print(f"after web got SIGTERM: {len(left)} processes left"
              f" (web exited: {server.poll() is not None})")
    finally:
        for pid in ours(marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        with contextlib.suppress(OSError):
            marker.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
