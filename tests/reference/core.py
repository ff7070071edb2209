"""The scheduling core's algorithms, written plainly in Python.

Mirrors scheduler_core/src/{cluster,engine,api}.rs rule for rule (priority,
fair-share, limits, quotas with cohort borrowing, placement, backfill,
preemption, gangs, the event loop) without any of its speed-ups, so that the
property tests can check the Rust core against it. Never a fallback.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

INF = math.inf
CPU, MEM, GPU = 0, 1, 2
DIMS = (CPU, MEM, GPU)


def amounts(r: dict[str, float] | None) -> list[float]:
    r = r or {}
    a = [float(r.get("cpu", 0.0)), float(r.get("memory", 0.0)), float(r.get("gpu", 0.0))]
    for k, v in r.items():
        if k.startswith("gpu:"):
            a[GPU] = max(a[GPU], float(v))
    return a


def limits(r: dict[str, float], missing: float) -> list[float]:
    a = [missing] * 3
    for d, k in ((CPU, "cpu"), (MEM, "memory"), (GPU, "gpu")):
        if k in r:
            a[d] = float(r[k])
    typed = [float(v) for k, v in r.items() if k.startswith("gpu:")]
    if typed:
        a[GPU] = max(a[GPU], typed[-1]) if "gpu" in r else typed[-1]
    return a


def quota_vec(r: dict[str, float], qtypes: list[str], missing: float) -> list[float]:
    """A team quota over the quota dimensions: cpu, memory, plain gpu, then each typed key."""
    keys = ["cpu", "memory", "gpu"] + [f"gpu:{t}" for t in qtypes]
    return [float(r[k]) if k in r else missing for k in keys]


def quota_has(r: dict[str, float], qtypes: list[str], d: int) -> bool:
    return (["cpu", "memory", "gpu"] + [f"gpu:{t}" for t in qtypes])[d] in r


def need_in(total: list[float], d: int) -> float:
    return total[min(d, GPU)]


def has(r: dict[str, float], d: int) -> bool:
    key = ("cpu", "memory", "gpu")[d]
    return key in r or (d == GPU and any(k.startswith("gpu:") for k in r))


def id_key(s: str) -> tuple[str, int, int, str]:
    m = re.search(r"\d+$", s)
    prefix = s[: m.start()] if m else s
    return (prefix, 0 if m is None else 1, int(m.group()) if m else 0, s)


def fits(free: list[float], need: list[float]) -> bool:
    return all(free[d] >= need[d] for d in DIMS)


def qdims(job: RJob) -> tuple[int, ...]:
    """The quota dimensions a job's request counts in: plain ones, then its typed GPU key."""
    return DIMS if job.qdim is None else (*DIMS, job.qdim)


@dataclass
class RJob:
    id: str
    team: int
    qos: int
    user: str
    total: list[float]
    per_node: list[float]
    nn: int
    gtype: str | None
    part: str | None
    limit: float | None
    remaining: float
    submit: float
    eligible: float
    rank: int
    gang: str | None
    qdim: int | None = None
    st: str = "pending"
    start: float = 0.0
    first_start: float | None = None
    first_nodes: list[int] = field(default_factory=list)
    planned_end: float = INF
    nodes: list[int] = field(default_factory=list)
    prio: float = 0.0
    snapshot_running: bool = False
    src_prio: float | None = None  # the priority the source states


def class_rank(c: str | None) -> int:
    return {"guaranteed": 3, "burstable": 2, "besteffort": 1}.get((c or "").lower(), 0)


