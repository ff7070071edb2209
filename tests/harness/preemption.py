"""A preemption that Slurm makes after the prediction, on the fidelity cluster.

The fidelity workload needs no preemption, so its test can only say that quotatop
predicted none that Slurm did not make. This scenario makes one that can be predicted
ahead of time, because the preemptor is held by its QoS group limit first:

* every node is busy until long after the scenario: normal-QoS jobs on three h100
  nodes, one low-QoS job (dave's) on the fourth, low-QoS jobs on the a100 nodes;
* erin's high-QoS job A, a100 only, preempts one of the a100 low jobs at once
  (before the prediction) and holds QoS high's whole group limit (8 GPUs);
* alice's high-QoS job B, h100 only, pends on that limit (QOSGrpGRES): Slurm tries
  no preemption for a job a limit holds. When A ends, B may start, finds no free
  h100 GPU and preempts the only low-QoS job on h100 nodes: dave's on gpu04.

quotatop predicts at the moment B pends: B's start (at A's time limit, as no runtime
history exists for these jobs) and the job it preempts, against what Slurm then does;
and when the a100 job A preempted starts again. Slurm requeues it with a begin time
cred_expire (120 s) ahead, so it does not take the node A leaves at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .fidelity import Kind, _epoch, _submit, job_runs, predict, requeued
from .slurm_cluster import SlurmCluster

HOLD = 150  # seconds the filling jobs run: past the scenario's end
FILL_H100 = [
    Kind("bob", "nlp-prod", "normal", HOLD, 5, "gpu:h100:8"),
    Kind("bob", "nlp-prod", "normal", HOLD, 5, "gpu:h100:8"),
    Kind("alice", "vision-prod", "normal", HOLD, 5, "gpu:h100:8"),
]
VICTIM = Kind("dave", "elastic-pool", "low", HOLD, 5, "gpu:h100:8")
FILL_A100 = [
    Kind("dave", "elastic-pool", "low", HOLD, 5, "gpu:a100:8"),
    Kind("dave", "elastic-pool", "low", HOLD, 5, "gpu:a100:8"),
    Kind("bob", "nlp-exp", "low", HOLD, 5, "gpu:a100:8"),
    Kind("bob", "nlp-exp", "low", HOLD, 5, "gpu:a100:8"),
]
# A runs just under its one-minute limit, so that the prediction (which plans with the
# limit here) and Slurm's start of B are seconds apart.
HOLDER = Kind("erin", "nlp-prod", "high", 55, 1, "gpu:a100:8")
PREEMPTOR = Kind("alice", "vision-exp", "high", 20, 1, "gpu:h100:8")


@dataclass
class PreemptionObservation:
    victim: str  # dave's low-QoS job on the h100 nodes
    holder: str  # A
    preemptor: str  # B
    holder_victims: set[str]  # what A preempted at once (before the prediction)
    predicted: dict  # B's row of `quotatop predict --json`
    rows: dict[str, dict] = field(default_factory=dict)  # every row, by job id
    actual_start: float | None = None  # B's start
    requeued: set[str] = field(default_factory=set)  # every job Slurm preempted
    # A's victim, pending since with a begin time: that time (scontrol's EligibleTime at
    # the prediction), its predicted start, and when Slurm started it again.
    restart_begin: float | None = None
    restart_predicted: float | None = None
    restart_actual: float | None = None


# Another user's submissions around the requeued job's begin time, as on any busy
# cluster. Slurm's backfill runs only after something changed (22.05 backfill.c
# _more_work: a job, node, partition or reservation update), and a begin time passing
# is no change: on a cluster where nothing else happens, the job waits for the
# periodic main pass (sched_interval, 60 s, of a phase no one outside slurmctld sees).
# Held, they never run.
NUDGE = Kind("carol", "vision-exp", "normal", 1, 1, None)
NUDGE_EVERY = 2.0


def _restart(cluster: SlurmCluster, job_id: str, begin: float) -> float | None:
    """When ``job_id`` (requeued, eligible at ``begin``) started its second run."""
    nudges: list[str] = []
    until = time.monotonic() + max(0.0, begin - time.time()) + 30
    next_nudge = time.monotonic() + max(0.0, begin - time.time() - 4)
    try:
        while time.monotonic() < until:
            runs, _ = job_runs(cluster, [job_id])
            if len(runs.get(job_id, [])) >= 2:
                return runs[job_id][1][0]
            if time.monotonic() >= next_nudge:
                nudges.append(_submit(cluster, NUDGE, hold=True))
                next_nudge = time.monotonic() + NUDGE_EVERY
            time.sleep(0.5)
        return None
    finally:
        if nudges:
            cluster.run(["scancel", *nudges], check=False)


def _state(cluster: SlurmCluster, job_id: str) -> tuple[str, str]:
    info = cluster.job_info(job_id)
    return info.get("JobState", ""), info.get("Reason", "")


def run_preemption(cluster: SlurmCluster, *, timeout: float = 180.0,
                   log: Callable[[str], None] = lambda s: None) -> PreemptionObservation:
    """Run the scenario on an idle ``cluster``; returns what was predicted and done."""
    fill = [_submit(cluster, k) for k in FILL_H100]
    victim = _submit(cluster, VICTIM)
    fill += [_submit(cluster, k) for k in FILL_A100]
    everyone = [*fill, victim]
    cluster.wait_until(lambda: all(_state(cluster, j)[0] == "RUNNING" for j in everyone),
                       60, "the preemption scenario's fill to run")
    holder = _submit(cluster, HOLDER)
    cluster.wait_until(lambda: _state(cluster, holder)[0] == "RUNNING", 60,
                       "the high-QoS holder to preempt its way in")
    holder_victims = requeued(cluster, fill)
    preemptor = _submit(cluster, PREEMPTOR)
    cluster.wait_until(lambda: _state(cluster, preemptor) == ("PENDING", "QOSGrpGRES"), 30,
                       "the second high-QoS job to pend on QoS high's group limit")
    log(f"holder {holder} preempted {sorted(holder_victims)}; {preemptor} pends on QOSGrpGRES")
    out = predict(cluster, "limit")
    rows = {r["job_id"]: r for r in out["jobs"]}
    obs = PreemptionObservation(victim=victim, holder=holder, preemptor=preemptor,
                                holder_victims=holder_victims,
                                predicted=rows.get(preemptor, {}), rows=rows)
    first = sorted(holder_victims)[0] if len(holder_victims) == 1 else None
    if first is not None:
        obs.restart_begin = _epoch(cluster.job_info(first).get("EligibleTime", ""))
        obs.restart_predicted = rows.get(first, {}).get("predicted_start")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = cluster.job_info(preemptor)
        if info.get("JobState") in ("RUNNING", "COMPLETED", "COMPLETING"):
            obs.actual_start = _epoch(info.get("StartTime", ""))
            break
        time.sleep(1)
    if first is not None and obs.restart_begin is not None:
        obs.restart_actual = _restart(cluster, first, obs.restart_begin)
    obs.requeued = requeued(cluster, [*everyone, holder])
    if first is not None:
        log(f"{first}, requeued, eligible at {obs.restart_begin}: predicted to start again "
            f"at {obs.restart_predicted}, started at {obs.restart_actual}")
    predicted = obs.predicted.get("predicted_start")
    error = (f"{predicted - obs.actual_start:+.0f} s" if predicted and obs.actual_start
             else "n/a")
    log(f"{preemptor} started {error} from the prediction, which preempts "
        f"{sorted(p['job_id'] for p in obs.predicted.get('preempts', []))}; "
        f"Slurm preempted {sorted(obs.requeued)} (victim {victim})")
    return obs
