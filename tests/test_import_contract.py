"""The import contract of docs/architecture.md ([tool.importlinter] in pyproject.toml): it
holds on the repository, and it catches an arrow that points up (on a copy, so the
repository itself is never edited)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter")

ROOT = Path(__file__).resolve().parents[1]


def lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    # The packages analysed are the ones in `where`: it leads the path.
    return subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, '.'); "
         "from importlinter.cli import lint_imports_command; lint_imports_command()",
         "--no-cache", "--no-logo"],
        cwd=where, capture_output=True, text=True, timeout=300, check=False)


def test_the_repository_keeps_every_contract() -> None:
    r = lint_imports(ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Contracts: 7 kept, 0 broken." in r.stdout


@pytest.mark.parametrize(("file", "line", "broken"), [
    # the snapshot model asking the roof: an arrow up
    ("collectors/model.py", "from quotatop.sources import DEMO_DATA",
     "quotatop.collectors is not allowed to import quotatop.sources"),
    # the TUI naming a concrete source, which runs commands
    ("tui/format.py", "from quotatop.collectors.slurm.runner import Runner",
     "quotatop.tui is not allowed to import subprocess"),
    # a collector painting
    ("collectors/footprint.py", "import textual",
     "quotatop.collectors is not allowed to import textual"),
    # one room of the middle floor importing its neighbour
    ("simulation/simulate.py", "from quotatop.recording.store import Recorder",
     "quotatop.simulation is not allowed to import quotatop.recording"),
    # the refresh pipeline painting, through a module it uses
    ("tui/live_incidents.py", "from textual.message import Message",
     "quotatop.tui.session is not allowed to import textual"),
])
def test_an_import_against_the_flow_breaks_the_contract(tmp_path: Path, file: str, line: str,
                                                        broken: str) -> None:
    # The one package, its links to the rooms copied as the folders they point to.
    shutil.copytree(ROOT / "quotatop", tmp_path / "quotatop",
                    ignore=shutil.ignore_patterns("target", "src", "demo_data", "*.so",
                                                  "__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "quotatop" / file
    text = target.read_text()
    head = "from __future__ import annotations\n"
    assert head in text
    target.write_text(text.replace(head, f"{head}\n{line}  # against the flow\n", 1))
    r = lint_imports(tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert broken in r.stdout
