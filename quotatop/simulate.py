"""`quotatop simulate`: run a scenario's timeline through the core."""

from __future__ import annotations

import json
from collections.abc import Iterator

import scheduler_core
from quotatop.errors import UserError
from quotatop.scenario import Scenario


def _num(x: float) -> int | float:
    # Whole amounts print as integers, as the seed's output does.
    return int(x) if float(x).is_integer() else x


def fifo_steps(s: Scenario) -> tuple[list[dict[str, object]], int]:
    try:
        steps, granted = scheduler_core.fifo_simulate(s.caps, s.event_tuples)
    except ValueError as e:
        raise UserError(f"scenario {s.scenario.name}: {e}") from None
    out: list[dict[str, object]] = []
    for i, ((result, teams), ev) in enumerate(zip(steps, s.events, strict=True), start=1):
        out.append(
            {
                "step": i,
                "op": ev.op,
                "team": ev.team,
                "amount": _num(ev.amount),
                "result": result,
                "teams": {t: {"used": _num(u), "queued": q} for t, u, q in teams},
            }
        )
    return out, granted


def jsonl_lines(s: Scenario) -> Iterator[str]:
    steps, granted = fifo_steps(s)
    for step in steps:
        yield json.dumps(step, ensure_ascii=False)
    yield json.dumps({"granted": granted})
