"""A headless live viewer, for tests/test_live_source.py and bench/rpc_load.py.

    python tests/harness/live_viewer.py FILE [--seconds S] [--refresh R] [--frames N]

What ``quotatop --source live FILE`` does each refresh, without a terminal: collect
the newest frame of a recording a poller writes and, when it is new, predict it with
the core (each viewer runs its own). An audit hook counts every process the viewer
starts, which must stay zero: a viewer never runs a Slurm command. Prints one JSON
object: frames seen, first and last seq, predictions made, processes started.
Stops after ``--frames`` new frames (beyond the first) or ``--seconds``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# Every way Python starts a program (subprocess, os.exec*, os.spawn*, os.system,
# posix_spawn) or forks.
_SPAWN_EVENTS = frozenset({"subprocess.Popen", "os.exec", "os.spawn", "os.system",
                           "os.posix_spawn", "os.fork", "os.forkpty"})


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("recording")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--refresh", type=float, default=2.0)
    ap.add_argument("--frames", type=int, default=None)
    args = ap.parse_args()

    started: list[str] = []

    def hook(event: str, info: tuple[object, ...]) -> None:
        if event in _SPAWN_EVENTS:
            started.append(f"{event} {info[:2]!r}")

    sys.addaudithook(hook)

    from quotatop.collectors.errors import UserError
    from quotatop.commands.predict import predict_snapshot
    from quotatop.sources import SourceOptions, open_source

    try:
        source = open_source("live", SourceOptions(recording=args.recording,
                                                   refresh=args.refresh))
    except UserError as e:
        print(json.dumps({"error": str(e), "started": started}))
        return 2
    deadline = time.monotonic() + args.seconds
    seqs: list[int] = []
    predictions = 0
    stale: str | None = None
    try:
        while True:
            snap = source.collect()
            stale = snap.stale_reason if snap.stale else None
            rec = source.recording  # type: ignore[attr-defined]
            if len(rec) and (not seqs or rec.seqs[-1] != seqs[-1]):
                seqs.append(rec.seqs[-1])
                if snap.jobs or snap.nodes:
                    predict_snapshot(snap)  # the viewer's own core run
                    predictions += 1
            done = args.frames is not None and len(seqs) > args.frames
            if done or time.monotonic() >= deadline:
                break
            time.sleep(args.refresh)
    finally:
        source.close()
    print(json.dumps({"frames_seen": len(seqs), "first_seq": seqs[0] if seqs else None,
                      "last_seq": seqs[-1] if seqs else None, "predictions": predictions,
                      "stale": stale, "started": started}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
