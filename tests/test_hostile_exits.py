"""How the real command line ends when it cannot do its work (#35): an unreachable
cluster before the TUI starts, a full disk or a closed pipe on stdout. Each case runs
``python -m quotatop`` as a user would and reads its exit status and stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def quotatop(argv: list[str], env: dict[str, str] | None = None,
             timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "quotatop", *argv], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)


def no_kubeconfig(tmp_path: Path) -> dict[str, str]:
    """An environment with no way to reach Kubernetes: $KUBECONFIG names a missing file,
    $HOME has no ~/.kube, and no service account is mounted here."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    return {**env, "HOME": str(home), "KUBECONFIG": str(tmp_path / "missing-kubeconfig")}


@pytest.mark.parametrize("argv", [["--source", "k8s"], ["snapshot", "--source", "k8s"]],
                         ids=["tui", "snapshot"])
def test_k8s_without_a_kubeconfig_is_one_line_and_exit_2_tui_as_cli(
        argv: list[str], tmp_path: Path) -> None:
    # Before the fix the TUI opened empty ("no data yet") and this run hung until the
    # timeout; now both end at once, the same way.
    proc = quotatop(argv, env=no_kubeconfig(tmp_path), timeout=30)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("quotatop: k8s: no data: ")
    assert "missing-kubeconfig" in lines[0]
    assert proc.stdout == ""  # no TUI drew anything


# Commands whose output goes to stdout, each writing more than a pipe holds (64 KiB)
# where marked, so that a reader that goes away is met mid-write.
OUTPUTS = {
    "snapshot": ["snapshot", "--source", "demo"],
    "snapshot --json": ["snapshot", "--source", "demo", "--json"],
    "predict": ["predict", "--source", "demo", "queue_storm", "--samples", "0"],
    "predict --json": ["predict", "--source", "demo", "queue_storm", "--json",
                       "--samples", "0"],
    "report": ["report", "--source", "demo", "queue_storm"],
    "simulate": ["simulate", "queue_storm"],
    # argparse drops a failed write of its own output: these exited 0 saying nothing
    "--help": ["--help"],
    "predict --help": ["predict", "--help"],
    "--version": ["--version"],
}
LONG = ("predict", "predict --json", "simulate")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("command", list(OUTPUTS))
def test_a_full_stdout_is_one_line_and_a_failure(command: str) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "quotatop", *OUTPUTS[command]],
                              stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                              stdin=subprocess.DEVNULL, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "quotatop: cannot write the output: No space left on device"], proc.stderr


@pytest.mark.parametrize("command", LONG)
def test_a_reader_that_goes_away_ends_the_command_quietly(command: str) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "quotatop", *OUTPUTS[command]],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                            stdin=subprocess.DEVNULL)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()  # `| head -1`: one line, then the pipe is closed
    proc.stdout.close()
    try:
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=120)
    finally:
        proc.kill()
        proc.stderr.close()
    assert err == ""  # no traceback, no "Exception ignored"
    assert code in (0, 141, -13)  # done, or ended by SIGPIPE as a shell would


def closed(fd: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``python -m quotatop ARGV`` with its stdout (``fd`` "1") or stderr ("2") closed,
    as ``quotatop … >&-`` runs it."""
    return subprocess.run(["sh", "-c", f'exec "$@" {fd}>&-', "sh", sys.executable,
                           "-m", "quotatop", *argv], capture_output=True, text=True,
                          cwd=ROOT, stdin=subprocess.DEVNULL, timeout=120, check=False)


@pytest.mark.parametrize("command", list(OUTPUTS))
def test_a_closed_stdout_is_one_line_and_a_failure(command: str) -> None:
    # Before: print() dropped the output and exited 0; `snapshot --json` was an
    # AttributeError traceback ('NoneType' object has no attribute 'buffer'), exit 1.
    proc = closed("1", OUTPUTS[command])
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "quotatop: cannot write the output: standard output is closed"], proc.stderr


@pytest.mark.parametrize("command", list(OUTPUTS))
def test_a_closed_stderr_changes_nothing_but_what_is_said(command: str) -> None:
    proc = closed("2", OUTPUTS[command])
    assert proc.returncode == 0
    assert proc.stdout.strip(), command  # the output, where it was sent


def test_a_closed_stderr_leaves_the_exit_status_of_bad_input() -> None:
    assert closed("2", ["snapshot", "--source", "demo", "--scenario", "nosuch"]).returncode == 2
    assert closed("2", ["--no-such-flag"]).returncode == 2


def test_the_tui_with_its_screen_closed_exits_2_at_once() -> None:
    # Textual draws on stderr: closed, the TUI spun on it until killed.
    proc = closed("2", ["--source", "demo"])
    assert proc.returncode == 2 and proc.stdout == ""



def test_web_with_a_closed_stdout_is_that_one_line_not_a_port_in_use() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Its banner (textual-serve's, on stdout) failed, and was said as "cannot listen".
    proc = closed("1", ["web", "--source", "demo", "--port", str(port)])
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        "quotatop: cannot write the output: standard output is closed"], proc.stderr
