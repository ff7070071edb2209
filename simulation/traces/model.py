"""What an importer returns: the jobs of a trace with their run times.

A trace job keeps only what an importer reads (flat, one object per line: a
100k-job trace built three objects a job before); `TraceJob.job` gives it as
the snapshot model's Job where a view or recording needs one."""

from __future__ import annotations

import math

from msgspec import Struct

from quotatop.collectors.model import Job, Resources

# What a trace's numbers may be: a job's time (seconds, from the trace's start or
# since the epoch) and its request of the traced resource; a cluster's node count.
MAX_TIME = 1e10  # seconds: beyond year 2286 as an epoch time
MAX_REQUEST = 1e7  # processors or GPUs of one job, or of the traced cluster
MAX_NODES = 100_000


class TraceError(Exception):
    """The trace cannot be read; the message is one line naming file and line."""


def in_range(field: str, value: float, lo: float, hi: float) -> float:
    """``value`` when finite and within [lo, hi]; ValueError naming ``field`` otherwise."""
    if not (math.isfinite(value) and lo <= value <= hi):
        raise ValueError(f"{field} {value:g} is out of range ({lo:g} to {hi:g})")
    return value


class TraceJob(Struct, kw_only=True, gc=False):
    id: str
    team: str
    user: str = ""
    request: Resources  # e.g. {"cpu": 64.0} or {"gpu": 8.0}
    submit_time: float
    time_limit: float | None = None
    duration: float  # seconds it ran
    recorded_start: float | None = None  # when the traced cluster started it
    status: str = ""
    qos: str = ""  # the trace's priority class (e.g. Alibaba's HP or Spot); "" when none
    gpu_type: str = ""  # the GPU model the job asked for; "" when any
    workers: int = 1  # instances placed apart (each asks request / workers), started together

    @property
    def job(self) -> Job:
        return Job(id=self.id, team=self.team, user=self.user, request=self.request,
                   submit_time=self.submit_time, time_limit=self.time_limit)


class TraceNode(Struct, kw_only=True, frozen=True):
    """One node of a trace's own node list (Alibaba's node_info_df)."""

    name: str
    gpus: float
    gpu_type: str = ""
    cpus: float = 0.0


class Trace(Struct, kw_only=True):
    path: str
    format: str
    jobs: list[TraceJob]
    capacity: Resources  # the traced cluster's size (header, option, or peak use)
    capacity_from: str = ""  # where capacity came from, said out loud
    skipped: int = 0  # lines not usable as jobs (malformed or unknown run time)
    warnings: list[str] = []  # the first few skipped lines, with line numbers
    layout: str = ""  # the published layout recognised (e.g. "Helios/Venus cluster_log")
    missing: list[str] = []  # fields this trace does not have, said in the output
    unused: list[str] = []  # fields it has that the simulation does not use
    unknown_runtime: int = 0  # of skipped: jobs that ran on the real machine, run time -1
    nodes: list[TraceNode] | None = None  # the trace's own nodes (--nodes-file)
    # QoS classes: name -> the classes it may preempt (e.g. {"HP": ["Spot"], "Spot": []}).
    qos: dict[str, list[str]] = {}
