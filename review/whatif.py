"""What if a quota, a QoS, a weight or a node were different: ``--set`` changes parsed,
applied to a snapshot (a new one; the original is never touched), the predictions
before and after compared per team, and the commands an admin would run to make the
change, as text. Nothing here talks to a cluster. Syntax and examples: docs/review.md.

One ``--set`` is one subject and its changes, space-separated ``key=value`` words:

    team=vision-exp max.gpu=24 guarantee.gpu=8 shares=200
    qos=high priority=500 grp.gpu=16 max_per_user.gpu=8
    node=gpu03 state=drain reason=maintenance
    add_nodes=4 like=gpu01
    policy weight.fairshare=5000 weight.age=1000
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import Struct

from quotatop.collectors.errors import UserError
from quotatop.collectors.model import (
    PENDING,
    Node,
    QoS,
    QuotaObject,
    SchedulerConfig,
    Snapshot,
    Team,
)

WEIGHTS = ("age", "fairshare", "qos", "job_size", "partition", "assoc")
MOVERS = 10  # jobs listed whose predicted start moves most
WHATIF_VERSION = 1


class Change(Struct, kw_only=True):
    """One --set: ``kind`` is team | qos | node | add_nodes | policy, ``name`` its
    object, ``values`` the settings (``max.gpu`` -> 24.0, ``state`` -> "drain")."""

    kind: str
    name: str
    values: dict[str, Any]
    text: str  # as given, for messages


_TEAM_KEYS = ("guarantee.", "max.")
_QOS_KEYS = ("grp.", "max_per_user.", "max_per_job.")


def _number(text: str, key: str, where: str, *, integer: bool = False) -> float:
    try:
        v = float(text)
    except ValueError:
        raise UserError(f"--set {where!r}: {key}={text!r} is not a number") from None
    if not math.isfinite(v) or v < 0 or (integer and v != int(v)):
        kind = "a whole number ≥ 0" if integer else "a finite number ≥ 0"
        raise UserError(f"--set {where!r}: {key}={text!r} must be {kind}")
    return v


def parse_set(text: str) -> Change:
    """One --set; a UserError naming the problem (one line, exit 2) otherwise."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise UserError(f"--set {text!r}: {e}") from None
    if not words:
        raise UserError("--set '': empty; e.g. --set 'team=NAME max.gpu=24'")
    head, rest = words[0], words[1:]
    if head == "policy":
        kind, name = "policy", ""
    else:
        kind, sep, name = head.partition("=")
        if not sep or not name:
            raise UserError(f"--set {text!r}: starts with {head!r}; expected team=NAME, "
                            "qos=NAME, node=NAME, add_nodes=N or policy")
    values: dict[str, Any] = {}
    for w in rest:
        key, sep, val = w.partition("=")
        if not sep or not key or val == "":
            raise UserError(f"--set {text!r}: {w!r} is not key=value")
        if key in values:
            raise UserError(f"--set {text!r}: {key} given twice")
        values[key] = val
    if kind == "team":
        for k, v in list(values.items()):
            if (k.startswith(_TEAM_KEYS) and k.split(".", 1)[1]) or k in ("shares", "weight"):
                values[k] = _number(v, k, text)
            else:
                raise UserError(f"--set {text!r}: unknown team setting {k!r} (guarantee.RES, "
                                "max.RES, shares, weight)")
    elif kind == "qos":
        for k, v in list(values.items()):
            if k.startswith(_QOS_KEYS) and k.split(".", 1)[1]:
                values[k] = _number(v, k, text)
            elif k == "priority":
                values[k] = _number(v, k, text, integer=True)
            else:
                raise UserError(f"--set {text!r}: unknown qos setting {k!r} (priority, "
                                "grp.RES, max_per_user.RES, max_per_job.RES)")
    elif kind == "node":
        unknown = set(values) - {"state", "reason"}
        if unknown or values.get("state") not in ("drain", "resume"):
            raise UserError(f"--set {text!r}: a node takes state=drain|resume "
                            "[reason=WORDS]")
    elif kind == "add_nodes":
        n = _number(name, "add_nodes", text, integer=True)
        if n < 1 or n > 10_000:
            raise UserError(f"--set {text!r}: add_nodes must be from 1 to 10000")
        if set(values) != {"like"}:
            raise UserError(f"--set {text!r}: add_nodes=N takes like=NODE (a node to copy)")
    elif kind == "policy":
        for k, v in list(values.items()):
            if not (k.startswith("weight.") and k[7:] in WEIGHTS):
                raise UserError(f"--set {text!r}: unknown policy setting {k!r} "
                                f"(weight.{'|'.join(WEIGHTS)})")
            values[k] = _number(v, k, text)
    else:
        raise UserError(f"--set {text!r}: unknown subject {kind!r}; expected team=NAME, "
                        "qos=NAME, node=NAME, add_nodes=N or policy")
    if not values:
        raise UserError(f"--set {text!r}: nothing to change")
    return Change(kind=kind, name=name, values=values, text=text)


