"""The core reproduces the seed article's demo exactly."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import re
import subprocess

import seed_reference
from conftest import DEMO


def seed_output_as_jsonl() -> list[str]:
    """Runs the article's own code and turns what it prints into the JSONL shape."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        seed_reference.demo()
    printed = buf.getvalue().splitlines()
    lines: list[str] = []
    pattern = r"\[(提交|完成)\] (\w+) (?:申请|释放) (\d+) 核 -> (?:补位 )?(\w+)(?: 个任务)?"
    pairs = zip(printed[0:-1:2], printed[1:-1:2], strict=True)
    for step, (action, state) in enumerate(pairs, start=1):
        m = re.fullmatch(pattern, action)
        assert m, action
        kind, team, amount, result = m.groups()
        teams = ast.literal_eval(state.split("状态:", 1)[1].strip())
        lines.append(json.dumps({
            "step": step,
            "op": "submit" if kind == "提交" else "finish",
            "team": team,
            "amount": int(amount),
            "result": result if kind == "提交" else int(result),
            "teams": {t: {"used": v["使用"], "queued": v["排队"]} for t, v in teams.items()},
        }))
    granted = int(printed[-1].split(":", 1)[1])
    lines.append(json.dumps({"granted": granted}))
    return lines


def test_simulate_prints_the_seed_output_exactly(quotatop_cmd: list[str]) -> None:
    out = subprocess.run([*quotatop_cmd, "simulate", str(DEMO / "seed_fifo.toml"), "--jsonl"],
                         capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == seed_output_as_jsonl()
    assert out.splitlines()[-1] == '{"granted": 7}'


def test_first_line_has_the_documented_shape(quotatop_cmd: list[str]) -> None:
    out = subprocess.run([*quotatop_cmd, "simulate", str(DEMO / "seed_fifo.toml"), "--jsonl"],
                         capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[0] == (
        '{"step": 1, "op": "submit", "team": "alpha", "amount": 8, "result": "running", '
        '"teams": {"alpha": {"used": 8, "queued": 0}, "beta": {"used": 0, "queued": 0}, '
        '"gamma": {"used": 0, "queued": 0}}}'
    )
