"""`quotatop report --source slurm|replay FILE|demo [FILE] [--since 30d] [--until T]
[--format md|csv|json|html] [--prices FILE]`: per team, as an account tree with
roll-ups, what a period used — GPU- and CPU-hours, guarantee-hours and how much of the
guarantee sat idle, cost, jobs, waits, preemptions — and the incidents of the period.

This module gathers (one sacct query, a recording's frames, a simulated scenario) and
prints; the numbers come from review/report.py, which does no I/O.
Field by field: docs/review.md."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import html
import io
import json
import math
import sys
import time
from collections.abc import Iterable
from typing import Any

import msgspec

from quotatop.collectors.errors import UserError
from quotatop.collectors.human import human_duration
from quotatop.collectors.model import Node, Snapshot, Team
from quotatop.collectors.untrusted import json_safe, markdown_text, printable
from quotatop.review.frames import frames_report, read_frames, recording_frames, report_since
from quotatop.review.report import (
    JobRecord,
    Prices,
    Report,
    TeamRow,
    build_report,
    parse_prices,
    to_builtins,
)
from quotatop.source_flags import add_config_flags, add_source_flags, source_overrides

FORMATS = ("md", "csv", "json", "html")
NO_INCIDENTS_LIVE = ("incidents need a recording: run `quotatop record --source slurm` "
                     "and report with --source replay FILE")


# ---- flags --------------------------------------------------------------------------

def parse_when(text: str, now: float) -> float:
    """``now``, epoch seconds or an ISO date-time (naive = local time)."""
    s = text.strip()
    if s == "now":
        return now
    try:
        v = float(s)
    except ValueError:
        try:
            d = dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
        except ValueError:
            raise UserError(f"--until {text!r}: not a time (use now, an ISO date-time "
                            "or epoch seconds)") from None
        return d.timestamp()
    if not math.isfinite(v):
        raise UserError(f"--until {text!r}: not a finite time")
    return v


def _duration(text: str) -> float:
    from quotatop.recording.store import parse_duration

    try:
        return parse_duration(text)
    except ValueError as e:
        raise UserError(f"--since: {e}") from None


def load_prices(path: str | None, cfg: Any) -> Prices:
    """--prices FILE (a TOML file with a [prices] table, or those keys at its top)
    wins over the config's [prices]."""
    if path is None:
        return parse_prices(cfg.prices or {}, cfg.path or "config")
    from quotatop.collectors.files import read_toml

    raw = read_toml(path, "prices file")
    table = raw["prices"] if isinstance(raw.get("prices"), dict) and len(raw) == 1 else raw
    return parse_prices(table, path)


def _incident_config(cfg: Any) -> Any:
    from quotatop.incidents import IncidentConfig

    try:
        return msgspec.convert(cfg.incidents or {}, IncidentConfig)
    except msgspec.ValidationError as e:
        raise UserError(f"{cfg.path or 'config'}: at incidents: {e}") from None


# ---- gathering ----------------------------------------------------------------------

class Gathered(msgspec.Struct, kw_only=True):
    records: list[JobRecord]
    teams: list[Team]
    source: str
    cluster: str
    start: float | None  # the first moment the data covers (None: as far as sacct keeps)
    end: float  # the last moment the data covers
    incidents: list[Any] | None
    incidents_note: str | None
    notes: list[str] = []
    nodes: list[Node] = []  # the cluster's nodes now (Slurm: for advise --history)


def _demo_frames(path: str | None) -> Iterable[Snapshot]:
    """The scenario once through (no loop), every frame the demo would show."""
    from quotatop.review.frames import scenario_frames
    from quotatop.simulation.scenario import load_scenario
    from quotatop.sources import DEFAULT_SCENARIO, scenario_path

    # A bundled scenario by name (queue_storm) as well as a file, as the demo takes it.
    return scenario_frames(load_scenario(scenario_path(path) if path else DEFAULT_SCENARIO))


def gather_slurm(args: argparse.Namespace, cfg: Any, since: float, until: float) -> Gathered:
    """The runs of ``[since, until)`` from one sacct query, the teams and nodes from one
    ordinary snapshot of the Slurm collector (report, and advise --history)."""
    from quotatop.collectors.slurm.runner import CommandError, Runner
    from quotatop.review.sacct import parse_sacct, sacct_argv
    from quotatop.sources import open_source

    opts = cfg.source_options("slurm", **source_overrides(args, "slurm"))
    # The teams and their parents come from one ordinary snapshot (sacctmgr's tree).
    collector = open_source("slurm", opts)
    try:
        snap = collector.collect()
    finally:
        collector.close()
    if not snap.teams and snap.stale:
        raise UserError(f"slurm unreachable: {snap.stale_reason}")
    runner = Runner(ssh_host=opts.ssh_host, timeout=max(opts.timeout, 60.0))
    try:
        out = runner.run("sacct period", sacct_argv(since, until))
    except CommandError as e:
        raise UserError(f"slurm: {e}") from None
    records, warnings = parse_sacct(out.stdout.decode("utf-8", "replace"))
    return Gathered(records=records, teams=list(snap.teams), source="slurm",
                    cluster=snap.cluster, start=None, end=until, incidents=None,
                    incidents_note=NO_INCIDENTS_LIVE, notes=warnings, nodes=list(snap.nodes))


