"""Size of a recorded day: a made-up evolving 10k-job cluster at 2 s.

Records ``--frames`` frames (default 3,600 = two hours: 24 keyframe groups, one
per priority recalculation, in 6 whole sets of a root and the keyframes compressed
against it; about a minute on 2 cores) and extrapolates to a day (43,200 frames)
from the bytes per frame; ``--frames 43200`` records the whole day. Prints the
file's bytes per frame split into keyframes, deltas at a priority recalculation
(none when the recorder makes those frames keyframes) and the other deltas, the
keyframe count, the day's size, and the ratio against storing every frame as a
whole zstd-compressed snapshot (the reference, sampled in the same run).
See bench/cluster_gen.py for what the made-up cluster models.

``--append-only`` instead times single ``Recorder.append`` calls on a made-up
``--append-jobs`` (100k) cluster, as the TUI's ``R`` key makes them from its
collect worker: the reference is the first append (a keyframe); then the first
and a steady delta, a delta at a priority recalculation, and frames unlike the one
before (another cluster: job ids disjoint, or the same ids with other contents),
which the recorder writes as keyframes.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import msgspec
import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster_gen import evolving_cluster

from quotatop.collectors.model import Snapshot, to_msgpack
from quotatop.recording.store import KEYFRAME, Recorder, Recording

DAY = 43_200


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--frames", type=int, default=3_600)
    ap.add_argument("--priority-every", type=int, default=150)
    ap.add_argument("--append-only", action="store_true")
    ap.add_argument("--append-jobs", type=int, default=100_000)
    args = ap.parse_args()
    if args.append_only:
        append_times(args.append_jobs)
        return
    cctx = zstandard.ZstdCompressor(level=3)
    whole = 0
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "day.qtrec"
        t0 = time.perf_counter()
        gen_s = 0.0
        with Recorder(path, cluster="made-up", source="bench") as rec:
            g = evolving_cluster(args.jobs, args.frames, priority_every=args.priority_every)
            for i in range(args.frames):
                g0 = time.perf_counter()
                snap = next(g)
                gen_s += time.perf_counter() - g0
                if i % 60 == 0:  # sample the reference: a whole compressed frame
                    whole += len(cctx.compress(to_msgpack(snap))) * min(60, args.frames - i)
                rec.append(snap)
        rec_s = time.perf_counter() - t0 - gen_s
        size = path.stat().st_size
        with Recording(path) as r:
            n = len(r)
        con = sqlite3.connect(path)
        rows = con.execute("SELECT seq, kind, length(blob) FROM frames").fetchall()
        roots = con.execute("SELECT COUNT(*) FROM frames WHERE kind = ? AND ref = 0",
                            (KEYFRAME,)).fetchone()[0]
        dicts = con.execute("SELECT COALESCE(SUM(length(data)), 0) FROM dicts").fetchone()[0]
        con.close()
    key = sum(b for _, k, b in rows if k == KEYFRAME)
    keys = sum(1 for _, k, _ in rows if k == KEYFRAME)
    recalc = sum(b for s, k, b in rows if k != KEYFRAME and (s - 1) % args.priority_every == 0)
    other = sum(b for _, k, b in rows) - key - recalc
    per = size / n
    print(f"made-up cluster: {args.jobs} jobs, {n} frames at 2 s recorded in {rec_s:.1f} s "
          f"({rec_s / n * 1000:.1f} ms/frame)")
    print(f"file: {size / 1e6:.2f} MB, {per:.0f} B/frame = keyframes {key / n:.0f} + "
          f"priority-recalc deltas {recalc / n:.0f} + other deltas {other / n:.0f} + "
          f"dictionaries {dicts / n:.0f} + SQLite {(size - key - recalc - other - dicts) / n:.0f}; "
          f"{keys} keyframes ({roots} compressed alone), {key / keys / 1e3:.0f} kB each on average")
    print(f"a day (43,200 frames): {per * DAY / 1e6:.1f} MB "
          f"(reference, every frame whole: {whole / n * DAY / 1e6:.0f} MB; "
          f"ratio {whole / size:.0f}x smaller)")


def append_times(jobs: int) -> None:
    frames = list(evolving_cluster(jobs, 5, priority_every=3))  # frame 3 recalculates
    other = next(evolving_cluster(jobs, 1, seed=2))
    t = frames[-1].taken_at
    same_ids = msgspec.structs.replace(other, taken_at=t + 2)
    disjoint = msgspec.structs.replace(
        other, taken_at=t + 4, jobs=[msgspec.structs.replace(j, id=f"b{j.id}") for j in other.jobs])
    plan: list[tuple[str, Snapshot]] = [
        ("keyframe (first frame, the reference)", frames[0]),
        ("like: first delta of the group", frames[1]),
        ("like: a steady delta", frames[2]),
        ("like: delta at a priority recalculation", frames[3]),
        ("like: a steady delta", frames[4]),
        ("unlike: same job ids, other contents", same_ids),
        ("unlike: disjoint job ids", disjoint),
        ("like again: back to the first cluster", msgspec.structs.replace(
            frames[4], taken_at=t + 6)),
    ]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "append.qtrec"
        with Recorder(path, cluster="made-up", source="bench") as rec:
            times = []
            for _, snap in plan:
                t0 = time.perf_counter()
                rec.append(snap)
                times.append(time.perf_counter() - t0)
        con = sqlite3.connect(path)
        kinds = [k for (k,) in con.execute("SELECT kind FROM frames ORDER BY seq")]
        con.close()
    ref = times[0]
    print(f"Recorder.append, made-up cluster of {jobs} jobs:")
    for (label, _), dt, kind in zip(plan, times, kinds, strict=True):
        written = "keyframe" if kind == KEYFRAME else "delta"
        print(f"  {label:<42} {dt * 1000:8.0f} ms  {dt / ref:5.2f}x the keyframe  ({written})")


if __name__ == "__main__":
    main()
