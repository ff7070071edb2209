"""Prints the packages `make demo` installs: pyproject's runtime dependencies
without the ones only a live source or a server command imports (each is imported
only when chosen). The demo plays a bundled scenario, so a first run skips their
download and install (about half a minute with pandas and numpy on 2 cores)."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

# Imported only by `--source k8s`, `--source prometheus`, `exporter` and `web`.
NOT_FOR_THE_DEMO = {"kubernetes", "prometheus-api-client", "prometheus-client", "textual-serve"}


def demo_requirements(pyproject: Path) -> list[str]:
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    name = re.compile(r"^[A-Za-z0-9_.\-]+")
    return [d for d in deps if (m := name.match(d)) and m.group(0).lower() not in NOT_FOR_THE_DEMO]


if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    sys.stdout.write("\n".join(demo_requirements(root / "pyproject.toml")) + "\n")
