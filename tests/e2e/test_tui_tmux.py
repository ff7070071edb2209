"""End to end: the real `quotatop` console script in tmux, driven by send-keys and
read with capture-pane. Locally a missing tmux skips; under CI=true it fails."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import skip_or_fail

QUOTATOP = Path(sys.executable).parent / "quotatop"


def _tmux(*args: str) -> str:
    out = subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=10)
    return out.stdout


@pytest.fixture
def session() -> Iterator[str]:
    if shutil.which("tmux") is None:
        skip_or_fail("tmux is not installed")
    if not QUOTATOP.exists():
        skip_or_fail(f"{QUOTATOP} missing: build the package (make build)")
    name = f"qt-e2e-{uuid.uuid4().hex[:8]}"
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "100", "-y", "30",
                    "env", "TERM=xterm-256color", str(QUOTATOP), "--refresh", "0.5"],
                   check=True, timeout=10)
    try:
        yield name
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, timeout=10)


def screen(name: str) -> str:
    return _tmux("capture-pane", "-p", "-t", name)


def wait_for(name: str, text: str, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    shown = ""
    while time.monotonic() < deadline:
        shown = screen(name)
        if text in shown:
            return shown
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not on screen after {timeout}s:\n{shown}")


def alive(name: str) -> bool:
    return subprocess.run(["tmux", "has-session", "-t", name], capture_output=True,
                          timeout=10).returncode == 0


def key(name: str, k: str) -> None:
    subprocess.run(["tmux", "send-keys", "-t", name, k], check=True, timeout=10)


def gone(name: str, text: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while text in screen(name):
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} still on screen after {timeout}s:\n{screen(name)}")
        time.sleep(0.1)


def _frame(shown: str) -> tuple[int, int]:
    """(position, frames) of the Timeline's "frame N/M"."""
    import re

    m = re.search(r"frame (\d+)/(\d+)", shown)
    assert m, shown
    return int(m.group(1)), int(m.group(2))


def _default_demo() -> tuple[str, str]:
    """(the default scenario's name, its first team): what `quotatop` plays."""
    from quotatop.simulation.scenario import load_scenario
    from quotatop.simulation.scenario_source import ScenarioSource
    from quotatop.sources import DEFAULT_SCENARIO

    snap = ScenarioSource(load_scenario(DEFAULT_SCENARIO)).collect()
    return DEFAULT_SCENARIO.stem, snap.teams[0].name


def test_quotatop_in_tmux(session: str) -> None:
    name, team = _default_demo()
    shown = wait_for(session, "1 Overview")
    assert team in wait_for(session, team)
    assert f"demo:{name}" in shown or f"demo:{name}" in screen(session)
    subprocess.run(["tmux", "send-keys", "-t", session, "5"], check=True, timeout=10)
    wait_for(session, "JOBID")
    key(session, "U")  # shift+letter sorts by that column (USER), marked ▲
    wait_for(session, "USER▲")
    subprocess.run(["tmux", "send-keys", "-t", session, "?"], check=True, timeout=10)
    wait_for(session, "read-only: no key changes a job")
    # `?` closes help too (a bare Escape is ambiguous on a terminal until its timeout).
    subprocess.run(["tmux", "send-keys", "-t", session, "?"], check=True, timeout=10)
    gone(session, "read-only: no key changes")
    key(session, "?")
    wait_for(session, "read-only: no key changes a job")
    key(session, "Escape")  # and so does esc, once the terminal's escape delay passes
    gone(session, "read-only: no key changes")
    key(session, "C-p")  # the command palette, as help and docs say
    wait_for(session, "Search for commands")
    key(session, "Escape")
    gone(session, "Search for commands")
    # A replay key from a screen other than the Timeline: pause, read the frame, step.
    key(session, "7")
    wait_for(session, "frame ")
    key(session, "space")
    wait_for(session, "paused")
    before = _frame(screen(session))
    key(session, "5")
    wait_for(session, "JOBID")
    key(session, "," if before[0] == before[1] else ".")
    key(session, "7")
    want = before[0] - 1 if before[0] == before[1] else before[0] + 1
    wait_for(session, f"frame {want}/{before[1]}")
    subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True, timeout=10)
    deadline = time.monotonic() + 10
    while alive(session) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(session), "q did not quit quotatop"
