"""A live TUI (headless, App.run_test) on an evolving 10k-job cluster at a fast refresh
for N minutes: RSS and CPU over time, and the RSS slope over the second half.

Each collect is the next frame of bench/cluster_gen.py's evolving cluster (jobs start,
end and arrive; priorities move), so every refresh derives, paints, predicts (the core
in its own worker) and feeds the incident detectors, as a watched live cluster does.
The reference, measured in the same run before the TUI starts: the RSS of the process
holding two such snapshots and nothing else (what any viewer needs at the least).

    .venv/bin/python bench/soak.py [--minutes 5] [--jobs 10000] [--refresh 0.2]

``--scenario-jobs N`` soaks the TUI on a demo scenario instead (``quotatop --scenario
FILE``: a ScenarioSource, simulated once by the core and played frame by frame with the
timeline, looping): a v2 scenario of N jobs, generated into a temporary file (the format
of docs/scenarios.md). ``--seconds`` sets the length in seconds, ``--trace`` takes
tracemalloc snapshots at ``--trace-at`` seconds and at the end and prints the lines whose
memory grew most in between.

    .venv/bin/python bench/soak.py --scenario-jobs 8000 --seconds 100 --refresh 0.2

Issue #16's target: at most 200 MB steady for 10k jobs at any refresh, flat over 30 min.

``--path tour|screens|overlays|report|replay|slurm`` soaks what a user leaves open
instead (bench/soak_paths.py): the installed `quotatop` itself on a 120x40
pseudo-terminal with its defaults, driven by keys: the default demo tour; every screen
in turn; help then the palette over the tour; the report screen; the replay of a
recording of the tour; the live Slurm of tests/harness made an unchanged cluster of
``--jobs`` records (8,000 by default: nodes busy, the rest held). It prints RSS at start, middle
and end, the slope over the run (MB/h), CPU % of one core and bytes drawn per phase,
against the RSS of a process holding two of the source's snapshots (the data alone).
Issue #32's targets: flat memory; <= 1 % of a core on an unchanged cluster's Overview,
<= 3 % while data changes every 2 s.

    .venv/bin/python bench/soak.py --path tour --minutes 60
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import signal
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import psutil  # noqa: E402
from cluster_gen import evolving_cluster  # noqa: E402

from quotatop.tui.app import QuotatopApp  # noqa: E402

FRAMES = 1_000_000  # the generator is lazy: frames are made as they are asked for


class Evolving:
    """A collector whose every collect is the cluster's next frame."""

    name = "soak"

    def __init__(self, jobs: int) -> None:
        self.frames = evolving_cluster(jobs=jobs, frames=FRAMES, interval=2.0)
        self.calls = 0

    def collect(self):  # type: ignore[no-untyped-def]
        self.calls += 1
        return next(self.frames)

    def close(self) -> None:
        pass


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope (y per x)."""
    n = len(points)
    if n < 2:
        return float("nan")
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    den = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / den if den else float("nan")


Sample = tuple[float, float, float, int]  # seconds, RSS MB, CPU %, collects so far


def scenario_toml(jobs: int) -> str:
    """A v2 scenario of ``jobs`` jobs on jobs/16 nodes of 8 GPUs (8k jobs: 500 nodes,
    4,000 GPUs), four teams with 40/30/20/10 % guarantees in one cohort, and 16 blocks
    of identical jobs (1–8 GPUs, 10 min–2 h) submitted in four waves 15 min apart: the
    cluster fills, a backlog of thousands waits, and it drains over the play."""
    teams = [("vision", 40), ("nlp", 30), ("speech", 20), ("robotics", 10)]
    n_nodes = max(1, jobs // 16)
    gpus = n_nodes * 8
    lines = ["[scenario]", f'name = "soak_{jobs}"', 'description = "bench/soak.py"',
             'policy = "multifactor"', 'unit = "gpu"', 'cluster = "soak"', "",
             "[settings]", "bf_resolution = 30", "usage_half_life = 3600", "",
             "[[nodes]]", 'name = "gpu"', f"count = {n_nodes}", "gpu = 8", "cpu = 64",
             "memory = 512000", ""]
    for name, percent in teams:
        lines += ["[[teams]]", f'name = "{name}"', f"guarantee = {gpus * percent // 100}",
                  f"max = {gpus}", 'cohort = "lab"', ""]
    shapes = [(1, 600), (2, 1800), (4, 3600), (8, 7200)]  # GPUs, seconds
    blocks = 16
    per = jobs // blocks
    for b in range(blocks):
        count = per if b < blocks - 1 else jobs - per * (blocks - 1)
        if count < 1:
            continue
        gpu, duration = shapes[b % len(shapes)]
        lines += ["[[jobs]]", f'id = "b{b}"', f'team = "{teams[b % len(teams)][0]}"',
                  f'user = "u{b}"', f"submit = {(b // 4) * 900}", f"count = {count}",
                  f"gpu = {gpu}", f"duration = {duration}", ""]
    return "\n".join(lines)


class Counted:
    """Counts a scenario source's steps: its collect, wrapped in place (the app wraps
    a ScenarioSource in its timeline itself, so the source passed in must stay one)."""

    def __init__(self, source: Any) -> None:
        self._collect = source.collect
        self.calls = 0
        source.collect = self.collect

    def collect(self):  # type: ignore[no-untyped-def]
        self.calls += 1
        return self._collect()


def scenario_source(jobs: int) -> Any:
    from quotatop.simulation.scenario import load_scenario
    from quotatop.simulation.scenario_source import ScenarioSource

    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        path = Path(tmp) / f"soak_{jobs}.toml"
        path.write_text(scenario_toml(jobs))
        return ScenarioSource(load_scenario(path))


def top_growth(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, n: int = 25) -> None:
    stats = after.compare_to(before, "lineno")
    print(f"tracemalloc: the {n} lines whose memory grew most", file=sys.stderr)
    for st in stats[:n]:
        print(f"  {st.size_diff / 1e6:+8.1f} MB  {st.count_diff:+9d} blocks  "
              f"{st.traceback}", file=sys.stderr)
    total = sum(st.size for st in after.statistics("filename"))
    print(f"  traced now: {total / 1e6:.1f} MB", file=sys.stderr)


async def soak(args: argparse.Namespace, proc: psutil.Process) -> list[Sample]:
    if args.scenario_jobs:
        source: Any = scenario_source(args.scenario_jobs)
        counter: Any = Counted(source)
    else:
        source = counter = Evolving(args.jobs)
    app = QuotatopApp(source, refresh=args.refresh)
    samples: list[Sample] = []
    traced: tracemalloc.Snapshot | None = None
    async with app.run_test(size=(160, 48)) as pilot:
        t0 = time.monotonic()
        proc.cpu_percent(None)
        next_at = t0
        while (now := time.monotonic()) - t0 < args.seconds:
            if now >= next_at:
                rss = proc.memory_info().rss / 1e6
                samples.append((now - t0, rss, proc.cpu_percent(None), counter.calls))
                print(f"  {now - t0:6.0f} s  RSS {rss:6.1f} MB  CPU {samples[-1][2]:5.1f} %  "
                      f"{counter.calls} collects", file=sys.stderr)
                next_at += args.every
            if args.trace and traced is None and now - t0 >= args.trace_at:
                gc.collect()
                traced = tracemalloc.take_snapshot()
            await pilot.pause(0.5)
        if traced is not None:
            gc.collect()
            top_growth(traced, tracemalloc.take_snapshot())
        if app.failure:  # a soak of a failing source measures nothing
            print(f"the source failed: {app.failure}", file=sys.stderr)
    return samples


PATHS = ("tour", "screens", "overlays", "report", "replay", "slurm")


def soak_path(path: str, seconds: float, every: float, jobs: int) -> int:
    import contextlib

    import soak_paths as sp

    with contextlib.ExitStack() as stack:
        env = sp.child_env()
        argv = sp.quotatop_argv()
        ref_args = ["demo"]
        listed = 0
        keys: list[tuple[float, str]] = []
        if path == "screens":
            keys = sp.screens_keys(seconds)
        elif path == "overlays":
            keys = sp.overlay_keys(seconds)
        elif path == "report":
            keys = [(10.0, "m")]
        elif path == "replay":
            rec = stack.enter_context(sp.demo_recording())
            argv = sp.quotatop_argv("replay", str(rec))
            ref_args = ["replay", f"recording={rec}"]
        elif path == "slurm":
            sys.path.insert(0, str(ROOT / "tests"))
            from harness.fixtures import fresh_cluster  # the harness's real Slurm

            cluster = stack.enter_context(fresh_cluster("bench/soak.py --path slurm"))
            listed = sp.idle_cluster(cluster, jobs)
            env = sp.child_env(dict(cluster.env))
            argv = sp.quotatop_argv("--source", "slurm")
            ref_args = ["slurm"]
        reference = sp.reference_rss(ref_args, env)
        phases = sp.soak(argv, seconds, keys, env, every)
    points = [p for ph in phases for p in ph.rss]
    print(f"soak --path {path}: `{' '.join(argv[2:]) or 'quotatop'}` at {sp.COLS}x{sp.ROWS}, "
          f"{seconds / 60:.0f} min")
    print(f"reference (two of the source's snapshots held, no TUI): {reference:.0f} MB")
    if listed:
        print(f"the idle Slurm: {listed} job records, held or running, none changing")
    for ph in phases:
        rss = [r for _, r in ph.rss]
        cpu = 100 * ph.cpu_seconds / ph.wall if ph.wall else float("nan")
        kids = 100 * ph.child_seconds / ph.wall if ph.wall else float("nan")
        print(f"  {ph.name:6s} RSS {min(rss, default=0):6.1f}–{max(rss, default=0):6.1f} MB  "
              f"CPU {cpu + kids:5.1f} % of a core ({cpu:.1f} own + {kids:.1f} its commands)  "
              f"drawn {ph.written / max(ph.wall, 1e-9) / 1e3:7.1f} kB/s")
    if len(points) >= 2:
        late = [(t / 3600, r) for t, r in points if t >= seconds / 3]
        print(f"RSS slope after the first third: {slope(late):+.1f} MB/h; end "
              f"{points[-1][1]:.0f} MB = {points[-1][1] / reference:.1f}x the reference")
    return 0


def main() -> int:
    # A soak stopped with kill (SIGTERM) ends as one stopped with ctrl-c: its
    # quotatop and its Slurm are closed on the way out, not left running.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--jobs", type=int, default=None, help="jobs of the evolving cluster "
                    "(default 10000), or of the idle Slurm of --path slurm (default 8000: "
                    "the harness's MaxJobCount is Slurm's default 10000)")
    ap.add_argument("--refresh", type=float, default=0.2)
    ap.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    ap.add_argument("--seconds", type=float, default=None, help="length in seconds "
                    "(overrides --minutes)")
    ap.add_argument("--scenario-jobs", type=int, default=0, metavar="N",
                    help="soak on a generated N-job demo scenario instead")
    ap.add_argument("--trace", action="store_true", help="tracemalloc: the lines whose "
                    "memory grew most between --trace-at and the end (slow)")
    ap.add_argument("--trace-at", type=float, default=20.0, metavar="SECONDS")
    ap.add_argument("--path", choices=PATHS, default=None,
                    help="soak the real command line on this path instead")
    args = ap.parse_args()
    if args.seconds is None:
        args.seconds = args.minutes * 60
    if args.path:
        return soak_path(args.path, args.seconds, args.every, args.jobs or 8000)
    args.jobs = args.jobs or 10_000
    proc = psutil.Process()
    if args.scenario_jobs:
        # The reference: the scenario's frames as its source holds them, nothing else.
        held_source = scenario_source(args.scenario_jobs)
        held = [held_source.collect(), held_source.collect()]
        what = f"a {args.scenario_jobs}-job scenario"
    else:
        frames = evolving_cluster(jobs=args.jobs, frames=2, interval=2.0)
        held = [next(frames), next(frames)]
        what = f"{args.jobs} jobs"
    gc.collect()
    reference = proc.memory_info().rss / 1e6
    del held
    held_source = frames = None
    gc.collect()
    if args.trace:
        tracemalloc.start()
    samples = asyncio.run(soak(args, proc))
    half = [(t / 60, rss) for t, rss, _, _ in samples if t >= args.seconds / 2]
    steady = [rss for t, rss, _, _ in samples if t >= args.seconds / 2]
    cpu = [c for t, _, c, _ in samples[1:]]
    calls = samples[-1][3] if samples else 0
    print(f"soak: {what}, refresh {args.refresh:g} s, {args.seconds:g} s, "
          f"{calls} collects ({calls / args.seconds:.1f}/s)")
    ref_what = "the source and two of its frames" if args.scenario_jobs \
        else "two snapshots held"
    print(f"reference ({ref_what}, no TUI): {reference:.0f} MB")
    if steady:
        print(f"RSS second half: {min(steady):.0f}–{max(steady):.0f} MB, "
              f"{max(steady) / reference:.1f}x the reference; slope {slope(half):+.1f} MB/min "
              f"(target: <= 200 MB, flat)")
    if cpu:
        print(f"CPU: mean {sum(cpu) / len(cpu):.0f} % of one core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
