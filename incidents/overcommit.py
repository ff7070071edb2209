"""Over-commit: quotas (guarantees, or max-only quotas) add up to more than the
cluster physically has, per resource."""

from __future__ import annotations

from quotatop.collectors.model import Snapshot
from quotatop.incidents.config import OvercommitConfig
from quotatop.incidents.episodes import Episodes
from quotatop.incidents.model import OVERCOMMIT, Incident

DOWN_STATES = frozenset({"down", "drain", "unknown"})


def capacity(snap: Snapshot) -> dict[str, float]:
    out: dict[str, float] = {}
    for n in snap.nodes:
        if n.state in DOWN_STATES:
            continue
        for r, v in n.capacity.items():
            out[r] = out.get(r, 0.0) + v
    return out


class OvercommitDetector:
    kind = OVERCOMMIT

    def __init__(self, config: OvercommitConfig) -> None:
        self.cfg = config
        self.episodes = Episodes()

    def feed(self, snap: Snapshot) -> None:
        cap = capacity(snap)
        # Per resource: granted total and which teams' grants it is made of.
        grants: dict[tuple[str, str], dict[str, float]] = {}
        names = {t.name for t in snap.teams}
        for team in snap.teams:
            if team.parent in names and team.parent != team.name:
                # A sub-account's quota lies within its parent's (Slurm enforces every
                # account up the tree): counted with the parent, not again.
                continue
            basis, quota = "guarantee", team.guarantee
            if quota is None and self.cfg.use_max_without_guarantee:
                basis, quota = "max", team.max
            for r, v in (quota or {}).items():
                if v > 0:
                    grants.setdefault((basis, r), {})[team.name] = v
        active: dict[object, Incident] = {}
        for (basis, r), by_team in grants.items():
            have = cap.get(r, 0.0)
            total = sum(by_team.values())
            if have <= 0 or total <= self.cfg.ratio * have:
                continue
            ratio = total / have
            active[(basis, r)] = Incident(
                kind=OVERCOMMIT, opened_at=snap.taken_at, teams=sorted(by_team),
                severity="critical" if basis == "guarantee" else "warning",
                summary=f"{basis} quotas grant {total:g} {r} on {have:g} "
                        f"(over-commit {ratio:.2f}×)",
                suggestion=(f"guarantees cannot all be honoured: scale them to ≤ {have:g} {r}"
                            if basis == "guarantee" else
                            f"max quotas sum to {ratio:.2f}× capacity: every team cannot reach "
                            "its cap at once; a guarantee per team makes the promise explicit"),
                details={"resource": r, "basis": basis, "granted": total, "capacity": have,
                         "ratio": ratio})
        self.episodes.update(snap.taken_at, active)

    def finish(self) -> list[Incident]:
        return self.episodes.finish()
