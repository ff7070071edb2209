"""`quotatop web [--host 127.0.0.1] [--port 8000] [TUI flags]`: the TUI in a browser.

textual-serve serves a page that runs xterm.js; every browser session (one websocket)
starts its own ``python -m quotatop <TUI flags>`` under Textual's web driver, so each
viewer gets a private TUI on the same source. The server owns those processes and caps
how many run (web_sessions.py). There is no authentication: the default bind is
loopback, and any other host is warned about. docs/web.md says more.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import ipaddress
import shlex
import socket
import sys
from collections.abc import Sequence
from typing import Any

from quotatop.collectors import procgroups
from quotatop.collectors.errors import UserError
from quotatop.commands.web_sessions import DEFAULT_MAX_SESSIONS, make_server
from quotatop.flags import number
from quotatop.source_flags import add_source_flags, url_flag
from quotatop.std_streams import ClosedOutput

# (flag, nargs, metavar, help), nargs and metavar as argparse takes them.
Flag = tuple[str, int | str | None, str | tuple[str, ...] | None, str | None]

# The TUI's own flags (quotatop/cli.py build_parser), forwarded word for word to the TUI
# each session starts: (flag, nargs, metavar, help). They are kept as the raw strings
# typed, not parsed here: the TUI's parser is the one that checks them, so a flag means
# exactly what it means to `quotatop`. The source flags are copied from
# add_source_flags below, so a new one is forwarded without a change here;
# tests/test_web.py checks that these and the TUI's flags stay the same set.
TUI_FLAGS: tuple[Flag, ...] = (
    ("--scenario", None, "FILE", "scenario TOML to play"),
    ("--source", "+", "KIND", "the source kind and its file, as for `quotatop --source`"),
    ("--refresh", None, "SECONDS", "seconds between refreshes"),
    ("--config", None, "FILE", "config TOML"),
    ("--record-dir", None, "DIR", "where R records (on the server's machine)"),
)


def forwarded_flags() -> list[Flag]:
    """TUI_FLAGS and every flag add_source_flags declares, in that order."""
    scratch = argparse.ArgumentParser(add_help=False)
    add_source_flags(scratch)
    # argparse has no public list of a parser's arguments; _actions is the one it reads.
    source: list[Flag] = [(a.option_strings[0], a.nargs, a.metavar or a.dest.upper(), a.help)
                          for a in scratch._actions if a.option_strings]
    return [*TUI_FLAGS, *source]


class _Forward(argparse.Action):
    """Keeps the words of a TUI flag, in order, in ``namespace.forward``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        words = [values] if isinstance(values, str) else list(values or [])
        # A fresh list per parse: a list default would be shared between parses.
        forward = list(getattr(namespace, "forward", None) or [])
        # The canonical name, not the spelling typed (an abbreviation, `--flag=value`):
        # web_sessions.py finds the flags that carry secrets by it.
        forward += [self.option_strings[0], *map(str, words)]
        namespace.forward = forward


def tui_argv(args: argparse.Namespace) -> tuple[list[str], argparse.Namespace]:
    """The TUI flags given after ``web``, checked by the TUI's own parser, and what
    that parser made of them."""
    # Flags given before `web` land in the top-level parser and would be silently lost
    # (argparse cannot tell us their words): refuse them rather than ignore them.
    before = [flag for flag, *_ in forwarded_flags()
              if getattr(args, flag.lstrip("-").replace("-", "_"), None) is not None]
    if before:
        raise UserError(f"web: give {', '.join(before)} after `web` "
                        f"(quotatop web {before[0]} …)")
    argv = list(getattr(args, "forward", None) or [])
    from quotatop.cli import build_parser  # here: cli imports this module

    # OneLineParser: a bad flag prints one line and exits 2 before any server starts.
    tui = build_parser().parse_args(argv)
    if getattr(tui, "command", None) is not None:  # cannot happen with flags only; be sure
        raise UserError(f"web: {shlex.join(argv)} is not a set of TUI flags")
    _check_source(tui)
    return argv, tui


def _check_source(tui: argparse.Namespace) -> None:
    """What `quotatop` would refuse at once, refused now, before any page is served:
    the config, the source and its flags, a missing file (scenario, recording,
    kubeconfig), a cluster that does not answer. Each session would otherwise fail the
    same way, on a blank page, with the reason only in this server's log."""
    from quotatop.tui_launch import open_launch, resolve

    source, _ = open_launch(resolve(tui))
    source.close()


