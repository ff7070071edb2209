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


def _default_demo() -> tuple[str, str]:
    """(the default scenario's name, its first team): what `quotatop` plays."""
    from collectors.scenario_source import ScenarioSource
    from collectors.sources import DEFAULT_SCENARIO
    from quotatop.scenario import load_scenario

    snap = ScenarioSource(load_scenario(DEFAULT_SCENARIO)).collect()
    return DEFAULT_SCENARIO.stem, snap.teams[0].name


def test_quotatop_in_tmux(session: str) -> None:
    name, team = _default_demo()
    shown = wait_for(session, "1 Overview")
    assert team in wait_for(session, team)
    assert f"demo:{name}" in shown or f"demo:{name}" in screen(session)
    subprocess.run(["tmux", "send-keys", "-t", session, "5"], check=True, timeout=10)
    wait_for(session, "JOBID")
    subprocess.run(["tmux", "send-keys", "-t", session, "?"], check=True, timeout=10)
    wait_for(session, "read-only: no key changes a job")
    # `?` closes help too (a bare Escape is ambiguous on a terminal until its timeout).
    subprocess.run(["tmux", "send-keys", "-t", session, "?"], check=True, timeout=10)
    deadline = time.monotonic() + 10
    while "read-only: no key changes" in screen(session) and time.monotonic() < deadline:
        time.sleep(0.1)
    subprocess.run(["tmux", "send-keys", "-t", session, "7"], check=True, timeout=10)
    wait_for(session, "frame ")
    subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True, timeout=10)
    deadline = time.monotonic() + 10
    while alive(session) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(session), "q did not quit quotatop"
