"""Recording: snapshots written to and read from a recording file (store.py, the format is
docs/recording.md), and the two sources that read one back: a replay (replay_source.py)
and a follower of a recording another process is writing (live_source.py).

A room of the middle floor (docs/architecture.md): it imports the snapshot model and the
Collector protocol below it and the incident detectors; never the TUI or the command line
above it. The version a recording states is handed down by its writer."""
