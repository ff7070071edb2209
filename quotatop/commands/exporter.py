"""`quotatop exporter --source KIND --port N [--host 127.0.0.1] [--refresh S] [--cluster NAME]`:
serve what the TUI shows per team — quota, usage, borrowing, queue, the core's predicted
waits — plus stranded GPUs and open incidents as Prometheus metrics (docs/exporter.md).

One background thread polls the source once per refresh and computes everything a scrape
needs; a scrape only formats the latest result, so any number of Prometheus servers
scraping at any rate never multiplies the load on the cluster (one ``squeue`` per refresh,
not one per scrape). A failed poll keeps the last good numbers and says so in
``quotatop_source_up 0``: an alert on that is better than series that vanish.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import msgspec

from quotatop.collectors import procgroups
from quotatop.collectors.errors import UserError
from quotatop.collectors.model import PENDING, Snapshot
from quotatop.collectors.untrusted import printable, redact_url
from quotatop.flags import number, seconds
from quotatop.review.report import percentile
from quotatop.source_flags import add_config_flags, add_source_flags, source_options

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client.core import GaugeMetricFamily

    from quotatop.collectors.base import Collector as Source
    from quotatop.incidents import IncidentConfig, IncidentMonitor

GPU = "gpu"  # stranded capacity is counted in GPUs whatever the snapshot's display unit


@dataclass(frozen=True)
class TeamFigures:
    """One team's numbers from one poll. Resource maps hold only what the source knows:
    a team whose source has no guarantee (Slurm) gets no guarantee series at all, rather
    than a zero that would read as "guaranteed nothing"."""

    guarantee: dict[str, float]
    max: dict[str, float]
    used: dict[str, float]
    borrowed: dict[str, float]
    lent: dict[str, float]
    running: int
    pending: int
    queued: dict[str, float]  # demand of the pending jobs (queue depth in resource units)
    wait_p50: float | None  # seconds; None: no pending job has a predicted start
    wait_p90: float | None


@dataclass(frozen=True)
class Frame:
    """Everything a scrape reports, computed once per good poll."""

    taken_at: float
    teams: dict[str, TeamFigures]
    stranded_gpus: float
    incidents: dict[str, int]


@dataclass
class _State:
    frame: Frame | None = None
    up: bool = False
    last_success: float | None = None  # wall clock of the last good poll
    notes: set[str] = field(default_factory=set)  # problems already said on stderr


def wait_quantiles(waits: list[float]) -> tuple[float | None, float | None]:
    """p50 and p90 by linear interpolation between ranks (numpy's default), so that a
    team with two jobs waiting 0 s and 100 s reads p90 = 90 s, not 100 s: the report's
    own percentile (review/report.py), so a p90 means one thing in both."""
    return percentile(waits, 0.5), percentile(waits, 0.9)


def stranded_gpus(snap: Snapshot) -> float:
    """Free GPUs that no job can use now.

    Two reasons, each decided by existing code so the exporter, the TUI and the incident
    detector agree: the node itself strands them (down or drained, or its CPUs or memory
    exhausted: ``tui.derive.node_is_stranding``, the TUI's cluster meter), or GPU jobs are
    pending and the node's hole is smaller than what every one of them needs per node
    (fragmentation: ``incidents.fragmentation.fits``). With no GPU job pending,
    idle GPUs are just idle, not stranded."""
    from quotatop.incidents.fragmentation import fits
    from quotatop.tui.derive import node_is_stranding

    pending = [j for j in snap.jobs if j.state == PENDING and j.request.get(GPU, 0.0) > 0]
    total = 0.0
    for n in snap.nodes:
        free = float(n.capacity.get(GPU, 0.0)) - float(n.allocated.get(GPU, 0.0))
        if free <= 0:
            continue
        node_strands = node_is_stranding(n.state, n.capacity, n.allocated, GPU)
        # A job spread over k nodes fits nodes with this hole iff k such holes fit it.
        too_small = bool(pending) and not any(
            fits(j, [free] * max(1, j.nodes_requested), GPU) for j in pending)
        if node_strands or too_small:
            total += free
    return total


def team_figures(snap: Snapshot, waits: dict[str, list[float]]) -> dict[str, TeamFigures]:
    """Per team, from the same derivation as the TUI's team table (tui/derive.py), so a
    dashboard and the TUI never disagree on who borrows what."""
    from quotatop.tui.derive import job_counts, team_rows, unit_of

    unit = unit_of(snap)
    counts = job_counts(snap.jobs, unit)
    rows = {r.name: r for r in team_rows(snap)}
    out: dict[str, TeamFigures] = {}
    teams = {t.name: t for t in snap.teams}
    # Jobs of a team the source lists no quota for (a Slurm account without limits)
    # still count: their queue is real.
    for name in sorted(set(teams) | set(counts)):
        t, row = teams.get(name), rows.get(name)
        c = counts.get(name, [0, 0, 0.0, 0.0])
        used = {k: float(v) for k, v in t.usage.items()} if t else {}
        used.setdefault(unit, row.used if row else float(c[2]))
        # Borrowing: the source's own figures where it has them (Kueue reports them);
        # else the cohort model of tui/derive.py. No guarantee: no borrowing notion.
        borrowed: dict[str, float] = {}
        lent: dict[str, float] = {}
        if t is not None and t.borrowed:
            borrowed = {k: float(v) for k, v in t.borrowed.items()}
        elif row is not None and row.guarantee is not None:
            borrowed = {unit: row.borrowed}
        if row is not None and row.guarantee is not None:
            lent = {unit: row.lent}
        p50, p90 = wait_quantiles(sorted(waits.get(name, [])))
        out[name] = TeamFigures(
            guarantee={k: float(v) for k, v in (t.guarantee or {}).items()} if t else {},
            max={k: float(v) for k, v in (t.max or {}).items()} if t else {},
            used=used, borrowed=borrowed, lent=lent,
            running=int(c[0]), pending=int(c[1]), queued={unit: float(c[3])},
            wait_p50=p50, wait_p90=p90)
    return out


def predicted_waits(snap: Snapshot) -> dict[str, list[float]]:
    """Seconds from the snapshot to each pending job's predicted start, per team, from
    the core with the site's own scheduler settings (as ``quotatop predict``). Jobs the
    core gives no start (held, rejected, beyond the horizon) are left out."""
    from quotatop.commands.predict import predict_snapshot

    out: dict[str, list[float]] = {}
    for r in predict_snapshot(snap).jobs:
        if r.predicted_wait is not None:
            out.setdefault(r.team, []).append(r.predicted_wait)
    return out


class Exporter:
    """Polls ``source`` and keeps the latest good Frame for ``QuotaMetrics`` to report."""

    def __init__(self, source: Source, *, cluster: str, refresh: float, kind: str = "source",
                 incidents: IncidentConfig | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        from quotatop.incidents import IncidentMonitor

        self.source = source
        self.kind = kind
        self.cluster = cluster
        self.refresh = refresh
        self.clock = clock
        # Fed every good poll: detectors need the sequence (a storm is a rate, starvation
        # a wait that grows), so incidents open and close as they would in the TUI.
        self.monitor: IncidentMonitor = IncidentMonitor(incidents)
        self._lock = threading.Lock()
        self._state = _State()
        # Imported here, not at the top: the CLI loads every command module to build its
        # parser, and the demo does not install prometheus_client (scripts/demo_requirements.py).
        from prometheus_client.registry import CollectorRegistry

        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(QuotaMetrics(self))

    def _say(self, note: str) -> None:
        # A source that stays down would print the same line every refresh: once is enough.
        if note not in self._state.notes:
            self._state.notes.add(note)
            print(f"quotatop exporter: {printable(note)}", file=sys.stderr, flush=True)

    def poll(self) -> Snapshot:
        """One poll. The metrics show the snapshot when it is good; when it is stale they
        keep the last good numbers and report the source down."""
        try:
            snap = self.source.collect()
        except Exception as exc:  # a collector bug must not end the exporter
            snap = Snapshot(stale=True, stale_reason=f"{type(exc).__name__}: {exc}")
        good = not snap.stale
        # A first answer that is stale but holds data (a slow command failed) is still
        # better than nothing to show.
        usable = good or (self._state.frame is None and bool(snap.nodes or snap.teams))
        frame = None
        if usable:
            self.monitor.feed(snap)
            # Closed incidents are not exported (only open ones are): without this the
            # monitor keeps every incident that ever closed, growing without end.
            self.monitor.forget_closed()
            try:
                waits = predicted_waits(snap)
            except UserError as exc:  # the core refused this snapshot: no waits this time
                self._say(str(exc))
                waits = {}
            kinds: dict[str, int] = {}
            for inc in self.monitor.open_incidents():
                kinds[inc.kind] = kinds.get(inc.kind, 0) + 1
            frame = Frame(taken_at=snap.taken_at, teams=team_figures(snap, waits),
                          stranded_gpus=stranded_gpus(snap), incidents=kinds)
        elif self._state.frame is not None:
            self._say(f"source down, keeping the last good data: "
                      f"{snap.stale_reason or 'no reason given'}")
        with self._lock:
            self._state.up = good
            if frame is not None:
                self._state.frame = frame
            if good:
                self._state.last_success = self.clock()
                self._state.notes.clear()  # a later outage is news again
        return snap

    def state(self) -> tuple[Frame | None, bool, float | None]:
        with self._lock:
            return self._state.frame, self._state.up, self._state.last_success

    def poll_forever(self, stop: threading.Event) -> None:
        """The background loop: one poll per refresh, until ``stop``."""
        # The wait counts from the end of a poll: a poll slower than the refresh delays
        # the next one instead of stacking polls on a struggling cluster.
        while not stop.wait(self.refresh):
            self.poll()


class QuotaMetrics:
    """A custom collector: each scrape builds its families from the latest Frame, so
    teams that vanish from the source vanish from /metrics (no stale label sets kept
    alive, as module-level Gauges would). The registry needs only ``collect``: no base
    class, so that importing this module does not import prometheus_client."""

    def __init__(self, exporter: Exporter) -> None:
        self.exporter = exporter

    def collect(self) -> Iterator[GaugeMetricFamily]:
        frame, up, last_success = self.exporter.state()
        c = self.exporter.cluster
        yield _gauge("quotatop_source_up",
                     "1 if the last poll of the source succeeded, 0 if it failed (the other "
                     "metrics then keep the last good data)", ["cluster"], [([c], float(up))])
        if last_success is not None:
            yield _gauge("quotatop_last_success_timestamp_seconds",
                         "Unix time of the last successful poll of the source",
                         ["cluster"], [([c], last_success)])
        if frame is None:
            return
        yield _gauge("quotatop_snapshot_timestamp_seconds",
                     "Time of the snapshot the metrics describe (the source's clock; a "
                     "replay's or demo's is the recorded one)", ["cluster"],
                     [([c], frame.taken_at)])
        teams = sorted(frame.teams.items())

        def per_resource(attr: str) -> list[tuple[list[str], float]]:
            return [([c, name, res], v) for name, f in teams
                    for res, v in sorted(getattr(f, attr).items())]

        tr = ["cluster", "team", "resource"]
        yield _gauge("quotatop_team_quota_guarantee",
                     "Guaranteed (nominal) quota; absent where the source has no guarantee",
                     tr, per_resource("guarantee"))
        yield _gauge("quotatop_team_quota_max",
                     "Quota ceiling (guarantee + borrowing limit; Slurm GrpTRES)",
                     tr, per_resource("max"))
        yield _gauge("quotatop_team_used", "Resources the team's running jobs hold",
                     tr, per_resource("used"))
        yield _gauge("quotatop_team_borrowed",
                     "Usage above the guarantee, taken from the cohort", tr,
                     per_resource("borrowed"))
        yield _gauge("quotatop_team_lent", "Unused guarantee other teams of the cohort use",
                     tr, per_resource("lent"))
        yield _gauge("quotatop_team_queue_depth",
                     "Resources the team's pending jobs request", tr, per_resource("queued"))
        yield _gauge("quotatop_team_jobs_running", "Running jobs", ["cluster", "team"],
                     [([c, name], float(f.running)) for name, f in teams])
        yield _gauge("quotatop_team_jobs_pending", "Pending jobs", ["cluster", "team"],
                     [([c, name], float(f.pending)) for name, f in teams])
        waits: list[tuple[list[str], float]] = []
        for name, f in teams:
            for q, v in (("0.5", f.wait_p50), ("0.9", f.wait_p90)):
                if v is not None:
                    waits.append(([c, name, q], v))
        yield _gauge("quotatop_team_predicted_wait_seconds",
                     "Quantiles of the core's predicted wait (predicted start minus snapshot "
                     "time) over the team's pending jobs", ["cluster", "team", "quantile"],
                     waits)
        yield _gauge("quotatop_stranded_gpus",
                     "Free GPUs no job can use: on down/drained or CPU/memory-exhausted "
                     "nodes, or in holes too small for every pending GPU job",
                     ["cluster"], [([c], frame.stranded_gpus)])
        from quotatop.incidents import KINDS

        # Every kind, zeros included, so `quotatop_incidents_open > 0` alerts resolve.
        yield _gauge("quotatop_incidents_open", "Incidents open now, by kind",
                     ["cluster", "kind"],
                     [([c, k], float(frame.incidents.get(k, 0))) for k in KINDS])


def _gauge(name: str, doc: str, labels: list[str],
           samples: Iterable[tuple[list[str], float]]) -> GaugeMetricFamily:
    from prometheus_client.core import GaugeMetricFamily

    g = GaugeMetricFamily(name, doc, labels=labels)
    for values, v in samples:
        # prometheus_client escapes only \\, \n and " in a label value: a team or
        # resource name from the cluster keeps every other control byte raw in /metrics
        # (and in every dashboard showing it), so each value is escaped (untrusted.py).
        g.add_metric([printable(x) for x in values], v)
    return g


def default_cluster(kind: str, opts: Any) -> str:
    """The ``cluster`` label when --cluster is not given: the source kind and the host it
    talks to, fixed from the flags so the label never changes between polls."""
    host: str | None = None
    if kind == "slurm":
        host = opts.ssh_host
    elif kind == "k8s":
        host = opts.context
    elif kind == "prometheus" and opts.prometheus_url:
        # The host only: a URL's user:password@ must not become a label every scrape
        # stores (and every dashboard shows).
        host = urlparse(redact_url(opts.prometheus_url)).netloc or None
    return f"{kind}/{host}" if host else kind


def build(args: argparse.Namespace) -> Exporter:
    """The exporter for the parsed flags, its source opened (UserError on bad input)."""
    from quotatop.config import load_config
    from quotatop.incidents import IncidentConfig
    from quotatop.source_flags import source_words
    from quotatop.sources import open_source

    cfg = load_config(args.config)
    kind, path = source_words(args.source, cfg.source, getattr(args, "recording", None))
    opts = source_options(cfg, args, kind, path, refresh=args.refresh)
    try:  # the config's [incidents] thresholds, as the other commands read them
        incidents = msgspec.convert(cfg.incidents or {}, IncidentConfig)
    except msgspec.ValidationError as e:
        raise UserError(f"{cfg.path or 'config'}: at incidents: {e}") from None
    source = open_source(kind, opts)
    return Exporter(source, cluster=args.cluster or default_cluster(kind, opts),
                    refresh=opts.refresh, kind=kind, incidents=incidents)


def serve(exporter: Exporter, host: str, port: int) -> WSGIServer:
    """Start /metrics on host:port in a daemon thread; UserError if it cannot bind."""
    from prometheus_client import start_http_server

    try:
        server, _thread = start_http_server(port, addr=host, registry=exporter.registry)
    except OSError as exc:  # in use, not ours to bind, no such address
        why = exc.strerror or str(exc)
        raise UserError(f"cannot listen on {host}:{port}: {why}") from None
    return server


def run(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()
        procgroups.kill_all()  # a Slurm command in flight would hold the exit up

    # Installed first, so a SIGTERM during the first poll is a clean stop too.
    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        exporter = build(args)
        try:
            _serve_until_stopped(exporter, args, stop)
        finally:
            exporter.source.close()
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a foreground exporter is meant to be stopped: exit 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def _serve_until_stopped(exporter: Exporter, args: argparse.Namespace,
                         stop: threading.Event) -> None:
    # The first poll runs before the port opens: an unreachable source is one line
    # and exit 2 now, not a scrape target that is up but empty.
    snap = exporter.poll()
    if stop.is_set():
        return  # stopped during the poll: its commands were killed, not a failure
    if exporter.state()[0] is None:
        reason = (snap.stale_reason or "no data").removeprefix(f"{exporter.kind}: ")
        raise UserError(f"{exporter.kind} unreachable: {reason}")
    server = serve(exporter, args.host, args.port)
    print(f"quotatop exporter: serving http://{args.host}:{server.server_port}/metrics, "
          f"polling every {exporter.refresh:g}s", file=sys.stderr, flush=True)
    poller = threading.Thread(target=exporter.poll_forever, args=(stop,),
                              name="quotatop-exporter-poll", daemon=True)
    poller.start()
    try:
        stop.wait()
    finally:
        stop.set()  # also on Ctrl-C, which arrives here as KeyboardInterrupt
        server.shutdown()
        server.server_close()
        # Bounded: a poll stuck in a source past its timeout must not hold the exit.
        poller.join(timeout=5.0)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("exporter", help="serve per-team quota, queue and predicted waits "
                                        "as Prometheus metrics")
    p.add_argument("--source", nargs="+", metavar="KIND",
                   help="demo [FILE] | slurm | k8s | prometheus | replay FILE")
    p.add_argument("--port", type=number(0, 65535, integer=True), required=True,
                   help="port to serve /metrics on (0: any free port, printed on stderr)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: only this machine; "
                        "0.0.0.0 for a Prometheus elsewhere)")
    p.add_argument("--refresh", type=seconds(), default=None,
                   help="seconds between polls of the source (default: the config's, 2)")
    p.add_argument("--cluster", metavar="NAME",
                   help="the cluster label (default: the source kind and host)")
    add_source_flags(p)
    add_config_flags(p)
    p.set_defaults(func=run)
