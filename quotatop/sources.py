"""The one registry of sources: ``open_source(name, options)`` builds any collector.

Each backend (the kubernetes client, prometheus-api-client, the Slurm runner, the
recording reader, the scenario player with its Rust core) is imported only when its
source is chosen, so a TUI on Slurm never pays for Kubernetes and vice versa.
Bad input (an unknown source, a missing file, a nonsensical number) is a ``UserError``
of one line; a cluster that does not answer is not: the collector reports it as a
stale snapshot.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from quotatop.collectors.base import Collector
from quotatop.collectors.errors import UserError
from quotatop.collectors.model import Snapshot
from quotatop.collectors.untrusted import url_problem
from quotatop.simulation import DEMO_DATA

# The one default demo: what `quotatop`, `snapshot --source demo` and `record --source demo` play.
# The default demo tours the three modes and two incidents (demo_data/tour.toml).
DEFAULT_SCENARIO = DEMO_DATA / "tour.toml"


class SourceOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Everything any source may need; each source reads its own fields."""

    # demo
    scenario: str | None = None  # None: DEFAULT_SCENARIO
    # slurm
    ssh_host: str | None = None  # run the Slurm commands there via ssh; None: locally
    slurm_slow_every: float = 60.0  # seconds between the slow commands (sshare, sacctmgr)
    # k8s
    kubeconfig: str | None = None  # None: $KUBECONFIG, ~/.kube/config, then in-cluster
    context: str | None = None
    in_cluster: bool = False
    team_label: str | None = None  # namespace label naming the team; None: the namespace
    namespaces: list[str] | None = None  # only these namespaces' teams and jobs; None: all
    kueue_visibility_interval: float = 10.0  # seconds between pending-position polls
    # prometheus
    prometheus_url: str | None = None
    prometheus_queries: dict[str, str] = {}  # name -> PromQL; "" disables a default
    prometheus_groups: list[str] | None = None  # None: the default query groups
    prometheus_team_label: str = "namespace"
    # Credentials by reference only (an environment variable or a file), never the secret.
    prometheus_bearer_token_env: str | None = None
    prometheus_bearer_token_file: str | None = None
    prometheus_basic_user: str | None = None
    prometheus_basic_password_env: str | None = None
    prometheus_basic_password_file: str | None = None
    # replay, live
    recording: str | None = None
    replay_speed: float = 1.0
    # live: a recording a poller (`quotatop record --daemon`) is still writing
    live_pidfile: str | None = None  # the poller's pid file; gone: the poller is stale
    live_stale_after: int = 5  # poller intervals without a new frame: stale
    # all
    timeout: float = 10.0  # seconds per command / request
    refresh: float = 2.0  # seconds between collects (the caller's loop reads it)


SOURCES = ("demo", "slurm", "k8s", "prometheus", "replay", "live")
# The sources that ask a cluster: their first answer says whether it is reachable from
# here. A demo or a replay has its frames in hand; a live viewer may open before its
# poller wrote the first frame, and waits for it.
CLUSTER_SOURCES = ("slurm", "k8s", "prometheus")


def refuse_empty(name: str, snap: Snapshot) -> Snapshot:
    """``snap``, unless nothing at all came back (no job, node or team, and stale): then
    the source is not reachable from here, or its answers are not usable, and that is
    one line (exit 2) for every command that opens it, the TUI as ``snapshot``."""
    if not snap.jobs and not snap.nodes and not snap.teams and snap.stale:
        reason = (snap.stale_reason or "").removeprefix(f"{name}: ")
        raise UserError(f"{name}: no data: {reason}")
    return snap


def options_from_mapping(raw: Mapping[str, Any], where: str = "options") -> SourceOptions:
    """SourceOptions from a table (a config file, parsed flags); errors name the key."""
    try:
        return msgspec.convert(dict(raw), SourceOptions)
    except msgspec.ValidationError as exc:
        msg, _, place = str(exc).partition(" - at `")
        key = place.rstrip("`").removeprefix("$.").removeprefix("$")
        raise UserError(f"{where}: {key + ': ' if key else ''}{msg}") from None


