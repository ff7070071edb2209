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


class IncidentConfig(Struct, kw_only=True, forbid_unknown_fields=True):
    queue_storm: QueueStormConfig = field(default_factory=QueueStormConfig)
    starvation: StarvationConfig = field(default_factory=StarvationConfig)
    overcommit: OvercommitConfig = field(default_factory=OvercommitConfig)
    fragmentation: FragmentationConfig = field(default_factory=FragmentationConfig)
