"""The policy a site's own scheduler runs with, from the settings its snapshot carries.

A collector puts the site's configuration into ``Snapshot.scheduler`` (priority
weights, backfill settings, preemption; collectors/model.py ``SchedulerConfig``).
``site_policy`` turns it into the core's ``Policy``, so that a prediction is of
*this* scheduler and not of the defaults. A snapshot without one (a scenario, an
old recording) keeps the core's defaults.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from quotatop.scheduler_core.policy import Policy, PriorityWeights

Runtimes = Literal["estimate", "limit"]

_WEIGHT_KEYS = ("age", "fairshare", "qos", "job_size", "partition")
# Seconds from a job's end to the scheduler's answer, on average (docs/policy.md): on
# tests/harness's Slurm (bf_interval=2), starts came 0.07-1.56 s (p10-p90) after the
# end before them, median 0.59 s for backfill's and 0.46 s for the main scheduler's.
PASS_DELAY = 0.6


def site_policy(snapshot: Any, runtimes: Runtimes = "estimate") -> Policy:
    """The core policy for ``snapshot`` (anything with a ``scheduler`` attribute).

    ``runtimes``: "estimate" lets jobs that carry a runtime estimate run that long in
    the prediction (backfill still plans with time limits, as the scheduler does);
    "limit" plans and runs every job to its time limit, as the scheduler's own
    estimate does."""
    cfg = getattr(snapshot, "scheduler", None)
    if cfg is None:
        return msgspec.structs.replace(Policy(), runtimes=runtimes)
    settings: dict[str, Any] = {"runtimes": runtimes}
    if cfg.priority == "basic":
        # Submit order: every factor weighs nothing, ties go by submit time.
        settings["weights"] = PriorityWeights(age=0, fairshare=0, qos=0, job_size=0, partition=0)
    else:
        weights = {k: float(cfg.weights[k]) for k in _WEIGHT_KEYS if k in cfg.weights}
        if weights:
            settings["weights"] = PriorityWeights(**{k: weights.get(k, 0.0)
                                                     for k in _WEIGHT_KEYS})
        # At the snapshot, the order is the priority the scheduler itself reports;
        # over the horizon it moves only with age (docs/policy.md).
        settings["priority"] = "source"
    for name in ("max_age", "usage_half_life", "bf_resolution", "bf_window"):
        value = getattr(cfg, name)
        if value is not None and value > 0:
            settings[name] = float(value)
    if cfg.fairshare in ("fair_tree", "classic"):
        settings["fairshare"] = cfg.fairshare
    calc = getattr(cfg, "calc_period", None)
    if cfg.fairshare == "fair_tree" and calc is not None and calc > 0:
        # Fair Tree ranks again every calc period as the jobs' usage accrues.
        settings["fairshare_period"] = float(calc)
    if cfg.favor_small is not None:
        settings["favor_small"] = bool(cfg.favor_small)
    if getattr(cfg, "placement", None) in ("consecutive", "best_fit", "spread"):
        settings["placement"] = cfg.placement
    if cfg.backfill in ("none", "easy", "conservative"):
        settings["backfill"] = cfg.backfill
    if cfg.bf_max_job_test is not None and cfg.bf_max_job_test >= 1:
        settings["bf_max_job_test"] = int(cfg.bf_max_job_test)
    delay = getattr(cfg, "requeue_delay", None)
    if delay is not None and delay >= 0:
        settings["requeue_delay"] = float(delay)
    if cfg.preemption == "off" or cfg.preempt_mode == "off":
        settings["preemption"] = False
    elif cfg.preempt_mode in ("requeue", "suspend", "cancel"):
        settings["preempt_mode"] = cfg.preempt_mode
    # A scheduler that reports its settings starts jobs when resources free up (an
    # event-driven main pass, strict priority per partition), then backfills. It
    # answers an end a moment later (PASS_DELAY), seeing what else ended meanwhile.
    settings["passes"] = "events"
    settings["main_pass"] = True
    settings["pass_delay"] = PASS_DELAY
    # Its backfill reserves whole nodes, from the moment a job first fits (a running
    # job's end by its limit), the span rounded down to bf_resolution at both ends.
    settings["reserve_whole_nodes"] = True
    settings["floor_to_grid"] = True
    return msgspec.convert(settings, Policy, from_attributes=True)
