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
