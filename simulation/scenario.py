"""Scenario files (TOML): teams and their quotas, optional nodes, a policy and a
timeline of events. The format is documented in docs/scenarios.md.

Two shapes share one loader: ``policy = "fifo"`` (the seed article's per-team
FIFO: teams with a cap, submit/finish events) and ``policy = "multifactor"``
(v2: nodes, teams with guarantee/max/lendable/weight/cohort, QoS levels, core
policy settings and a timeline of jobs with submit time and duration)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import msgspec

from quotatop.collectors.errors import UserError
from quotatop.collectors.files import read_toml

Policy = Literal["fifo", "multifactor"]


class ScenarioInfo(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    name: str
    description: str = ""
    policy: Policy = "fifo"
    unit: str = "cpu"  # the resource that amounts and caps are counted in
    cluster: str = "demo"


class TeamSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    name: str
    cap: float


class NodeSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    name: str
    cpu: float = 0
    memory: float = 0
    gpu: float = 0
    gpu_type: str | None = None
    partitions: list[str] = []
    count: int = 1  # v2: this many identical nodes, named NAME01, NAME02, ...


# v2: an amount is a number in the scenario's unit, or a table of resources.
Amount = float | dict[str, float]


class TeamV2(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    name: str
    guarantee: Amount | None = None
    max: Amount | None = None
    lendable: Amount | None = None
    weight: float = 1.0
    shares: float | None = None
    cohort: str | None = None
    parent: str | None = None
    preemptible: bool = True
    per_job_limit: Amount | None = None
    per_user_limit: Amount | None = None
    max_wall: float | None = None
    max_submit_jobs: int | None = None


class QoSV2(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    name: str
    priority: int = 0
    preempts: list[str] = []
    preempt_mode: Literal["requeue", "suspend", "cancel", "off"] = "requeue"
    max_wall: float | None = None
    max_tres_per_user: Amount | None = None
    max_tres_per_job: Amount | None = None
    max_submit_jobs_per_user: int | None = None
    max_jobs_per_user: int | None = None


class JobV2(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    team: str
    duration: float
    submit: float = 0  # seconds from the scenario's start
    id: str | None = None
    user: str = ""
    gpu: float = 0
    cpu: float = 0
    memory: float = 0
    gpu_type: str | None = None
    nodes: int = 1
    time_limit: float | None = None  # default: the duration
    qos: str = "normal"
    qos_class: Literal["Guaranteed", "Burstable", "BestEffort"] | None = None
    gang: str | None = None
    count: int = 1  # this many copies, ids ID-1, ID-2, ...
    every: float = 0  # seconds between the copies' submits


class ScenarioV2(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    scenario: ScenarioInfo
    teams: list[TeamV2]
    nodes: list[NodeSpec]
    qos: list[QoSV2] = []
    settings: dict[str, object] = {}  # scheduler_core.Policy fields
    jobs: list[JobV2] = []
    until: float | None = None  # stop the simulation here (seconds from start)


class EventSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    op: Literal["submit", "finish"]
    team: str
    amount: float


class Scenario(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    scenario: ScenarioInfo
    teams: list[TeamSpec]
    nodes: list[NodeSpec] = []
    events: list[EventSpec] = []

    @property
    def caps(self) -> list[tuple[str, float]]:
        return [(t.name, t.cap) for t in self.teams]

    @property
    def event_tuples(self) -> list[tuple[str, str, float]]:
        return [(e.op, e.team, e.amount) for e in self.events]


def _where(path: str) -> str:
    # msgspec reports "$.events[3].team"; users read "events[3].team".
    return path.removeprefix("$.").removeprefix("$") or "top level"


def load_scenario(path: str | Path) -> Scenario | ScenarioV2:
    p = Path(path)
    raw = read_toml(p, "scenario file")
    _check_finite(p, raw, "")
    info = raw.get("scenario") if isinstance(raw, dict) else None
    v2 = isinstance(info, dict) and info.get("policy") == "multifactor"
    try:
        scenario = msgspec.convert(raw, ScenarioV2 if v2 else Scenario)
    except msgspec.ValidationError as e:
        msg, _, place = str(e).partition(" - at `")
        where = _where(place.rstrip("`")) if place else "top level"
        raise UserError(f"{p}: at {where}: {msg}") from None
    if isinstance(scenario, ScenarioV2):
        _check_v2(p, scenario)
        return scenario
    _check_references(p, scenario)
    return scenario


# A scenario builds every node and every job copy it names: bounded, so a typo'd
# ``count = 1000000000000`` is one line, not memory exhausted.
MAX_NODES = 100_000
MAX_JOBS = 1_000_000
MAX_NUMBER = 1e15  # seconds, amounts, weights: far beyond any cluster, far below overflow


def _check_finite(p: Path, value: object, where: str) -> None:
    """TOML has ``inf`` and ``nan``; no time, amount or weight of a scenario means either."""
    if isinstance(value, dict):
        for k, v in value.items():
            _check_finite(p, v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_finite(p, v, f"{where}[{i}]")
    elif (isinstance(value, float | int) and not isinstance(value, bool)
          and not (math.isfinite(value) and abs(value) <= MAX_NUMBER)):
        raise UserError(f"{p}: at {where or 'top level'}: {value!r} is out of range "
                            f"(a finite number up to {MAX_NUMBER:g})")


def _check_v2(p: Path, s: ScenarioV2) -> None:
    from quotatop.scheduler_core import Policy

    def unique(kind: str, names: list[str]) -> set[str]:
        seen: set[str] = set()
        for i, n in enumerate(names):
            if n in seen:
                raise UserError(f"{p}: at {kind}[{i}].name: {n!r} is defined twice")
            seen.add(n)
        return seen

    teams = unique("teams", [t.name for t in s.teams])
    qos = unique("qos", [q.name for q in s.qos]) | {"normal"}
    unique("nodes", [n.name for n in s.nodes])
    total = 0
    for i, n in enumerate(s.nodes):
        if not 1 <= n.count <= MAX_NODES:
            raise UserError(f"{p}: at nodes[{i}].count: must be from 1 to {MAX_NODES}, "
                            f"not {n.count}")
        total += n.count
        if total > MAX_NODES:
            raise UserError(f"{p}: at nodes[{i}].count: more than {MAX_NODES} nodes in all")
    if not s.nodes:
        raise UserError(f"{p}: at nodes: a multifactor scenario needs at least one node")
    for i, t in enumerate(s.teams):
        if t.parent is not None and t.parent not in teams:
            raise UserError(f"{p}: at teams[{i}].parent: unknown team {t.parent!r}")
    for i, q in enumerate(s.qos):
        for other in q.preempts:
            if other not in qos:
                raise UserError(f"{p}: at qos[{i}].preempts: unknown qos {other!r}")
    for i, j in enumerate(s.jobs):
        if j.team not in teams:
            known = ", ".join(sorted(teams))
            raise UserError(f"{p}: at jobs[{i}].team: unknown team {j.team!r} (known: {known})")
        if j.qos not in qos:
            raise UserError(f"{p}: at jobs[{i}].qos: unknown qos {j.qos!r}")
        for field in ("duration", "submit", "gpu", "cpu", "memory", "every"):
            if getattr(j, field) < 0:
                raise UserError(f"{p}: at jobs[{i}].{field}: cannot be negative")
        if j.count < 1 or j.nodes < 1:
            raise UserError(f"{p}: at jobs[{i}]: count and nodes must be at least 1")
        if j.count > MAX_JOBS:
            raise UserError(f"{p}: at jobs[{i}].count: must be from 1 to {MAX_JOBS}, "
                            f"not {j.count}")
        if j.nodes > MAX_NODES:
            raise UserError(f"{p}: at jobs[{i}].nodes: must be from 1 to {MAX_NODES}, "
                            f"not {j.nodes}")
    _check_job_ids(p, s.jobs)
    try:
        msgspec.convert(s.settings, Policy)
    except msgspec.ValidationError as e:
        msg, _, place = str(e).partition(" - at `")
        where = "settings" + place.rstrip("`").removeprefix("$") if place else "settings"
        raise UserError(f"{p}: at {where}: {msg}") from None


def _check_job_ids(p: Path, jobs: list[JobV2]) -> None:
    """Every job copy's id (as simulation.simulate.v2_inputs names them) once: the core
    refuses a repeated id, and every command should say so the same way, up front."""
    total = sum(j.count for j in jobs)
    if total > MAX_JOBS:
        raise UserError(f"{p}: at jobs: {total} job copies in all, more than {MAX_JOBS}")
    first: dict[str, int] = {}
    for i, j in enumerate(jobs):
        base = j.id or str(i + 1)
        ids = [base] if j.count == 1 else [f"{base}-{k + 1}" for k in range(j.count)]
        for job_id in ids:
            seen = first.setdefault(job_id, i)
            if seen != i:
                raise UserError(f"{p}: at jobs[{i}].id: job id {job_id!r} is used twice "
                                f"(also by jobs[{seen}])")


def _check_references(p: Path, s: Scenario) -> None:
    names: set[str] = set()
    for i, t in enumerate(s.teams):
        if t.name in names:
            raise UserError(f"{p}: at teams[{i}].name: team {t.name!r} is defined twice")
        if t.cap < 0:
            raise UserError(f"{p}: at teams[{i}].cap: a cap cannot be negative ({t.cap:g})")
        names.add(t.name)
    for i, e in enumerate(s.events):
        if e.team not in names:
            known = ", ".join(sorted(names))
            raise UserError(f"{p}: at events[{i}].team: unknown team {e.team!r} (known: {known})")
        if e.amount < 0:
            raise UserError(f"{p}: at events[{i}].amount: an amount cannot be negative")
