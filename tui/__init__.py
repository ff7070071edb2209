"""The Textual UI. It never runs a subprocess: collectors feed it snapshots."""