def _is_loopback(host: str, port: int) -> bool:
    """True when every address ``host`` names is a loopback address."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return False  # the bind check below says what is wrong with it
    addrs = {info[4][0] for info in infos}
    # Strip an IPv6 zone ("fe80::1%eth0"): ip_address refuses it on older Pythons.
    return bool(addrs) and all(ipaddress.ip_address(a.split("%", 1)[0]).is_loopback
                               for a in addrs)


def check_bind(host: str, port: int) -> None:
    """UserError in one line unless ``host:port`` can be listened on now.

    aiohttp would say the same as a traceback after printing its banner; a test bind
    says it first. SO_REUSEADDR as aiohttp sets it on Unix, so a port left in TIME_WAIT
    by a previous run is not called busy. (A race with another program binding between
    this check and the server's bind is caught again around ``serve``.)"""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                   flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise UserError(f"web: --host {host}: cannot resolve it ({e.strerror})") from None
    for family, kind, proto, _, addr in infos:
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                with contextlib.suppress(OSError):  # as asyncio does: v6 socket, v6 only
                    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                s.bind(addr)
            except OSError as e:
                raise UserError(bind_message(host, port, e)) from None


def bind_message(host: str, port: int, e: OSError) -> str:
    if e.errno == errno.EADDRINUSE:
        return f"web: port {port} on {host} is in use (choose another with --port)"
    if e.errno == errno.EACCES:
        return f"web: port {port} on {host}: permission denied (ports below 1024 need root)"
    if e.errno == errno.EADDRNOTAVAIL:
        return f"web: --host {host} is not an address of this machine"
    return f"web: cannot listen on {host}:{port}: {e.strerror or e}"


def public_url(host: str, port: int) -> str:
    """The base URL the page tells the browser to open its websocket on.

    textual-serve's default is ``http://HOST:PORT``, which is wrong for a wildcard bind
    (a remote browser cannot reach 0.0.0.0) and for a bare IPv6 literal (no brackets)."""
    if host in ("", "0.0.0.0", "::"):
        host = socket.getfqdn()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def run(args: argparse.Namespace) -> int:
    host: str = args.host
    port = int(args.port)
    argv, tui = tui_argv(args)
    max_sessions = args.max_sessions
    if max_sessions is None:
        from quotatop.config import load_config

        max_sessions = load_config(tui.config).web.max_sessions or DEFAULT_MAX_SESSIONS
    check_bind(host, port)
    if not _is_loopback(host, port):
        print(f"quotatop: warning: --host {host}: the TUI will be reachable from the network "
              "with no authentication", file=sys.stderr)
    server = make_server(argv, host, port, args.public_url or public_url(host, port),
                         max_sessions)
    try:
        server.serve()
    except ClosedOutput:
        raise  # its banner had no standard output to go to: cli.main says so
    except OSError as e:  # lost the race for the port since check_bind
        raise UserError(bind_message(host, port, e)) from None
    finally:
        # The sessions were ended on the way out (on_shutdown); whatever escaped that
        # (serve raising before it) is killed here rather than left behind.
        procgroups.kill_all()
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "web", help="serve the TUI to a browser (textual-serve), one TUI per session",
        description="Serve the TUI over HTTP: each browser session runs its own "
                    "`quotatop` with the TUI flags given here (see `quotatop --help`). "
                    "No authentication: keep the default loopback --host, or put it "
                    "behind something that authenticates.")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1; anything else is "
                        "reachable from the network, unauthenticated)")
    p.add_argument("--port", type=number(1, 65535, integer=True), default=8000,
                   help="TCP port (default 8000)")
    # An http(s) URL with a host and a port in range (url_flag): textual-serve derives
    # the websocket URL by swapping the scheme's "http" for "ws".
    p.add_argument("--public-url", metavar="URL", default=None, type=url_flag("--public-url"),
                   help="the URL browsers reach the server at, when not http://HOST:PORT "
                        "(a reverse proxy; default for 0.0.0.0 is this host's name)")
    p.add_argument("--max-sessions", type=number(1, 1000, integer=True), default=None,
                   metavar="N",
                   help=f"browser sessions (TUI processes) at once; more get a 'full' page "
                        f"(default [web] max_sessions in the config, else "
                        f"{DEFAULT_MAX_SESSIONS})")
    g = p.add_argument_group("the TUI's flags, passed to each session's `quotatop`")
    for flag, nargs, metavar, help_text in forwarded_flags():
        # default SUPPRESS: nothing is stored unless given, so these never overwrite the
        # top-level parser's attributes of the same name (tui_argv reads those).
        g.add_argument(flag, nargs=nargs, metavar=metavar, help=help_text, action=_Forward,
                       dest=f"web_{flag.lstrip('-').replace('-', '_')}",
                       default=argparse.SUPPRESS)
    p.set_defaults(func=run, forward=None)