def gather(args: argparse.Namespace) -> Report:
    from quotatop.config import load_config
    from quotatop.source_flags import source_words

    cfg = load_config(args.config)
    kind, path = source_words(args.source or ["demo"], cfg.source, getattr(args, "recording", None))
    prices = load_prices(args.prices, cfg)
    span = _duration(args.since)
    # Whole seconds, as Slurm keeps every start and end: a fractional "now" counted a
    # run that ended within that same second (sacct: End = the second it ended in) for
    # up to a second past its end (CI on badbead: nlp-prod 0.0018 GPU-hours over sacct).
    now = float(math.floor(time.time()))
    if kind == "slurm":
        until = parse_when(args.until or "now", now)
        g = gather_slurm(args, cfg, until - span, until)
        return build_report(g.records, g.teams, since=until - span, until=until,
                            prices=prices, source=g.source, cluster=g.cluster,
                            incidents=g.incidents, incidents_note=g.incidents_note,
                            notes=g.notes)
    if kind in ("replay", "live"):
        source_overrides(args, kind)  # refuses flags of other sources
        rec = path or (cfg.sources.live.recording if kind == "live"
                       else cfg.sources.replay.recording)
        if not rec:
            raise UserError(f"--source {kind} needs a file: --source {kind} FILE")
        frames = recording_frames(rec)
    elif kind == "demo":
        source_overrides(args, kind)
        frames = _demo_frames(path or getattr(args, "scenario", None)
                              or cfg.sources.demo.scenario)
    else:
        raise UserError(f"report: --source {kind} keeps no job history; use slurm, "
                        "replay FILE or demo")
    until_arg = parse_when(args.until, now) if args.until else None
    data = read_frames(frames, _incident_config(cfg))
    until = data.end if until_arg is None else until_arg
    notes = []
    if report_since(data.start, until, span) != until - span:
        notes.append(f"the data starts at {iso(data.start)}: the period starts there")
    # The same computation as the TUI's Report screen (review/frames.py).
    return frames_report(data, span=span, until=until, prices=prices,
                         source=kind, notes=notes)


# ---- printing -----------------------------------------------------------------------

def iso(t: float | None) -> str:
    if t is None or not math.isfinite(t):
        return ""
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat(timespec="seconds").replace(
        "+00:00", "Z")


def _n(v: float | None, digits: int = 2) -> str:
    return "" if v is None else f"{v:.{digits}f}"


def _wait(v: float | None) -> str:
    # The markdown and html are read by people: the one human format (the CSV and JSON
    # keep seconds, as numbers, for programs).
    return "" if v is None else human_duration(v)


def _types(by_type: dict[str, float]) -> str:
    return ";".join(f"{k or 'untyped'}={v:.2f}" for k, v in sorted(by_type.items()))


def _name(r: TeamRow) -> str:
    return "  " * r.depth + ("└ " if r.depth else "") + r.team


def sections(rep: Report) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of each table, shared by md and html; every cell one line
    with no control character (collectors/untrusted.py): the names are the cluster's."""
    return [(title, head, [[printable(c) for c in row] for row in rows])
            for title, head, rows in _sections(rep)]


def _sections(rep: Report) -> list[tuple[str, list[str], list[list[str]]]]:
    rows = [*rep.teams, rep.total]
    cur = f" ({rep.currency})" if rep.currency else ""
    out = [
        ("Usage", ["team", "jobs", "GPU-hours", "GPU-hours by type", "CPU-hours",
                   "preemptions"],
         [[_name(r), str(r.jobs), _n(r.gpu_hours), _types(r.gpu_hours_by_type),
           _n(r.cpu_hours), str(r.preemptions)] for r in rows]),
        ("Quota", ["team", "guarantee GPUs", "guarantee GPU-hours", "used within",
                   "idle GPU-hours", "guarantee CPU-hours", "idle CPU-hours"],
         [[_name(r), _n(r.guarantee_gpu, 0), _n(r.guarantee_gpu_hours),
           _n(r.used_gpu_hours_within_guarantee), _n(r.idle_guarantee_gpu_hours),
           _n(r.guarantee_cpu_hours), _n(r.idle_guarantee_cpu_hours)] for r in rows]),
        ("Cost" + cur, ["team", "cost", "unpriced GPU-hours"],
         [[_name(r), _n(r.cost), _n(r.unpriced_gpu_hours)] for r in rows]),
        ("Waits", ["team", "p50", "p90"],
         [[_name(r), _wait(r.wait_p50), _wait(r.wait_p90)] for r in rows]),
        ("Longest waits", ["job", "team", "user", "submitted", "started", "wait"],
         [[w.job_id, w.team, w.user, iso(w.submit), iso(w.start) or "still pending",
           _wait(w.wait)] for w in rep.total.longest_waits]),
    ]
    if rep.incidents is None:
        out.append(("Incidents", ["note"], [[rep.incidents_note or ""]]))
    else:
        out.append(("Incidents", ["kind", "opened", "closed", "severity", "teams", "summary"],
                    [[i.kind, iso(i.opened_at), iso(i.closed_at) or "open", i.severity,
                      ", ".join(i.teams), i.summary] for i in rep.incidents]))
    return out


