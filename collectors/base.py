"""The one interface every source implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from collectors.model import Snapshot


@runtime_checkable
class Collector(Protocol):
    """A source of snapshots. ``collect`` never raises for a source outage:
    it returns the last good data marked ``stale`` with the reason."""

    name: str

    def collect(self) -> Snapshot: ...

    def close(self) -> None: ...
