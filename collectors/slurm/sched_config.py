"""``scontrol show config`` → the site's SchedulerConfig, in the model's neutral terms.

A key the controller does not print (or prints as ``(null)``) takes the default that
the Slurm 22.05 slurm.conf(5) man page documents; each default is named below."""

from __future__ import annotations

import math
from collections.abc import Mapping

from quotatop.collectors.model import SchedulerConfig
from quotatop.collectors.slurm.durations import parse_duration
from quotatop.collectors.slurm.errors import ParseError
from quotatop.collectors.slurm.table import MAX_INT
from quotatop.collectors.slurm.tres import tres_key

# The keys whose printed values are kept in SchedulerConfig.raw (for the UI).
RAW_KEYS = (
    "PriorityType",
    "PriorityWeightAge",
    "PriorityWeightFairShare",
    "PriorityWeightQOS",
    "PriorityWeightJobSize",
    "PriorityWeightPartition",
    "PriorityWeightAssoc",
    "PriorityWeightTRES",
    "PriorityMaxAge",
    "PriorityDecayHalfLife",
    "PriorityFlags",
    "PriorityFavorSmall",
    "SchedulerType",
    "SchedulerParameters",
    "PreemptType",
    "PreemptMode",
    "PreemptExemptTime",
    "PriorityCalcPeriod",
    "SelectType",
    "SelectTypeParameters",
    "TopologyPlugin",
)
_WEIGHTS = {
    "PriorityWeightAge": "age",
    "PriorityWeightFairShare": "fairshare",
    "PriorityWeightQOS": "qos",
    "PriorityWeightJobSize": "job_size",
    "PriorityWeightPartition": "partition",
    "PriorityWeightAssoc": "assoc",
}
_UNSET = frozenset({"", "(null)", "N/A", "NONE", "None"})

# slurm.conf(5), 22.05, SchedulerParameters:
BF_INTERVAL = 30.0  # bf_interval: "Default: 30" seconds
BF_RESOLUTION = 60.0  # bf_resolution: "Default: 60" seconds
BF_WINDOW_MIN = 1440  # bf_window: "Default: 1440 (1 day)", in MINUTES
BF_MAX_JOB_TEST = 500  # bf_max_job_test: "Default: 500"
QUEUE_DEPTH = 100  # default_queue_depth: "The default value is 100"
SCHED_INTERVAL = 60.0  # sched_interval: "The default value is 60 seconds"
# PriorityMaxAge: "The default value is 7-0 (7 days)"; PriorityDecayHalfLife: "The
# default value is 7-0 (7 days)".
PRIORITY_MAX_AGE = 7 * 86400.0
DECAY_HALF_LIFE = 7 * 86400.0
CALC_PERIOD = 300.0
# AuthInfo cred_expire: "This also controls how long a requeued job must wait before
# starting again. The default value is 120 seconds."
CRED_EXPIRE = 120.0


def _value(config: Mapping[str, str], key: str) -> str | None:
    v = config.get(key)
    if v is None:
        return None
    v = v.strip()
    return None if v in _UNSET else v


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ParseError(what, text, "not a number") from None
    if not (math.isfinite(value) and abs(value) <= MAX_INT):
        raise ParseError(what, text, f"out of range (at most 2^53 = {MAX_INT})")
    return value


def _seconds(config: Mapping[str, str], key: str, default: float | None) -> float | None:
    v = _value(config, key)
    if v is None:
        return default
    if v.lower().endswith(" sec"):  # some keys print "30 sec"
        return _number(v[:-4].strip(), key)
    if v == "-1":  # PreemptExemptTime: "-1 disables the option, equivalent to 0"
        return 0.0
    return parse_duration(v)


