"""`make demo` installs only what the demo runs (scripts/demo_requirements.py): the CLI,
the TUI and the demo source must start without the cluster clients and servers, which
are imported only when their source or command is chosen."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from demo_requirements import NOT_FOR_THE_DEMO, demo_requirements  # noqa: E402

# The import names of the packages the demo goes without.
MODULES = {"kubernetes": "kubernetes", "prometheus-api-client": "prometheus_api_client",
           "prometheus-client": "prometheus_client", "textual-serve": "textual_serve"}


def test_the_demo_list_is_pyprojects_without_the_clients() -> None:
    demo = demo_requirements(REPO / "pyproject.toml")
    assert any(d.startswith("textual>") for d in demo)
    assert not any(d.split(">")[0].split("=")[0] in NOT_FOR_THE_DEMO for d in demo)
    assert set(MODULES) == NOT_FOR_THE_DEMO


def test_the_cli_tui_and_demo_start_without_the_cluster_clients() -> None:
    blocked = sorted(MODULES.values())
    code = f"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError("not installed for the demo: " + name)
sys.meta_path.insert(0, Block())
from quotatop.cli import build_parser
build_parser().parse_args([])
import quotatop.tui.app
from quotatop.sources import SourceOptions, open_source
snap = open_source("demo", SourceOptions()).collect()
assert snap.teams and snap.jobs
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
