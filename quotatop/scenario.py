"""Scenario files (TOML): teams and their quotas, optional nodes, a policy and a
timeline of events. The format is documented in docs/scenarios.md."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

import msgspec

from quotatop.errors import UserError

Policy = Literal["fifo"]


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


def load_scenario(path: str | Path) -> Scenario:
    p = Path(path)
    try:
        text = p.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{p}: no such scenario file") from None
    except OSError as e:
        raise UserError(f"{p}: cannot read: {e.strerror}") from None
    try:
        raw = tomllib.loads(text.decode("utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{p}: not TOML: the file is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{p}: not TOML: {e}") from None
    try:
        scenario = msgspec.convert(raw, Scenario)
    except msgspec.ValidationError as e:
        msg, _, place = str(e).partition(" - at `")
        where = _where(place.rstrip("`")) if place else "top level"
        raise UserError(f"{p}: at {where}: {msg}") from None
    _check_references(p, scenario)
    return scenario


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
