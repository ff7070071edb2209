"""A scenario file played as a live source: each collect() advances one step of
its timeline through the core and returns the snapshot after that step.

A fifo (seed) scenario steps through its events; a v2 (multifactor) scenario
is simulated once by the core and steps through frame times (every event time,
plus a grid over quiet stretches), see ``quotatop.simulation.scenario_playback``."""

from __future__ import annotations

import dataclasses
import time

from quotatop.collectors.model import PENDING, RUNNING, Job, Node, Snapshot, Team
from quotatop.collectors.timeline_base import IncidentMark
from quotatop.simulation.scenario import Scenario, ScenarioV2
from quotatop.simulation.scenario_playback import EPOCH, ScenarioPlayback
from quotatop.simulation.scenario_timeline import ScenarioTimeline
from quotatop.simulation.simulate import fifo_steps


class ScenarioSource:
    """Plays a scenario in a loop, one event per collect()."""

    def __init__(self, scenario: Scenario | ScenarioV2, *, loop: bool = True) -> None:
        self.scenario = scenario
        self.name = f"demo:{scenario.scenario.name}"
        self.loop = loop
        self.playback: ScenarioPlayback | None = None
        self._marks: list[IncidentMark] | None = None
        if isinstance(scenario, ScenarioV2):
            self.playback = ScenarioPlayback(scenario)
            self._steps, self.granted = [], 0
        else:
            self._steps, self.granted = fifo_steps(scenario)
        self.position = -1  # before the first event
        # Passes completed by looping: each later pass runs its clock on by the
        # scenario's length plus a gap, so time never goes back when it wraps
        # (detectors, recordings and the live incident list assume it does not).
        self.lap = 0

    def as_timeline(self) -> ScenarioTimeline:
        """This play driven like a replay (the Collector protocol's optional capability,
        collectors/base.py): what the TUI collects from, so pause, step and seek work."""
        return ScenarioTimeline(self)

    @property
    def offset(self) -> float:
        """Seconds the current pass's clock runs ahead of the first pass (v2)."""
        return self.lap * self.playback.period if self.playback is not None else 0.0

    @property
    def total_steps(self) -> int:
        return len(self.playback) if self.playback is not None else len(self._steps)

    def time_at(self, index: int) -> float:
        """Frame time: the simulated instant (v2), or the step number (fifo)."""
        if self.playback is not None:
            return EPOCH + self.offset + self.playback.times[index]
        return float(index)

    def index_at(self, t: float) -> int:
        """The frame at or before time ``t`` (as ``time_at`` counts it)."""
        if self.playback is not None:
            return self.playback.index_at(t - EPOCH - self.offset)
        return min(max(0, int(t)), max(0, self.total_steps - 1))

    def snapshots(self) -> list[Snapshot]:
        """Every frame of the first pass in order (what a recording of the whole
        play would hold)."""
        if self.playback is not None:
            return [self.playback.frame(i) for i in range(self.total_steps)]
        return [self.snapshot_at(i) for i in range(self.total_steps)]

    def incidents(self) -> list:  # type: ignore[type-arg]
        """The incidents the detectors find over the whole play (v2 only)."""
        if self.playback is None:
            return []
        from quotatop.incidents import detect_incidents

        # One frame at a time, not the list of snapshots(): the detectors keep what
        # they need, and the whole play at once was ~100 MB at 8,000 jobs.
        return detect_incidents(self.playback.frame(i) for i in range(self.total_steps))

    def incident_marks(self) -> list[IncidentMark]:
        """The first pass's incidents, placed on the current pass's clock."""
        if self._marks is None:
            self._marks = [IncidentMark(at=i.opened_at, title=f"{i.kind}: {i.summary}",
                                        severity=i.severity) for i in self.incidents()]
        dt = self.offset
        return [dataclasses.replace(m, at=m.at + dt) for m in self._marks] if dt \
            else self._marks

    def _jobs_at(self, upto: int) -> list[Job]:
        # Rebuild the per-team job list the FIFO holds after `upto` steps: running
        # jobs in start order, then the queue, so the view can list them.
        unit = self.scenario.scenario.unit
        jobs: list[Job] = []
        for i in range(upto + 1):
            ev = self.scenario.events[i]
            step = self._steps[i]
            if ev.op == "submit":
                state = RUNNING if step["result"] == "running" else PENDING
                jobs.append(
                    Job(
                        id=str(i + 1),
                        team=ev.team,
                        state=state,
                        request={unit: ev.amount},
                        submit_time=float(i + 1),
                        reason=None if state == RUNNING else "Quota",
                    )
                )
            else:
                for j in jobs:  # the seed's finish frees the oldest running job's amount
                    if j.team == ev.team and j.state == RUNNING and j.request[unit] == ev.amount:
                        j.state = "completed"
                        break
                started = int(step["result"])  # type: ignore[call-overload]
                for j in jobs:
                    if started == 0:
                        break
                    if j.team == ev.team and j.state == PENDING:
                        j.state, j.reason = RUNNING, None
                        started -= 1
        return [j for j in jobs if j.state in (RUNNING, PENDING)]

    def snapshot_at(self, position: int) -> Snapshot:
        if self.playback is not None:
            return self.playback.frame(max(0, position), self.offset)
        assert isinstance(self.scenario, Scenario)
        info = self.scenario.scenario
        unit = info.unit
        teams = []
        step = self._steps[position] if position >= 0 else None
        for t in self.scenario.teams:
            state = step["teams"][t.name] if step else {"used": 0, "queued": 0}  # type: ignore[index]
            teams.append(
                Team(
                    name=t.name,
                    max={unit: t.cap},
                    usage={unit: float(state["used"])},
                    source_notes=["scenario cap: max only, no guarantee"],
                )
            )
        nodes = [
            Node(
                name=n.name,
                partitions=n.partitions,
                gpu_type=n.gpu_type,
                capacity={
                    k: v for k, v in (("cpu", n.cpu), ("memory", n.memory), ("gpu", n.gpu)) if v
                },
            )
            for n in self.scenario.nodes
        ]
        return Snapshot(
            cluster=info.cluster,
            source=self.name,
            taken_at=time.time(),
            teams=teams,
            nodes=nodes,
            jobs=self._jobs_at(position) if position >= 0 else [],
            meta={
                "step": str(position + 1),
                "steps": str(self.total_steps),
                "unit": unit,
                "granted": str(self.granted),
            },
        )

    def collect(self) -> Snapshot:
        self.position += 1
        if self.position >= self.total_steps:
            if self.loop:
                self.position, self.lap = 0, self.lap + 1
            else:
                self.position = self.total_steps - 1
        return self.snapshot_at(self.position)

    def close(self) -> None:
        pass
