"""The GPU utilization join (collectors/gpu_util.py): each sample to the job that held
its GPU then, the integral of busy time, and every impossible value refused by name."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quotatop.collectors.gpu_util import FB, UTIL, GpuSeries, join_gpu_util
from quotatop.collectors.model import Job


def _job(id: str, start: float, end: float | None, gpus: dict[str, list[int]],
         **kw: object) -> Job:
    return Job(id=id, state="running" if end is None else "completed", start_time=start,
               end_time=end, gpus=gpus, **kw)  # type: ignore[arg-type]


def _by(out: list) -> dict:  # type: ignore[type-arg]
    return {u.job: u for u in out}


def test_a_job_ending_and_another_starting_on_one_gpu_each_get_their_part() -> None:
    # GPU a:0 held by j1 over [0, 300), then by j2 from 300; samples every 60 s, 10 %
    # while j1 ran, 90 % after.
    jobs = [_job("j1", 0, 300, {"a": [0]}), _job("j2", 300, None, {"a": [0]})]
    pts = [(float(t), 10.0 if t < 300 else 90.0) for t in range(0, 600, 60)]
    out, warnings = join_gpu_util(jobs, [GpuSeries(UTIL, "a", 0, pts)], since=0, until=600)
    got = _by(out)
    assert warnings == []
    assert got["j1"].allocated_gpu_seconds == 300
    assert got["j1"].busy_gpu_seconds == pytest.approx(30.0)
    assert got["j1"].mean_util_percent == pytest.approx(10.0)
    assert got["j2"].mean_util_percent == pytest.approx(90.0)
    assert got["j2"].observed_gpu_seconds == 300
    assert got["j1"].gpus == ["a:0"]


def test_a_piece_spanning_an_end_is_split_at_the_end() -> None:
    # One sample at 0 (50 %) holds to 120: j1 ends at 30, j2 starts at 30.
    jobs = [_job("j1", 0, 30, {"a": [1]}), _job("j2", 30, None, {"a": [1]})]
    s = GpuSeries(UTIL, "a", 1, [(0.0, 50.0), (120.0, 50.0)])
    got = _by(join_gpu_util(jobs, [s], since=0, until=120)[0])
    assert got["j1"].observed_gpu_seconds == 30
    assert got["j2"].observed_gpu_seconds == 90


def test_only_the_gpus_a_job_holds_count() -> None:
    jobs = [_job("j", 0, None, {"a": [2, 3]})]
    series = [GpuSeries(UTIL, "a", i, [(0.0, v)]) for i, v in ((1, 100.0), (2, 40.0),
                                                              (3, 20.0))]
    u = join_gpu_util(jobs, series, since=0, until=60, max_hold=60)[0][0]
    assert u.allocated_gpu_seconds == 120
    assert u.busy_gpu_seconds == pytest.approx(0.4 * 60 + 0.2 * 60)
    assert u.mean_util_percent == pytest.approx(30.0)


def test_framebuffer_mean_and_peak() -> None:
    jobs = [_job("j", 0, None, {"a": [0]})]
    fb = GpuSeries(FB, "a", 0, [(0.0, 1000.0), (60.0, 3000.0)])
    u = join_gpu_util(jobs, [fb], since=0, until=120)[0][0]
    assert u.mean_fb_mib == pytest.approx(2000.0)
    assert u.peak_fb_mib == 3000.0
    assert u.mean_util_percent is None  # no utilization series: unknown, not 0


def test_a_pod_series_goes_to_its_pod_job() -> None:
    jobs = [Job(id="ml/train-0", state="running", start_time=0.0, request={"gpu": 1.0})]
    s = GpuSeries(UTIL, "node-7", 0, [(0.0, 70.0)], namespace="ml", pod="train-0")
    u = join_gpu_util(jobs, [s], since=0, until=60, max_hold=60)[0][0]
    assert u.mean_util_percent == pytest.approx(70.0)
    assert u.gpus == ["node-7:0"]
    assert u.allocated_gpu_seconds == 60


@pytest.mark.parametrize(("value", "named"), [
    (-1.0, "-1.0 is not a utilization percent"),
    (100.5, "100.5 is not a utilization percent"),
    (math.nan, "nan is not a utilization percent"),
])
def test_an_impossible_sample_is_refused_by_name(value: float, named: str) -> None:
    jobs = [_job("j", 0, None, {"a": [0]})]
    s = GpuSeries(UTIL, "a", 0, [(0.0, 50.0), (60.0, value)])
    out, warnings = join_gpu_util(jobs, [s], since=0, until=120, max_hold=60)
    assert len(warnings) == 1 and named in warnings[0] and "GPU a:0" in warnings[0]
    assert out[0].mean_util_percent == pytest.approx(50.0)  # the bad one never counted
    assert out[0].observed_gpu_seconds == 60


def test_duplicates_are_refused_by_name() -> None:
    jobs = [_job("j1", 0, None, {"a": [0]}), _job("j2", 30, None, {"a": [0]})]
    s = GpuSeries(UTIL, "a", 0, [(0.0, 50.0), (0.0, 90.0)])
    again = GpuSeries(UTIL, "a", 0, [(0.0, 99.0)])
    out, warnings = join_gpu_util(jobs, [s, again], since=0, until=60, max_hold=60)
    text = " | ".join(warnings)
    assert "held by jobs j1 and j2 at once" in text
    assert "a second utilization percent series" in text
    assert "a second sample of the same time" in text
    assert [u.job for u in out] == ["j1"]
    assert out[0].mean_util_percent == pytest.approx(50.0)


def test_a_negative_gpu_index_is_refused() -> None:
    out, warnings = join_gpu_util([_job("j", 0, None, {"a": [0]})],
                                  [GpuSeries(UTIL, "a", -1, [(0.0, 5.0)])], since=0, until=60)
    assert "-1 is not a GPU index" in warnings[0]
    assert out[0].observed_gpu_seconds == 0


def _integral(pts: list[tuple[float, float]], s0: float, e0: float, until: float,
              max_hold: float) -> tuple[float, float]:
    """The oracle: every (piece, hold) pair by brute force, no two-pointer walk."""
    busy = covered = 0.0
    for k, (t, v) in enumerate(pts):
        nxt = pts[k + 1][0] if k + 1 < len(pts) else until
        lo, hi = max(t, s0), min(nxt, t + max_hold, until, e0)
        if hi > lo:
            busy += (hi - lo) * v / 100.0
            covered += hi - lo
    return busy, covered


@settings(max_examples=200, deadline=None)
@given(
    times=st.lists(st.integers(0, 3600), min_size=1, max_size=40, unique=True),
    values=st.lists(st.floats(0, 100), min_size=40, max_size=40),
    cuts=st.lists(st.integers(0, 3600), min_size=1, max_size=6, unique=True),
    max_hold=st.sampled_from([30.0, 60.0, 600.0]),
)
def test_busy_gpu_seconds_is_the_integral_over_held_time(
        times: list[int], values: list[float], cuts: list[int], max_hold: float) -> None:
    # Jobs one after another on one GPU, changing hands at each cut.
    bounds = [0, *sorted(cuts), 3600]
    jobs = [_job(f"j{i}", float(a), float(b), {"n": [0]})
            for i, (a, b) in enumerate(pairwise(bounds)) if b > a]
    pts = sorted((float(t), values[i]) for i, t in enumerate(times))
    out, warnings = join_gpu_util(jobs, [GpuSeries(UTIL, "n", 0, pts)], since=0,
                                  until=3600, max_hold=max_hold)
    assert warnings == []
    got = _by(out)
    for j in jobs:
        busy, covered = _integral(pts, j.start_time or 0, j.end_time or 0, 3600, max_hold)
        assert got[j.id].busy_gpu_seconds == pytest.approx(busy, abs=1e-6)
        assert got[j.id].observed_gpu_seconds == pytest.approx(covered, abs=1e-6)
        assert got[j.id].allocated_gpu_seconds == (j.end_time or 0) - (j.start_time or 0)
    # Every covered second of the GPU went to exactly one job.
    total = _integral(pts, 0, 3600, 3600, max_hold)
    assert sum(u.busy_gpu_seconds for u in out) == pytest.approx(total[0], abs=1e-6)


def test_a_recording_keeps_the_utilization_and_an_old_one_still_loads() -> None:
    from quotatop.collectors.model import JobGpuUtil, Snapshot, from_msgpack, to_msgpack

    snap = Snapshot(jobs=[_job("j", 0, None, {"a": [0, 1]})],
                    gpu_util=[JobGpuUtil(job="j", gpus=["a:0"], mean_util_percent=12.5)])
    back = from_msgpack(to_msgpack(snap))
    assert back.gpu_util == snap.gpu_util and back.jobs[0].gpus == {"a": [0, 1]}
    old = from_msgpack(to_msgpack(Snapshot(jobs=[Job(id="j")])))  # written before #36
    assert old.gpu_util == [] and old.jobs[0].gpus == {}
