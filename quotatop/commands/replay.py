"""`quotatop replay FILE`: the TUI on a recording, with the timeline.
`quotatop replay FILE --at 03:12 --json`: one frame, headless, with predictions
recomputed from that frame when the core can predict."""

from __future__ import annotations

import argparse
import json
import sys

from quotatop.collectors.errors import UserError
from quotatop.collectors.untrusted import json_safe
from quotatop.commands.at_flag import parse_at
from quotatop.flags import number, seconds
from quotatop.source_flags import add_config_flag_only


def predictions_for(snap) -> tuple[object, str | None]:
    """The core's predictions from this frame, or None and why not."""
    from quotatop import scheduler_core

    if getattr(scheduler_core, "predict", None) is None:
        return None, "this build of the core has no predict()"
    try:
        import msgspec

        from quotatop.commands.predict import predict_snapshot

        # The rows of `quotatop predict` (docs/predict.md): every field named.
        return msgspec.to_builtins(predict_snapshot(snap).jobs), None
    except UserError as e:
        return None, f"predict failed: {e}"
    except Exception as e:  # the core's own errors: report, keep the frame
        return None, f"predict failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}"


def run(args: argparse.Namespace) -> int:
    from quotatop.recording.replay_source import ReplaySource
    from quotatop.recording.store import RecordingError, open_recording

    try:
        if args.repair:  # asked for: a killed recorder's -wal folded in, -wal/-shm gone
            open_recording(args.file, repair=True).close()
        source = ReplaySource(args.file, speed=args.speed)
    except RecordingError as e:
        raise UserError(str(e)) from None
    try:
        if args.at is not None:
            source.seek(parse_at(args.at, source.start_time, source.end_time))
            source.pause()
        if args.json:
            return _print_frame(source, args)
        from quotatop import __version__
        from quotatop.tui.app import QuotatopApp

        QuotatopApp(source, refresh=args.refresh, version=__version__).run()
        return 0
    except RecordingError as e:
        raise UserError(str(e)) from None
    finally:
        source.close()


def _print_frame(source, args: argparse.Namespace) -> int:
    import msgspec

    from quotatop.incidents import IncidentMonitor

    source.pause()
    snap = source.collect()
    out: dict[str, object] = {
        "frame": source.position + 1, "frames": source.frames, "time": snap.taken_at,
        "recording": source.recording.meta, "snapshot": msgspec.to_builtins(snap)}
    predictions, why = predictions_for(snap)
    out["predictions"] = predictions
    if why:
        out["predictions_note"] = why
    if args.incidents:
        mon = IncidentMonitor()
        for i in range(source.position + 1):
            mon.feed(source.recording.frame(i))
        out["open_incidents"] = msgspec.to_builtins(mon.open_incidents())
    sys.stdout.write(json_safe(json.dumps(out, ensure_ascii=False)) + "\n")  # untrusted.py
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("replay", help="replay a recording (TUI, or one frame with --json)")
    p.add_argument("file")
    add_config_flag_only(p)
    p.add_argument("--at", metavar="TIME", help="start at HH:MM, +DURATION, ISO or epoch")
    p.add_argument("--json", action="store_true", help="print the frame at --at and exit")
    p.add_argument("--incidents", action="store_true",
                   help="with --json: the incidents open at that frame")
    p.add_argument("--speed", type=number(1.0, 1000.0), default=1.0,
                   help="playback speed ×1…×1000")
    p.add_argument("--refresh", type=seconds(), default=1.0, help="seconds between TUI refreshes")
    p.add_argument("--repair", action="store_true",
                   help="first fold a killed recorder's -wal into the file and remove its "
                        "-wal and -shm (otherwise a replay never changes the file)")
    p.set_defaults(func=run)
