"""A live TUI (headless, App.run_test) on an evolving 10k-job cluster at a fast refresh
for N minutes: RSS and CPU over time, and the RSS slope over the second half.

Each collect is the next frame of bench/cluster_gen.py's evolving cluster (jobs start,
end and arrive; priorities move), so every refresh derives, paints, predicts (the core
in its own worker) and feeds the incident detectors, as a watched live cluster does.
The reference, measured in the same run before the TUI starts: the RSS of the process
holding two such snapshots and nothing else (what any viewer needs at the least).

    .venv/bin/python bench/soak.py [--minutes 5] [--jobs 10000] [--refresh 0.2]

Issue #16's target: at most 200 MB steady for 10k jobs at any refresh, flat over 30 min.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import psutil  # noqa: E402
from cluster_gen import evolving_cluster  # noqa: E402

from tui.app import QuotatopApp  # noqa: E402

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


async def soak(args: argparse.Namespace, proc: psutil.Process) -> list[Sample]:
    source = Evolving(args.jobs)
    app = QuotatopApp(source, refresh=args.refresh)  # type: ignore[arg-type]
    samples: list[Sample] = []
    async with app.run_test(size=(160, 48)) as pilot:
        t0 = time.monotonic()
        proc.cpu_percent(None)
        next_at = t0
        while (now := time.monotonic()) - t0 < args.minutes * 60:
            if now >= next_at:
                rss = proc.memory_info().rss / 1e6
                samples.append((now - t0, rss, proc.cpu_percent(None), source.calls))
                print(f"  {now - t0:6.0f} s  RSS {rss:6.1f} MB  CPU {samples[-1][2]:5.1f} %  "
                      f"{source.calls} collects", file=sys.stderr)
                next_at += args.every
            await pilot.pause(0.5)
    return samples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--refresh", type=float, default=0.2)
    ap.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    args = ap.parse_args()
    proc = psutil.Process()
    frames = evolving_cluster(jobs=args.jobs, frames=2, interval=2.0)
    held = [next(frames), next(frames)]
    gc.collect()
    reference = proc.memory_info().rss / 1e6
    del held, frames
    gc.collect()
    samples = asyncio.run(soak(args, proc))
    half = [(t / 60, rss) for t, rss, _, _ in samples if t >= args.minutes * 30]
    steady = [rss for t, rss, _, _ in samples if t >= args.minutes * 30]
    cpu = [c for t, _, c, _ in samples[1:]]
    calls = samples[-1][3] if samples else 0
    print(f"soak: {args.jobs} jobs, refresh {args.refresh:g} s, {args.minutes:g} min, "
          f"{calls} collects ({calls / (args.minutes * 60):.1f}/s)")
    print(f"reference (two snapshots held, no TUI): {reference:.0f} MB")
    if steady:
        print(f"RSS second half: {min(steady):.0f}–{max(steady):.0f} MB, "
              f"{max(steady) / reference:.1f}x the reference; slope {slope(half):+.1f} MB/min "
              f"(target: <= 200 MB, flat)")
    if cpu:
        print(f"CPU: mean {sum(cpu) / len(cpu):.0f} % of one core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
