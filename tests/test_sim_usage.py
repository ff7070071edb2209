"""The usage timeline of a simulation, as the core sends it (only the teams that
changed per sample) and SimResult rebuilds it, against the usage that the jobs'
own starts and ends imply, on the real NASA log under EASY and conservative."""

from __future__ import annotations

import itertools

import pytest

from quotatop.simulation.trace_simulate import load_trace, resolve_trace, simulate_trace


@pytest.fixture(scope="module")
def nasa():  # type: ignore[no-untyped-def]
    resolved = resolve_trace("nasa-ipsc", None)
    assert resolved is not None
    return load_trace(*resolved)


@pytest.mark.parametrize("policy", ["easy", "conservative"])
def test_usage_samples_are_the_running_jobs(nasa, policy: str) -> None:  # type: ignore[no-untyped-def]
    result = simulate_trace(nasa, policy)
    request = {j.id: j.request["cpu"] for j in nasa.jobs}
    team_ix = {t: k for k, t in enumerate(result.teams)}
    # Per event time, each team's change of usage; a job ending at t is gone at t.
    delta: dict[float, list[float]] = {}
    for o in result.jobs:
        if o.start is None:
            continue
        delta.setdefault(o.start, [0.0] * len(team_ix))[team_ix[o.team]] += request[o.job_id]
        if o.end is not None:
            delta.setdefault(o.end, [0.0] * len(team_ix))[team_ix[o.team]] -= request[o.job_id]
    samples = result.usage
    assert len(samples) > 1000  # the log runs thousands of jobs
    # No sample repeats the one before it, and times rise.
    for a, b in itertools.pairwise(samples):
        assert a.time < b.time and a.usage != b.usage
    # At every time where usage changes, the sample in force is the jobs' usage.
    now = [0.0] * len(team_ix)
    k = 0
    for t in sorted(delta):
        now = [x + d for x, d in zip(now, delta[t], strict=True)]
        while k + 1 < len(samples) and samples[k + 1].time <= t:
            k += 1
        assert samples[k].time <= t
        assert samples[k].usage == now, (t, samples[k])
