"""quotatop: per-team quota, usage, queue and fair-share for AI/HPC clusters."""

__version__ = "0.1.0"
