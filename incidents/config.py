"""Detector thresholds; each detector reads its own section."""

from __future__ import annotations

from msgspec import Struct, field


class QueueStormConfig(Struct, kw_only=True, forbid_unknown_fields=True):
    window: float = 300.0  # seconds over which one team's submissions are counted
    min_jobs: int = 500  # submissions by one team within the window that make a storm
    min_share: float = 0.5  # ... and their share of all submissions in the window
    victim_wait_growth: float = 1.5  # another team is a victim when its median wait grows ×


class StarvationConfig(Struct, kw_only=True, forbid_unknown_fields=True):
    min_wait: float = 3600.0  # a job waiting less than this is never starving
    wait_factor: float = 4.0  # ... and it waits this many times its peers' median
    window: float = 3600.0  # peers: jobs that started within this trailing window
    min_bypassed: int = 1  # newer or lower-priority jobs that started past it


class OvercommitConfig(Struct, kw_only=True, forbid_unknown_fields=True):
    ratio: float = 1.0  # granted / capacity above this fires
    use_max_without_guarantee: bool = True  # Slurm-style max-only quotas count as grants


class FragmentationConfig(Struct, kw_only=True, forbid_unknown_fields=True):
    resource: str = "gpu"
    min_duration: float = 0.0  # seconds stranded before it opens
    gang_min_duration: float = 0.0  # seconds a gang holds part of itself before it opens


class IdleGpusConfig(Struct, kw_only=True, forbid_unknown_fields=True):
    # A running job whose GPUs were busy less than this percent over the last `window`
    # seconds (the whole window held and measured) is an idle-GPU finding.
    max_util: float = 15.0
    window: float = 3600.0
    # ... measured: a sample covered at least this share of its held GPU-time, so a job
    # whose exporter went quiet is not called idle on a few samples.
    min_coverage: float = 0.5
    gpu_hour_price: float | None = None  # the idle time's cost; None: GPU-hours only


class IncidentConfig(Struct, kw_only=True, forbid_unknown_fields=True):
    queue_storm: QueueStormConfig = field(default_factory=QueueStormConfig)
    starvation: StarvationConfig = field(default_factory=StarvationConfig)
    overcommit: OvercommitConfig = field(default_factory=OvercommitConfig)
    fragmentation: FragmentationConfig = field(default_factory=FragmentationConfig)
    idle_gpus: IdleGpusConfig = field(default_factory=IdleGpusConfig)