# ---- applying -------------------------------------------------------------------------

def _res(key: str) -> str:
    return key.split(".", 1)[1]


def _patch(tres: dict[str, float] | None, key: str, value: float) -> dict[str, float]:
    out = dict(tres or {})
    out[key] = value
    return out


def apply_changes(snap: Snapshot, changes: Sequence[Change]) -> Snapshot:
    """A new snapshot with every change made, in order. A name the snapshot does not
    hold is a UserError (a typo must not silently compare a snapshot with itself)."""
    r = msgspec.structs.replace
    teams = list(snap.teams)
    qos = list(snap.qos)
    nodes = list(snap.nodes)
    limits = list(snap.limits)
    shares = list(snap.shares)
    partitions = list(snap.partitions)
    sched = snap.scheduler
    for c in changes:
        if c.kind == "team":
            idx = next((i for i, t in enumerate(teams) if t.name == c.name), None)
            if idx is None:
                raise UserError(f"--set {c.text!r}: no team {c.name!r} "
                                f"(known: {', '.join(t.name for t in teams)})")
            t: Team = teams[idx]
            for k, v in c.values.items():
                if k.startswith("max."):
                    t = r(t, max=_patch(t.max, _res(k), v))
                    # Slurm's account GrpTRES is also a scoped limit the core checks.
                    limits = [r(lim, tres=_patch(lim.tres, _res(k), v))
                              if lim.scope == "account" and lim.owner == c.name
                              and lim.per == "group" and _res(k) in lim.tres else lim
                              for lim in limits]
                elif k.startswith("guarantee."):
                    t = r(t, guarantee=_patch(t.guarantee, _res(k), v))
                else:  # shares / weight: the fair-share weight of the account
                    t = r(t, shares=v, weight=v)
                    shares = [r(s, raw_shares=v) if s.account == c.name and s.user is None
                              else s for s in shares]
            # Guarantee and max as the commands set them (one never above the other).
            for key, (g, m) in quota_targets(c, teams[idx]).items():
                if g is not None:
                    t = r(t, guarantee=_patch(t.guarantee, key, g))
                if m is not None:
                    t = r(t, max=_patch(t.max, key, m))
            teams[idx] = t
        elif c.kind == "qos":
            idx = next((i for i, q in enumerate(qos) if q.name == c.name), None)
            if idx is None:
                raise UserError(f"--set {c.text!r}: no QoS {c.name!r} "
                                f"(known: {', '.join(q.name for q in qos)})")
            q: QoS = qos[idx]
            for k, v in c.values.items():
                if k == "priority":
                    q = r(q, priority=int(v))
                    continue
                field = {"grp.": "grp_tres", "max_per_user.": "max_tres_per_user",
                         "max_per_job.": "max_tres_per_job"}[k.split(".", 1)[0] + "."]
                per = {"grp_tres": "group", "max_tres_per_user": "user",
                       "max_tres_per_job": "job"}[field]
                q = r(q, **{field: _patch(getattr(q, field), _res(k), v)})
                limits = [r(lim, tres=_patch(lim.tres, _res(k), v))
                          if lim.scope == "qos" and lim.owner == c.name and lim.per == per
                          else lim for lim in limits]
            qos[idx] = q
        elif c.kind == "node":
            idx = next((i for i, n in enumerate(nodes) if n.name == c.name), None)
            if idx is None:
                raise UserError(f"--set {c.text!r}: no node {c.name!r}")
            n: Node = nodes[idx]
            if c.values["state"] == "drain":
                nodes[idx] = r(n, state="drain", reason=c.values.get("reason", "whatif"))
            else:
                nodes[idx] = r(n, state="mixed" if n.allocated else "idle", reason=None)
        elif c.kind == "add_nodes":
            like = c.values["like"]
            model = next((n for n in nodes if n.name == like), None)
            if model is None:
                raise UserError(f"--set {c.text!r}: no node {like!r} to copy")
            names = {n.name for n in nodes}
            added = []
            i = 1
            while len(added) < int(float(c.name)):
                name = f"{like}-new{i}"
                i += 1
                if name in names:
                    continue
                added.append(r(model, name=name, state="idle", allocated={},
                               gpus_used_indices=[], reason=None))
            nodes += added
            partitions = [r(p, nodes=p.nodes + [a.name for a in added])
                          if like in p.nodes else p for p in partitions]
        elif c.kind == "policy":
            base = sched or SchedulerConfig()
            w = dict(base.weights)
            for k, v in c.values.items():
                w[k[7:]] = v
            sched = r(base, weights=w)
    return r(snap, teams=teams, qos=qos, nodes=nodes, limits=limits, shares=shares,
             partitions=partitions, scheduler=sched)


