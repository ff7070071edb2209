"""Workload trace importers: the Standard Workload Format (SWF) of the Parallel
Workloads Archive, GPU-cluster CSV (Helios, Alibaba PAI/openb/spot-GPU layouts read by
their header; other columns by mapping) and Philly JSON."""

from quotatop.simulation.traces.model import Trace, TraceError, TraceJob

__all__ = ["Trace", "TraceError", "TraceJob"]
