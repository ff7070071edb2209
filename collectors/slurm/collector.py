"""SlurmCollector: polls the Slurm client commands and maps them into one Snapshot.

A refresh runs the fast commands (squeue, sinfo; sprio and sshare every
``share_every`` seconds); the slow ones
(sacctmgr, sacct, scontrol partition/config, sprio weights) run every ``slow_every``
seconds and are cached in between. The commands of one round run at once (a thread
and a process each, Runner.run_many) under one deadline, ``timeout`` seconds, so an
unreachable controller costs one timeout per refresh, not one per command;
``progress()`` says which are still running. A failing command never raises out of
``collect``: its last good output stays in use and the snapshot is marked stale
with that command's one-line error."""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Node, Reservation, Snapshot
from quotatop.collectors.slurm import commands as cmd
from quotatop.collectors.slurm import (
    limits,
    mapping,
    runtimes,
    sacctmgr,
    sched_config,
    scontrol,
    sprio,
    squeue_text,
    sshare,
)
from quotatop.collectors.slurm.durations import parse_duration
from quotatop.collectors.slurm.errors import ParseError, SlurmReportedError
from quotatop.collectors.slurm.hostlist import HostBudget
from quotatop.collectors.slurm.json_decode import decode_sacct, decode_sinfo, decode_squeue
from quotatop.collectors.slurm.runner import CommandError, Result, Runner

Parser = Callable[[bytes], Any]
Command = tuple[str, list[str], Parser]  # status name, argv, parser of its stdout


def _text(fn: Callable[[str], Any]) -> Parser:
    return lambda data: fn(data.decode(errors="replace"))


