"""`quotatop predict --source slurm|k8s|demo|replay FILE|live FILE [--at T] [--json|--csv]`:
one row per pending job — when and where the core predicts it starts, why it waits,
whom it preempts, its priority and factors, the runtime the prediction used and its
basis, and the scheduler's own estimate beside it. Field by field: docs/predict.md."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import sys
from typing import Any

import msgspec

from quotatop.collectors.errors import UserError
from quotatop.collectors.human import human_duration
from quotatop.collectors.untrusted import json_safe, printable
from quotatop.flags import number
from quotatop.source_flags import add_config_flags, add_source_flags, source_options

ROW_VERSION = 1
# Plans made for the start windows when --samples is not given: as many as the queue's
# size allows (scheduler_core.auto_samples: 16 for a 5k-job queue, which bench/core.py
# keeps within the 1 s issue #31 allows, up to 256 for a small one).
DEFAULT_SAMPLES = None


class PredictedJob(msgspec.Struct, kw_only=True):
    """One pending job's prediction (docs/predict.md names every field)."""

    job_id: str
    team: str
    user: str
    qos: str
    partition: str | None
    state: str  # starts_now | planned | waiting | held | rejected
    predicted_start: float | None
    predicted_start_iso: str | None
    predicted_wait: float | None  # seconds from the snapshot to the predicted start
    predicted_end: float | None
    predicted_nodes: list[str]
    reason: str
    binding: str
    preempts: list[dict[str, str]]
    priority: float
    factors: dict[str, float]
    source_priority: float | None
    source_reason: str | None
    time_limit: float | None
    runtime: float | None  # seconds the prediction let the job run
    runtime_basis: str  # "estimate: …" or "time limit"
    runtime_estimate: float | None  # the source's estimate from history, if any
    runtime_estimate_basis: str | None
    scheduler_estimate: float | None  # the scheduler's own start estimate
    scheduler_estimate_iso: str | None
    queue_position: int | None  # the place in its queue the source states (0 = next)
    reservation: str | None = None  # the advanced reservation the job asked for
    # The start window over --samples plans with run times drawn from history (epoch
    # seconds; None: beyond the horizon in that share of the plans, or no windows made).
    predicted_start_p10: float | None = None
    predicted_start_p50: float | None = None
    predicted_start_p90: float | None = None


class PredictedReservation(msgspec.Struct, kw_only=True):
    """An advanced reservation of the snapshot: over [start, end) its nodes take only
    the jobs that ask for it."""

    name: str
    nodes: list[str]
    start: float
    start_iso: str | None
    end: float | None  # None: no end
    end_iso: str | None
    users: list[str]
    accounts: list[str]
    state: str


class PredictOutput(msgspec.Struct, kw_only=True):
    version: int
    source: str
    cluster: str
    taken_at: float
    taken_at_iso: str
    policy: dict[str, Any]
    stale: bool
    stale_reason: str | None
    jobs: list[PredictedJob]
    reservations: list[PredictedReservation] = []


def iso(t: float | None) -> str | None:
    if t is None or not math.isfinite(t):
        return None
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat(timespec="seconds").replace(
        "+00:00", "Z")


def rows(snap: Any, predictions: Any) -> list[PredictedJob]:
    """The core's predictions joined with the jobs they are about."""
    jobs = {j.id: j for j in snap.jobs}
    out = []
    for p in predictions:
        j = jobs.get(p.job_id)
        if j is None:
            continue
        f = p.factors
        out.append(PredictedJob(
            job_id=p.job_id, team=j.team, user=j.user, qos=j.qos, partition=j.partition,
            state=p.state, predicted_start=p.start, predicted_start_iso=iso(p.start),
            predicted_wait=None if p.start is None else max(0.0, p.start - snap.taken_at),
            predicted_end=p.end, predicted_nodes=list(p.nodes), reason=p.reason,
            binding=getattr(p, "binding", "") or "",
            preempts=[{"job_id": v.job_id, "mode": v.mode} for v in p.preempts],
            priority=p.priority,
            factors={"age": f.age, "fairshare": f.fairshare, "qos": f.qos,
                     "job_size": f.job_size, "partition": f.partition},
            source_priority=j.priority, source_reason=j.reason, time_limit=j.time_limit,
            runtime=getattr(p, "runtime", None),
            runtime_basis=getattr(p, "runtime_basis", "") or "time limit",
            runtime_estimate=j.runtime_estimate, runtime_estimate_basis=j.runtime_basis,
            scheduler_estimate=j.estimated_start, scheduler_estimate_iso=iso(j.estimated_start),
            queue_position=j.queue_position, reservation=j.reservation,
        ))
    return out


