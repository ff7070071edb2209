"""`quotatop simulate`: run a scenario's timeline through the core."""

from __future__ import annotations

import json
from collections.abc import Iterator

import msgspec

from quotatop import scheduler_core
from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Node as ModelNode
from quotatop.collectors.model import QoS, Snapshot, Team
from quotatop.simulation.scenario import Amount, Scenario, ScenarioV2


def _num(x: float) -> int | float:
    # Whole amounts print as integers, as the seed's output does.
    return int(x) if float(x).is_integer() else x


def fifo_steps(s: Scenario) -> tuple[list[dict[str, object]], int]:
    if isinstance(s, ScenarioV2):
        raise UserError(f"scenario {s.scenario.name}: policy multifactor has no fifo steps; "
                        "run it with `quotatop simulate FILE`")
    try:
        steps, granted = scheduler_core.fifo_simulate(s.caps, s.event_tuples)
    except ValueError as e:
        raise UserError(f"scenario {s.scenario.name}: {e}") from None
    out: list[dict[str, object]] = []
    for i, ((result, teams), ev) in enumerate(zip(steps, s.events, strict=True), start=1):
        out.append(
            {
                "step": i,
                "op": ev.op,
                "team": ev.team,
                "amount": _num(ev.amount),
                "result": result,
                "teams": {t: {"used": _num(u), "queued": q} for t, u, q in teams},
            }
        )
    return out, granted


def jsonl_lines(s: Scenario | ScenarioV2) -> Iterator[str]:
    if isinstance(s, ScenarioV2):
        yield from v2_lines(s)
        return
    steps, granted = fifo_steps(s)
    for step in steps:
        yield json.dumps(step, ensure_ascii=False)
    yield json.dumps({"granted": granted})


# ------------------------------------------------------------------ scenario v2


def _res(a: Amount | None, unit: str) -> dict[str, float] | None:
    if a is None:
        return None
    if isinstance(a, dict):
        return {k: float(v) for k, v in a.items()}
    return {unit: float(a)}


def v2_inputs(s: ScenarioV2) -> tuple[Snapshot, list[scheduler_core.SimJob], scheduler_core.Policy]:
    """The cluster, the arriving jobs and the policy a v2 scenario declares."""
    unit = s.scenario.unit
    nodes: list[ModelNode] = []
    for n in s.nodes:
        names = [n.name] if n.count == 1 else [f"{n.name}{i:02d}" for i in range(1, n.count + 1)]
        cap = {"cpu": n.cpu, "memory": n.memory, "gpu": n.gpu}
        if n.gpu_type:
            cap[f"gpu:{n.gpu_type}"] = n.gpu
        cap = {k: v for k, v in cap.items() if v}
        nodes += [ModelNode(name=x, capacity=cap, gpu_type=n.gpu_type, partitions=n.partitions)
                  for x in names]
    teams = [Team(name=t.name, guarantee=_res(t.guarantee, unit), max=_res(t.max, unit),
                  lendable=_res(t.lendable, unit), weight=t.weight, shares=t.shares,
                  cohort=t.cohort, parent=t.parent, preemptible=t.preemptible,
                  per_job_limit=_res(t.per_job_limit, unit),
                  per_user_limit=_res(t.per_user_limit, unit), max_wall=t.max_wall,
                  max_submit_jobs=t.max_submit_jobs) for t in s.teams]
    qos = [QoS(name=q.name, priority=q.priority, preempts=q.preempts, preempt_mode=q.preempt_mode,
               max_wall=q.max_wall, max_tres_per_user=_res(q.max_tres_per_user, unit),
               max_tres_per_job=_res(q.max_tres_per_job, unit),
               max_submit_jobs_per_user=q.max_submit_jobs_per_user,
               max_jobs_per_user=q.max_jobs_per_user) for q in s.qos]
    jobs: list[scheduler_core.SimJob] = []
    for i, j in enumerate(s.jobs):
        base = j.id or str(i + 1)
        request = {"gpu": j.gpu, "cpu": j.cpu, "memory": j.memory}
        if j.gpu_type:
            request[f"gpu:{j.gpu_type}"] = j.gpu
        request = {k: v for k, v in request.items() if v}
        for k in range(j.count):
            jobs.append(scheduler_core.SimJob(
                id=base if j.count == 1 else f"{base}-{k + 1}", submit_time=j.submit + k * j.every,
                duration=j.duration, request=request, team=j.team, user=j.user, qos=j.qos,
                qos_class=j.qos_class,
                time_limit=j.time_limit if j.time_limit is not None else j.duration,
                nodes_requested=j.nodes, gang=j.gang))
    policy = msgspec.convert(s.settings, scheduler_core.Policy)
    return Snapshot(cluster=s.scenario.cluster, nodes=nodes, teams=teams, qos=qos), jobs, policy


def run_v2(s: ScenarioV2) -> scheduler_core.SimResult:
    snap, jobs, policy = v2_inputs(s)
    try:
        return scheduler_core.simulate(jobs, policy, cluster=snap, start=0.0, until=s.until)
    except ValueError as e:
        raise UserError(f"scenario {s.scenario.name}: {e}") from None


def v2_lines(s: ScenarioV2) -> Iterator[str]:
    r = run_v2(s)
    for e in r.events:
        line: dict[str, object] = {"t": _num(e.time), "event": e.kind, "job": e.job_id}
        if e.nodes:
            line["nodes"] = e.nodes
        if e.by is not None:
            line["by"] = e.by
        if e.detail is not None:
            line["detail"] = e.detail
        yield json.dumps(line, ensure_ascii=False)
    m = msgspec.structs.asdict(r.metrics)
    yield json.dumps({"metrics": {k: (_num(v) if isinstance(v, float) else v)
                                  for k, v in m.items()}}, ensure_ascii=False)
