"""A bad scenario file: one line naming the file, the place and the problem; exit 2."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

GOOD_HEAD = """
[scenario]
name = "t"
policy = "fifo"

[[teams]]
name = "alpha"
cap = 4
"""


def run(cmd: list[str], path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cmd, "simulate", str(path), "--jsonl"], capture_output=True,
                          text=True)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (None, "no such scenario file"),
        ("this is = = not toml", "not TOML"),
        (GOOD_HEAD + '[[events]]\nop = "submit"\nteam = "zeta"\namount = 1\n',
         "at events[0].team: unknown team 'zeta'"),
        (GOOD_HEAD.replace('"fifo"', '"lottery"'), "at scenario.policy"),
        (GOOD_HEAD + '[[events]]\nop = "explode"\nteam = "alpha"\namount = 1\n',
         "at events[0].op"),
        (GOOD_HEAD + '[[events]]\nop = "submit"\nteam = "alpha"\namount = "x"\n',
         "at events[0].amount"),
        (GOOD_HEAD.replace("cap = 4", "cap = -4"), "at teams[0].cap"),
        (GOOD_HEAD + '[[teams]]\nname = "alpha"\ncap = 1\n', "defined twice"),
        ('[scenario]\nname = "t"\n', "teams"),
    ],
    ids=["missing", "not-toml", "unknown-team", "unknown-policy", "unknown-op", "bad-type",
         "negative-cap", "duplicate-team", "no-teams"],
)
def test_bad_scenario(tmp_path: Path, quotatop_cmd: list[str], body: str | None,
                      expected: str) -> None:
    path = tmp_path / "bad.toml"
    if body is not None:
        path.write_text(body)
    proc = run(quotatop_cmd, path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert str(path) in lines[0]
    assert expected in lines[0]
