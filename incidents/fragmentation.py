"""Fragmentation and partial-gang deadlock.

Stranded: enough GPUs are free in total for a pending job, but no pending job
fits the holes node by node. Deadlock: a gang holds part of what it needs
(some members running) while the rest wait."""

from __future__ import annotations

from quotatop.collectors.model import PENDING, RUNNING, Job, Snapshot
from quotatop.incidents.config import FragmentationConfig
from quotatop.incidents.episodes import Episodes
from quotatop.incidents.model import DEADLOCK, FRAGMENTATION, Incident
from quotatop.incidents.overcommit import DOWN_STATES


def holes(snap: Snapshot, resource: str) -> list[float]:
    """Free amount of ``resource`` per usable node, largest first."""
    out = []
    for n in snap.nodes:
        if n.state in DOWN_STATES:
            continue
        free = n.capacity.get(resource, 0.0) - n.allocated.get(resource, 0.0)
        if free > 0:
            out.append(free)
    return sorted(out, reverse=True)


def fits(job: Job, free: list[float], resource: str) -> bool:
    need = job.request.get(resource, 0.0)
    if need <= 0:
        return True
    nodes = max(1, job.nodes_requested)
    per_node = need / nodes
    return sum(1 for h in free if h >= per_node) >= nodes


class FragmentationDetector:
    kind = FRAGMENTATION

    def __init__(self, config: FragmentationConfig) -> None:
        self.cfg = config
        self.episodes = Episodes()
        self.gangs = Episodes()
        self.stranded_since: float | None = None
        self.partial_since: dict[str, float] = {}

    def feed(self, snap: Snapshot) -> None:
        t, r = snap.taken_at, self.cfg.resource
        free = holes(snap, r)
        total = sum(free)
        pending = [j for j in snap.jobs if j.state == PENDING and j.request.get(r, 0) > 0
                   and not j.gang]
        blocked = [j for j in pending if j.request[r] <= total]
        active: dict[object, Incident] = {}
        if blocked and not any(fits(j, free, r) for j in pending):
            self.stranded_since = self.stranded_since if self.stranded_since is not None else t
            if t - self.stranded_since >= self.cfg.min_duration:
                smallest = min(j.request[r] for j in blocked)
                active["stranded"] = Incident(
                    kind=FRAGMENTATION, opened_at=t,
                    teams=sorted({j.team for j in blocked}), jobs=[j.id for j in blocked][:20],
                    summary=f"{total:g} {r} free but stranded in holes of "
                            f"{'+'.join(f'{h:g}' for h in free[:6])}"
                            f"{'…' if len(free) > 6 else ''}: no pending job fits "
                            f"(smallest blocked needs {smallest:g} on one node)",
                    suggestion="pack jobs onto fewer nodes (SelectTypeParameters / bin-packing "
                               "scoring) or drain a node to defragment",
                    details={"free": total, "largest_hole": free[0],
                             "holes": float(len(free)), "smallest_blocked": smallest})
        else:
            self.stranded_since = None
        self.episodes.update(t, active)
        self._gangs(snap)

    def _gangs(self, snap: Snapshot) -> None:
        t = snap.taken_at
        members: dict[str, list[Job]] = {}
        for j in snap.jobs:
            if j.gang and j.state in (PENDING, RUNNING):
                members.setdefault(j.gang, []).append(j)
        active: dict[object, Incident] = {}
        for gang, jobs in members.items():
            running = [j for j in jobs if j.state == RUNNING]
            waiting = [j for j in jobs if j.state == PENDING]
            if not (running and waiting):
                self.partial_since.pop(gang, None)
                continue
            since = self.partial_since.setdefault(gang, t)
            if t - since < self.cfg.gang_min_duration:
                continue
            r = self.cfg.resource
            held = sum(j.request.get(r, 0.0) for j in running)
            need = sum(j.request.get(r, 0.0) for j in waiting)
            active[gang] = Incident(
                kind=DEADLOCK, opened_at=t, severity="critical",
                teams=sorted({j.team for j in jobs}), jobs=[j.id for j in jobs],
                summary=f"gang {gang} holds {held:g} {r} ({len(running)}/{len(jobs)} members) "
                        f"while waiting for {need:g} more",
                suggestion="admit gangs all-or-nothing (Kueue waitForPodsReady, "
                           "coscheduling/PodGroup minMember) so a partial gang releases "
                           "what it holds",
                details={"held": held, "waiting_for": need, "gang": gang})
        for g in [g for g in self.partial_since if g not in members]:
            del self.partial_since[g]
        self.gangs.update(t, active)

    def finish(self) -> list[Incident]:
        return self.episodes.finish() + self.gangs.finish()
