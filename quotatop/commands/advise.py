"""`quotatop advise --trace NAME|FILE` or `quotatop advise --history 30d --source slurm`:
which quota split would have served a period's real jobs best (with --history, the jobs
sacct lists for the period, on the Slurm cluster's own nodes, against its current
GrpTRES maxes). Each candidate split is one simulation of the trace through the core,
on a local process pool or, with --scheduler-address, on a Dask cluster; the sweep
and the verdict live in review/advise.py (docs/review.md, "quotatop advise")."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any

from quotatop.collectors.errors import UserError
from quotatop.flags import MAX_NODES, MAX_PER_NODE, number, seconds
from quotatop.source_flags import add_config_flags, add_source_flags, given_source_flags

POLICIES = ("fifo", "easy", "conservative", "multifactor")
MAX_CANDIDATES = 10_000
MAX_WORKERS = 1024


def parse_current(text: str, teams: list[str]) -> dict[str, tuple[float, float | None]]:
    """``--current g1=96:128,g2=32``: per team a guarantee and an optional max (none:
    unlimited borrowing); a team not named keeps no quota."""
    out: dict[str, tuple[float, float | None]] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        team, sep, value = part.partition("=")
        g_text, _, m_text = value.partition(":")
        if not sep or not team:
            raise UserError(f"--current {part!r}: expected TEAM=GUARANTEE[:MAX]")
        if team not in teams:
            raise UserError(f"--current {part!r}: no team {team!r} in the trace "
                            f"(teams: {', '.join(teams[:10])}{' …' if len(teams) > 10 else ''})")
        try:
            g = float(g_text)
            m = float(m_text) if m_text else None
        except ValueError:
            raise UserError(f"--current {part!r}: GUARANTEE and MAX are numbers") from None
        if not (math.isfinite(g) and g >= 0) or (m is not None and not (math.isfinite(m)
                                                                          and m >= g)):
            raise UserError(f"--current {part!r}: needs 0 ≤ GUARANTEE ≤ MAX, finite")
        out[team] = (g, m)
    return out


def _executor(args: argparse.Namespace) -> tuple[Any, str]:
    """A Dask client for --scheduler-address (None and "local" otherwise)."""
    if not args.scheduler_address:
        return None, "local"
    try:
        from dask.distributed import Client
    except ImportError:
        raise UserError("--scheduler-address needs dask.distributed: "
                        "pip install quotatop[distributed]") from None
    try:
        return Client(args.scheduler_address, timeout=args.connect_timeout), "dask"
    except (OSError, TimeoutError, ValueError) as e:
        raise UserError(f"--scheduler-address {args.scheduler_address}: cannot reach the "
                        f"Dask scheduler: {e}") from None


def history_trace(args: argparse.Namespace) -> tuple[Any, dict[str, tuple[float | None,
                                                                          float | None]]]:
    """--history DURATION --source slurm: the period's jobs from sacct through the Slurm
    collector's runner, as a trace on the cluster's nodes, and the quotas in force."""
    from quotatop.commands.report import gather_slurm, parse_when
    from quotatop.config import load_config
    from quotatop.recording.store import parse_duration
    from quotatop.review.period_trace import current_quotas, period_trace
    from quotatop.source_flags import source_words

    cfg = load_config(args.config)
    kind, _ = source_words(args.source or [cfg.source], cfg.source,
                           getattr(args, "recording", None))
    if kind != "slurm":
        raise UserError(f"advise --history takes --source slurm (sacct keeps the period's "
                        f"jobs); for {kind}, export a trace and pass --trace")
    try:
        span = parse_duration(args.history)
    except ValueError as e:
        raise UserError(f"--history: {e}") from None
    until = parse_when(args.until or "now", time.time())
    g = gather_slurm(args, cfg, until - span, until)
    for note in g.notes:
        print(f"note: {note}", file=sys.stderr)
    name = f"slurm {g.cluster or 'cluster'} last {args.history}"
    trace = period_trace(g.records, g.nodes, since=until - span, until=until, name=name)
    (res,) = trace.capacity
    return trace, current_quotas(g.teams, res, sorted({j.team for j in trace.jobs}))


def run(args: argparse.Namespace) -> int:
    from quotatop.review import advise as adv
    from quotatop.simulation.trace_simulate import cluster_shape, load_trace, resolve_trace

    t0 = time.perf_counter()
    if args.policy not in POLICIES:
        raise UserError(f"--policy {args.policy!r}: advise takes {', '.join(POLICIES)}")
    if (args.trace is None) == (args.history is None):
        raise UserError("advise: give --trace NAME|FILE or --history DURATION --source "
                        "slurm (one of them)")
    in_force: dict[str, tuple[float | None, float | None]] = {}
    if args.history is not None:
        trace, in_force = history_trace(args)
    else:
        if args.source or args.until or given_source_flags(args):
            flag = "--source" if args.source else "--until" if args.until else \
                given_source_flags(args)[0]
            raise UserError(f"advise: {flag} is not read with --trace (it goes with "
                            "--history DURATION --source slurm)")
        resolved = resolve_trace(args.trace, args.format)
        path, fmt = resolved if resolved else (args.trace, "csv")
        trace = load_trace(path, fmt, gpus=args.gpus, team_by=args.team_by)
    if not trace.jobs:
        raise UserError(f"{trace.path}: no jobs to simulate")
    nodes, per_node = cluster_shape(trace, nodes=args.nodes, per_node=args.gpus_per_node)
    wl = adv.build_workload(trace, nodes, per_node, args.policy, args.resolution)
    current = None
    if args.current:
        in_force = dict(parse_current(args.current, wl.teams))
    if in_force:
        current = adv.Candidate(name=adv.CURRENT, kind="current",
                                guarantee={t: g for t, (g, _) in in_force.items()
                                           if g is not None},
                                max={t: m for t, (_, m) in in_force.items()},
                                borrow="as given")
    cands = adv.candidates(wl, current=current, limit=args.candidates)
    client, where = _executor(args)
    workers = args.workers if args.workers is not None else (os.cpu_count() or 1)
    t_sweep = time.perf_counter()
    try:
        if client is not None:
            results = adv.sweep_dask(client, wl, cands)
            workers = len(client.nthreads())  # scheduler_info() lists only the first few
        else:
            results = adv.sweep_local(wl, cands, workers)
    except ValueError as e:  # the core's refusal, raised in a worker
        raise UserError(f"{trace.path}: the scheduling core failed: {e}") from None
    finally:
        if client is not None:
            client.close()
    sweep_s = time.perf_counter() - t_sweep
    front = adv.frontier(results)
    rec = adv.recommend(results, front)
    why = adv.reasons(results[0], results[rec]) if rec is not None else []
    out = {"trace": trace.path, "format": trace.format, "jobs": len(trace.jobs),
           "teams": wl.teams, "resource": wl.resource, "capacity": wl.capacity,
           "nodes": nodes, "per_node": per_node, "policy": args.policy,
           "resolution": args.resolution, "demand": wl.demand, "executor": where,
           "workers": workers, "candidates": [adv.to_builtins(r) for r in results],
           "current": 0, "frontier": front, "recommended": rec, "reasons": why,
           "sweep_s": sweep_s, "wall_s": time.perf_counter() - t0}
    if args.json:
        sys.stdout.write(json.dumps(out) + "\n")
        return 0
    print_report(out, results, front, rec, why)
    return 0


def _quota(c: Any, res: str, teams: list[str], shown: int = 3) -> str:
    """The first teams' guarantee/max, e.g. "g1 77/∞, g2 51/∞"."""
    if c.guarantee is None:
        return "no quota"
    parts = []
    for t in teams[:shown]:
        g = c.guarantee.get(t)
        m = (c.max or {}).get(t)
        parts.append(f"{t} {'–' if g is None else f'{g:g}'}/{'∞' if m is None else f'{m:g}'}")
    return ", ".join(parts) + (" …" if len(teams) > shown else "")