def _params(text: str | None) -> dict[str, str]:
    """``bf_interval=2,bf_continue,sched_min_interval=1`` → {key: value or ""}."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        key, _, value = item.strip().partition("=")
        if key:
            out[key.strip().lower()] = value.strip()
    return out


def _int_param(params: Mapping[str, str], key: str, default: int) -> int:
    v = params.get(key)
    if not v:
        return default
    return int(_number(v, f"SchedulerParameters {key}"))


def _requeue_delay(config: Mapping[str, str]) -> float:
    """How long a job requeued by preemption waits before it may start again: AuthInfo's
    cred_expire. Only that option is read; AuthInfo's other options (a socket path, a
    key) are neither parsed nor kept."""
    v = _params(_value(config, "AuthInfo")).get("cred_expire")
    return _number(v, "AuthInfo cred_expire") if v else CRED_EXPIRE


def _placement(config: Mapping[str, str], params: Mapping[str, str]) -> str | None:
    """How the node selection plugin picks nodes, where quotatop models it.

    select/cons_tres and cons_res (22.05 job_test.c ``_eval_nodes``) take runs of
    consecutive usable nodes, the tightest run first and best fit by free CPUs in it:
    "consecutive". The plugin leaves that rule for least-loaded nodes (CR_LLN),
    busy nodes first (bf_busy_nodes), serial packing (pack_serial_at_end) and a
    topology plugin; those are not modelled, and the core keeps its default."""
    select = (_value(config, "SelectType") or "").lower()
    if select not in ("select/cons_tres", "select/cons_res"):
        return None
    sel_params = (_value(config, "SelectTypeParameters") or "").upper()
    topology = (_value(config, "TopologyPlugin") or "topology/none").lower()
    if ("CR_LLN" in sel_params or topology not in ("topology/none", "topology/default")
            or "bf_busy_nodes" in params or "pack_serial_at_end" in params):
        return None
    return "consecutive"


def scheduler_config(config: Mapping[str, str]) -> SchedulerConfig | None:
    """None when there is no config at all (the command never answered)."""
    if not config:
        return None
    ptype = (_value(config, "PriorityType") or "priority/basic").lower()  # default: basic
    priority = {"priority/multifactor": "multifactor", "priority/basic": "basic"}.get(
        ptype, ptype.removeprefix("priority/")
    )
    weights: dict[str, float] = {}
    for key, name in _WEIGHTS.items():
        v = _value(config, key)
        # Every PriorityWeight* defaults to 0.
        weights[name] = _number(v, key) if v is not None else 0.0
    tres_weights = _value(config, "PriorityWeightTRES")  # "CPU=1000,Mem=2000,GRES/gpu=3000"
    for item in (tres_weights or "").split(","):
        name, sep, w = item.partition("=")
        if sep and name.strip():
            weights[f"tres:{tres_key(name.strip().lower())}"] = _number(w, "PriorityWeightTRES")
    flags = {f.strip().upper() for f in (_value(config, "PriorityFlags") or "").split(",")}
    # 22.05: Fair Tree is the default algorithm; PriorityFlags=NO_FAIR_TREE reverts to
    # classic fair share.
    fairshare = "classic" if "NO_FAIR_TREE" in flags else "fair_tree"
    favor = (_value(config, "PriorityFavorSmall") or "no").lower()  # default "NO"
    stype = (_value(config, "SchedulerType") or "sched/backfill").lower()  # default backfill
    backfill = {"sched/backfill": "conservative", "sched/builtin": "none"}.get(stype, stype)
    params = _params(_value(config, "SchedulerParameters"))
    bf_window_min = _int_param(params, "bf_window", BF_WINDOW_MIN)
    pre_type = (_value(config, "PreemptType") or "preempt/none").lower()  # default none
    preemption = {
        "preempt/none": "off",
        "preempt/qos": "qos",
        "preempt/partition_prio": "partition_priority",
    }.get(pre_type, pre_type.removeprefix("preempt/"))
    # PreemptMode "REQUEUE", "SUSPEND,GANG": the first word; default OFF.
    mode = (_value(config, "PreemptMode") or "OFF").split(",")[0].strip().lower() or "off"
    return SchedulerConfig(
        priority=priority,
        weights=weights,
        max_age=_seconds(config, "PriorityMaxAge", PRIORITY_MAX_AGE),
        usage_half_life=_seconds(config, "PriorityDecayHalfLife", DECAY_HALF_LIFE),
        fairshare=fairshare,
        favor_small=favor in ("yes", "1", "true"),
        backfill=backfill,
        bf_interval=float(_int_param(params, "bf_interval", int(BF_INTERVAL))),
        bf_resolution=float(_int_param(params, "bf_resolution", int(BF_RESOLUTION))),
        bf_window=bf_window_min * 60.0,
        bf_max_job_test=_int_param(params, "bf_max_job_test", BF_MAX_JOB_TEST),
        bf_continue="bf_continue" in params,  # a flag; off unless given
        queue_depth=_int_param(params, "default_queue_depth", QUEUE_DEPTH),
        sched_interval=float(_int_param(params, "sched_interval", int(SCHED_INTERVAL))),
        preemption=preemption,
        preempt_mode=mode,
        # PreemptExemptTime: default 0 (no exemption); -1 is the same as 0.
        preempt_exempt_time=_seconds(config, "PreemptExemptTime", 0.0),
        raw={k: config[k] for k in RAW_KEYS if k in config},
        # PriorityCalcPeriod: "The default value is 5 (minutes)".
        calc_period=_seconds(config, "PriorityCalcPeriod", CALC_PERIOD),
        # Billing: TRESBillingWeights is a partition setting, not read yet; without
        # it Slurm bills "the total number of allocated CPUs", which {} says.
        billing={},
        placement=_placement(config, params),
        requeue_delay=_requeue_delay(config),
    )
