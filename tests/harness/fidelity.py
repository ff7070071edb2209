"""Fidelity against the real Slurm: submit a generated workload, take quotatop's
predictions and Slurm's own ``squeue --start`` at one moment, wait for the actual
starts, and compare. Shared by tests/test_fidelity_slurm.py and bench/fidelity.py.

The workload comes from a seed (tests/harness/workload_gen.py), never chosen for how
it scores: its fill's ends cluster within seconds, as real clusters' do, so some of
the start order hangs on which of two jobs ends first. That part no predictor can
know; the start windows (``predicted_start_p10``/``p90``) say how wide it is, and the
oracle row (:func:`oracle_rows`: the same snapshot re-predicted with every job's true
run time from sacct) shows what is left of the error when runtimes are known: the
model's own.

The run, on the harness topology of slurm_cluster.py:

* history: every kind of the workload runs once or twice, so that sacct knows each
  user's runtimes; beside it, CPU-only jobs give each association usage in clearly
  different amounts, so that Fair Tree's ranks (the largest priority factor at this
  site) are settled before the measured queue is submitted. quotatop predicts with the
  priority Slurm reports and lets age and fair-share drift move it over the horizon.
* the queue is submitted held, then the fill, which starts at once; the queue is
  released once the fill runs, and the prediction is taken a few seconds later.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .slurm_cluster import HarnessError, SlurmCluster

if TYPE_CHECKING:
    from .workload_gen import Workload

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Kind:
    """One kind of job: a user's repeated job of one shape, with its true runtime."""

    user: str
    account: str
    qos: str
    sleep: int  # seconds the job really runs
    limit_min: int  # its time limit, in minutes
    gres: str | None = None  # per node, e.g. "gpu:h100:8", "gpu:4"
    nodes: int = 1
    partition: str = "gpu"
    constraint: str | None = None
    cpus: int = 1

    def argv(self) -> list[str]:
        out = [f"--partition={self.partition}", f"--time={self.limit_min}",
               f"--nodes={self.nodes}", f"--cpus-per-task={self.cpus}", "--mem=1G"]
        if self.gres:
            out.append(f"--gres={self.gres}")
        if self.constraint:
            out.append(f"--constraint={self.constraint}")
        return out


# CPU-only jobs of the history phase: CPUs per association (×60 s), so that at every
# level of the account tree siblings' usage differs by a factor of 1.6 or more.
USAGE_CPUS: list[tuple[str, str, int]] = [
    ("alice", "vision-prod", 96), ("bob", "nlp-prod", 34), ("erin", "nlp-prod", 14),
    ("alice", "vision-exp", 96), ("carol", "vision-exp", 48), ("bob", "nlp-exp", 72),
    ("dave", "elastic-pool", 120),
]
USAGE_SECONDS = 60


@dataclass
class Observation:
    """What was predicted and what happened, per pending job."""

    taken_at: float
    jobs: list[str]  # ids pending at the moment of prediction
    kinds: dict[str, str]
    predicted: dict[str, dict[str, dict]] = field(default_factory=dict)  # mode -> id -> row
    slurm_start: dict[str, float] = field(default_factory=dict)
    slurm_nodes: dict[str, list[str]] = field(default_factory=dict)
    actual_start: dict[str, float] = field(default_factory=dict)
    actual_nodes: dict[str, list[str]] = field(default_factory=dict)
    preempted: set[str] = field(default_factory=set)  # ids Slurm preempted (requeued)
    seconds: dict[str, float] = field(default_factory=dict)
    snapshot: dict | None = None  # the collector's snapshot right after (bench --dump)
    ends: dict[str, float] = field(default_factory=dict)  # actual ends of fill and queue
    # Every run of the fill and queue jobs: [start, end or None, nodes]. A job that
    # was preempted and requeued has two, on nodes that may differ.
    runs: dict[str, list[list]] = field(default_factory=dict)
    fill: dict[str, str] = field(default_factory=dict)  # fill job id -> kind
    seed: int | None = None  # the workload's seed (tests/harness/workload_gen.py)
    kept: str = ""  # the directory keep() wrote this observation and the logs to
    # The machine while the queue ran: (time, 1-minute load average) at each poll. A run
    # that misses its target on a busy machine (a CI run shares it) says so.
    load: list[tuple[float, float]] = field(default_factory=list)