class Reference:
    def __init__(self, snap: dict, arrivals: list[dict], now: float, horizon_end: float,
                 predict: bool, policy: dict) -> None:
        self.p = policy
        self.now = now
        self.t0 = now
        self.nodes = []
        node_ix = {}
        for n in snap.get("nodes", []):
            cap = amounts(n.get("capacity"))
            gtype = n.get("gpu_type") or next(
                (k[4:] for k in (n.get("capacity") or {}) if k.startswith("gpu:")), None)
            usable = n.get("state") not in ("down", "drain", "drained", "unknown", "draining")
            node_ix[n["name"]] = len(self.nodes)
            self.nodes.append({"name": n["name"], "cap": cap, "free": list(cap),
                               "foreign": amounts(n.get("allocated")), "gtype": gtype,
                               "parts": n.get("partitions", []), "usable": usable,
                               "running": [], "last_end": None})
        parts = snap.get("partitions", [])
        maxpf = max([p.get("priority_job_factor", 0) for p in parts], default=0)
        self.part_factor = {p["name"]: (p.get("priority_job_factor", 0) / maxpf if maxpf > 0
                                        else 0.0) for p in parts}
        self.part_nodes = {p["name"]: [node_ix[x] for x in p.get("nodes", [])] for p in parts}
        self.teams = []
        team_ix = {}
        cohorts = [""]
        self.qtypes = sorted({k[4:] for t in snap.get("teams", [])
                              for f in ("guarantee", "max", "lendable")
                              for k in (t.get(f) or {}) if k.startswith("gpu:")})
        nd = 3 + len(self.qtypes)
        for t in snap.get("teams", []):
            c = t.get("cohort") or ""
            if c not in cohorts:
                cohorts.append(c)
            g, m, lend = [INF] * nd, [INF] * nd, [0.0] * nd
            mx = t.get("max")
            if mx is not None:
                m = quota_vec(mx, self.qtypes, INF)
            gr = t.get("guarantee")
            if gr is not None:
                for d in range(nd):
                    if quota_has(gr, self.qtypes, d) or (mx is not None
                                                         and quota_has(mx, self.qtypes, d)):
                        g[d] = quota_vec(gr, self.qtypes, 0.0)[d]
                        lend[d] = g[d]
                if t.get("lendable") is not None:
                    lv = quota_vec(t["lendable"], self.qtypes, INF)
                    for d in range(nd):
                        if math.isfinite(g[d]):
                            lend[d] = min(lv[d], g[d])
            team_ix[t["name"]] = len(self.teams)
            fs = t.get("fairshare") or {}
            self.teams.append({
                "name": t["name"], "parent": t.get("parent"), "cohort": cohorts.index(c),
                "has_g": gr is not None, "g": g, "m": m, "l": lend,
                "preemptible": t.get("preemptible", True),
                "shares": t["shares"] if t.get("shares") is not None else t.get("weight", 1.0),
                "raw_usage": fs.get("raw_usage"),
                "per_job": limits(t["per_job_limit"], INF) if t.get("per_job_limit") else None,
                "per_user": limits(t["per_user_limit"], INF) if t.get("per_user_limit") else None,
                "max_wall": t.get("max_wall"), "max_submit": t.get("max_submit_jobs")})
        for t in self.teams:
            t["parent"] = team_ix[t["parent"]] if t["parent"] is not None else None
        self.qos = []
        qos_ix = {}
        qs = snap.get("qos", [])
        maxq = max(max([q.get("priority", 0) for q in qs], default=0), 0)
        for q in qs:
            qos_ix[q["name"]] = len(self.qos)
            self.qos.append({
                "name": q["name"],
                "prio": max(q.get("priority", 0), 0) / maxq if maxq > 0 else 0.0,
                "preempts": q.get("preempts", []), "exempt": q.get("preempt_mode") == "off",
                "max_wall": q.get("max_wall"),
                "max_tres_user": limits(q["max_tres_per_user"], INF)
                if q.get("max_tres_per_user") else None,
                "max_tres_job": limits(q["max_tres_per_job"], INF)
                if q.get("max_tres_per_job") else None,
                "max_submit_user": q.get("max_submit_jobs_per_user"),
                "max_jobs_user": q.get("max_jobs_per_user")})
        for q in self.qos:
            q["preempts"] = [qos_ix[x] for x in q["preempts"]]
        self.jobs: list[RJob] = []
        self.gangs: dict[str, list[int]] = {}
        inputs = [(j, False) for j in snap.get("jobs", [])] + [(j, True) for j in arrivals]
        for w, arrival in inputs:
            state = w.get("state", "pending")
            running = not arrival and state == "running"
            if not running and not (arrival or state == "pending"):
                continue
            if w.get("team", "") not in team_ix:
                team_ix[w.get("team", "")] = len(self.teams)
                self.teams.append({"name": w.get("team", ""), "parent": None, "cohort": 0,
                                   "has_g": False, "g": [INF] * nd, "m": [INF] * nd,
                                   "l": [0.0] * nd, "preemptible": True, "shares": 1.0,
                                   "raw_usage": None, "per_job": None, "per_user": None,
                                   "max_wall": None, "max_submit": None})
            qn = w.get("qos", "normal")
            if qn not in qos_ix:
                qos_ix[qn] = len(self.qos)
                self.qos.append({"name": qn, "prio": 0.0, "preempts": [], "exempt": False,
                                 "max_wall": None, "max_tres_user": None, "max_tres_job": None,
                                 "max_submit_user": None, "max_jobs_user": None})
            total = amounts(w.get("request"))
            nn = w.get("nodes_requested", 1)
            limit = w.get("time_limit")
            duration = w.get("duration")
            rem = duration if duration is not None else (limit if limit is not None else INF)
            if limit is not None:
                rem = min(rem, limit)
            submit = w.get("submit_time", 0.0)
            el = w.get("eligible_time")
            typed = [k[4:] for k in (w.get("request") or {}) if k.startswith("gpu:")]
            job = RJob(id=w["id"], team=team_ix[w.get("team", "")], qos=qos_ix[qn],
                       user=w.get("user", ""), total=total,
                       per_node=[x / nn for x in total], nn=nn,
                       gtype=typed[-1] if typed else None, part=w.get("partition"),
                       limit=limit, remaining=rem, submit=submit,
                       eligible=max(el if el is not None else submit, submit),
                       rank=class_rank(w.get("qos_class")), gang=w.get("gang"),
                       st="future" if arrival else "pending", snapshot_running=running,
                       src_prio=w.get("priority") if isinstance(w.get("priority"), float)
                       and math.isfinite(w["priority"]) else None)
            if typed and typed[-1] in self.qtypes:
                job.qdim = 3 + self.qtypes.index(typed[-1])
            if running:
                start = w.get("start_time", now)
                end = start + limit if limit is not None else horizon_end
                if predict:
                    end = max(end, now)
                    job.remaining = end - now
                else:
                    job.remaining = (max(start + duration - now, 0.0) if duration is not None
                                     else end - now)
                job.st, job.start, job.first_start, job.planned_end = "running", start, start, end
                job.nodes = [node_ix[x] for x in w.get("nodes", [])]
                if job.nodes:
                    job.per_node = [x / len(job.nodes) for x in total]
            elif predict and not arrival:
                job.remaining = limit if limit is not None else INF
            if job.gang is not None:
                self.gangs.setdefault(job.gang, []).append(len(self.jobs))
            self.jobs.append(job)
        for g, members in list(self.gangs.items()):
            if len(members) == 1:  # a gang of one job is that job (a Kueue Workload)
                self.jobs[members[0]].gang = None
                del self.gangs[g]
        for j, job in enumerate(self.jobs):
            if job.st == "running":
                for n in job.nodes:
                    self.nodes[n]["running"].append(j)
                    for d in DIMS:
                        self.nodes[n]["free"][d] -= job.per_node[d]
        self.total = [0.0] * 3
        for n in self.nodes:
            for d in DIMS:
                listed = n["cap"][d] - n["free"][d]
                n["foreign"][d] = max(n["foreign"][d] - listed, 0.0)
                n["free"][d] -= n["foreign"][d]
            if not n["usable"]:
                n["free"] = [0.0] * 3
            else:
                for d in DIMS:
                    self.total[d] += n["cap"][d]
        self.unit = GPU if self.total[GPU] > 0 else CPU
        nt = len(self.teams)
        self.usage = [[0.0] * (3 + len(self.qtypes)) for _ in range(nt)]
        self.user_qos: dict[tuple[int, str], list] = {}
        self.user_team: dict[tuple[int, str], list[float]] = {}
        self.submitted_uq: dict[tuple[int, str], int] = {}
        self.submitted_team = [0] * nt
        self.events: list[tuple] = []
        self.ends: list[tuple[float, int]] = []
        self.resource_blocked = False
        for j, job in enumerate(self.jobs):
            if job.st == "running":
                self.account(j, 1.0)
                self.submitted_uq[(job.qos, job.user)] = self.submitted_uq.get(
                    (job.qos, job.user), 0) + 1
                self.submitted_team[job.team] += 1
                end = now + job.remaining
                if math.isfinite(end):
                    self.ends.append((end, j))
        self.fs_usage = [t["raw_usage"] if t["raw_usage"] is not None else self.usage[i][self.unit]
                         for i, t in enumerate(self.teams)]

    # ------------------------------------------------------------ bookkeeping
    def account(self, j: int, sign: float) -> None:
        job = self.jobs[j]
        for d in qdims(job):
            self.usage[job.team][d] += sign * need_in(job.total, d)
        e = self.user_qos.setdefault((job.qos, job.user), [[0.0] * 3, 0])
        for d in DIMS:
            e[0][d] += sign * job.total[d]
        e[1] += int(sign)
        u = self.user_team.setdefault((job.team, job.user), [0.0] * 3)
        for d in DIMS:
            u[d] += sign * job.total[d]

    # --------------------------------------------------------------- priority
    def fairshare(self) -> list[float]:
        teams, n = self.teams, len(self.teams)
        if self.p["fairshare"] == "classic":
            ss = sum(t["shares"] for t in teams)
            us = sum(self.fs_usage)
            out = []
            for i, t in enumerate(teams):
                s = t["shares"] / ss if ss > 0 else 0.0
                u = self.fs_usage[i] / us if us > 0 else 0.0
                out.append(0.0 if s <= 0 else 2.0 ** (-u / s))
            return out
        sub = list(self.fs_usage)
        for i in range(n):
            c = teams[i]["parent"]
            while c is not None:
                sub[c] += self.fs_usage[i]
                c = teams[c]["parent"]
        order: list[int] = []

        def visit(parent: int | None) -> None:
            kids = [k for k in range(n) if teams[k]["parent"] == parent]
            ss = sum(teams[k]["shares"] for k in kids)
            us = sum(sub[k] for k in kids)

            def lf(k: int) -> float:
                s = teams[k]["shares"] / ss if ss > 0 else 0.0
                u = sub[k] / us if us > 0 else 0.0
                return 0.0 if s <= 0 else (INF if u <= 0 else s / u)
            for k in sorted(kids, key=lambda k: (-lf(k), teams[k]["name"])):
                order.append(k)
                visit(k)
        visit(None)
        f = [0.0] * n
        for rank, t in enumerate(order):
            f[t] = (n - rank) / n
        return f

    def priorities(self, t: float, running: bool = False) -> None:
        """Pending jobs' priorities at ``t``; ``running``: the snapshot's running jobs'
        instead, the source's stated priority where it gives one (a running job keeps
        the priority it started with; victims are taken lowest first)."""
        fs = self.fairshare()
        w = self.p["weights"]
        for job in self.jobs:
            if running != job.snapshot_running or (not running and
                                                   job.st not in ("pending", "future")):
                continue
            if running and job.src_prio is not None:
                job.prio = job.src_prio
                continue
            age = min(max(t - job.eligible, 0.0), self.p["max_age"]) / self.p["max_age"]
            u = self.unit
            size = min(job.total[u] / self.total[u], 1.0) if self.total[u] > 0 else 0.0
            if self.p["favor_small"]:
                size = 1.0 - size
            part = self.part_factor.get(job.part, 0.0) if job.part else 0.0
            qos = self.qos[job.qos]["prio"]
            f = [w["age"] * age, w["fairshare"] * fs[job.team], w["qos"] * qos,
                 w["job_size"] * size, w["partition"] * part]
            job.prio = f[0] + f[1] + f[2] + f[3] + f[4]

    def order(self) -> list[int]:
        pend = [j for j, job in enumerate(self.jobs) if job.st == "pending"]
        if self.p["strict_team_fifo"]:
            return sorted(pend, key=lambda j: (self.jobs[j].submit, id_key(self.jobs[j].id)))
        return sorted(pend, key=lambda j: (-self.jobs[j].prio, self.jobs[j].submit,
                                           id_key(self.jobs[j].id)))

    # ----------------------------------------------------------------- limits
    def rejected(self, j: int) -> bool:
        job = self.jobs[j]
        team, q = self.teams[job.team], self.qos[job.qos]
        if job.limit is not None and q["max_wall"] is not None and job.limit > q["max_wall"]:
            return True
        if job.limit is not None and team["max_wall"] is not None and job.limit > team["max_wall"]:
            return True
        for lim in (team["per_job"], q["max_tres_job"]):
            if lim and any(job.total[d] > lim[d] for d in DIMS):
                return True
        if self.p["quota"] != "off" and any(need_in(job.total, d) > team["m"][d]
                                            for d in qdims(job)):
            return True
        ok = [n for n in range(len(self.nodes))
              if self.eligible(j, n) and fits(self.nodes[n]["cap"], job.per_node)]
        if len(ok) < job.nn:
            return True
        if q["max_submit_user"] is not None and \
                self.submitted_uq.get((job.qos, job.user), 0) >= q["max_submit_user"]:
            return True
        return team["max_submit"] is not None and \
            self.submitted_team[job.team] >= team["max_submit"]

    def admit(self, j: int, t: float) -> None:
        if self.rejected(j):
            self.jobs[j].st = "rejected"
            self.events.append((t, "reject", self.jobs[j].id))
            return
        job = self.jobs[j]
        self.submitted_uq[(job.qos, job.user)] = self.submitted_uq.get((job.qos, job.user), 0) + 1
        self.submitted_team[job.team] += 1

    def leave(self, j: int) -> None:
        job = self.jobs[j]
        self.submitted_uq[(job.qos, job.user)] -= 1
        self.submitted_team[job.team] -= 1

    def held(self, j: int) -> bool:
        job = self.jobs[j]
        q = self.qos[job.qos]
        used, count = self.user_qos.get((job.qos, job.user), [[0.0] * 3, 0])
        if q["max_tres_user"] and any(used[d] + job.total[d] > q["max_tres_user"][d] for d in DIMS):
            return True
        if q["max_jobs_user"] is not None and count >= q["max_jobs_user"]:
            return True
        lim = self.teams[job.team]["per_user"]
        used = self.user_team.get((job.team, job.user), [0.0] * 3)
        return bool(lim) and any(used[d] + job.total[d] > lim[d] for d in DIMS)

    # ----------------------------------------------------------------- quotas
    def cohort_avail(self, t: int, usage: list[list[float]]) -> list[float]:
        c = self.teams[t]["cohort"]
        nd = len(usage[t])
        lend, borrowed = [0.0] * nd, [0.0] * nd
        for s, team in enumerate(self.teams):
            if s == t or not team["has_g"] or team["cohort"] != c:
                continue
            for d in range(nd):
                if math.isfinite(team["g"][d]):
                    lend[d] += min(max(team["g"][d] - usage[s][d], 0.0), team["l"][d])
                    borrowed[d] += max(usage[s][d] - team["g"][d], 0.0)
        return [lend[d] - borrowed[d] for d in range(nd)]

    def quota_ok(self, t: int, job: RJob, usage: list[list[float]]) -> bool:
        """Quota of job's request for team t: plain dimensions and its typed GPU key."""
        if self.p["quota"] == "off":
            return True
        team = self.teams[t]
        dims = qdims(job)
        if any(usage[t][d] + need_in(job.total, d) > team["m"][d] for d in dims):
            return False
        if self.p["quota"] == "max_only" or not team["has_g"]:
            return True
        avail = self.cohort_avail(t, usage)
        return all(usage[t][d] + need_in(job.total, d) - team["g"][d] <= avail[d]
                   for d in dims if usage[t][d] + need_in(job.total, d) - team["g"][d] > 0)

    def may_preempt_for_quota(self, t: int, job: RJob) -> bool:
        """Kueue's Preempt mode: a resource short of quota asks no more than the nominal."""
        team = self.teams[t]
        avail = self.cohort_avail(t, self.usage)
        for d in qdims(job):
            want = self.usage[t][d] + need_in(job.total, d)
            over = want - team["g"][d]
            fits = want <= team["m"][d] and (self.p["quota"] == "max_only" or over <= 0
                                             or over <= avail[d])
            if not fits and need_in(job.total, d) > team["g"][d]:
                return False
        return True

    def borrowing(self, t: int) -> bool:
        team = self.teams[t]
        return team["has_g"] and any(u > g for u, g in zip(self.usage[t], team["g"], strict=True))

    # -------------------------------------------------------------- placement
    def eligible(self, j: int, n: int) -> bool:
        job, node = self.jobs[j], self.nodes[n]
        if not node["usable"] or (job.gtype is not None and node["gtype"] != job.gtype):
            return False
        return job.part is None or n in self.part_nodes.get(job.part, []) or \
            job.part in node["parts"]

    def free_at(self, n: int, at: float, res: list) -> list[float]:
        f = list(self.nodes[n]["free"])
        for r in self.nodes[n]["running"]:
            if self.jobs[r].planned_end <= at:
                for d in DIMS:
                    f[d] += self.jobs[r].per_node[d]
        for start, end, nodes, need in res:
            if start <= at < end and n in nodes:
                for d in DIMS:
                    f[d] -= need[d]
        return f

    def clear_of(self, n: int, frm: float, to: float, need: list[float], res: list) -> bool:
        return all(fits(self.free_at(n, start, res), need)
                   for start, _, nodes, _ in res if frm <= start < to and n in nodes)

    def score(self, free: list[float], need: list[float]) -> tuple[float, float, float]:
        if self.p["placement"] == "consecutive":
            return (free[CPU], 0.0, 0.0)
        left = (free[GPU] - need[GPU], free[CPU] - need[CPU], free[MEM] - need[MEM])
        return left if self.p["placement"] == "best_fit" else (-left[0], -left[1], -left[2])

    @staticmethod
    def consecutive(cands: list[int], cpus: list[float], nn: int) -> list[int] | None:
        """Slurm's select/cons_tres `_eval_nodes` as its source reads: runs of
        consecutive nodes; pick the first run, or one that suffices while the pick
        does not, or one that suffices with fewer CPUs, or one that does not suffice
        with more CPUs (Slurm's test, word for word); from it, one node: the fewest
        CPUs, first on ties; more: in index order. Until the job has its nodes."""
        runs: list[list[int]] = []
        for n in sorted(cands):
            if runs and runs[-1][-1] + 1 == n:
                runs[-1].append(n)
            else:
                runs.append([n])
        out: list[int] = []
        while len(out) < nn and runs:
            rem = nn - len(out)
            best: tuple[int, bool, float] | None = None
            for k, run in enumerate(runs):
                ok, c = len(run) >= rem, 0.0
                for n in run:
                    c += cpus[n]
                if (best is None or (ok and not best[1]) or (ok and c < best[2])
                        or (not ok and c > best[2])):
                    best = (k, ok, c)
            assert best is not None
            run = runs.pop(best[0])
            if rem == 1:
                out.append(min(run, key=lambda n: (cpus[n], n)))
            else:
                out.extend(run[:rem])
        return sorted(out) if len(out) == nn else None

    def place(self, j: int, res: list, free: list[list[float]], to: float) -> list[int] | None:
        job = self.jobs[j]
        cands = sorted((self.score(free[n], job.per_node), n) for n in range(len(self.nodes))
                       if fits(free[n], job.per_node) and self.eligible(j, n)
                       and self.clear_of(n, self.now, to, job.per_node, res))
        if self.p["placement"] == "consecutive":
            return self.consecutive([n for _, n in cands], [f[CPU] for f in free], job.nn)
        return sorted(n for _, n in cands[: job.nn]) if len(cands) >= job.nn else None

    def earliest(self, j: int, t: float, res: list) -> tuple[float, list[int]] | None:
        job = self.jobs[j]
        dur = job.limit if job.limit is not None else INF
        elig = [n for n in range(len(self.nodes)) if self.eligible(j, n)]
        times = [self.jobs[r].planned_end for n in elig for r in self.nodes[n]["running"]
                 if t < self.jobs[r].planned_end < INF]
        times += [end for _, end, _, _ in res if t < end < INF]
        step = self.p["bf_resolution"]
        grid = sorted({t + math.ceil((e - t) / step) * step for e in times})
        for tau in [g for g in grid if g <= t + self.p["bf_window"]]:
            cands = sorted((self.score(self.free_at(n, tau, res), job.per_node), n) for n in elig
                           if fits(self.free_at(n, tau, res), job.per_node)
                           and self.clear_of(n, tau, tau + dur, job.per_node, res))
            if len(cands) >= job.nn:
                return tau, sorted(n for _, n in cands[: job.nn])
        return None

    def earliest_gang(self, pend: list[int], t: float,
                      res: list) -> tuple[float, list[tuple[int, list[int]]]] | None:
        times = [self.jobs[r].planned_end for m in pend for n in range(len(self.nodes))
                 if self.eligible(m, n) for r in self.nodes[n]["running"]
                 if t < self.jobs[r].planned_end < INF]
        times += [end for _, end, _, _ in res if t < end < INF]
        step = self.p["bf_resolution"]
        grid = sorted({t + math.ceil((e - t) / step) * step for e in times})
        for tau in [g for g in grid if g <= t + self.p["bf_window"]]:
            free = [self.free_at(n, tau, res) for n in range(len(self.nodes))]
            plan = []
            for m in pend:
                job = self.jobs[m]
                dur = job.limit if job.limit is not None else INF
                cands = sorted((self.score(free[n], job.per_node), n)
                               for n in range(len(self.nodes))
                               if self.eligible(m, n) and fits(free[n], job.per_node)
                               and self.clear_of(n, tau, tau + dur, job.per_node, res))
                if len(cands) < job.nn:
                    break
                nodes = sorted(n for _, n in cands[: job.nn])
                for n in nodes:
                    for d in DIMS:
                        free[n][d] -= job.per_node[d]
                plan.append((m, nodes))
            else:
                return tau, plan
        return None

    # ---------------------------------------------------------- start / stop
    def start(self, j: int, nodes: list[int], t: float) -> None:
        job = self.jobs[j]
        for n in nodes:
            for d in DIMS:
                self.nodes[n]["free"][d] -= job.per_node[d]
            self.nodes[n]["running"].append(j)
        self.account(j, 1.0)
        job.st, job.start = "running", t
        if job.first_start is None:
            job.first_start, job.first_nodes = t, list(nodes)
        job.planned_end = t + (job.limit if job.limit is not None else INF)
        job.nodes = list(nodes)
        if math.isfinite(t + job.remaining):
            self.ends.append((t + job.remaining, j))
        self.events.append((t, "start", job.id, tuple(self.nodes[n]["name"] for n in nodes)))

    def release(self, j: int) -> None:
        job = self.jobs[j]
        for n in job.nodes:
            for d in DIMS:
                self.nodes[n]["free"][d] += job.per_node[d]
            self.nodes[n]["running"].remove(j)
        self.account(j, -1.0)

    def finish(self, j: int, t: float) -> None:
        self.release(j)
        job = self.jobs[j]
        job.st, job.planned_end = "done", t
        self.leave(j)
        self.events.append((t, "finish", job.id))

    def preempt(self, v: int, by: int, t: float) -> None:
        mode = self.p["preempt_mode"]
        self.release(v)
        job = self.jobs[v]
        ran = t - job.start
        self.ends = [e for e in self.ends if e[1] != v]
        if mode == "cancel":
            job.st = "cancelled"
            self.leave(v)
        else:
            job.st = "pending"
            if mode == "suspend":
                job.remaining = max(job.remaining - ran, 0.0)
        job.nodes = []
        self.events.append((t, "preempt", job.id, self.jobs[by].id))

    # ------------------------------------------------------------- preemption
    def outranks(self, j: int, v: int) -> bool:
        a, b = self.jobs[j], self.jobs[v]
        return b.qos in self.qos[a.qos]["preempts"] or (a.rank > 0 and b.rank > 0
                                                         and a.rank > b.rank)

    def preempt_and_start(self, j: int, t: float) -> bool:
        """Preempt the victims ``victims`` names and start ``j`` on their nodes, if any."""
        found = self.victims(j, t)
        if found is None:
            return False
        for v in found[0]:
            self.preempt(v, j, t)
        self.start(j, found[1], t)
        return True

    def victims(self, j: int, t: float) -> tuple[list[int], list[int]] | None:
        job = self.jobs[j]
        team = self.teams[job.team]
        reclaim = self.p["quota"] == "enforce" and team["has_g"] and all(
            self.usage[job.team][d] + need_in(job.total, d) <= team["g"][d] for d in qdims(job))
        cands = []
        for v, vj in enumerate(self.jobs):
            if vj.st != "running" or vj.start >= t or not vj.nodes or v == j:
                continue
            vt = self.teams[vj.team]
            if not vt["preemptible"] or self.qos[vj.qos]["exempt"]:
                continue
            # A team with a guarantee (a Kueue ClusterQueue): priority within it only.
            by_qos = self.outranks(j, v) and (not team["has_g"] or vj.team == job.team)
            if (reclaim and vj.team != job.team and vt["cohort"] == team["cohort"]
                    and self.borrowing(vj.team)) or by_qos:
                cands.append(v)
        cands.sort(key=lambda v: id_key(self.jobs[v].id), reverse=True)
        cands.sort(key=lambda v: (not self.borrowing(self.jobs[v].team), self.jobs[v].prio,
                                  -self.jobs[v].start))
        free = [list(n["free"]) for n in self.nodes]
        usage = [list(u) for u in self.usage]

        def give(unit: list[int], sign: float) -> None:
            for v in unit:
                vj = self.jobs[v]
                for n in vj.nodes:
                    for d in DIMS:
                        free[n][d] += sign * vj.per_node[d]
                for d in qdims(vj):
                    usage[vj.team][d] -= sign * need_in(vj.total, d)

        def below_guarantee(unit: list[int]) -> bool:
            for v in unit:
                vt = self.teams[self.jobs[v].team]
                for d in qdims(self.jobs[v]):
                    gone = sum(need_in(self.jobs[m].total, d) for m in unit
                               if self.jobs[m].team == self.jobs[v].team)
                    # Not the preemptor's own team (a swap), and only where it frees some.
                    if self.jobs[v].team != job.team and vt["has_g"] and \
                            math.isfinite(vt["g"][d]) and gone > 0 and \
                            usage[self.jobs[v].team][d] - gone < vt["g"][d]:
                        return True
            return False
        # Victims in units: a job alone, or every running member of its gang (all
        # of them candidates, or the gang is left whole).
        chosen: list[list[int]] = []
        placed = None
        for v in cands:
            if any(v in unit for unit in chosen):
                continue
            gang = self.jobs[v].gang
            unit = [v] if gang is None else [
                m for m in self.gangs[gang] if self.jobs[m].st == "running"]
            if not all(m in cands for m in unit) or below_guarantee(unit):
                continue
            give(unit, 1.0)
            chosen.append(unit)
            if self.quota_ok(job.team, job, usage):
                placed = self.place(j, [], free, t)
                if placed is not None:
                    break
        if placed is None:
            return None
        for i in range(len(chosen) - 1, -1, -1):
            give(chosen[i], -1.0)
            p = self.place(j, [], free, t) if self.quota_ok(job.team, job, usage) else None
            if p is not None:
                chosen.pop(i)
                placed = p
            else:
                give(chosen[i], 1.0)
        return [v for unit in chosen for v in unit], placed

    def may_preempt(self, j: int) -> bool:
        job = self.jobs[j]
        if self.qos[job.qos]["preempts"] or job.rank > 1:
            return True
        team = self.teams[job.team]
        within = team["has_g"] and all(
            self.usage[job.team][d] + need_in(job.total, d) <= team["g"][d] for d in qdims(job))
        return self.p["quota"] == "enforce" and within and any(
            x != job.team and self.teams[x]["cohort"] == team["cohort"] and self.borrowing(x)
            for x in range(len(self.teams)))

    # ------------------------------------------------------------------- pass
    def pass_(self, t: float, static: bool) -> None:
        self.now = t
        if not static:
            self.priorities(t)
        max_res = {"none": 0, "easy": 1, "conservative": self.p["bf_max_job_test"]}[
            self.p["backfill"]]
        res: list = []
        holders: list[int] = []  # one per reservation; a gang's members share one
        stopped = False
        fifo_blocked: set[int] = set()
        tried: set[str] = set()
        self.resource_blocked = False
        for j in self.order():
            job = self.jobs[j]
            if job.st != "pending" or stopped:
                continue
            if self.p["strict_team_fifo"] and job.team in fifo_blocked:
                continue
            if job.gang is not None:
                if job.gang not in tried:
                    tried.add(job.gang)
                    self.try_gang(job.gang, t, res, holders, max_res)
                if job.st == "pending":
                    fifo_blocked.add(job.team)
                continue
            if self.held(j):
                fifo_blocked.add(job.team)
                continue
            if not self.quota_ok(job.team, job, self.usage):
                # A team with a guarantee (a Kueue ClusterQueue) preempts for quota too.
                if self.p["preemption"] and self.teams[job.team]["has_g"] and \
                        self.may_preempt_for_quota(job.team, job) and self.may_preempt(j) \
                        and self.preempt_and_start(j, t):
                    continue
                fifo_blocked.add(job.team)
                continue
            end = t + (job.limit if job.limit is not None else INF)
            nodes = self.place(j, res, [n["free"] for n in self.nodes], end)
            if nodes is not None:
                self.start(j, nodes, t)
                continue
            if self.p["preemption"] and self.may_preempt(j) and self.preempt_and_start(j, t):
                continue
            self.resource_blocked = True
            fifo_blocked.add(job.team)
            if self.p["backfill"] == "none":
                stopped = True
                continue
            if len(holders) < max_res:
                found = self.earliest(j, t, res)
                if found is not None:
                    res.append((found[0], found[0] + (job.limit if job.limit is not None else INF),
                                found[1], job.per_node))
                    holders.append(j)

    def try_gang(self, g: str, t: float, res: list, holders: list[int], max_res: int) -> None:
        members = [m for m in self.gangs[g] if self.jobs[m].st not in ("done", "rejected")]
        if not any(self.jobs[m].st == "running" for m in members) and \
                any(self.jobs[m].st != "pending" for m in members):
            return
        pend = [m for m in members if self.jobs[m].st == "pending"]
        usage = [list(u) for u in self.usage]
        free = [list(n["free"]) for n in self.nodes]
        plan = []
        for m in pend:
            job = self.jobs[m]
            if self.held(m) or not self.quota_ok(job.team, job, usage):
                return
            nodes = self.place(m, res, free, t + (job.limit if job.limit is not None else INF))
            if nodes is None:
                self.resource_blocked = True
                if self.p["backfill"] != "none" and len(holders) < max_res:
                    found = self.earliest_gang(pend, t, res)
                    if found is not None:
                        at, planned = found
                        for pm, pnodes in planned:
                            lim = self.jobs[pm].limit
                            res.append((at, at + (lim if lim is not None else INF), pnodes,
                                        self.jobs[pm].per_node))
                        holders.append(pend[0])
                return
            for n in nodes:
                for d in DIMS:
                    free[n][d] -= job.per_node[d]
            for d in qdims(job):
                usage[job.team][d] += need_in(job.total, d)
            plan.append((m, nodes))
        for m, nodes in plan:
            self.start(m, nodes, t)

    # ------------------------------------------------------------------- loop
    def advance(self, frm: float, to: float) -> None:
        # Recorded usage decays by the half-life and grows by what runs.
        dt = to - frm
        if dt > 0:
            decay = 2.0 ** (-dt / self.p["usage_half_life"])
            for t in range(len(self.teams)):
                use = self.usage[t][self.unit]
                self.fs_usage[t] = self.fs_usage[t] * decay + use * dt

    def run(self, arrivals: list[int], until: float, static: bool) -> None:
        t0, step = self.t0, self.p["bf_resolution"]
        ai, first, last = 0, True, t0
        tick = (lambda a, b: None) if static else self.advance
        while True:
            nxt_a = max(self.jobs[arrivals[ai]].submit, t0) if ai < len(arrivals) else INF
            nxt_e = min(self.ends)[0] if self.ends else INF
            if first:
                tp = t0
            else:
                te = min(nxt_a, nxt_e)
                if te == INF:
                    break
                tp = max(t0 + math.ceil((te - t0) / step) * step, te)
            if tp > until:
                break
            while True:
                e = min(self.ends) if self.ends else None
                et = e[0] if e is not None and e[0] <= tp else None
                at = max(self.jobs[arrivals[ai]].submit, t0) if ai < len(arrivals) else None
                at = at if at is not None and at <= tp else None
                if et is None and at is None:
                    break
                if et is not None and (at is None or et <= at):
                    tick(last, et)
                    last = et
                    self.ends.remove(e)
                    self.finish(e[1], et)
                else:
                    tick(last, at)
                    last = at
                    j = arrivals[ai]
                    self.jobs[j].st = "pending"
                    self.events.append((at, "submit", self.jobs[j].id))
                    self.admit(j, at)
                    ai += 1
            tick(last, tp)
            last = tp
            self.pass_(tp, static)
            first = False


