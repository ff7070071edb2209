"""Fake Slurm client commands: small executable Python scripts in a folder the test
puts first on PATH (``Runner(env=...)`` / ``SlurmCollector(env=...)``).

Every script reads the fake's current mode from a file on each run, so a test can
start with good answers and switch to a fault while quotatop keeps polling:

* ``good``: the captured 22.05 answers of tests/fixtures/slurm;
* ``hang``: prints nothing and sleeps, as a controller that never answers;
* ``flood``: writes to stdout without end;
* ``grandchild``: answers and exits 0, but a grandchild in its own session
  (``setsid``, out of reach of a process-group kill) keeps stdout open;
* ``garbage``: exits 0 with bytes no parser reads;
* ``exit1``: exits 1 with slurm's "Unable to contact slurm controller" on stderr.

Each run appends its pid to ``pids``, each grandchild to ``grandchildren``, so a test
can check that none is left and clean up what quotatop could not reach.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from pathlib import Path

import psutil
from slurm_fixture_runner import FILES, V2205

COMMANDS = ("squeue", "sinfo", "sprio", "sshare", "sacctmgr", "scontrol", "sacct")
MODES = ("good", "hang", "flood", "grandchild", "garbage", "exit1")

# The script of every fake command. Only the standard library, and -IS: no site
# packages, no PYTHONPATH, so a run costs a bare interpreter start.
_SCRIPT = """#!{python} -IS
import json, os, subprocess, sys, time

STATE = {state!r}
ANSWERS = json.loads({answers!r})
name = os.path.basename(sys.argv[0])
with open(os.path.join(STATE, "pids"), "a") as fh:
    fh.write(f"{{os.getpid()}}\\n")
with open(os.path.join(STATE, "mode")) as fh:
    mode = fh.read().strip()
out = sys.stdout.buffer


def good():
    path = ANSWERS.get(" ".join([name, *sys.argv[1:]]))
    if path is None:
        sys.stderr.write(f"{{name}}: error: no fixture for {{sys.argv[1:]}}\\n")
        sys.exit(1)
    with open(path, "rb") as fh:
        out.write(fh.read())
    out.flush()


if mode == "good":
    good()
elif mode == "hang":
    time.sleep(300)
elif mode == "flood":
    chunk = b"x" * 65536
    while True:
        out.write(chunk)
elif mode == "grandchild":
    log = os.path.join(STATE, "grandchildren")
    keep = f"import os, time; open({{log!r}}, 'a').write(f'{{{{os.getpid()}}}} '); time.sleep(300)"
    subprocess.Popen([sys.executable, "-IS", "-c", keep], start_new_session=True)
    good()
elif mode == "garbage":
    out.write(b"\\x00\\xff\\xfe{{not json|||\\n" * 64)
    out.flush()
elif mode == "exit1":
    sys.stderr.write(f"{{name}}: error: Unable to contact slurm controller (connect failure)\\n")
    sys.exit(1)
else:
    sys.stderr.write(f"{{name}}: fake: unknown mode {{mode!r}}\\n")
    sys.exit(3)
"""


class FakeSlurm:
    """The seven Slurm clients as scripts in ``directory/bin``; ``mode`` switches them."""

    def __init__(self, directory: Path, mode: str = "good") -> None:
        self.directory = directory
        self.bindir = directory / "bin"
        self.bindir.mkdir(parents=True, exist_ok=True)
        answers = {" ".join(argv): str(V2205 / name) for argv, name in FILES.items()}
        script = _SCRIPT.format(python=sys.executable, state=str(directory),
                                answers=json.dumps(answers))
        for name in COMMANDS:
            path = self.bindir / name
            path.write_text(script)
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
        self.mode = mode

    @property
    def mode(self) -> str:
        return (self.directory / "mode").read_text().strip()

    @mode.setter
    def mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown fake Slurm mode {mode!r} (known: {', '.join(MODES)})")
        # Written beside and renamed: a command starting now reads one mode or the other.
        tmp = self.directory / "mode.tmp"
        tmp.write_text(mode)
        os.replace(tmp, self.directory / "mode")

    def env(self) -> dict[str, str]:
        """The environment that runs these fakes instead of any real Slurm."""
        return {**os.environ, "PATH": f"{self.bindir}{os.pathsep}{os.environ.get('PATH', '')}"}

    def pids(self) -> list[int]:
        """Every fake command started so far."""
        return _read_pids(self.directory / "pids")

    def grandchildren(self) -> list[int]:
        """Every detached grandchild started so far (mode ``grandchild``)."""
        return _read_pids(self.directory / "grandchildren")

    def running(self) -> list[psutil.Process]:
        """The fakes' processes still running (zombies count as gone). A pid is checked
        to be this fake's (its command line names this folder) before it is trusted:
        on a busy machine the pid of a fake that ended may belong to anything now."""
        alive = []
        for pid in {*self.pids(), *self.grandchildren()}:
            try:
                proc = psutil.Process(pid)
                if (proc.status() != psutil.STATUS_ZOMBIE
                        and str(self.directory) in " ".join(proc.cmdline())):
                    alive.append(proc)
            except psutil.Error:
                continue
        return alive

    def kill_all(self) -> None:
        """SIGKILL whatever the fakes started that still runs (test teardown)."""
        for proc in self.running():
            with contextlib.suppress(psutil.Error):
                proc.kill()


def _read_pids(path: Path) -> list[int]:
    if not path.exists():
        return []
    return [int(p) for p in path.read_text().split() if p.isdigit()]