def _submit(cluster: SlurmCluster, kind: Kind, payload: str | None = None,
            hold: bool = False, nodes: str | None = None) -> str:
    extra = (["--hold"] if hold else []) + ([f"--nodelist={nodes}"] if nodes else [])
    job_id, _, proc = cluster.sbatch(kind.user, kind.account, kind.qos, *kind.argv(), *extra,
                                     payload=payload or f"sleep {kind.sleep}", check=False)
    if not job_id:
        raise RuntimeError(f"sbatch {kind} failed: {proc.stderr.strip()}")
    return job_id


def _wait_gone(cluster: SlurmCluster, ids: list[str], timeout: float) -> None:
    def done() -> bool:
        out = cluster.run(["squeue", "--noheader", "-h", "-o", "%i", "-j", ",".join(ids)],
                          check=False).stdout.split()
        return not out

    cluster.wait_until(done, timeout, f"{len(ids)} jobs to finish")


def history(cluster: SlurmCluster, workload: Workload) -> None:
    """Every history run of the workload and the fair-share usage, all at once; waits
    for all, and for sacct to list them finished."""
    ids = []
    for user, account, cpus in USAGE_CPUS:
        usage = Kind(user, account, "normal", USAGE_SECONDS, 2, None, cpus=1)
        argv = [a for a in usage.argv() if not a.startswith(("--cpus", "--nodes"))]
        job_id, _, proc = cluster.sbatch(user, account, "normal", *argv, f"--ntasks={cpus}",
                                         payload=f"sleep {USAGE_SECONDS}", check=False)
        if not job_id:
            raise RuntimeError(f"usage job {user}/{account} failed: {proc.stderr.strip()}")
        ids.append(job_id)
    with ThreadPoolExecutor(4) as pool:
        ids += list(pool.map(lambda g: _submit(cluster, g.spec), workload.history))
    _wait_gone(cluster, ids, timeout=600)

    def in_sacct() -> bool:
        out = cluster.run(["sacct", "-X", "-n", "-P", "-o", "JobIDRaw,State", "-j",
                           ",".join(ids)], check=False).stdout
        states = dict(line.split("|", 1) for line in out.splitlines() if "|" in line)
        return all(states.get(i, "").startswith(("COMPLETED", "TIMEOUT")) for i in ids)

    cluster.wait_until(in_sacct, 60, "history jobs finished in sacct")


def _pending(cluster: SlurmCluster, ids: list[str]) -> list[str]:
    out = cluster.run(["squeue", "--noheader", "-h", "-t", "PD", "-o", "%i",
                       "-j", ",".join(ids)], check=False).stdout.split()
    return out


def predict(cluster: SlurmCluster, runtimes: str) -> dict:
    """``quotatop predict --source slurm --json`` against this cluster, as a user runs it."""
    proc = subprocess.run(
        [sys.executable, "-m", "quotatop", "predict", "--source", "slurm", "--json",
         "--runtimes", runtimes],
        env=cluster.env, capture_output=True, text=True, timeout=120, check=False, cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"quotatop predict exited {proc.returncode}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def _epoch(text: str) -> float | None:
    import datetime as dt

    text = text.strip()
    if not text or text in ("N/A", "Unknown", "None"):
        return None
    try:
        return dt.datetime.fromisoformat(text).astimezone().timestamp()
    except ValueError:
        return None


def _hosts(cluster: SlurmCluster, text: str) -> list[str]:
    text = text.strip()
    if not text or text in ("(null)", "None", "N/A"):
        return []
    out = cluster.run(["scontrol", "show", "hostnames", text], check=False).stdout
    return out.split()


def slurm_estimates(cluster: SlurmCluster, ids: list[str]) -> tuple[dict, dict]:
    """``squeue --start``: Slurm's own start estimate and planned nodes per job."""
    out = cluster.run(["squeue", "--start", "--noheader", "-o", "%i|%S|%Y",
                       "-j", ",".join(ids)], check=False).stdout
    starts: dict[str, float] = {}
    nodes: dict[str, list[str]] = {}
    for line in out.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) < 3:
            continue
        t = _epoch(parts[1])
        if t is not None:
            starts[parts[0]] = t
        nodes[parts[0]] = _hosts(cluster, parts[2])
    return starts, nodes


Run = tuple[float, float | None, list[str]]  # start, end (None: still running), nodes


