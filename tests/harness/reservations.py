"""Advanced reservations on a cluster of their own: what quotatop predicts around them
against what Slurm does.

Two reservations (made as root, as a site's admin makes them):

* ``train``: gpu03-04 (h100), from now, for alice and erin;
* ``maint``: gpu07-08 (a100), from ``MAINT_IN`` seconds on, for erin.

Every other node is busy for about a minute (pinned, so the layout is known), and then:

* bob's ``B`` (h100, no reservation) could run on idle gpu04 now, but ``train`` holds
  it: Slurm starts it on gpu01/02 when the fill there ends;
* erin's ``A1`` runs in ``train``; alice's 2-node ``A2`` there waits for it, and does
  not take gpu01/02 outside the reservation;
* dave's ``C`` (a100, ten-minute limit) could run on idle gpu07 now, but would still
  run when ``maint`` begins: Slurm starts it on gpu05/06 when the fill there ends;
* erin's 2-node ``D`` in ``maint`` starts when ``maint`` begins, on gpu07-08.

A predictor that ignores reservations starts ``B`` and ``C`` now, on reserved nodes,
and ``A2``/``D`` on whatever frees first. Every job runs just under its time limit, so
predictions made with limits (there is no history on a fresh cluster) are seconds off
at most."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .fidelity import Kind, _epoch, _submit, job_runs, predict
from .slurm_cluster import SlurmCluster

MAINT_IN = 90  # seconds from the scenario's start to maint's start
# Users chosen so that no per-user or account limit holds a job at a moment that matters
# (QoS normal: 16 GPUs per user; vision-exp: 8 GPUs): reservations alone place them.
FILL_H100 = [("gpu01", Kind("bob", "nlp-prod", "normal", 55, 1, "gpu:h100:8")),
             ("gpu02", Kind("erin", "nlp-prod", "normal", 55, 1, "gpu:h100:8"))]
FILL_A100 = [("gpu05", Kind("dave", "elastic-pool", "normal", 55, 1, "gpu:a100:8")),
             ("gpu06", Kind("carol", "vision-exp", "normal", 55, 1, "gpu:a100:8"))]
A1 = Kind("erin", "nlp-prod", "normal", 55, 1, "gpu:h100:8")
A2 = Kind("alice", "vision-prod", "normal", 20, 1, "gpu:h100:8", nodes=2)
B = Kind("bob", "nlp-prod", "normal", 20, 1, "gpu:h100:8")
C = Kind("dave", "elastic-pool", "normal", 20, 10, "gpu:a100:8")
D = Kind("erin", "nlp-prod", "normal", 20, 1, "gpu:a100:8", nodes=2)
# The two fills beside each of B and C are alike (same sleep, same limit, submitted
# together), so which of the two nodes frees first is decided by milliseconds Slurm
# alone sees: the prediction cannot know it, and a test must not pretend it does. B and
# C are placed right when they land on either one (and never on a reserved node).
TIED = {"B": ("gpu01", "gpu02"), "C": ("gpu05", "gpu06")}


@dataclass
class ReservationObservation:
    ids: dict[str, str]  # "A2", "B", "C", "D" -> job id
    rows: dict[str, dict]  # quotatop predict --json rows, by job id
    snapshot_reservations: list[dict]  # the prediction's own view of them (--json)
    maint_start: float
    raw: str  # scontrol --oneliner show reservation, as read at the prediction
    raw_none: str  # the same before any reservation was made
    # squeue -O 'JobID:|,Reservation:|' at the prediction (the text fallback's column)
    text_column: dict[str, str] = field(default_factory=dict)
    actual: dict[str, tuple[float, list[str]]] = field(default_factory=dict)  # first run


def _sub(cluster: SlurmCluster, kind: Kind, *extra: str) -> str:
    job_id, _, proc = cluster.sbatch(kind.user, kind.account, kind.qos, *kind.argv(), *extra,
                                     payload=f"sleep {kind.sleep}", check=False)
    if not job_id:
        raise RuntimeError(f"sbatch {kind} failed: {proc.stderr.strip()}")
    return job_id


def _state(cluster: SlurmCluster, job_id: str) -> str:
    return cluster.job_info(job_id).get("JobState", "")


def run_reservations(cluster: SlurmCluster, *, timeout: float = 240.0,
                     log: Callable[[str], None] = lambda s: None) -> ReservationObservation:
    """Run the scenario on an idle ``cluster``; returns what was predicted and done."""
    t0 = time.time()
    raw_none = cluster.run(["scontrol", "--oneliner", "show", "reservation"]).stdout
    cluster.run(["scontrol", "create", "reservation", "ReservationName=train",
                 "StartTime=now", "Duration=30", "Nodes=gpu[03-04]", "Users=alice,erin"])
    cluster.run(["scontrol", "create", "reservation", "ReservationName=maint",
                 f"StartTime=now+{MAINT_IN}", "Duration=30", "Nodes=gpu[07-08]",
                 "Users=erin"])
    fill = [_submit(cluster, k, nodes=n) for n, k in [*FILL_H100, *FILL_A100]]
    a1 = _sub(cluster, A1, "--reservation=train")
    cluster.wait_until(lambda: all(_state(cluster, j) == "RUNNING" for j in [*fill, a1]), 30,
                       "the fill and A1 to run")
    ids = {"A2": _sub(cluster, A2, "--reservation=train"), "B": _sub(cluster, B),
           "C": _sub(cluster, C), "D": _sub(cluster, D, "--reservation=maint")}
    # Each has met the scheduler: pending with a reason, not yet "None".
    cluster.wait_until(
        lambda: all(cluster.job_info(j).get("JobState") == "PENDING"
                    and cluster.job_info(j).get("Reason") not in ("", "None")
                    for j in ids.values()), 30, "the scenario's jobs to pend")
    raw = cluster.run(["scontrol", "--oneliner", "show", "reservation"]).stdout
    column = cluster.run(["squeue", "--all", "--noheader", "-O", "JobID:|,Reservation:|"]).stdout
    out = predict(cluster, "limit")
    rows = {r["job_id"]: r for r in out["jobs"]}
    maint = next(ln for ln in raw.splitlines() if ln.startswith("ReservationName=maint"))
    maint_start = _epoch(maint.split("StartTime=", 1)[1].split()[0])
    assert maint_start is not None
    obs = ReservationObservation(ids=ids, rows=rows, maint_start=maint_start, raw=raw,
                                 raw_none=raw_none,
                                 snapshot_reservations=out.get("reservations", []),
                                 text_column=dict(ln.split("|")[:2] for ln in column.splitlines()
                                                  if ln.count("|") >= 2))
    # Waited for in sacct itself, not in scontrol's state: slurmdbd hears of a start a
    # moment after slurmctld, so a job seen RUNNING may not be in sacct yet (the CI run
    # of stop 45 lost D, the last to start, that way).
    deadline = time.monotonic() + timeout
    while True:
        runs, _ = job_runs(cluster, list(ids.values()))
        if all(runs.get(j) for j in ids.values()) or time.monotonic() >= deadline:
            break
        time.sleep(1)
    for name, j in ids.items():
        if runs.get(j):
            start, _, nodes = runs[j][0]
            obs.actual[name] = (start, nodes)
    for name, j in ids.items():
        row = rows.get(j, {})
        got = obs.actual.get(name)
        log(f"{name} ({j}): predicted {row.get('predicted_start', 0) - t0:+.0f} s on "
            f"{row.get('predicted_nodes')}; Slurm {got[0] - t0 if got else float('nan'):+.0f} s "
            f"on {got[1] if got else None}; reason {row.get('reason')!r}")
    return obs
