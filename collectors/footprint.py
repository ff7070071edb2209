"""quotatop's own footprint on the host it runs on (a shared login node), via psutil.

Read from the collect worker once per refresh: memory_info, cpu_percent and
num_threads of this process only (no scan of other processes, which on a busy login
node would cost more than the reading is worth)."""

from __future__ import annotations

import contextlib

import psutil
from msgspec import Struct


class Footprint(Struct, frozen=True):
    rss_mb: float  # resident memory, MB of 10^6 bytes
    cpu_percent: float  # of one core, since the previous reading
    threads: int


class FootprintMeter:
    """Callable: the current footprint, or None when the system will not say."""

    def __init__(self) -> None:
        self._proc = psutil.Process()
        with contextlib.suppress(psutil.Error):
            self._proc.cpu_percent(None)  # the first call only starts the interval

    def __call__(self) -> Footprint | None:
        try:
            with self._proc.oneshot():
                return Footprint(
                    rss_mb=self._proc.memory_info().rss / 1e6,
                    cpu_percent=self._proc.cpu_percent(None),
                    threads=self._proc.num_threads(),
                )
        except psutil.Error:
            return None
