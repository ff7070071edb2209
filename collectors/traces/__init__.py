"""Workload trace importers: the Standard Workload Format (SWF) of the Parallel
Workloads Archive and GPU-cluster CSV (Philly/Helios-style columns)."""

from collectors.traces.model import Trace, TraceError, TraceJob

__all__ = ["Trace", "TraceError", "TraceJob"]
