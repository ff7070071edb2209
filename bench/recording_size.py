"""Size of a recorded day: a made-up evolving 10k-job cluster at 2 s.

Records ``--frames`` frames (default 3,600 = two hours: two whole keyframe chains,
about a minute on 2 cores) and extrapolates to a day (43,200 frames) from the
bytes per frame; ``--frames 43200`` records the whole day. Prints the file's
bytes per frame split into keyframes, deltas at a priority recalculation and the
other deltas, the day's size, and the ratio against storing every frame as a
whole zstd-compressed snapshot (the reference, sampled in the same run).
See bench/cluster_gen.py for what the made-up cluster models.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster_gen import evolving_cluster

from collectors.model import to_msgpack
from collectors.recording import KEYFRAME, Recorder, Recording

DAY = 43_200


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--frames", type=int, default=3_600)
    ap.add_argument("--priority-every", type=int, default=150)
    args = ap.parse_args()
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
        dicts = con.execute("SELECT COALESCE(SUM(length(data)), 0) FROM dicts").fetchone()[0]
        con.close()
    key = sum(b for _, k, b in rows if k == KEYFRAME)
    recalc = sum(b for s, k, b in rows if k != KEYFRAME and (s - 1) % args.priority_every == 0)
    other = sum(b for _, k, b in rows) - key - recalc
    per = size / n
    print(f"made-up cluster: {args.jobs} jobs, {n} frames at 2 s recorded in {rec_s:.1f} s "
          f"({rec_s / n * 1000:.1f} ms/frame)")
    print(f"file: {size / 1e6:.2f} MB, {per:.0f} B/frame = keyframes {key / n:.0f} + "
          f"priority-recalc deltas {recalc / n:.0f} + other deltas {other / n:.0f} + "
          f"dictionaries {dicts / n:.0f} + SQLite {(size - key - recalc - other - dicts) / n:.0f}")
    print(f"a day (43,200 frames): {per * DAY / 1e6:.1f} MB "
          f"(reference, every frame whole: {whole / n * DAY / 1e6:.0f} MB; "
          f"ratio {whole / size:.0f}x smaller)")


if __name__ == "__main__":
    main()