# ---- comparing ------------------------------------------------------------------------

class TeamDelta(Struct, kw_only=True):
    team: str
    pending: int
    predicted_before: int  # pending jobs with a predicted start within the horizon
    predicted_after: int
    mean_wait_before: float | None  # seconds, over the jobs with a prediction
    mean_wait_after: float | None
    p90_wait_before: float | None
    p90_wait_after: float | None


class Mover(Struct, kw_only=True):
    job_id: str
    team: str
    start_before: float | None  # None: no start within the horizon
    start_after: float | None
    moved: float | None  # seconds, after − before (negative: earlier); None: one is unknown


def _p90(xs: list[float]) -> float | None:
    from quotatop.review.report import percentile

    return percentile(xs, 0.9)


def compare(snap: Snapshot, before: dict[str, float | None],
            after: dict[str, float | None], horizon: float) -> tuple[list[TeamDelta], list[Mover]]:
    """``before``/``after``: job id -> predicted start (None: beyond the horizon).
    Waits count from the snapshot's time."""
    pending = [j for j in snap.jobs if j.state == PENDING]
    by_team: dict[str, list[str]] = {}
    for j in pending:
        by_team.setdefault(j.team, []).append(j.id)
    rows = []
    for team in sorted(by_team):
        ids = by_team[team]
        wb = [max(0.0, s - snap.taken_at) for i in ids if (s := before.get(i)) is not None]
        wa = [max(0.0, s - snap.taken_at) for i in ids if (s := after.get(i)) is not None]
        rows.append(TeamDelta(
            team=team, pending=len(ids), predicted_before=len(wb), predicted_after=len(wa),
            mean_wait_before=sum(wb) / len(wb) if wb else None,
            mean_wait_after=sum(wa) / len(wa) if wa else None,
            p90_wait_before=_p90(wb), p90_wait_after=_p90(wa)))
    movers = []
    for j in pending:
        b, a = before.get(j.id), after.get(j.id)
        if b is None and a is None:
            continue
        # A job that gains or loses a start within the horizon moved by at least the
        # rest of the horizon: rank it so, report moved None.
        size = abs(a - b) if a is not None and b is not None else horizon
        movers.append((size, Mover(job_id=j.id, team=j.team, start_before=b, start_after=a,
                                   moved=None if a is None or b is None else a - b)))
    movers.sort(key=lambda m: (-m[0], m[1].job_id))
    return rows, [m for size, m in movers[:MOVERS] if size > 0.5]


# ---- what an admin would run ----------------------------------------------------------

def _tres(values: dict[str, float]) -> str:
    from quotatop.collectors.slurm.tres import format_tres

    return format_tres({k: (int(v) if v == int(v) else v) for k, v in values.items()})