def job_runs(cluster: SlurmCluster, ids: list[str]) -> tuple[dict[str, list[Run]], set[str]]:
    """Every run of each job, in start order (sacct --duplicates lists each run of a
    requeued job), and the jobs that were preempted (a run ended PREEMPTED/REQUEUED)."""
    out = cluster.run(["sacct", "-X", "-D", "-n", "-P", "-o",
                       "JobIDRaw,Start,End,NodeList,State", "-j", ",".join(ids)],
                      check=False).stdout
    runs: dict[str, list[Run]] = {}
    preempted: set[str] = set()
    for line in out.splitlines():
        parts = line.split("|")
        if len(parts) < 5:
            continue
        jid, start, end, nl, state = parts[:5]
        if state.startswith(("PREEMPTED", "REQUEUED")):
            preempted.add(jid)
        t = _epoch(start)
        if t is not None:
            runs.setdefault(jid, []).append((t, _epoch(end), _hosts(cluster, nl)))
    for r in runs.values():
        r.sort(key=lambda run: run[0])
    return runs, preempted


def actual_starts(cluster: SlurmCluster, ids: list[str]) -> tuple[dict, dict, set[str]]:
    """First start and nodes of each job, and the jobs that were preempted."""
    runs, preempted = job_runs(cluster, ids)
    starts = {j: r[0][0] for j, r in runs.items()}
    nodes = {j: r[0][2] for j, r in runs.items()}
    return starts, nodes, preempted