class SlurmCollector:
    name = "slurm"

    def __init__(
        self,
        runner: Runner | None = None,
        *,
        ssh_host: str | None = None,
        refresh: float = 2.0,
        slow_every: float = 60.0,
        share_every: float = 30.0,
        timeout: float = 10.0,
        env: Mapping[str, str] | None = None,
        cluster_tz: dt.tzinfo | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.runner = runner or Runner(ssh_host=ssh_host, timeout=timeout, env=env)
        self._accounting: list[Runner] = []  # accounting queries in flight (interrupt)
        self.refresh = refresh
        self.slow_every = slow_every
        # sprio and sshare every `share_every` s, not every round: Slurm recomputes
        # priorities and fair share every PriorityCalcPeriod (5 min by default), and
        # squeue's own priority keeps the order current between; each is one slurmctld
        # RPC a round (PRIORITY_FACTORS, SHARE_INFO) that would otherwise double the load.
        self.share_every = share_every
        self._share_at: float | None = None
        self.clock = clock
        self.cluster_tz = cluster_tz
        self._last: dict[str, Any] = {}  # command name -> last good parsed output
        self._errors: dict[str, str] = {}  # command name -> error of its latest run
        self._slow_at: float | None = None
        self._fast_at: float | None = None
        self._snapshot: Snapshot | None = None
        self._squeue_text = False  # switched on when this Slurm has no --json
        # squeue --json is the round's dear command: 8,000 jobs are 25 MB and ~1 s of
        # CPU in squeue (Slurm 22.05; the text form is 1.9 MB and 63 ms), and its bytes
        # change every call (last_sched_evaluation). So the text form runs each round
        # as the change detector; the JSON runs again only when the text's bytes moved,
        # or JSON_EVERY seconds after its last run (for the fields the text lacks).
        self._json_at: float | None = None
        self._json_sig: bytes | None = None  # the text form read with that JSON
        self._need_node_details = False
        # An idle cluster answers the same bytes round after round: each answer's hash,
        # so that equal bytes keep the parsed objects they gave (no parse), and a build
        # from the same objects hands back the last snapshot's lists (no mapping of 8k
        # jobs, and the viewer sees the same objects: nothing to escape, hash or paint).
        self._raw_hash: dict[str, bytes] = {}
        self._built: tuple[tuple[object, ...], Snapshot] | None = None
        # Rounds in a row whose jobs and nodes answered the same bytes (see poll_every).
        self._idle_rounds = 0
        self._idle_sig: tuple[bytes | None, ...] | None = None

    # ---- one round -----------------------------------------------------------------
    def _take(self, name: str, outcome: Result | CommandError, parse: Parser) -> Exception | None:
        """Parse one command's answer into ``_last``; on failure keep the last good
        output and record the one-line error."""
        try:
            if isinstance(outcome, CommandError):
                raise outcome
            digest = hashlib.blake2b(outcome.stdout, digest_size=16).digest()
            if name in self._last and self._raw_hash.get(name) == digest:
                self._errors.pop(name, None)
                return None  # the same answer as last time: its parse stands
            try:
                parsed = parse(outcome.stdout)
            except (ParseError, SlurmReportedError):
                raise
            except Exception as exc:  # a parser bug must not take the UI down
                raise ParseError(f"{name} output", outcome.stdout[:40], repr(exc)) from None
        except (CommandError, ParseError, SlurmReportedError) as exc:
            self._errors[name] = str(exc)
            if name in self.runner.status and self.runner.status[name].ok:
                st = self.runner.status[name]
                st.ok, st.error = False, str(exc)  # ran fine, output unreadable
            return exc
        self._errors.pop(name, None)
        self._last[name] = parsed
        self._raw_hash[name] = digest
        return None

    def _run(self, commands: list[Command], deadline: float) -> dict[str, Exception | None]:
        """Run the commands at once (Runner.run_many) under ``deadline`` and parse each."""
        got = self.runner.run_many([(n, a) for n, a, _ in commands], deadline=deadline)
        return {n: self._take(n, got[n], parse) for n, _, parse in commands}

    def _squeue_command(self) -> Command:
        if self._squeue_text:
            return ("squeue", cmd.SQUEUE_TEXT, _text(self._jobs_from_text))
        return ("squeue", cmd.SQUEUE_JSON, decode_squeue)

    def _jobs_from_text(self, text: str) -> tuple[list[Any], None]:
        rows = squeue_text.parse_squeue_text(text)
        budget = HostBudget("squeue")  # one bound on the whole answer's node lists
        return [mapping.job_from_text(r, self.cluster_tz, budget) for r in rows], None

    # The text carries every field the jobs are mapped from (it is the fallback's form),
    # so the JSON is asked again for safety only, not for freshness.
    JSON_EVERY = 300.0

    def _fast_commands(self, shares: bool = True) -> list[Command]:
        squeue = [self._squeue_command()]
        if not self._squeue_text:
            squeue.append(self._signature)
            now = self.clock()
            if (self._json_at is not None and now - self._json_at < self.JSON_EVERY
                    and "squeue" not in self._errors):
                squeue = [self._signature]  # the JSON follows only if the text moved
        out = [*squeue, ("sinfo", cmd.SINFO_JSON, decode_sinfo)]
        if self._need_node_details:
            out.append(self._scontrol_node)
        if shares:
            out.append(("sprio", cmd.SPRIO, _text(sprio.parse_sprio)))
            out.append(("sshare", cmd.SSHARE, _text(sshare.parse_sshare)))
        return out

    _signature: Command = ("squeue text", cmd.SQUEUE_SIGNATURE, bytes)
    _scontrol_node: Command = ("scontrol node", cmd.SCONTROL_NODE, _text(scontrol.parse_nodes))

    def _slow_commands(self) -> list[Command]:
        return [
            ("sacctmgr assoc", cmd.SACCTMGR_ASSOC, _text(sacctmgr.parse_assoc)),
            ("sacctmgr qos", cmd.SACCTMGR_QOS, _text(sacctmgr.parse_qos)),
            ("scontrol partition", cmd.SCONTROL_PARTITION, _text(scontrol.parse_partitions)),
            ("scontrol config", cmd.SCONTROL_CONFIG, _text(scontrol.parse_config)),
            (
                "scontrol reservation",
                cmd.SCONTROL_RESERVATION,
                _text(lambda t: scontrol.parse_reservations(t, self.cluster_tz)),
            ),
            ("sprio weights", cmd.SPRIO_WEIGHTS, _text(sprio.parse_sprio_weights)),
            ("sacct", cmd.SACCT_JSON, decode_sacct),
        ]

    def _round(self, slow: bool, shares: bool = True) -> None:
        """The round's commands all at once, under one deadline (``runner.timeout``
        from now); then, within the same deadline, the follow-ups that depend on an
        answer: squeue as text if it refused --json, and scontrol node when sinfo
        turned out to be 23.02+'s grouped rows."""
        deadline = time.monotonic() + self.runner.timeout
        commands = self._fast_commands(shares) + (self._slow_commands() if slow else [])
        failed = self._run(commands, deadline)
        follow: list[Command] = []
        sig = self._last.get("squeue text") if failed.get("squeue text", 1) is None else None
        # The detector failing only means the JSON runs: the JSON says what is wrong.
        self._errors.pop("squeue text", None)
        if "squeue" in failed:
            if failed["squeue"] is None:
                self._json_at, self._json_sig = self.clock(), sig
        elif sig is None or sig != self._json_sig:
            # The jobs moved (or the detector failed): the JSON now, in this round.
            got = self._run([self._squeue_command()], deadline)
            failed.update(got)
            if got["squeue"] is None:
                self._json_at, self._json_sig = self.clock(), sig
        err = failed.get("squeue")
        err_text = str(err) if isinstance(err, CommandError) else ""
        # Only squeue itself refusing --json switches to text, never bad output.
        no_json = ("unrecognized", "plugin", "invalid option", "unknown option")
        if not self._squeue_text and "json" in err_text.lower() and any(
            w in err_text for w in no_json
        ):
            self._squeue_text = True
            self._errors.pop("squeue", None)
            follow.append(self._squeue_command())
        sinfo = self._last.get("sinfo")
        # 23.02+ sinfo --json groups nodes; exact per-node allocation and GPU indices
        # come from scontrol.
        need = bool(sinfo) and not sinfo[2]
        if need and not self._need_node_details:
            follow.append(self._scontrol_node)
        elif not need:
            self._errors.pop("scontrol node", None)
        self._need_node_details = need
        if follow:
            self._run(follow, deadline)

    def progress(self) -> list[tuple[str, float]]:
        """The commands of the current round still running, as (name, seconds running),
        oldest first; empty between rounds. Safe to call from any thread while
        ``collect()`` blocks another: a UI can poll it (e.g. every 0.5 s from its own
        timer while its collect worker waits) and show
        "connecting to slurm: squeue, sinfo … (3 s)" until the round ends."""
        return self.runner.progress()

    # ---- how often ----------------------------------------------------------------
    # A cluster where nothing moves is asked less often: after IDLE_ROUNDS rounds in a
    # row whose jobs and nodes answered the same bytes, the poll doubles, up to
    # IDLE_MAX. Every round is an RPC to slurmctld and, at 8k jobs, ~80 ms of CPU in
    # squeue on the login node; hundreds of viewers left open on an idle cluster are a
    # load on both for nothing. The first change brings the poll back to `refresh`.
    IDLE_ROUNDS = 3
    IDLE_MAX = 30.0

    def poll_every(self) -> float:
        """Seconds between rounds now: ``refresh``, or longer while nothing moves."""
        doublings = min(self._idle_rounds // self.IDLE_ROUNDS, 8)
        return min(self.refresh * 2 ** doublings, max(self.refresh, self.IDLE_MAX))

    def _note_idleness(self) -> None:
        jobs = "squeue text" if "squeue text" in self._raw_hash else "squeue"
        sig = (self._raw_hash.get(jobs), self._raw_hash.get("sinfo"))
        moved = sig != self._idle_sig or bool(self._errors) or None in sig
        self._idle_rounds = 0 if moved else self._idle_rounds + 1
        self._idle_sig = sig

    # ---- the snapshot --------------------------------------------------------------
    def collect(self) -> Snapshot:
        now = self.clock()
        fresh = self._fast_at is not None and now - self._fast_at < self.poll_every()
        if self._snapshot is not None and fresh:
            return self._snapshot
        self._fast_at = now
        slow = (
            self._slow_at is None or now - self._slow_at >= self.slow_every or self._slow_failed()
        )
        if slow:
            self._slow_at = now
        shares = (slow or self._share_at is None or now - self._share_at >= self.share_every
                  or "sprio" in self._errors or "sshare" in self._errors)
        if shares:
            self._share_at = now
        self._round(slow, shares)
        self._note_idleness()
        try:
            self._snapshot = self._build(now)
        except Exception as exc:  # never a traceback in the TUI: show the last good data
            if self._snapshot is None:
                self._snapshot = Snapshot(source="slurm", taken_at=now)
            self._snapshot = msgspec.structs.replace(
                self._snapshot, stale=True, stale_reason=f"slurm collector: {exc!r}"[:200]
            )
        return self._snapshot

    def _slow_failed(self) -> bool:
        # Retry a failed slow command on the next refresh rather than in 60 s.
        return any(
            n.startswith(("sacctmgr", "sacct", "scontrol p", "scontrol c", "scontrol r", "sprio w"))
            for n in self._errors
        )

    def _nodes(self) -> list[Node]:
        sinfo = self._last.get("sinfo")
        nodes: list[Node] = list(sinfo[0]) if sinfo else []
        details = self._last.get("scontrol node") if self._need_node_details else None
        if details:
            by = {d.name: d for d in details}
            for i, n in enumerate(nodes):
                d = by.get(n.name)
                if d is not None:
                    nodes[i] = msgspec.structs.replace(
                        n,
                        capacity={k: v for k, v in d.capacity.items() if k != "billing"},
                        allocated={k: v for k, v in d.allocated.items() if k != "billing"},
                        gpus_used_indices=d.gpus_used_indices,
                        gpu_type=n.gpu_type or d.gpu_type,
                    )
        return nodes

    def _build(self, now: float) -> Snapshot:
        """The snapshot of what ``_last`` holds; from the same parsed answers and errors
        as the last build, that build's lists, with this round's moment and status."""
        key = (tuple((k, id(v)) for k, v in sorted(self._last.items())),
               tuple(sorted(self._errors.items())), self._need_node_details,
               self._squeue_text)
        if self._built is not None and self._built[0] == key:
            last = self._built[1]
            return msgspec.structs.replace(
                last, taken_at=now,
                status=sorted(self.runner.status.values(), key=lambda s: s.name),
                reservations=self._reservations(now, {n.name for n in last.nodes}))
        snap = self._build_anew(now)
        self._built = (key, snap)
        return snap

    def _build_anew(self, now: float) -> Snapshot:
        warnings: list[str] = []
        nodes = self._nodes()
        squeue = self._last.get("squeue")
        jobs = [j for j in squeue[0]] if squeue else []
        for entry in ("squeue", "sinfo", "sacct"):
            got = self._last.get(entry)
            info = got[1] if got else None
            if info is not None:
                warnings.extend(info.warnings)
                warnings.extend(f"{entry}: {e}" for e in info.errors)
        # A refused record's job is not looked up elsewhere (sacct) as if squeue had
        # not listed it.
        refused = list(squeue[1].refused) if squeue and squeue[1] is not None else []
        jobs, off = mapping.on_known_nodes(jobs, {n.name for n in nodes}, warnings)
        refused += off
        jobs = mapping.attach_priority(jobs, self._last.get("sprio", []))
        history = self._last.get("sacct")
        history_jobs = history[0] if history else []
        qos_rows = self._last.get("sacctmgr qos", [])
        assocs = self._last.get("sacctmgr assoc", [])
        partitions = self._last.get("scontrol partition", [])
        config = self._last.get("scontrol config", {})
        # Runtime estimates from the users' own completed runs (sacct, and jobs squeue
        # still shows as ended).
        jobs = runtimes.with_runtime_estimates(jobs, [*history_jobs, *jobs])
        live_jobs = jobs
        jobs = mapping.merge_history(jobs, history_jobs, refused)
        teams = mapping.teams(assocs, self._last.get("sshare", []), qos_rows, live_jobs)
        scheduler = None
        try:
            scheduler = sched_config.scheduler_config(config)
        except (ParseError, ValueError) as exc:
            warnings.append(f"scontrol show config: scheduler settings unreadable: {exc}")
        exempt = scheduler.preempt_exempt_time if scheduler else None
        if exempt is None and config.get("PreemptExemptTime"):
            try:
                exempt = parse_duration(config["PreemptExemptTime"])
            except ParseError:
                exempt = None
        meta: dict[str, str] = {}
        info = squeue[1] if squeue else None
        if info is not None:
            meta["slurm_release"] = info.release
            meta["json_schema"] = f"v0.0.{info.version}"
        elif self._squeue_text:
            meta["json_schema"] = "none (squeue -O text)"
        weights = self._last.get("sprio weights")
        if weights:
            meta["priority_weights"] = ",".join(f"{k}={v:g}" for k, v in weights.items())
        for key in ("PriorityType", "PreemptType", "PreemptMode", "SchedulerType", "SelectType"):
            if key in config:
                meta[key] = config[key]
        preempted = mapping.preempted_runs(history_jobs)
        if preempted:
            meta["preempted_runs"] = ",".join(f"{k}:{v}" for k, v in sorted(preempted.items()))
        host = self.runner.ssh_host
        # The job and node views matter most: name their failure first.
        order = ["squeue", "sinfo", "scontrol node", "sprio", "sshare"]
        failing = sorted(
            self._errors.items(),
            key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order),
        )
        errors = [
            err if err.startswith(name.split()[0]) else f"{name}: {err}" for name, err in failing
        ]
        stale = bool(errors)
        reason = None
        if errors:
            reason = errors[0] + (f" (+{len(errors) - 1} more failing)" if len(errors) > 1 else "")
        return Snapshot(
            cluster=config.get("ClusterName", ""),
            source=f"slurm via ssh {host}" if host else "slurm",
            taken_at=now,
            nodes=nodes,
            partitions=partitions,
            teams=teams,
            qos=mapping.qos_levels(qos_rows, config.get("PreemptMode", "requeue"), exempt),
            jobs=jobs,
            limits=limits.limits(qos_rows, assocs, partitions),
            scheduler=scheduler,
            shares=mapping.share_tree(self._last.get("sshare", [])),
            reservations=self._reservations(now, {n.name for n in nodes}),
            status=sorted(self.runner.status.values(), key=lambda s: s.name),
            warnings=warnings,
            stale=stale,
            stale_reason=reason,
            meta=meta,
        )

    def _reservations(self, now: float, known: set[str]) -> list[Reservation]:
        """The advanced reservations not yet over; those naming a node not ``known``
        (sinfo's) lose that node (a node can leave the configuration; the prediction
        must still run)."""
        out = []
        for r in self._last.get("scontrol reservation", []):
            if r.end is not None and r.end <= now:
                continue
            if any(n not in known for n in r.nodes):
                r = msgspec.structs.replace(r, nodes=[n for n in r.nodes if n in known])
            out.append(r)
        return out

    def accounting(self, argv: list[str], timeout: float = 60.0) -> bytes:
        """stdout of one read-only accounting query (the runner's allowlist decides:
        e.g. the report's ``sacct`` of a period), for the TUI's Report screen. A runner
        of its own, so the polling round's status and deadline stay as they are;
        ``interrupt`` ends it too. A UserError (one line) otherwise: the caller reaches
        this through the Collector protocol's ``accounting`` capability and knows no runner."""
        r = self.runner
        runner = Runner(ssh_host=r.ssh_host, timeout=max(timeout, r.timeout), env=r.env)
        self._accounting.append(runner)
        try:
            return runner.run(argv[0], argv).stdout
        except CommandError as e:
            raise UserError(f"slurm: {e}") from None
        finally:
            self._accounting.remove(runner)
            runner.close()

    def interrupt(self) -> None:
        """The viewer is quitting: the round in flight ends now, not at its deadline
        (Runner.interrupt); the collect waiting on it returns a stale snapshot. Safe to
        call from any thread; nothing more runs afterwards."""
        self.runner.interrupt()
        for runner in list(self._accounting):
            runner.interrupt()

    def close(self) -> None:
        self.runner.close()