def _num(v: float) -> str:
    return str(int(v)) if v == int(v) else f"{v:g}"


def slurm_commands(changes: Sequence[Change]) -> list[str]:
    """The sacctmgr/scontrol lines that would make each change on Slurm (text only)."""
    out: list[str] = []
    for c in changes:
        v = c.values
        if c.kind == "team":
            mx = {_res(k): x for k, x in v.items() if k.startswith("max.")}
            if mx:
                out.append(f"sacctmgr modify account {c.name} set GrpTRES={_tres(mx)}")
            if "shares" in v or "weight" in v:
                out.append(f"sacctmgr modify account {c.name} set "
                           f"Fairshare={_num(v.get('shares', v.get('weight', 1)))}")
            if any(k.startswith("guarantee.") for k in v):
                out.append(f"# {c.name}: Slurm has no guarantee (GrpTRES is a max only); "
                           "a guarantee needs a reservation or a partition of its own")
        elif c.kind == "qos":
            sets = []
            if "priority" in v:
                sets.append(f"Priority={_num(v['priority'])}")
            for prefix, word in (("grp.", "GrpTRES"), ("max_per_user.", "MaxTRESPerUser"),
                                 ("max_per_job.", "MaxTRESPerJob")):
                part = {_res(k): x for k, x in v.items() if k.startswith(prefix)}
                if part:
                    sets.append(f"{word}={_tres(part)}")
            out.append(f"sacctmgr modify qos {c.name} set {' '.join(sets)}")
        elif c.kind == "node":
            if v["state"] == "drain":
                reason = shlex.quote(v.get("reason", "whatif"))
                out.append(f"scontrol update nodename={c.name} state=drain reason={reason}")
            else:
                out.append(f"scontrol update nodename={c.name} state=resume")
        elif c.kind == "add_nodes":
            out.append(f"# add {c.name} nodes like {v['like']}: copy its NodeName line in "
                       "slurm.conf (and gres.conf), add them to its partitions, then "
                       "`scontrol reconfigure`")
        elif c.kind == "policy":
            names = {"age": "PriorityWeightAge", "fairshare": "PriorityWeightFairshare",
                     "qos": "PriorityWeightQOS", "job_size": "PriorityWeightJobSize",
                     "partition": "PriorityWeightPartition", "assoc": "PriorityWeightAssoc"}
            words = " ".join(f"{names[k[7:]]}={_num(x)}" for k, x in v.items())
            out.append(f"# slurm.conf: {words}, then `scontrol reconfigure`")
    return out


_K8S_RES = {"gpu": "nvidia.com/gpu", "cpu": "cpu", "memory": "memory"}
DEFAULT_FLAVOR = "default-flavor"  # when the snapshot names none (a demo, a recording)


def quota_targets(c: Change, t: Team | None) -> dict[str, tuple[float | None, float | None]]:
    """Per resource a team ``--set`` names: (guarantee, max) after the change, the one
    target every command is written from. The guarantee cannot exceed the max: a max set
    below the guarantee lowers the guarantee to it, a guarantee set above the max raises
    the max to it (``apply_changes`` predicts the same)."""
    out: dict[str, tuple[float | None, float | None]] = {}
    for k in c.values:
        if not k.startswith(("max.", "guarantee.")):
            continue
        key = _res(k)
        g = c.values.get(f"guarantee.{key}", (t.guarantee or {}).get(key) if t else None)
        m = c.values.get(f"max.{key}", (t.max or {}).get(key) if t else None)
        if g is not None and m is not None and m < g:
            if f"max.{key}" in c.values:
                g = m
            else:
                m = g
        out[key] = (g, m)
    return out


def _merge_patch(obj: dict[str, Any]) -> str:
    import json

    return shlex.quote(json.dumps(obj, separators=(",", ":")))


