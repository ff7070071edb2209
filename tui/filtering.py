"""The Queue's `/` filter: `user:alice team:prod state:pending reason:quota`
terms, plus free words matched against id, name, user, team, QoS and reason.
All terms must match (AND); a field term matches a prefix, case-insensitively."""

from __future__ import annotations

from collections.abc import Callable

from quotatop.collectors.model import Job

_FIELDS: dict[str, Callable[[Job], str]] = {
    "user": lambda j: j.user,
    "team": lambda j: j.team,
    "state": lambda j: j.state,
    "qos": lambda j: j.qos,
    "partition": lambda j: j.partition or "",
    "reason": lambda j: j.reason or "",
    "id": lambda j: j.id,
    "node": lambda j: " ".join(j.nodes),
}


class JobFilter:
    def __init__(self, query: str) -> None:
        self.query = query.strip()
        self.fields: list[tuple[Callable[[Job], str], str]] = []
        self.words: list[str] = []
        for term in self.query.split():
            name, sep, value = term.partition(":")
            if sep and name.lower() in _FIELDS:
                self.fields.append((_FIELDS[name.lower()], value.lower()))
            else:
                self.words.append(term.lower())

    def __bool__(self) -> bool:
        return bool(self.fields or self.words)

    def matches(self, j: Job) -> bool:
        for get, value in self.fields:
            text = get(j).lower()
            if not (text.startswith(value) or (value and f" {value}" in f" {text}")):
                return False
        if self.words:
            hay = f"{j.id} {j.name} {j.user} {j.team} {j.qos} {j.state} {j.reason or ''}".lower()
            return all(w in hay for w in self.words)
        return True

    def apply(self, jobs: list[Job]) -> list[Job]:
        """The matching jobs; the same list object when there is no filter."""
        if not self:
            return jobs
        return [j for j in jobs if self.matches(j)]