def open_source(name: str, options: SourceOptions | None = None) -> Collector:
    """The collector for ``name``, built from ``options``. Raises UserError on bad input."""
    opts = options if options is not None else SourceOptions()
    builder = _BUILDERS.get(name)
    if builder is None:
        raise UserError(f"unknown source {name!r} (known: {', '.join(SOURCES)})")
    _check_numbers(opts)
    return builder(opts)


def _check_numbers(opts: SourceOptions) -> None:
    from quotatop.flags import MAX_SECONDS

    for field in ("timeout", "refresh", "slurm_slow_every"):
        value = getattr(opts, field)
        if not (math.isfinite(value) and 0 < value <= MAX_SECONDS):
            raise UserError(f"option {field} must be a positive number of seconds "
                            f"(at most {MAX_SECONDS:g}), not {value!r}")
    if not 1.0 <= opts.replay_speed <= 1000.0:
        raise UserError(f"option replay_speed must be from 1 to 1000, not {opts.replay_speed!r}")
    if not 1 <= opts.live_stale_after <= 10_000:
        raise UserError(f"option live_stale_after must be from 1 to 10000 poller intervals, "
                        f"not {opts.live_stale_after!r}")
    if not 0 <= opts.kueue_visibility_interval <= MAX_SECONDS:
        raise UserError(f"option kueue_visibility_interval cannot be negative, NaN or above "
                        f"{MAX_SECONDS:g} seconds, not {opts.kueue_visibility_interval!r}")


def _existing_file(path: str | None, what: str) -> str | None:
    if path is None:
        return None
    p = Path(path).expanduser()
    if not p.is_file():
        why = "not a regular file" if p.exists() else "no such file"
        raise UserError(f"{what} {path}: {why}")
    return str(p)


def bundled_scenarios() -> list[str]:
    """The names of the scenarios shipped in demo_data/ (installed beside the packages)."""
    return sorted(p.stem for p in DEMO_DATA.glob("*.toml"))


def bundled_scenario(given: str) -> str | None:
    """demo_data/NAME.toml when ``given`` is a bundled scenario's bare name (``queue_storm``
    or ``queue_storm.toml``) and no file of that name is in the current directory."""
    p = Path(given).expanduser()
    if p.exists() or len(p.parts) != 1:
        return None
    bundled = DEMO_DATA / (p.name if p.suffix == ".toml" else f"{p.name}.toml")
    return str(bundled) if bundled.is_file() else None


def scenario_path(given: str) -> str:
    """A scenario file, or a bundled one by name: ``queue_storm`` or
    ``queue_storm.toml`` is demo_data/queue_storm.toml wherever quotatop is
    installed. A file of that name in the current directory wins. A bare name that
    is neither is refused with the bundled names, on one line."""
    p = Path(given).expanduser()
    if p.exists() or len(p.parts) > 1:
        return str(p)  # a path: load_scenario says what is wrong with it
    bundled = bundled_scenario(given)
    if bundled is not None:
        return bundled
    raise UserError(f"{given}: no such scenario file, nor a bundled scenario "
                    f"(bundled: {', '.join(bundled_scenarios())})")


def _demo(opts: SourceOptions) -> Collector:
    from quotatop.simulation.scenario import load_scenario
    from quotatop.simulation.scenario_playback import ScenarioError
    from quotatop.simulation.scenario_source import ScenarioSource

    path = scenario_path(opts.scenario) if opts.scenario else str(DEFAULT_SCENARIO)
    scenario = load_scenario(path)  # raises UserError itself
    try:
        return ScenarioSource(scenario)
    except ScenarioError as exc:  # the core refused it: as `simulate` says it (run_v2)
        raise UserError(f"{path}: {exc}") from None


def _slurm(opts: SourceOptions) -> Collector:
    from quotatop.collectors.slurm.collector import SlurmCollector
    from quotatop.collectors.slurm.runner import NotAllowed

    try:
        return SlurmCollector(
            ssh_host=opts.ssh_host,
            timeout=opts.timeout,
            refresh=opts.refresh,
            slow_every=opts.slurm_slow_every,
        )
    except NotAllowed as exc:
        raise UserError(str(exc)) from None


