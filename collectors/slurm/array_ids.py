"""Job array ids: ``86_3`` (one task), ``86_[2-7%2]`` (pending tasks, at most 2 at once)."""

from __future__ import annotations

import re

from msgspec import Struct

from collectors.slurm.errors import ParseError
from collectors.slurm.ranges import format_ranges

_ID = re.compile(r"^([0-9]+)(?:_(?:([0-9]+)|\[([^\]]+)\]))?$")
_SPEC = re.compile(r"^(?P<ranges>[0-9,:\-]+)(?:%(?P<limit>[0-9]+))?$")
MAX_TASKS = 4_000_001  # Slurm's MaxArraySize ceiling


class ArrayId(Struct, frozen=True):
    job_id: str
    task: int | None = None  # one task: 86_3
    tasks: tuple[int, ...] = ()  # a pending range: 86_[2-7%2]
    max_running: int | None = None  # the %N throttle

    @property
    def is_array(self) -> bool:
        return self.task is not None or bool(self.tasks)


def parse_task_spec(spec: str, whole: str | None = None) -> tuple[tuple[int, ...], int | None]:
    """``2-7%2`` or ``1,3,5-9:2`` → (task ids, throttle)."""
    whole = spec if whole is None else whole
    m = _SPEC.match(spec)
    if m is None:
        raise ParseError("array id", whole)
    tasks: list[int] = []
    for piece in m.group("ranges").split(","):
        rng, _, step_s = piece.partition(":")
        lo, sep, hi = rng.partition("-")
        if not lo.isascii() or not lo.isdigit() or (sep and not (hi.isascii() and hi.isdigit())):
            raise ParseError("array id", whole, f"bad range {piece!r}")
        if step_s and not (step_s.isascii() and step_s.isdigit() and int(step_s) > 0):
            raise ParseError("array id", whole, f"bad step {piece!r}")
        a, b = int(lo), int(hi) if sep else int(lo)
        if b < a or b >= MAX_TASKS:
            raise ParseError("array id", whole, f"bad range {piece!r}")
        tasks.extend(range(a, b + 1, int(step_s) if step_s else 1))
        if len(tasks) > MAX_TASKS:
            raise ParseError("array id", whole, "too many tasks")
    limit = m.group("limit")
    return tuple(tasks), (int(limit) if limit is not None else None)


def parse_array_id(text: str) -> ArrayId:
    text = text.strip()
    m = _ID.match(text)
    if m is None:
        raise ParseError("array id", text)
    job, one, spec = m.groups()
    if one is not None:
        return ArrayId(job_id=job, task=int(one))
    if spec is not None:
        tasks, limit = parse_task_spec(spec, text)
        return ArrayId(job_id=job, tasks=tasks, max_running=limit)
    return ArrayId(job_id=job)


def format_task_spec(tasks: tuple[int, ...], max_running: int | None = None) -> str:
    return format_ranges(tasks) + (f"%{max_running}" if max_running is not None else "")


def format_array_id(a: ArrayId) -> str:
    if a.task is not None:
        return f"{a.job_id}_{a.task}"
    if a.tasks:
        return f"{a.job_id}_[{format_task_spec(a.tasks, a.max_running)}]"
    return a.job_id