def _resourcequota_commands(c: Change, t: Team, rqs: list[QuotaObject]) -> list[str]:
    """A namespace team limited by ResourceQuotas: its max is their spec.hard, under the
    key each quota uses (collectors/k8s/quota.py maps requests.X and X alike)."""
    out: list[str] = []
    spaces = sorted({o.namespace for o in rqs})
    for key, (_g, m) in quota_targets(c, t).items():
        if f"guarantee.{key}" in c.values:
            out.append(f"# {c.name}: a ResourceQuota is a hard max with no guarantee; a "
                       "guarantee needs a Kueue ClusterQueue (nominalQuota)")
        if f"max.{key}" not in c.values or m is None:
            continue
        holders = [o for o in rqs if key in o.keys]
        if not holders:
            out.append(f"# {c.name}: no ResourceQuota of it limits {key}: add "
                       f"requests.{_K8S_RES.get(key, key)} to one's spec.hard")
        elif len(spaces) > 1:
            out.append(f"# {c.name}: its {key} max is the sum of the quotas of its "
                       f"namespaces ({', '.join(spaces)}): split {_num(m)} between them")
        else:
            # Several quotas in one namespace all apply (the tightest wins): set each.
            for o in holders:
                patch = {"spec": {"hard": {o.keys[key]: _num(m)}}}
                out.append(f"kubectl patch resourcequota {shlex.quote(o.name)} -n "
                           f"{shlex.quote(o.namespace)} --type merge -p {_merge_patch(patch)}")
    return out


def _clusterqueue_commands(c: Change, t: Team | None, cq: QuotaObject | None) -> list[str]:
    """A ClusterQueue's resources: nominalQuota is the guarantee and the max usable is
    nominalQuota + borrowingLimit (Kueue's terms), so borrowingLimit = max − guarantee."""
    out: list[str] = []
    flavors: dict[str, list[dict[str, str]]] = {}
    lendable = (t.lendable or {}) if t else {}
    for key, (g, m) in quota_targets(c, t).items():
        old_g = (t.guarantee or {}).get(key) if t else None
        covering = cq.flavors.get(key, []) if cq else []
        if len(covering) > 1:
            out.append(f"# {c.name}: {key} is covered by the flavors {', '.join(covering)}, "
                       f"each with a quota of its own: set each (max.{key}:TYPE names one) "
                       f"so that they add up to guarantee {_num(g) if g is not None else '-'}"
                       f", max {_num(m) if m is not None else '-'}")
            continue
        entry: dict[str, str] = {"name": (cq.keys.get(key) if cq else None)
                                 or _K8S_RES.get(key, key)}
        if g is None and m is not None:
            out.append(f"# {c.name}: no guarantee known for {key}: nominalQuota = the max "
                       f"{_num(m)}, borrowingLimit 0")
            g = m
        if g is not None:
            entry["nominalQuota"] = _num(g)
            if old_g is not None and g < old_g and f"guarantee.{key}" not in c.values:
                out.append(f"# {c.name}: the max {_num(g)} {key} is below the guarantee "
                           f"{_num(old_g)}: the patch lowers nominalQuota to {_num(g)} "
                           "(a guarantee cannot exceed the max)")
        if m is not None and g is not None and cq is not None and t is not None \
                and t.cohort is None:
            # Kueue allows a borrowingLimit only in a cohort: alone, the max is nominal.
            if m > g:
                out.append(f"# {c.name}: in no cohort, a ClusterQueue borrows nothing: its "
                           f"max is nominalQuota {_num(g)}")
        elif m is not None and g is not None:
            entry["borrowingLimit"] = _num(m - g)
            if f"max.{key}" not in c.values and t is not None and \
                    (t.max or {}).get(key) is not None and m > (t.max or {})[key]:
                out.append(f"# {c.name}: the guarantee {_num(g)} {key} is above the max "
                           f"{_num((t.max or {})[key])}: the max becomes {_num(m)}")
        if g is not None and lendable.get(key, 0.0) > g:
            entry["lendingLimit"] = _num(g)  # Kueue: lendingLimit ≤ nominalQuota
        flavor = covering[0] if covering else DEFAULT_FLAVOR
        flavors.setdefault(flavor, []).append(entry)
    if flavors:
        patch = {"spec": {"resourceGroups": [{
            "coveredResources": [e["name"] for es in flavors.values() for e in es],
            "flavors": [{"name": f, "resources": es} for f, es in flavors.items()]}]}}
        named = ", ".join(flavors)
        out.append("# a merge patch replaces the whole resourceGroups list: keep every "
                   f"other resource and check the flavor name ({named} here)")
        out.append(f"kubectl patch clusterqueue {shlex.quote(cq.name if cq else c.name)} "
                   f"--type merge -p {_merge_patch(patch)}")
    return out


