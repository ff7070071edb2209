"""From a fresh clone to the first painted frame of `make demo`, on this machine.

Clones the repository's HEAD into a temporary directory, runs `make demo-setup` (what
`make demo` does before it opens the TUI: a venv, the TUI's packages, the core built in
place), then starts `python -m quotatop` in tmux at 100x30 and waits until the Overview is
painted with the demo's data. Prints each phase and the total against the issue's target
(90 s). The reference, measured in the same run in a second fresh clone, is the path
`make demo` took before (`make build`: the dev tools and the cluster clients).

pip's and cargo's download caches are used as this machine has them: a machine with
neither downloads more (the packages, and the core's crates). No timing is asserted.
Usage: python bench/first_run.py [--no-reference] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_S = 90.0


def _env() -> dict[str, str]:
    # A user's shell: no target dir or venv of ours leaks into the clone's build.
    env = {k: v for k, v in os.environ.items()
           if k not in ("CARGO_TARGET_DIR", "VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":") if ".venv" not in p)
    return env


def _timed(argv: list[str], cwd: Path, log: Path) -> float:
    t0 = time.monotonic()
    with log.open("ab") as out:
        proc = subprocess.run(argv, cwd=cwd, env=_env(), stdout=out, stderr=subprocess.STDOUT,
                              timeout=1800, check=False)
    if proc.returncode != 0:
        sys.exit(f"first_run: {' '.join(argv)} failed (exit {proc.returncode}); see {log}")
    return time.monotonic() - t0


def _first_frame(clone: Path) -> float:
    """Seconds from starting the TUI to the Overview painted with the demo's data."""
    if shutil.which("tmux") is None:
        sys.exit("first_run: tmux is needed to see the first frame (apt install tmux)")
    name = f"qt-first-{uuid.uuid4().hex[:8]}"
    t0 = time.monotonic()
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "100", "-y", "30", "-c",
                    str(clone), "env", "TERM=xterm-256color", str(clone / ".venv/bin/python"),
                    "-m", "quotatop"], check=True, timeout=10, env=_env())
    try:
        while time.monotonic() - t0 < 120:
            cap = subprocess.run(["tmux", "capture-pane", "-p", "-t", name],
                                 capture_output=True, text=True, timeout=10)
            if cap.returncode != 0:  # the session ends with its command: the TUI exited
                sys.exit("first_run: the TUI exited before its first frame; rerun with "
                         "--keep and run .venv/bin/python -m quotatop in the clone to see why")
            shown = cap.stdout
            if "1 Overview" in shown and "demo:" in shown:
                return time.monotonic() - t0
            time.sleep(0.05)
        sys.exit(f"first_run: no Overview after 120 s; last screen:\n{shown}")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True, timeout=10)


def _clone(into: Path) -> float:
    t0 = time.monotonic()
    subprocess.run(["git", "clone", "-q", str(REPO), str(into)], check=True, timeout=300)
    return time.monotonic() - t0


def _path(work: Path, target: str) -> float:
    """A fresh clone, `make TARGET`, the first frame: prints the phases, returns the total."""
    clone = work / target
    clone_s = _clone(clone)
    setup_s = _timed(["make", target], clone, work / f"{target}.log")
    frame_s = _first_frame(clone)
    total = clone_s + setup_s + frame_s
    print(f"make {target + ':':<12} clone {clone_s:5.1f} s   setup {setup_s:6.1f} s   "
          f"first frame {frame_s:4.1f} s   total {total:6.1f} s")
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-reference", action="store_true", help="skip the old path")
    ap.add_argument("--keep", action="store_true", help="keep the clones (their paths print)")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    print(f"fresh clone of {REPO} to the first painted frame, {os.cpu_count()} cores, "
          f"load {load:.1f} at the start")
    work = Path(tempfile.mkdtemp(prefix="qt-first-run-"))
    try:
        total = _path(work, "demo-setup")
        print(f"  (target <= {TARGET_S:.0f} s: {'met' if total <= TARGET_S else 'NOT met'})")
        if not args.no_reference:
            old_total = _path(work, "build")
            print("  (the old demo path)")
            print(f"ratio: the demo path takes {total / old_total:.2f}x the old path's time")
        print(f"load {os.getloadavg()[0]:.1f} at the end")
    finally:
        if args.keep:
            print(f"clones kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
