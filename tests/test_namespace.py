"""One namespace (docs/architecture.md, "One package"): the repository keeps its rooms as
top-level folders, quotatop/ links to them, and the wheel installs them as quotatop.tui,
quotatop.collectors, ... so nothing but quotatop lands at the top of site-packages.

Two ways it could quietly break, each held here: a module importing a room by its bare
name (it would work in the repository, where the folders are on the path, and fail in an
install, or load the room a second time under another name), and a file of a room that
maturin's include globs (pyproject.toml) leave out of the sdist and the wheel."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("tui", "collectors", "review", "simulation", "recording", "incidents",
         "scheduler_core")
# Every Python file of the project: the package (through its links), the tests, the
# benchmarks and the scripts.
SOURCES = ("quotatop", "tests", "bench", "scripts")


def python_files() -> list[Path]:
    seen: dict[Path, Path] = {}
    for top in SOURCES:
        # os.walk, not Path.rglob: rglob does not enter a linked folder before Python 3.13.
        for folder, _, names in os.walk(ROOT / top, followlinks=True):
            for name in sorted(names):
                if name.endswith(".py"):
                    path = Path(folder) / name
                    seen.setdefault(path.resolve(), path)
    return sorted(seen.values())


def bare_room_imports(source: str) -> list[tuple[int, str]]:
    """The line and name of every import of a room by its bare name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found += [(node.lineno, n) for n in names if n.split(".")[0] in ROOMS]
    return found


def test_the_links_lead_to_the_rooms() -> None:
    for room in (*ROOMS, "demo_data"):
        link = ROOT / "quotatop" / room
        assert link.is_symlink() and link.resolve() == ROOT / room, link


def test_the_scan_finds_a_bare_import() -> None:
    source = ("from __future__ import annotations\nimport os\nimport tui.app\n"
              "from collectors.model import Job\nfrom quotatop.tui import app\n"
              "from . import sibling\ndef f():\n    import scheduler_core\n")
    assert bare_room_imports(source) == [(3, "tui.app"), (4, "collectors.model"),
                                         (8, "scheduler_core")]


def test_no_module_imports_a_room_by_its_bare_name() -> None:
    files = python_files()
    assert any(p.parts[-2:] == ("collectors", "model.py") for p in files)  # through a link
    bad = [f"{p.relative_to(ROOT)}:{line}: import {name}"
           for p in files for line, name in bare_room_imports(p.read_text())]
    assert not bad, "import the rooms as quotatop.<room>:\n" + "\n".join(bad)


def _room_files() -> list[str]:
    """The files of the rooms git tracks, as the sdist must hold them (quotatop/<room>/...),
    without the crate's Rust sources, which the sdist carries at scheduler_core/."""
    out = subprocess.run(["git", "ls-files", "-z", *ROOMS, "demo_data"], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    if out.returncode != 0 or not out.stdout:
        pytest.skip("not a git checkout")
    rust = ("scheduler_core/src/", "scheduler_core/examples/", "scheduler_core/Cargo.toml")
    return sorted(f"quotatop/{f}" for f in out.stdout.split("\0")
                  if f and not f.startswith(rust))


def test_the_sdist_carries_every_file_of_the_rooms(tmp_path: Path) -> None:
    # The sdist, not the wheel: it is built in a second without compiling the core, from
    # the same include globs that fill the wheel, and pip builds the wheel from it.
    maturin = shutil.which("maturin", path=str(Path(sys.executable).parent)) \
        or shutil.which("maturin")
    if maturin is None:
        pytest.skip("maturin is not installed")
    subprocess.run([maturin, "sdist", "-o", str(tmp_path)], cwd=ROOT, capture_output=True,
                   check=True, timeout=300)
    (sdist,) = tmp_path.glob("quotatop-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    missing = [f for f in _room_files() if f not in names]
    assert not missing, "pyproject.toml's [tool.maturin] include leaves out:\n" + \
        "\n".join(missing)
    # The crates are there to build the core from.
    assert {"scheduler_core/Cargo.toml", "json_prune/Cargo.toml", "Cargo.toml"} <= names
