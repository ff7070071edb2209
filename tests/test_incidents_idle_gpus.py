"""The idle-GPU finding (incidents/idle_gpus.py): a running job under the threshold for
the whole window fires in the first snapshot that covers it, never one above it."""

from __future__ import annotations

import pytest

from quotatop.collectors.model import Job, JobGpuUtil, Snapshot
from quotatop.incidents import IncidentConfig, IncidentMonitor, detect_incidents
from quotatop.incidents.config import IdleGpusConfig
from quotatop.incidents.model import IDLE_GPUS

HOUR = 3600.0


def _frame(t: float, util: float, *, start: float = 0.0, state: str = "running",
           covered: float = 1.0) -> Snapshot:
    since = t - HOUR
    held = 4 * (t - max(start, since))
    return Snapshot(taken_at=t, jobs=[Job(id="7", user="ann", team="ml", state=state,
                                          start_time=start)],
                    gpu_util=[JobGpuUtil(job="7", user="ann", team="ml",
                                         gpus=["a:0", "a:1", "a:2", "a:3"], since=since,
                                         until=t, allocated_gpu_seconds=held,
                                         observed_gpu_seconds=covered * held,
                                         busy_gpu_seconds=covered * held * util / 100,
                                         mean_util_percent=util)])


def _idle(mon: IncidentMonitor) -> list:  # type: ignore[type-arg]
    return [i for i in mon.open_incidents() if i.kind == IDLE_GPUS]


def test_fires_in_the_first_refresh_after_the_window_with_user_gpus_and_cost() -> None:
    mon = IncidentMonitor(IncidentConfig(idle_gpus=IdleGpusConfig(gpu_hour_price=2.0)))
    for t in range(0, 3600, 60):  # the job has not held its GPUs for an hour yet
        mon.feed(_frame(float(t), 5.0))
        assert _idle(mon) == []
    mon.feed(_frame(HOUR, 5.0))
    (inc,) = _idle(mon)
    assert inc.opened_at == HOUR and inc.jobs == ["7"] and inc.teams == ["ml"]
    assert "ann" in inc.summary and "a:0" in inc.summary
    assert inc.details["idle_gpu_hours"] == pytest.approx(4 * 0.95)
    assert inc.details["cost"] == pytest.approx(2.0 * 4 * 0.95)


@pytest.mark.parametrize("util", [15.0, 16.0, 90.0])
def test_never_fires_for_a_job_at_or_above_the_threshold(util: float) -> None:
    frames = [_frame(HOUR + 60 * k, util) for k in range(10)]
    assert [i for i in detect_incidents(frames) if i.kind == IDLE_GPUS] == []


def test_closes_when_the_job_ends_or_gets_busy() -> None:
    frames = [_frame(HOUR, 5.0), _frame(HOUR + 60, 50.0), _frame(HOUR + 120, 5.0),
              _frame(HOUR + 180, 5.0, state="completed")]
    got = [i for i in detect_incidents(frames) if i.kind == IDLE_GPUS]
    assert [(i.opened_at, i.closed_at) for i in got] == [(HOUR, HOUR + 60),
                                                        (HOUR + 120, HOUR + 180)]


def test_a_job_barely_measured_is_not_called_idle() -> None:
    assert [i for i in detect_incidents([_frame(HOUR, 1.0, covered=0.2)])
            if i.kind == IDLE_GPUS] == []
