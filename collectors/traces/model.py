"""What an importer returns: jobs as the snapshot model's Job, plus run time."""

from __future__ import annotations

from msgspec import Struct

from collectors.model import Job, Resources


class TraceError(Exception):
    """The trace cannot be read; the message is one line naming file and line."""


class TraceJob(Struct, kw_only=True):
    job: Job  # id, team, request, submit_time, time_limit
    duration: float  # seconds it ran
    recorded_start: float | None = None  # when the traced cluster started it
    status: str = ""


class Trace(Struct, kw_only=True):
    path: str
    format: str
    jobs: list[TraceJob]
    capacity: Resources  # the traced cluster's size (header, option, or peak use)
    capacity_from: str = ""  # where capacity came from, said out loud
    skipped: int = 0  # lines not usable as jobs (malformed or unknown run time)
    warnings: list[str] = []  # the first few skipped lines, with line numbers
