"""TUI at scale, headless (App.run_test): a 100k-job snapshot.

Prints time to first frame, time to apply a new 100k-job snapshot (UI thread;
the worker's derive is shown apart), time to scroll a page, peak RSS — against
the targets (≤1 s, ≤50 ms, ≤16 ms, ≤300 MB) — and a reference measured in the
same run: Textual's stock DataTable filled with the same rows at a size it can
finish (REF_JOBS), with the per-job cost ratio.

    .venv/bin/python bench/tui.py [--jobs 100000] [--ref-jobs 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import sys
import time
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.app import App, ComposeResult
from textual.widgets import DataTable

from collectors.model import PENDING, RUNNING, Job, Node, PriorityFactors, QoS, Snapshot, Team
from tui.app import QuotatopApp
from tui.derive import derive
from tui.predictions import MAX_PENDING_FOR_CORE, Predictions, core_available, predict
from tui.widgets.job_table import COLUMNS, JobTable, TableContext

TEAMS = ("prod", "exp", "elastic", "vision", "nlp", "speech")
T0 = 1_750_000_000.0


def big_snapshot(n_jobs: int, seed: int) -> Snapshot:
    rng = random.Random(seed)
    n_nodes = max(1, n_jobs // 80)
    nodes = [Node(name=f"gpu{i:05d}", partitions=["gpu"], state="mixed",
                  capacity={"gpu": 8.0, "cpu": 64.0}, allocated={"gpu": 0.0, "cpu": 0.0})
             for i in range(n_nodes)]
    jobs = []
    for i in range(n_jobs):
        gpus = float(rng.choice((1, 1, 2, 4, 8)))
        running = rng.random() < 0.3
        node = nodes[rng.randrange(n_nodes)]
        if running and node.allocated["gpu"] + gpus <= 8:
            node.allocated["gpu"] += gpus
        else:
            running = False
        jobs.append(Job(
            id=str(1_000_000 + i), name=f"job{i}", user=f"u{rng.randrange(300)}",
            team=rng.choice(TEAMS), qos=rng.choice(("high", "normal", "low")), partition="gpu",
            state=RUNNING if running else PENDING, request={"gpu": gpus},
            submit_time=T0 - rng.uniform(0, 86400), start_time=T0 if running else None,
            nodes=[node.name] if running else [], priority=None if running else
            float(rng.randrange(10**5)), reason=None if running else rng.choice(
                ("Priority", "Resources", "QOSMaxGRESPerUser")),
            factors=None if running else PriorityFactors(age=rng.random() * 1000,
                                                          fairshare=rng.random() * 5000)))
    cap = n_nodes * 8.0
    teams = [Team(name=t, guarantee={"gpu": cap / len(TEAMS)}, max={"gpu": cap / 2})
             for t in TEAMS]
    return Snapshot(cluster="bench", source="synthetic", taken_at=T0, nodes=nodes, teams=teams,
                    qos=[QoS(name="high", priority=1000, preempts=["low"]),
                         QoS(name="normal", priority=100), QoS(name="low")], jobs=jobs,
                    meta={"unit": "gpu"})


class Fixed:
    name = "bench"

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap

    def collect(self) -> Snapshot:
        return self.snap

    def close(self) -> None:
        pass


async def measure_quotatop(n_jobs: int) -> dict[str, float]:
    first = big_snapshot(n_jobs, 1)
    second = big_snapshot(n_jobs, 2)
    app = QuotatopApp(Fixed(first), refresh=3600, clock=lambda: T0)
    t0 = time.perf_counter()
    async with app.run_test(size=(120, 40)) as pilot:
        while app.data is None:
            await asyncio.sleep(0.001)
        await pilot.pause()
        first_frame = time.perf_counter() - t0
        await pilot.press("5")
        await pilot.pause()
        table = app.query_one(JobTable)
        td = time.perf_counter()
        derived = derive(second)
        derive_s = time.perf_counter() - td
        preds = predict(second)  # above the bound this is the skip note, not the core
        core_n = min(len(second.jobs), MAX_PENDING_FOR_CORE)
        subset = msgspec.structs.replace(second, jobs=second.jobs[:core_n])
        tp = time.perf_counter()
        predict(subset)
        predict_s = time.perf_counter() - tp
        ta = time.perf_counter()
        app.apply(second, derived, preds)
        for y in range(table.size.height):
            table.render_line(y)
        apply_s = time.perf_counter() - ta
        scrolls = []
        for _ in range(20):
            ts = time.perf_counter()
            table.action_page(1)
            for y in range(table.size.height):
                table.render_line(y)
            scrolls.append(time.perf_counter() - ts)
        tk = time.perf_counter()
        for _ in range(10):
            await pilot.press("pagedown")
        key_page = (time.perf_counter() - tk) / 10
        ts = time.perf_counter()
        table.sort_by("start")
        sort_s = time.perf_counter() - ts
        tf = time.perf_counter()
        table.set_filter("team:exp state:pend")
        filter_s = time.perf_counter() - tf
        assert table.rows, "filter found nothing"
    return {"core_n": float(core_n), "first_frame": first_frame, "apply": apply_s,
            "derive": derive_s,
            "predict": predict_s, "core": float(core_available()),
            "scroll": sorted(scrolls)[len(scrolls) // 2], "key_page": key_page,
            "sort": sort_s, "filter": filter_s}


class StockTable(App[None]):
    def compose(self) -> ComposeResult:
        yield DataTable()


async def measure_stock(n_jobs: int) -> dict[str, float]:
    snap = big_snapshot(n_jobs, 1)
    ctx = TableContext(now=T0, unit="gpu", predictions=Predictions())
    rows = [[c.text(j, ctx) for c in COLUMNS] for j in snap.jobs]
    app = StockTable()
    async with app.run_test(size=(120, 40)) as pilot:
        table = app.query_one(DataTable)
        table.add_columns(*(c.title for c in COLUMNS))
        t0 = time.perf_counter()
        table.add_rows(rows)
        await pilot.pause()
        fill = time.perf_counter() - t0
        ts = time.perf_counter()
        await pilot.press("pagedown")
        await pilot.pause()
        scroll = time.perf_counter() - ts
    return {"apply": fill, "scroll": scroll}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--ref-jobs", type=int, default=10_000)
    args = ap.parse_args()
    ours = asyncio.run(measure_quotatop(args.jobs))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    ref = asyncio.run(measure_stock(args.ref_jobs))
    ms = 1000.0
    print(f"quotatop TUI, {args.jobs:,} jobs (headless, 120×40)")
    print(f"  first frame          {ours['first_frame'] * ms:8.1f} ms   target ≤ 1000 ms")
    print(f"  apply new snapshot   {ours['apply'] * ms:8.1f} ms   target ≤ 50 ms "
          f"(UI thread; worker derive {ours['derive'] * ms:.1f} ms)")
    if ours["core"]:
        print(f"  core predict         {ours['predict'] * ms:8.1f} ms   on {ours['core_n']:,.0f} "
              "jobs, its own worker after the frame (skipped above "
              f"{MAX_PENDING_FOR_CORE:,} pending)")
    print(f"  scroll a page        {ours['scroll'] * ms:8.2f} ms   target ≤ 16 ms "
          f"(via key, incl. Textual dispatch: {ours['key_page'] * ms:.1f} ms)")
    print(f"  sort by start        {ours['sort'] * ms:8.1f} ms")
    print(f"  filter               {ours['filter'] * ms:8.1f} ms")
    print(f"  peak RSS             {rss_mb:8.0f} MB   target ≤ 300 MB (after the quotatop run)")
    print(f"reference: stock DataTable, {args.ref_jobs:,} jobs, same rows")
    print(f"  fill + first paint   {ref['apply'] * ms:8.1f} ms")
    print(f"  scroll a page (key)  {ref['scroll'] * ms:8.1f} ms")
    per_ref = ref["apply"] / args.ref_jobs
    per_ours = ours["apply"] / args.jobs
    print(f"ratio: apply per job, DataTable / windowed table = {per_ref / per_ours:,.0f}× "
          f"(DataTable at {args.jobs:,} jobs ≈ {per_ref * args.jobs:.1f} s by that rate)")


if __name__ == "__main__":
    main()