def predict_snapshot(snap: Any, runtimes: str = "estimate",
                     horizon: float = 7 * 86400.0, samples: int | None = 0) -> PredictOutput:
    """Predict ``snap`` with the policy of its own scheduler; with ``samples`` > 0 (and
    run times from estimates) each job also gets its start window over that many plans
    (None: as many as ``scheduler_core.auto_samples`` gives the queue)."""
    from quotatop import scheduler_core
    from quotatop.scheduler_core.site import site_policy

    policy = site_policy(snap, runtimes=runtimes)  # type: ignore[arg-type]
    try:
        predictions = scheduler_core.predict(snap, policy, horizon=horizon)
    except ValueError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UserError(f"predict: the snapshot of {snap.source or 'the source'} "
                        f"is inconsistent: {first}") from None
    jobs = rows(snap, predictions)
    if samples is None:
        samples = scheduler_core.auto_samples(
            sum(1 for j in snap.jobs if j.state in ("pending", "running")))
    if samples > 0:
        add_windows(jobs, scheduler_core.predict_windows(snap, policy, horizon, samples))
    return PredictOutput(
        version=ROW_VERSION, source=snap.source, cluster=snap.cluster, taken_at=snap.taken_at,
        taken_at_iso=iso(snap.taken_at) or "", policy=msgspec.to_builtins(policy),
        stale=snap.stale, stale_reason=snap.stale_reason, jobs=jobs,
        reservations=[PredictedReservation(
            name=r.name, nodes=list(r.nodes), start=r.start, start_iso=iso(r.start),
            end=r.end, end_iso=iso(r.end), users=list(r.users), accounts=list(r.accounts),
            state=r.state) for r in snap.reservations])


def add_windows(jobs: list[PredictedJob], windows: Any) -> None:
    """Each job's start window from the core's sampled plans. Where the point prediction
    starts the job now, the window is that instant: nothing sampled changes the present."""
    by_id = {w.job_id: w for w in windows}
    for r in jobs:
        w = by_id.get(r.job_id)
        if w is None:
            continue
        if r.state == "starts_now" and r.predicted_start is not None:
            r.predicted_start_p10 = r.predicted_start_p50 = r.predicted_start_p90 = \
                r.predicted_start
            continue
        r.predicted_start_p10, r.predicted_start_p50, r.predicted_start_p90 = \
            w.p10, w.p50, w.p90


CSV_FIELDS = [f for f in PredictedJob.__struct_fields__]


def _csv_value(v: Any) -> str:
    # Names come from the cluster: escaped (collectors/untrusted.py), so that a cell is
    # one line and a spreadsheet or `column -t` on a terminal gets no control bytes.
    if v is None:
        return ""
    if isinstance(v, list):
        if v and isinstance(v[0], dict):
            return printable(";".join(f"{d['job_id']}:{d['mode']}" for d in v))
        return printable(";".join(str(x) for x in v))
    if isinstance(v, dict):
        return ";".join(f"{printable(k)}={x:g}" for k, x in v.items())
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".")
    return printable(str(v))


def _text(out: PredictOutput) -> str:
    p = printable  # every name and reason: one line, no control bytes (untrusted.py)
    lines = [f"{p(out.source)} {p(out.cluster)} at {out.taken_at_iso}: "
             f"{len(out.jobs)} pending jobs"]
    if out.stale:
        lines.append(f"stale: {p(str(out.stale_reason))}")
    for r in out.jobs:
        when = "—" if r.predicted_wait is None else (
            "now" if r.predicted_wait < 1 else f"in {human_duration(r.predicted_wait)}")
        nodes = p(",".join(r.predicted_nodes)) or "—"
        lines.append(f"{p(r.job_id):>8} {p(r.team):<14} {p(r.user):<8} {when:>9} "
                     f"{nodes:<16} {p(r.reason)}")
    return "\n".join(lines)


