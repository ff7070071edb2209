"""Open/close bookkeeping shared by the detectors: one episode per key."""

from __future__ import annotations

from collections.abc import Hashable

from quotatop.incidents.model import Incident


class Episodes:
    """Keeps one open incident per key; closes it when the key is not seen."""

    def __init__(self) -> None:
        self.open: dict[Hashable, Incident] = {}
        self.done: list[Incident] = []

    def update(self, t: float, active: dict[Hashable, Incident]) -> None:
        """``active``: the incidents whose condition holds at ``t``, by key. A key
        already open keeps its opening time and merges teams and jobs."""
        for key, inc in active.items():
            cur = self.open.get(key)
            if cur is None:
                self.open[key] = inc
            else:
                cur.teams = _merge(cur.teams, inc.teams)
                cur.jobs = _merge(cur.jobs, inc.jobs)
                cur.details = {**cur.details, **inc.details}
                cur.summary, cur.suggestion = inc.summary or cur.summary, inc.suggestion
        for key in [k for k in self.open if k not in active]:
            inc = self.open.pop(key)
            inc.closed_at = t
            self.done.append(inc)

    def finish(self) -> list[Incident]:
        out = self.done + list(self.open.values())
        self.done, self.open = [], {}
        return out


def _merge(a: list[str], b: list[str]) -> list[str]:
    out = list(a)
    seen = set(a)
    for x in b:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out
