"""Fuzz suite: every entry point that reads outside data (docs/fuzzing.md)."""