def snapshot_frame(args: argparse.Namespace) -> tuple[Any, tuple[float, float] | None]:
    """The snapshot to predict from, and the span of the timeline it is a frame of
    (replay, demo), else None."""
    from quotatop.collectors.base import driven_as_timeline
    from quotatop.config import load_config
    from quotatop.source_flags import source_words
    from quotatop.sources import open_source

    cfg = load_config(args.config)
    kind, path = source_words(args.source, cfg.source, getattr(args, "recording", None))
    if args.at is not None and kind not in ("replay", "demo"):
        raise UserError("--at applies to a timeline only: --source replay FILE or demo [FILE]")
    # A demo scenario plays on by itself; as a timeline it can be stopped at a frame.
    collector = driven_as_timeline(open_source(kind, source_options(cfg, args, kind, path)))
    span = None
    try:
        if hasattr(collector, "seek"):
            span = (collector.start_time, collector.end_time)
        if args.at is not None:
            from quotatop.commands.at_flag import parse_at

            collector.seek(parse_at(args.at, collector.start_time, collector.end_time))
        if hasattr(collector, "pause"):
            collector.pause()  # a timeline: this frame, not the next one
        snap = collector.collect()
    finally:
        collector.close()
    if not snap.jobs and not snap.nodes and not snap.teams and snap.stale:
        raise UserError(f"{kind} unreachable: {snap.stale_reason}")
    say_source_problems(snap)
    return snap, span


def say_source_problems(snap: Any) -> None:
    """What the source refused or could not read ("squeue: skipped 3 record(s): job
    1601: node count 1e+09 above 1000000"), on stderr as ``snapshot`` words it, so that
    the table, CSV or JSON on stdout stays one document: a prediction made without a
    refused record says so (issue #35), as the TUI's banner does."""
    for w in snap.warnings:
        print(f"quotatop: warning: {printable(w)}", file=sys.stderr)
    if snap.stale:
        print(f"quotatop: stale: {printable(str(snap.stale_reason))}", file=sys.stderr)


def _clock(t: float) -> str:
    # Local time of day, as --at HH:MM reads it (commands/at_flag.py parse_at).
    return dt.datetime.fromtimestamp(t).strftime("%H:%M")


def run(args: argparse.Namespace) -> int:
    snap, span = snapshot_frame(args)
    out = predict_snapshot(snap, runtimes=args.runtimes, horizon=args.horizon,
                           samples=args.samples if args.runtimes == "estimate" else 0)
    if not out.jobs and span is not None and span[1] > span[0]:
        # The demo tour opens on an idle cluster: say where the queue is, on stderr so
        # that --json and --csv stay one document.
        print(f"quotatop: no pending jobs at {_clock(snap.taken_at)}; this timeline runs "
              f"{_clock(span[0])}-{_clock(span[1])}: pick a frame with --at HH:MM or "
              "+DURATION", file=sys.stderr)
    if args.json:
        # The data exactly, with no control character raw in the bytes (untrusted.py).
        sys.stdout.write(json_safe(json.dumps(msgspec.to_builtins(out), ensure_ascii=False))
                         + "\n")
    elif args.csv:
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(CSV_FIELDS)
        for r in out.jobs:
            w.writerow([_csv_value(getattr(r, f)) for f in CSV_FIELDS])
    else:
        print(_text(out))
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("predict", help="predict every pending job's start, headless")
    p.add_argument("--source", nargs="+", metavar="KIND",
                   help="demo [FILE] | slurm | k8s | prometheus | replay FILE | live FILE")
    p.add_argument("--at", metavar="TIME",
                   help="with --source replay FILE or demo: the frame at HH:MM, +DURATION, "
                        "ISO or epoch")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="one JSON object (docs/predict.md)")
    fmt.add_argument("--csv", action="store_true", help="CSV with a header row")
    p.add_argument("--runtimes", choices=("estimate", "limit"), default="estimate",
                   help="run jobs for their runtime estimate from history (default) "
                        "or to their time limit")
    p.add_argument("--horizon", type=number(1.0, 366 * 86400.0), default=7 * 86400.0,
                   help="seconds ahead to predict (default 7 days, at most a year)")
    p.add_argument("--samples", type=number(0, 10_000, integer=True), default=DEFAULT_SAMPLES,
                   help="plans with sampled run times for each job's start window "
                        "(default: 16 for a 5k-job queue, up to 256 for a small one; 0: none)")
    add_source_flags(p)
    add_config_flags(p)
    p.set_defaults(func=run)