def k8s_commands(changes: Sequence[Change], snap: Snapshot) -> list[str]:
    """Kueue ClusterQueue and ResourceQuota patches (text only), from the same targets
    as the Slurm commands (``quota_targets``)."""
    out: list[str] = []
    teams = {t.name: t for t in snap.teams}
    for c in changes:
        v = c.values
        if c.kind == "team":
            t = teams.get(c.name)
            objs = t.quota_objects if t else []
            rqs = [o for o in objs if o.kind == "resourcequota"]
            cq = next((o for o in objs if o.kind == "clusterqueue"), None)
            if t is not None and rqs and cq is None:
                out += _resourcequota_commands(c, t, rqs)
            else:
                out += _clusterqueue_commands(c, t, cq)
            if "shares" in v or "weight" in v:
                w = _num(v.get("weight", v.get("shares", 1)))
                patch_w = '{"spec":{"fairSharing":{"weight":"' + w + '"}}}'
                out.append(f"kubectl patch clusterqueue {shlex.quote(c.name)} --type merge -p "
                           f"{shlex.quote(patch_w)}")
        elif c.kind == "node":
            verb = "cordon" if v["state"] == "drain" else "uncordon"
            out.append(f"kubectl {verb} {c.name}")
        elif c.kind == "add_nodes":
            out.append(f"# add {c.name} nodes like {v['like']}: scale its node pool")
        else:
            out.append(f"# {c.text}: no Kueue equivalent; a Slurm-side setting")
    return out


def admin_commands(changes: Sequence[Change], snap: Snapshot) -> list[str]:
    """Slurm commands for a Slurm snapshot, Kueue ones for Kubernetes, both otherwise."""
    src = (snap.source or "").lower()
    if src.startswith("slurm"):
        return slurm_commands(changes)
    if src.startswith(("k8s", "kube")):
        return k8s_commands(changes, snap)
    return ["# Slurm:", *slurm_commands(changes), "# Kubernetes/Kueue:",
            *k8s_commands(changes, snap)]


# ---- the whole answer -----------------------------------------------------------------

class WhatifOutput(Struct, kw_only=True):
    version: int
    source: str
    cluster: str
    taken_at: float
    changes: list[str]
    teams: list[TeamDelta]
    movers: list[Mover]
    commands: list[str]  # text for an admin; quotatop never runs them


def predicted_starts(snap: Snapshot, runtimes: str = "estimate",
                     horizon: float = 7 * 86400.0) -> dict[str, float | None]:
    """job id -> the core's predicted start (None beyond ``horizon``), with the policy
    of the snapshot's own scheduler. An inconsistent snapshot is a UserError."""
    from quotatop import scheduler_core
    from quotatop.scheduler_core.site import site_policy

    policy = site_policy(snap, runtimes=runtimes)  # type: ignore[arg-type]
    try:
        predictions = scheduler_core.predict(snap, policy, horizon=horizon)
    except ValueError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UserError(f"whatif: the snapshot of {snap.source or 'the source'} "
                        f"is inconsistent: {first}") from None
    return {p.job_id: p.start for p in predictions}


def whatif(snap: Snapshot, changes: Sequence[Change], runtimes: str = "estimate",
           horizon: float = 7 * 86400.0) -> WhatifOutput:
    """The snapshot predicted by the core as it is and with ``changes`` made, compared
    per team; the CLI prints it and the TUI's what-if dialog paints it (in a worker)."""
    after_snap = apply_changes(snap, changes)
    before = predicted_starts(snap, runtimes, horizon)
    after = predicted_starts(after_snap, runtimes, horizon)
    teams, movers = compare(snap, before, after, horizon)
    return WhatifOutput(version=WHATIF_VERSION, source=snap.source, cluster=snap.cluster,
                        taken_at=snap.taken_at, changes=[c.text for c in changes],
                        teams=teams, movers=movers, commands=admin_commands(changes, snap))