def submit_order(r: Reference) -> list[int]:
    return sorted((j for j, job in enumerate(r.jobs) if job.st == "pending"),
                  key=lambda j: (r.jobs[j].submit, id_key(r.jobs[j].id)))


def predict(snap: dict, policy: dict, horizon: float) -> dict[str, tuple[float | None, list[str]]]:
    """job id -> (start within the horizon or None, node names)."""
    now = snap.get("taken_at", 0.0)
    r = Reference(snap, [], now, now + horizon, True, policy)
    r.priorities(now)
    r.priorities(now, running=True)
    for j in submit_order(r):
        r.admit(j, now)
    pending = [j for j, job in enumerate(r.jobs) if job.st in ("pending", "rejected")]
    r.run([], now + horizon, static=True)
    out = {}
    for j in pending:
        job = r.jobs[j]
        s = job.first_start if job.first_start is not None and \
            job.first_start <= now + horizon else None
        out[job.id] = (s, [r.nodes[n]["name"] for n in job.first_nodes] if s is not None else [])
    return out


def simulate(cluster: dict, jobs: list[dict], policy: dict, start: float,
             until: float = INF) -> list[tuple]:
    """The event stream (time, kind, job id, ...) of a simulation."""
    r = Reference(cluster, jobs, start, until, False, policy)
    for j in submit_order(r):
        r.admit(j, start)
    arrivals = sorted((j for j, job in enumerate(r.jobs) if job.st == "future"),
                      key=lambda j: (r.jobs[j].submit, id_key(r.jobs[j].id)))
    r.run(arrivals, until, static=False)
    return r.events