def _title(rep: Report) -> str:
    where = printable(f"{rep.source} {rep.cluster}".strip())
    span = human_duration(rep.until - rep.since)
    return f"quotatop report: {where}, {iso(rep.since)} to {iso(rep.until)} ({span})"


def to_md(rep: Report) -> str:
    # The cluster's names escaped as Markdown (collectors/untrusted.py): a "|" would
    # forge a cell, "<img onerror=…>" is HTML to a Markdown viewer.
    md = markdown_text
    lines = [f"# {md(_title(rep))}", ""]
    for note in rep.notes:
        lines += [f"> {md(note)}", ""]
    for title, head, rows in sections(rep):
        lines += [f"## {md(title)}", "", "| " + " | ".join(head) + " |",
                  "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)


CSV_FIELDS = ["team", "parent", "depth", "jobs", "gpu_hours", "gpu_hours_by_type", "cpu_hours",
              "guarantee_gpu", "guarantee_gpu_hours", "used_gpu_hours_within_guarantee",
              "idle_guarantee_gpu_hours", "guarantee_cpu", "guarantee_cpu_hours",
              "used_cpu_hours_within_guarantee", "idle_guarantee_cpu_hours", "cost",
              "unpriced_gpu_hours", "preemptions", "wait_p50", "wait_p90"]


def to_csv(rep: Report) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for r in [*rep.teams, rep.total]:
        vals = []
        for f in CSV_FIELDS:
            v = getattr(r, f)
            if f == "gpu_hours_by_type":
                vals.append(printable(_types(v)))
            elif v is None:
                vals.append("")
            elif isinstance(v, float):
                vals.append(f"{v:.4f}".rstrip("0").rstrip("."))
            else:
                vals.append(printable(str(v)))  # a team's name: one line, no controls
        w.writerow(vals)
    return buf.getvalue()


_CSS = ("body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:"
        "1.5em}td,th{border:1px solid #bbb;padding:.25em .6em;text-align:left}"
        "th{background:#eee}td{white-space:pre}")


def to_html(rep: Report) -> str:
    e = html.escape
    parts = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{e(_title(rep))}</title><style>{_CSS}</style></head><body>",
             f"<h1>{e(_title(rep))}</h1>"]
    parts += [f"<p><em>{e(printable(n))}</em></p>" for n in rep.notes]
    for title, head, rows in sections(rep):
        parts.append(f"<h2>{e(title)}</h2><table><tr>"
                     + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows]
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def to_json(rep: Report) -> str:
    data = to_builtins(rep)
    data["since_iso"], data["until_iso"] = iso(rep.since), iso(rep.until)
    return json_safe(json.dumps(data, ensure_ascii=False)) + "\n"


def render(rep: Report, fmt: str) -> str:
    return {"md": to_md, "csv": to_csv, "json": to_json, "html": to_html}[fmt](rep)


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(render(gather(args), args.format))
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("report", help="per-team usage, quota, cost and waits of a period")
    p.add_argument("--source", nargs="+", metavar="KIND",
                   help="slurm | replay FILE | demo [FILE] (default: demo)")
    p.add_argument("--since", default="30d",
                   help="the period's length before --until: 90s, 30m, 72h, 30d (default 30d)")
    p.add_argument("--until", default=None,
                   help="the period's end: now, ISO date-time or epoch seconds (default: now "
                        "for slurm, the last frame for a recording or demo)")
    p.add_argument("--format", choices=FORMATS, default="md",
                   help="md (a table per section), csv (one row per team), json, html")
    p.add_argument("--prices", metavar="FILE",
                   help="a TOML price table (default: [prices] in the config; docs/review.md)")
    add_source_flags(p)
    add_config_flags(p)
    p.set_defaults(func=run)