def run_workload(cluster: SlurmCluster, workload: Workload, *, settle: float = 3.0,
                 timeout: float = 600.0, log: Callable[[str], None] = lambda s: None,
                 keep_snapshot: bool = True, wait_ends: bool = True) -> Observation:
    """History, fill, queue; predict at one moment, then wait for every queued job to
    start."""
    t0 = time.monotonic()
    history(cluster, workload)
    log(f"history done in {time.monotonic() - t0:.0f} s")
    # The queue is submitted held, before the fill: submitting 40 jobs takes ~25 s on
    # this 2-core machine, and the shortest fill jobs would end before the prediction.
    # Released all at once once the fill runs, the queue meets a full cluster.
    with ThreadPoolExecutor(4) as pool:
        ids = list(pool.map(lambda g: _submit(cluster, g.spec, hold=True), workload.queue))
    kinds: dict[str, str] = {i: g.kind for i, g in zip(ids, workload.queue, strict=True)}
    t_fill = time.monotonic()
    fill_ids = [_submit(cluster, g.spec, nodes=g.nodes) for g in workload.fill]
    fill = {i: g.kind for i, g in zip(fill_ids, workload.fill, strict=True)}
    kinds.update(fill)
    # Every fill job fits at once by construction; one that Slurm placed otherwise
    # (an unpinned low-QoS job on another free node) may wait, and is then simply
    # part of the queue: the prediction reads the cluster as it is.
    with contextlib.suppress(HarnessError):
        cluster.wait_until(lambda: not _pending(cluster, fill_ids), 30, "the fill to start")
    cluster.run(["scontrol", "release", ",".join(ids)])
    log(f"fill started and queue released in {time.monotonic() - t_fill:.0f} s")
    # One backfill cycle (bf_interval) and a priority pass, so that squeue --start
    # has Slurm's own estimates when both are taken.
    time.sleep(settle)
    ids = ids + fill_ids
    t_pred = time.time()
    obs = Observation(taken_at=t_pred, jobs=[], kinds=kinds, fill=fill, seed=workload.seed)
    if keep_snapshot:
        # Taken first: the oracle re-predicts this moment with the true run times.
        proc = subprocess.run([sys.executable, "-m", "quotatop", "snapshot", "--source", "slurm",
                               "--json"], env=cluster.env, capture_output=True, text=True,
                              timeout=120, check=False, cwd=REPO)
        obs.snapshot = json.loads(proc.stdout) if proc.returncode == 0 else None
    for mode in ("estimate", "limit"):
        t = time.monotonic()
        out = predict(cluster, mode)
        obs.seconds[f"predict {mode}"] = time.monotonic() - t
        obs.predicted[mode] = {r["job_id"]: r for r in out["jobs"]}
        if mode == "estimate":
            obs.taken_at = out["taken_at"]
    obs.slurm_start, obs.slurm_nodes = slurm_estimates(cluster, ids)
    # The snapshot's own copy of Slurm's estimate is from the same moment as ours.
    for i, r in obs.predicted["estimate"].items():
        if r["scheduler_estimate"] is not None:
            obs.slurm_start[i] = r["scheduler_estimate"]
    pending_now = set(_pending(cluster, ids))
    # Measured: what was pending in both, at the moment of prediction.
    obs.jobs = [i for i in ids if i in pending_now and i in obs.predicted["estimate"]]
    log(f"predicted {len(obs.jobs)} pending jobs at {t_pred:.0f}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        obs.load.append((time.time(), os.getloadavg()[0]))
        started, _, _ = actual_starts(cluster, obs.jobs)
        if all(i in started for i in obs.jobs):
            break
        time.sleep(3)
    # Every job's end too: the oracle needs each job's true run time (the test, which
    # has no oracle, does not wait for them). A job still running past the wait keeps
    # its estimate in the oracle, and the bench says how many.
    if wait_ends:
        with contextlib.suppress(HarnessError):
            _wait_gone(cluster, ids, timeout=max(60.0, deadline - time.monotonic() + 300.0))
    runs, obs.preempted = job_runs(cluster, ids)
    obs.runs = {j: [list(r) for r in rs] for j, rs in runs.items()}
    for j in obs.jobs + fill_ids:
        if j in runs:
            obs.actual_start[j], _, obs.actual_nodes[j] = runs[j][0]
    obs.preempted |= requeued(cluster, ids)
    for j, rs in runs.items():
        if rs[-1][1] is not None:
            obs.ends[j] = rs[-1][1]
    obs.seconds["workload"] = time.monotonic() - t0
    return obs


def observation_json(obs: Observation) -> str:
    """The observation as JSON (sets as sorted lists): bench --dump and keep() write it."""
    import dataclasses

    return json.dumps(dataclasses.asdict(obs), default=sorted, indent=1)


def keep(obs: Observation, cluster: SlurmCluster, dest: Path) -> Path:
    """Write the observation (JSON, as bench --dump) and the controller's log to dest,
    before the cluster's directory goes: a run that misses its target can then be read
    job by job afterwards (which jobs moved, which of Slurm's schedulers started them)."""

    obs.kept = str(dest)
    keep_logs(cluster, dest)
    (dest / "observation.json").write_text(observation_json(obs))
    return dest


def evidence_dir(what: str) -> Path:
    """Where a live test keeps its evidence (the controller's log, what it observed):
    $QUOTATOP_FIDELITY_KEEP when set, else a new /tmp/quotatop-WHAT-* kept after the run."""
    import os
    import tempfile

    where = os.environ.get("QUOTATOP_FIDELITY_KEEP")
    return Path(where) if where else Path(tempfile.mkdtemp(prefix=f"quotatop-{what}-"))


def keep_logs(cluster: SlurmCluster, dest: Path) -> Path:
    """Copy the controller's and slurmdbd's logs, and the busiest processes, to dest."""
    import shutil

    dest.mkdir(parents=True, exist_ok=True)
    for name in ("slurmctld", "slurmdbd"):
        src = cluster.log_path(name)
        if src.exists():
            shutil.copyfile(src, dest / src.name)
    (dest / "processes.txt").write_text(_busiest_processes())
    return dest


def _busiest_processes(n: int = 15) -> str:
    """The processes that used the most CPU, one line each: something else running
    beside the workload (a process an earlier test left behind) shows here."""
    import psutil

    rows = []
    for proc in psutil.process_iter(["pid", "name", "cmdline", "cpu_times", "create_time"]):
        info = proc.info
        times = info.get("cpu_times")
        if times is None:
            continue
        # The name and its first few plain words: enough to tell a Slurm daemon or a
        # leftover quotatop from the rest, and no option's value (a token, an
        # environment) written to a file.
        words = [w for w in (info.get("cmdline") or [])[1:5]
                 if not any(c in w for c in "={}:") and len(w) < 80]
        cmd = " ".join([info.get("name") or "?", *words])
        rows.append((times.user + times.system, info["pid"], info.get("create_time") or 0.0, cmd))
    rows.sort(reverse=True)
    return "".join(f"{cpu:9.1f} s  pid {pid:>7}  started "
                   f"{time.strftime('%H:%M:%S', time.localtime(t0))}  {cmd}\n"
                   for cpu, pid, t0, cmd in rows[:n])


def worst(obs: Observation, mode: str = "estimate", n: int = 8) -> str:
    """The jobs predicted furthest from their actual start, one line each (kind,
    predicted and actual start relative to the prediction, nodes), for a failure's
    message: a flake is then named in the CI log itself."""
    rows = obs.predicted.get(mode, {})
    lines = []
    for i in obs.jobs:
        r, actual = rows.get(i, {}), obs.actual_start.get(i)
        p = r.get("predicted_start")
        err = abs(p - actual) if p is not None and actual is not None else math.inf
        lines.append((err, i))
    lines.sort(reverse=True)

    def rel(t: float | None) -> str:
        return "-" if t is None else f"{t - obs.taken_at:+.0f}s"

    loads = [x for _, x in obs.load]
    busy = f"load average {min(loads):.2f}-{max(loads):.2f} while the queue ran" if loads else ""
    out = [f"kept in {obs.kept or '(not kept)'}; {busy}; worst {n} of {len(lines)} ({mode}):"]
    for _, i in lines[:n]:
        r = rows.get(i, {})
        out.append(
            f"  {i} {obs.kinds.get(i, '?')}: predicted {rel(r.get('predicted_start'))} on "
            f"{','.join(r.get('predicted_nodes') or []) or '-'}, actual "
            f"{rel(obs.actual_start.get(i))} on {','.join(obs.actual_nodes.get(i, [])) or '-'}"
            f", Slurm's estimate {rel(obs.slurm_start.get(i))}")
    return "\n".join(out)


def requeued(cluster: SlurmCluster, ids: list[str]) -> set[str]:
    """Jobs the controller restarted (a requeue after preemption counts a restart);
    finished jobs stay in its memory for MinJobAge (an hour here)."""
    out = cluster.run(["scontrol", "show", "job", "-o"], check=False).stdout
    wanted, found = set(ids), set()
    for line in out.splitlines():
        info = dict(tok.partition("=")[::2] for tok in line.split() if "=" in tok)
        if info.get("JobId") in wanted and info.get("Restarts", "0") not in ("0", ""):
            found.add(info["JobId"])
    return found


# ---------------------------------------------------------------- measures


def kendall_tau(xs: list[float], ys: list[float]) -> float:
    """Kendall's tau-b (ties in either ranking counted as Kendall and Stuart do)."""
    n = len(xs)
    conc = disc = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = (xs[i] > xs[j]) - (xs[i] < xs[j])
            dy = (ys[i] > ys[j]) - (ys[i] < ys[j])
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif dx == dy:
                conc += 1
            else:
                disc += 1
    denom = math.sqrt((conc + disc + tx) * (conc + disc + ty))
    return (conc - disc) / denom if denom else float("nan")


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = (len(s) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


@dataclass
class Scores:
    name: str
    covered: int  # jobs with a predicted start (or a stated reason where none)
    with_start: int
    measured: int
    tau: float
    median_err: float
    p90_err: float
    node_match: float  # share of started jobs whose predicted node set was the actual one
    preemptions: set[str] = field(default_factory=set)

    def row(self) -> str:
        return (f"| {self.name} | {self.tau:.2f} | {self.median_err:.0f} s / {self.p90_err:.0f} s"
                f" | {self.with_start} of {self.measured} | {100 * self.node_match:.0f} % |")


def score(name: str, obs: Observation, start: dict[str, float],
          nodes: dict[str, list[str]], only: list[str] | None = None,
          stated: set[str] | None = None) -> Scores:
    ids = only if only is not None else obs.jobs
    both = [i for i in ids if i in start and i in obs.actual_start]
    tau = kendall_tau([start[i] for i in both], [obs.actual_start[i] for i in both])
    errs = [abs(start[i] - obs.actual_start[i]) for i in both]
    placed = [i for i in both if nodes.get(i)]
    match = sum(1 for i in placed if sorted(nodes[i]) == sorted(obs.actual_nodes.get(i, [])))
    covered = sum(1 for i in ids if i in start or (stated is not None and i in stated))
    return Scores(name, covered, sum(1 for i in ids if i in start), len(ids), tau,
                  statistics.median(errs) if errs else float("nan"), _pct(errs, 0.9),
                  match / len(placed) if placed else float("nan"))


def rows_scores(name: str, obs: Observation, rows: dict[str, dict],
                only: list[str] | None = None) -> Scores:
    """Scores of prediction rows (``predict --json``'s jobs by id) against the actual."""
    start = {i: r["predicted_start"] for i, r in rows.items()
             if r["predicted_start"] is not None}
    nodes = {i: r["predicted_nodes"] for i, r in rows.items()}
    stated = {i for i, r in rows.items() if r["reason"]}
    s = score(name, obs, start, nodes, only, stated)
    s.preemptions = {p["job_id"] for r in rows.values() for p in r["preempts"]}
    return s


def quotatop_scores(obs: Observation, mode: str, only: list[str] | None = None) -> Scores:
    name = f"quotatop ({'history runtimes' if mode == 'estimate' else 'time limits'})"
    return rows_scores(name, obs, obs.predicted[mode], only)


def median_scores(obs: Observation, only: list[str] | None = None) -> Scores:
    """The history prediction scored at each job's window median (p50, what the TUI
    shows as the likely start) where it has one, instead of the single plan's instant."""
    rows = {}
    for i, r in obs.predicted["estimate"].items():
        p50 = r.get("predicted_start_p50")
        rows[i] = dict(r, predicted_start=p50) if p50 is not None else r
    return rows_scores("quotatop (window median, p50)", obs, rows, only)


def slurm_scores(obs: Observation, only: list[str] | None = None) -> Scores:
    return score("Slurm's own estimate (squeue --start)", obs, obs.slurm_start,
                 obs.slurm_nodes, only)


def true_runtimes(obs: Observation) -> dict[str, float]:
    """Each job's run time as sacct recorded it (whole seconds): its last run, as a
    preempted job's first run was cut short by the preemption."""
    out: dict[str, float] = {}
    for j, rs in obs.runs.items():
        start, end = rs[-1][0], rs[-1][1]
        if end is not None:
            out[j] = end - start
    return out


def oracle_rows(obs: Observation) -> dict[str, dict]:
    """The observation's snapshot predicted again with every job's true run time (an
    oracle no predictor has): what error is left is the model's, not the runtimes'."""
    import msgspec

    from quotatop.collectors.model import PENDING, RUNNING, Snapshot
    from quotatop.commands.predict import predict_snapshot

    if obs.snapshot is None:
        return {}
    snap = msgspec.convert(obs.snapshot, Snapshot)
    true = true_runtimes(obs)
    jobs = [msgspec.structs.replace(j, runtime_estimate=true[j.id], runtime_history=[],
                                    runtime_basis="true run time (sacct)")
            if j.id in true and j.state in (PENDING, RUNNING) else j for j in snap.jobs]
    out = predict_snapshot(msgspec.structs.replace(snap, jobs=jobs), runtimes="estimate")
    return {r.job_id: msgspec.to_builtins(r) for r in out.jobs}


def oracle_jobs(obs: Observation) -> list[str]:
    """The measured jobs that were also pending in the oracle's snapshot (taken a
    moment before the prediction)."""
    if obs.snapshot is None:
        return []
    pending = {j["id"] for j in obs.snapshot.get("jobs", []) if j.get("state", "pending")
               == "pending"}
    return [i for i in obs.jobs if i in pending]


@dataclass
class Calibration:
    inside: int  # actual starts inside [p10, p90]
    measured: int  # jobs with a window and an actual start
    width_median: float  # seconds, p90 - p10
    early: int  # actual start before p10
    late: int  # actual start after p90

    def row(self) -> str:
        share = 100 * self.inside / self.measured if self.measured else float("nan")
        return (f"[p10, p90] holds {self.inside} of {self.measured} actual starts "
                f"({share:.0f} %; {self.early} earlier, {self.late} later); median width "
                f"{self.width_median:.0f} s")


def calibration(obs: Observation, rows: dict[str, dict],
                only: list[str] | None = None) -> Calibration:
    """How often the actual start fell in the predicted window. sacct keeps whole
    seconds, so an actual start A means [A, A+1): inside when that second meets the
    window."""
    ids = only if only is not None else obs.jobs
    inside = early = late = measured = 0
    widths = []
    for i in ids:
        r, a = rows.get(i), obs.actual_start.get(i)
        if r is None or a is None or r.get("predicted_start_p10") is None \
                or r.get("predicted_start_p90") is None:
            continue
        lo, hi = r["predicted_start_p10"], r["predicted_start_p90"]
        measured += 1
        widths.append(hi - lo)
        if a + 1 <= lo:
            early += 1
        elif a > hi:
            late += 1
        else:
            inside += 1
    return Calibration(inside, measured, statistics.median(widths) if widths else float("nan"),
                       early, late)


def placement_at_start(obs: Observation, placement: str) -> tuple[int, int]:
    """Node choice given the state: for each measured job, the nodes the core picks
    at the job's actual start with every other job where it really was then (the
    actual starts, nodes and ends of the fill and the queue), against the nodes
    Slurm gave it. This isolates the placement rule from the timing of the whole
    prediction, where one job ending seconds early moves every later choice.

    Jobs that started in the same second are taken in the priority order of the
    snapshot, the order the scheduler went in. Needs ``obs.snapshot`` (taken right
    after the prediction): its running and pending jobs give each job's request.
    Where each other job was comes from its runs (``obs.runs``: a preempted job's
    first run ends at its preemption, its second is elsewhere); a job already running
    at the snapshot with no run recorded keeps the snapshot's start and nodes; a fill
    job that ended before the snapshot is missing and its nodes look free.
    Returns (right, measured)."""
    import msgspec

    from quotatop import scheduler_core
    from quotatop.collectors.model import Job, Snapshot
    from quotatop.scheduler_core.site import site_policy

    if obs.snapshot is None:
        return 0, 0
    snap = msgspec.convert(obs.snapshot, Snapshot)
    # The nodes as idle: what is in use at each start comes from the jobs alone.
    snap = msgspec.structs.replace(snap, nodes=[
        msgspec.structs.replace(n, state="idle", allocated={}, gpus_used_indices=[])
        for n in snap.nodes])
    policy = msgspec.structs.replace(site_policy(snap), placement=placement,
                                     runtimes="limit")
    by_id = {j.id: j for j in snap.jobs}

    # Where each job ran: every run (a preempted job ran twice, maybe on other nodes).
    # A job already running at the snapshot with no run recorded (a queue job that
    # started on release, before the prediction) keeps the snapshot's start and nodes.
    runs: dict[str, list[tuple[float, float, list[str]]]] = {
        k: [(r[0], math.inf if r[1] is None else r[1], list(r[2])) for r in rs]
        for k, rs in obs.runs.items()}
    if not obs.runs:  # kept before runs were recorded: first starts and last ends
        runs = {k: [(s, obs.ends.get(k, math.inf), obs.actual_nodes.get(k, []))]
                for k, s in obs.actual_start.items()}
    for k in snap.jobs:
        if k.state == "running" and k.id not in runs and k.start_time is not None:
            runs[k.id] = [(k.start_time, obs.ends.get(k.id, math.inf), list(k.nodes))]

    prio = {k.id: k.priority or 0.0 for k in snap.jobs}

    def before(start: float, k: str, t: float, j: str) -> bool:
        # Within one second the scheduler went in priority order (the snapshot's).
        if start != t:
            return start < t
        return (-prio.get(k, 0.0), int(k)) < (-prio.get(j, 0.0), int(j))

    right = measured = 0
    for j in obs.jobs:
        if j not in obs.actual_start or not obs.actual_nodes.get(j) or j not in by_id:
            continue
        t = obs.actual_start[j]
        running = []
        for k, rs in runs.items():
            if k == j or k not in by_id:
                continue
            for start, end, nodes in rs:
                if nodes and end > t and before(start, k, t, j):
                    running.append(msgspec.structs.replace(
                        by_id[k], state="running", nodes=nodes, start_time=start,
                        time_limit=max(by_id[k].time_limit or 0.0, t - start + 3600.0)))
                    break
        me: Job = msgspec.structs.replace(by_id[j], state="pending", nodes=[],
                                          submit_time=min(by_id[j].submit_time or t, t),
                                          eligible_time=None)
        at = msgspec.structs.replace(snap, taken_at=t, jobs=[*running, me])
        rows = {p.job_id: p for p in scheduler_core.predict(at, policy, 3600)}
        got = rows.get(j)
        measured += 1
        if got is not None and got.start is not None and got.start <= t + 1:
            right += sorted(got.nodes) == sorted(obs.actual_nodes[j])
    return right, measured