def _k8s(opts: SourceOptions) -> Collector:
    from quotatop.collectors.k8s.collector import KubernetesCollector, KubernetesConfig
    from quotatop.collectors.k8s.kubeconfig import KubeconfigError, check_kubeconfig

    kubeconfig = _existing_file(opts.kubeconfig, "kubeconfig")
    if kubeconfig is not None and not opts.in_cluster:
        try:  # a malformed file is bad input: one line now, not a banner later
            check_kubeconfig(kubeconfig, opts.context)
        except KubeconfigError as exc:
            raise UserError(str(exc)) from None
    return KubernetesCollector(
        KubernetesConfig(
            kubeconfig=kubeconfig,
            context=opts.context,
            in_cluster=opts.in_cluster,
            team_label=opts.team_label,
            namespaces=tuple(opts.namespaces) if opts.namespaces else None,
            connect_timeout=opts.timeout,
            visibility_interval=opts.kueue_visibility_interval,
        )
    )


def _prometheus(opts: SourceOptions) -> Collector:
    from quotatop.collectors.prometheus_source import (
        DEFAULT_GROUPS,
        PrometheusCollector,
        PrometheusConfig,
    )

    if not opts.prometheus_url:
        raise UserError("the prometheus source needs a URL: --prometheus-url URL, or url "
                        "under [sources.prometheus] in the config")
    # The flag, the variable and the config key are each checked where they are read,
    # naming themselves; this is for a caller that builds SourceOptions itself.
    if (problem := url_problem(opts.prometheus_url)) is not None:
        raise UserError(f"prometheus URL: {problem}")
    for env_field in ("prometheus_bearer_token_env", "prometheus_basic_password_env"):
        if (value := getattr(opts, env_field)) is not None and (not value or "=" in value):
            raise UserError(f"option {env_field} names an environment variable, not {value!r}")
    collector = PrometheusCollector(
        PrometheusConfig(
            url=opts.prometheus_url,
            groups=tuple(opts.prometheus_groups)
            if opts.prometheus_groups is not None
            else DEFAULT_GROUPS,
            queries=dict(opts.prometheus_queries),
            team_label=opts.prometheus_team_label,
            timeout=opts.timeout,
            bearer_token_env=opts.prometheus_bearer_token_env,
            bearer_token_file=_existing_file(
                opts.prometheus_bearer_token_file, "bearer token file"
            ),
            basic_user=opts.prometheus_basic_user,
            basic_password_env=opts.prometheus_basic_password_env,
            basic_password_file=_existing_file(
                opts.prometheus_basic_password_file, "password file"
            ),
        )
    )
    # An unset variable or unreadable file is bad input, not an outage: say it now.
    problem = getattr(collector, "_config_error", None)
    if problem:
        collector.close()
        raise UserError(f"prometheus: {problem}")
    return collector


def _replay(opts: SourceOptions) -> Collector:
    from quotatop.recording.replay_source import ReplaySource
    from quotatop.recording.store import RecordingError

    if not opts.recording:
        raise UserError("the replay source needs a recording file (recording)")
    try:
        return ReplaySource(opts.recording, speed=opts.replay_speed)  # type: ignore[return-value]
    except RecordingError as exc:
        raise UserError(str(exc)) from None


def _live(opts: SourceOptions) -> Collector:
    from quotatop.recording.live_source import LiveSource
    from quotatop.recording.store import RecordingError

    if not opts.recording:
        raise UserError("the live source needs the recording a poller writes (recording)")
    try:
        return LiveSource(opts.recording, refresh=opts.refresh, pidfile=opts.live_pidfile,
                          stale_after=opts.live_stale_after)
    except RecordingError as exc:
        raise UserError(str(exc)) from None


_BUILDERS: dict[str, Callable[[SourceOptions], Collector]] = {
    "demo": _demo,
    "slurm": _slurm,
    "k8s": _k8s,
    "prometheus": _prometheus,
    "replay": _replay,
    "live": _live,
}
