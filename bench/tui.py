"""TUI at scale, headless (App.run_test): a 100k-job snapshot.

Prints time to first frame, time to apply a new 100k-job snapshot (UI thread;
the worker's derive is shown apart), time to scroll a page, peak RSS — against
the targets (≤1 s, ≤50 ms, ≤16 ms, ≤300 MB) — and a reference measured in the
same run: Textual's stock DataTable filled with the same rows at a size it can
finish (REF_JOBS), with the per-job cost ratio.

The core's predictions run in their own worker the whole time (no size cutoff):
the first frame does not wait for them, scrolling is timed while they compute,
and their arrival time is printed (give up after --core-timeout seconds). RSS
is split into what the snapshots themselves hold and what the TUI adds.

    .venv/bin/python bench/tui.py [--jobs 100000] [--ref-jobs 10000] [--core-timeout 240]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import resource
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual.app import App, ComposeResult
from textual.widgets import DataTable, Static

from quotatop.collectors.model import (
    PENDING,
    RUNNING,
    Job,
    Node,
    PriorityFactors,
    QoS,
    Snapshot,
    Team,
)
from quotatop.tui.app import QuotatopApp
from quotatop.tui.derive import derive
from quotatop.tui.predictions import Predictions, core_available
from quotatop.tui.widgets.job_table import COLUMNS, JobTable, TableContext

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


def rss_now() -> float:
    """Resident set size now, MB (10^6 bytes, as every figure here; Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 1e6


def rss_peak() -> float:
    """The process's peak RSS so far, MB (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


class PeakSampler:
    """The peak RSS of one phase (ru_maxrss only knows the whole run's), sampled
    every few ms from a thread; /proc reads release the GIL."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_now())

    def __enter__(self) -> PeakSampler:
        self.peak = rss_now()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_now())


def paint(table: JobTable) -> None:
    """Every line on screen, as the compositor asks for them."""
    for y in range(table.size.height):
        table.render_line(y)


def page_down(table: JobTable) -> float:
    """Seconds to move a page down and paint it."""
    ts = time.perf_counter()
    table.action_page(1)
    paint(table)
    return time.perf_counter() - ts


async def measure_quotatop(n_jobs: int, core_timeout: float) -> dict[str, float]:
    out: dict[str, float] = {"rss_base": rss_now()}
    gc.collect()
    out["rss_snapshot"] = -rss_now()
    app = QuotatopApp(Fixed(big_snapshot(n_jobs, 1)), refresh=3600, clock=lambda: T0)
    gc.collect()
    out["rss_snapshot"] += rss_now()
    core_phase = PeakSampler()
    t0 = time.perf_counter()
    async with app.run_test(size=(120, 40)) as pilot:
        while app.data is None:
            await asyncio.sleep(0.001)
        # Painted: every message queued so far handled, then the screen composed.
        await pilot.pause(0)
        out["first_frame"] = time.perf_counter() - t0
        header = app.query_one("#header", Static).render()
        assert "waiting for the first snapshot" not in str(header), "no data on screen"
        out["preds_at_first_frame"] = float(app.data.predictions.from_core)
        core_phase.__enter__()
        # The old measure: until the process goes idle (at most 1 s more; never
        # while the core computes in its worker).
        await pilot.pause()
        out["settled"] = time.perf_counter() - t0
        out["rss_first_frame"] = rss_now()
        await pilot.press("5")
        await pilot.pause()
        table = app.query_one(JobTable)
        # Scrolling while the core computes in its worker: the GIL is released.
        busy = []
        for _ in range(10):
            busy.append(page_down(table))
            await asyncio.sleep(0.05)
        out["scroll_while_core"] = sorted(busy)[len(busy) // 2]
        out["core_busy_during_scroll"] = float(app.session.predicting)
        tp = time.perf_counter()
        while core_available() and time.perf_counter() - tp < core_timeout:
            if app.data is not None and (app.data.predictions.from_core
                                         or app.data.predictions.error):
                break
            await asyncio.sleep(0.05)
        preds = app.data.predictions if app.data is not None else Predictions()
        core_phase.__exit__()
        out["rss_core_peak"] = core_phase.peak
        out["core"] = float(core_available())
        out["core_arrived"] = time.perf_counter() - t0 if preds.from_core else -1.0
        out["core_n"] = float(len(preds.by_id))
        await pilot.pause(0)
        gc.collect()
        out["rss_with_predictions"] = rss_now()
        # The collector makes the next snapshot while the last is on screen (it
        # keeps no old one itself): two are alive until the app lets go of the old.
        apply_phase = PeakSampler().__enter__()
        second = big_snapshot(n_jobs, 2)
        # As the session's collect does: the source and the session hold the new one.
        app.session.collector = Fixed(second)
        app.session.snapshot = second
        td = time.perf_counter()
        derived = derive(second)
        out["derive"] = time.perf_counter() - td
        ta = time.perf_counter()
        app.apply(second, derived, preds.updating())
        paint(table)
        out["apply"] = time.perf_counter() - ta
        del second, derived, preds
        await pilot.pause(0)  # the app frees the replaced snapshot after the paint
        gc.collect()
        apply_phase.__exit__()
        out["rss_apply_peak"] = apply_phase.peak
        out["rss_after_apply"] = rss_now()
        scrolls = [page_down(table) for _ in range(20)]
        out["scroll"] = sorted(scrolls)[len(scrolls) // 2]
        tk = time.perf_counter()
        for _ in range(10):
            await pilot.press("pagedown")
        out["key_page"] = (time.perf_counter() - tk) / 10
        ts = time.perf_counter()
        table.sort_by("start")
        out["sort"] = time.perf_counter() - ts
        tf = time.perf_counter()
        table.set_filter("team:exp state:pend")
        out["filter"] = time.perf_counter() - tf
        assert table.rows, "filter found nothing"
        app.session.drop_waiting_prediction()  # the bench stops here; no second answer
    return out


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
    ap.add_argument("--core-timeout", type=float, default=240.0,
                    help="seconds to wait for the core's predictions (0: do not wait)")
    ap.add_argument("--no-core", action="store_true",
                    help="run without the core's predictions (to see what they cost)")
    args = ap.parse_args()
    if args.no_core:
        from quotatop import scheduler_core

        del scheduler_core.predict
    heavy = [m for m in ("kubernetes", "prometheus_client", "pyinstrument") if m in sys.modules]
    ours = asyncio.run(measure_quotatop(args.jobs, args.core_timeout))
    peak = rss_peak()
    ref = asyncio.run(measure_stock(args.ref_jobs))
    ms = 1000.0
    print(f"quotatop TUI, {args.jobs:,} jobs (headless, 120×40)")
    preds_then = "with" if ours["preds_at_first_frame"] else "before"
    print(f"  first frame          {ours['first_frame'] * ms:8.1f} ms   target ≤ 1000 ms "
          f"(painted, data on screen, {preds_then} the core's predictions)")
    print(f"  settled              {ours['settled'] * ms:8.1f} ms   (then until the process "
          "idles, ≤ 1 s more: the old 'first frame')")
    print(f"  apply new snapshot   {ours['apply'] * ms:8.1f} ms   target ≤ 50 ms "
          f"(UI thread; worker derive {ours['derive'] * ms:.1f} ms)")
    print(f"  scroll a page        {ours['scroll'] * ms:8.2f} ms   target ≤ 16 ms "
          f"(via key, incl. Textual dispatch: {ours['key_page'] * ms:.1f} ms)")
    if ours["core"]:
        busy = "core computing" if ours["core_busy_during_scroll"] else "core already done"
        print(f"  scroll, core busy    {ours['scroll_while_core'] * ms:8.2f} ms   ({busy} "
              "in its worker)")
        if ours["core_arrived"] >= 0:
            print(f"  core predictions     {ours['core_arrived'] * ms:8.0f} ms   after start, "
                  f"{ours['core_n']:,.0f} pending jobs, no cutoff")
        else:
            print(f"  core predictions     not in {args.core_timeout:g} s (still computing)")
    else:
        print("  core predictions     none: this scheduler_core build has no predict")
    print(f"  sort by start        {ours['sort'] * ms:8.1f} ms")
    print(f"  filter               {ours['filter'] * ms:8.1f} ms")
    print(f"  peak RSS             {peak:8.0f} MB   target ≤ 300 MB (after the quotatop run; "
          "MB = 10^6 bytes throughout)")
    print(f"    imports + app      {ours['rss_base']:8.0f} MB   heavy modules loaded: "
          f"{', '.join(heavy) or 'none'}")
    print(f"    one snapshot       {ours['rss_snapshot']:8.0f} MB   the collector's data itself")
    print(f"    at first frame     {ours['rss_first_frame']:8.0f} MB")
    print(f"    peak, core running {ours['rss_core_peak']:8.0f} MB   snapshot + its msgpack + the "
          "core's own working memory")
    print(f"    with predictions   {ours['rss_with_predictions']:8.0f} MB")
    print(f"    peak, next apply   {ours['rss_apply_peak']:8.0f} MB   old + new snapshot while "
          "the new one is made and applied")
    print(f"    after apply        {ours['rss_after_apply']:8.0f} MB   the old one let go (the "
          "allocator keeps some pages)")
    print(f"reference: stock DataTable, {args.ref_jobs:,} jobs, same rows")
    print(f"  fill + first paint   {ref['apply'] * ms:8.1f} ms")
    print(f"  scroll a page (key)  {ref['scroll'] * ms:8.1f} ms")
    per_ref = ref["apply"] / args.ref_jobs
    per_ours = ours["apply"] / args.jobs
    print(f"ratio: apply per job, DataTable / windowed table = {per_ref / per_ours:,.0f}× "
          f"(DataTable at {args.jobs:,} jobs ≈ {per_ref * args.jobs:.1f} s by that rate)")


if __name__ == "__main__":
    main()