def print_report(out: dict[str, Any], results: list[Any], front: list[int],
                 rec: int | None, why: list[str]) -> None:
    from quotatop.review.advise import fmt_wait, worst_p95

    teams, res = out["teams"], out["resource"]
    print(f"{out['trace']} ({out['format']}): {out['jobs']:,} jobs, {len(teams)} teams, "
          f"{out['capacity']:g} {res} on {out['nodes']} nodes; policy {out['policy']}, "
          f"passes every {out['resolution']:g} s")
    print(f"{len(results)} candidates simulated in {out['sweep_s']:.1f} s on "
          + (f"a Dask cluster of {out['workers']} workers" if out["executor"] == "dask"
             else f"{out['workers']} local processes" if out["workers"]
             else "this process"))
    shown = teams[:5]
    print(f"concurrent {res} demand over the period (p50/p75/p90, time-weighted): "
          + "; ".join(f"{t} {'/'.join(f'{v:g}' for v in out['demand'][t].values())}"
                      for t in shown) + (" …" if len(teams) > 5 else ""))
    print(f"frontier (not beaten on mean wait, Jain and utilisation at once) and the "
          f"current quotas; guarantee/max in {res}:")
    head = (f"  {'candidate':<34} {'quota':<26} {'mean wait':>9} {'worst p95 (team)':>18} "
            f"{'Jain':>5} {'util':>6} {'preempt':>7}")
    print(head)
    for i in sorted(set(front) | {0}):
        r = results[i]
        w, t = worst_p95(r)
        mark = "*" if i == rec else ("·" if i in front else " ")
        note = "" if i in front else "  (not on the frontier)"
        if r.unstarted:
            note += f"  ({r.unstarted} jobs never started)"
        print(f"{mark} {r.name[:34]:<34} {_quota(r.candidate, res, teams)[:26]:<26} "
              f"{fmt_wait(r.mean_wait):>9} {f'{fmt_wait(w)} ({t})':>18} {r.jain:>5.2f} "
              f"{r.utilization:>6.1%} {r.preemptions:>7}{note}")
    if rec is None:
        print("no recommendation: every candidate left jobs unstarted")
    elif rec == 0 or not why:
        print("recommendation: keep the current quotas: no candidate on the frontier has "
              "a lower worst-team p95 wait (beyond 5 %), then a fairer spread, then a "
              "lower mean wait")
    else:
        print(f"recommendation: {results[rec].name}: " + ", ".join(why))


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "advise", help="sweep quota splits over a trace's real jobs and recommend one",
        description="Simulates a period's jobs once per candidate quota split (current, "
                    "60-30-10 and its neighbours, demand percentiles; each with max = "
                    "guarantee, 1.5 × guarantee, unlimited) and prints the Pareto "
                    "frontier and a recommendation (docs/review.md)")
    p.add_argument("--trace", metavar="NAME|FILE",
                   help="a trace file, or a bundled trace by name (nasa-ipsc)")
    p.add_argument("--history", metavar="DURATION",
                   help="instead of --trace: the jobs of the last DURATION (30d, 72h) from "
                        "sacct, with --source slurm, on its nodes against its GrpTRES maxes")
    p.add_argument("--source", nargs="+", metavar="KIND",
                   help="with --history: slurm (the default source of the config otherwise)")
    p.add_argument("--until", default=None,
                   help="with --history: the period's end (now, ISO date-time or epoch "
                        "seconds; default now)")
    p.add_argument("--format", choices=["swf", "csv", "philly"],
                   help="the trace's format (default: from the suffix)")
    p.add_argument("--team-by", choices=["group", "user"], default="group",
                   help="for SWF: which id names the team")
    p.add_argument("--gpus", type=number(0, 1e9, lo_open=True),
                   help="for CSV traces: the cluster's GPU count")
    p.add_argument("--nodes", type=number(1, MAX_NODES, integer=True),
                   help="the cluster's node count (default: from the trace)")
    p.add_argument("--gpus-per-node", type=number(0, MAX_PER_NODE, lo_open=True),
                   help="GPUs (SWF: processors) per node")
    p.add_argument("--policy", default="multifactor",
                   help=f"the scheduler: {', '.join(POLICIES)} (default multifactor: "
                        "fair-share and age priority, EASY backfill)")
    p.add_argument("--resolution", type=seconds(), default=1.0,
                   help="seconds scheduling passes snap to (default 1: the trace's times)")
    p.add_argument("--current", metavar="TEAM=G[:MAX],...",
                   help="the quotas in force (default: none, each team unlimited)")
    p.add_argument("--candidates", type=number(1, MAX_CANDIDATES, integer=True), default=60,
                   help="how many candidates, the current quotas first (default 60)")
    p.add_argument("--workers", type=number(0, MAX_WORKERS, integer=True),
                   help="local processes (default: the CPU count; 0: in this process)")
    p.add_argument("--scheduler-address", metavar="tcp://HOST:PORT",
                   help="run the sweep on this Dask distributed scheduler "
                        "(pip install quotatop[distributed])")
    p.add_argument("--connect-timeout", type=seconds(), default=10.0,
                   help="seconds to reach --scheduler-address (default 10)")
    p.add_argument("--json", action="store_true", help="everything as one JSON object")
    add_source_flags(p)
    add_config_flags(p)
    p.set_defaults(func=run)
