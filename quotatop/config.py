"""quotatop's config file: ``$XDG_CONFIG_HOME/quotatop/config.toml`` (or ``--config PATH``).

TOML decoded with msgspec into ``Config``: the default source and its options, the
refresh cadence and per-source poll intervals, PromQL overrides, Prometheus credentials
*by reference* (an environment variable or file name, never the secret) and the incident
thresholds, kept as an opaque table for the incidents code to decode. Every problem is a
``UserError`` naming the file, the key and what is wrong. Format: docs/config.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import msgspec

from quotatop.collectors.errors import UserError
from quotatop.collectors.files import parse_toml, read_small_file
from quotatop.collectors.untrusted import url_problem
from quotatop.sources import SOURCES, SourceOptions, options_from_mapping

Seconds = Annotated[float, msgspec.Meta(gt=0)]

# Keys of the TUI's former config format -> where they live now, so an old file gets a
# pointer instead of a bare "unknown field".
_MOVED = {
    ("tui", "source"): "source",
    ("tui", "refresh"): "refresh",
    ("tui", "scenario"): "sources.demo.scenario",
    ("tui", "replay"): "sources.replay.recording",
    ("slurm",): "[sources.slurm]",
    ("k8s",): "[sources.k8s]",
    ("prometheus",): "[sources.prometheus]",
}

# Keys that would hold a secret in the file -> the reference to use instead.
_SECRET_KEYS = {
    "password": "basic_password",
    "basic_password": "basic_password",
    "token": "bearer_token",
    "bearer_token": "bearer_token",
}


class _Table(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class DemoConfig(_Table):
    scenario: str | None = None


class SlurmConfig(_Table):
    ssh_host: str | None = None
    timeout: Seconds | None = None
    slow_every: Seconds | None = None


class K8sConfig(_Table):
    kubeconfig: str | None = None
    context: str | None = None
    in_cluster: bool = False
    team_label: str | None = None
    namespaces: list[str] | None = None
    timeout: Seconds | None = None
    visibility_interval: Annotated[float, msgspec.Meta(ge=0)] | None = None


class PrometheusTable(_Table):
    url: str | None = None
    timeout: Seconds | None = None
    groups: list[str] | None = None
    team_label: str | None = None
    queries: dict[str, str] = {}  # name -> PromQL; "" disables a default query
    bearer_token_env: str | None = None
    bearer_token_file: str | None = None
    basic_user: str | None = None
    basic_password_env: str | None = None
    basic_password_file: str | None = None


class ReplayConfig(_Table):
    recording: str | None = None
    speed: Seconds | None = None


class LiveConfig(_Table):
    """A recording a poller (`quotatop record --daemon`) is writing, viewed live."""

    recording: str | None = None
    pidfile: str | None = None  # the poller's pid file: gone means the poller stopped
    stale_after: Annotated[int, msgspec.Meta(ge=1)] | None = None  # poller intervals


class TuiConfig(_Table):
    """Settings only the TUI (`quotatop` with no subcommand) reads."""

    theme: str | None = None  # any Textual theme; None: Textual's default
    record_dir: str | None = None  # where R records; None: $XDG_STATE_HOME/quotatop
    export_dir: str | None = None  # where e/E exports and ctrl+s screenshots go; None: cwd


class WebConfig(_Table):
    """Settings only `quotatop web` reads (quotatop/commands/web.py)."""

    # Browser sessions at once, each a TUI process; None: the command's default.
    max_sessions: Annotated[int, msgspec.Meta(ge=1, le=1000)] | None = None


class SourcesConfig(_Table):
    demo: DemoConfig = msgspec.field(default_factory=DemoConfig)
    slurm: SlurmConfig = msgspec.field(default_factory=SlurmConfig)
    k8s: K8sConfig = msgspec.field(default_factory=K8sConfig)
    prometheus: PrometheusTable = msgspec.field(default_factory=PrometheusTable)
    replay: ReplayConfig = msgspec.field(default_factory=ReplayConfig)
    live: LiveConfig = msgspec.field(default_factory=LiveConfig)


# The least seconds between polls of a source when the config gives none (`poll`).
DEFAULT_POLL: dict[str, float] = {"slurm": 5.0}


class Config(_Table):
    source: str = "demo"  # the source `quotatop` opens without --source
    refresh: Seconds = 2.0  # seconds between refreshes of the view
    poll: dict[str, Seconds] = {}  # per-source poll interval; missing: refresh
    sources: SourcesConfig = msgspec.field(default_factory=SourcesConfig)
    incidents: dict[str, Any] = {}  # thresholds, decoded by the incidents code
    prices: dict[str, Any] = {}  # cost per hour for `quotatop report`, checked by review
    tui: TuiConfig = msgspec.field(default_factory=TuiConfig)
    web: WebConfig = msgspec.field(default_factory=WebConfig)
    path: str | None = None  # where it was read from (not a key in the file)

    def poll_interval(self, source: str) -> float:
        # Slurm is polled no faster than every 5 s unless the config says otherwise: one
        # round is 3 slurmctld RPCs (squeue, sinfo), so a viewer or a poller stays under
        # the load of `watch -n2 squeue` (60 a minute; bench/rpc_load.py measures it).
        return self.poll.get(source, max(self.refresh, DEFAULT_POLL.get(source, 0.0)))

    def source_options(self, source: str | None = None, **overrides: Any) -> SourceOptions:
        """SourceOptions for ``source`` (default: the configured one) from this file, with
        ``overrides`` (command-line flags; None means "not given") taking precedence."""
        name = source or self.source
        s = self.sources
        table: dict[str, Any] = {
            "scenario": s.demo.scenario,
            "ssh_host": s.slurm.ssh_host,
            "slurm_slow_every": s.slurm.slow_every,
            "kubeconfig": s.k8s.kubeconfig,
            "context": s.k8s.context,
            "in_cluster": s.k8s.in_cluster,
            "team_label": s.k8s.team_label,
            "namespaces": s.k8s.namespaces,
            "kueue_visibility_interval": s.k8s.visibility_interval,
            "prometheus_url": s.prometheus.url,
            "prometheus_queries": dict(s.prometheus.queries),
            "prometheus_groups": s.prometheus.groups,
            "prometheus_team_label": s.prometheus.team_label,
            "prometheus_bearer_token_env": s.prometheus.bearer_token_env,
            "prometheus_bearer_token_file": s.prometheus.bearer_token_file,
            "prometheus_basic_user": s.prometheus.basic_user,
            "prometheus_basic_password_env": s.prometheus.basic_password_env,
            "prometheus_basic_password_file": s.prometheus.basic_password_file,
            "recording": s.live.recording if name == "live" else s.replay.recording,
            "replay_speed": s.replay.speed,
            "live_pidfile": s.live.pidfile,
            "live_stale_after": s.live.stale_after,
            "timeout": {
                "slurm": s.slurm.timeout,
                "k8s": s.k8s.timeout,
                "prometheus": s.prometheus.timeout,
            }.get(name),
            "refresh": self.poll_interval(name),
        }
        table.update({k: v for k, v in overrides.items() if v is not None})
        # None: "not set here", so SourceOptions keeps its own default.
        clean = {k: v for k, v in table.items() if v is not None}
        return options_from_mapping(clean, f"{self.path or 'config'}")


def default_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".config"  # spec: ignore relative
    return root / "quotatop" / "config.toml"


def load_config(path: str | Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """The config at ``path`` (``--config``; must exist) or the XDG default (may be absent:
    then every default applies)."""
    explicit = path is not None
    p = Path(path).expanduser() if explicit else default_path(env)  # type: ignore[arg-type]
    try:
        text = read_small_file(p, "config file")
    except FileNotFoundError:
        if explicit:
            raise UserError(f"{p}: no such config file") from None
        return Config()
    except OSError as exc:
        raise UserError(f"{p}: cannot read: {exc.strerror}") from None
    return parse_config(text, str(p))


def parse_config(text: bytes | str, where: str = "config") -> Config:
    raw = parse_toml(text, where)
    if "path" in raw:
        raise UserError(f"{where}: at path: unknown key")
    _refuse_moved(raw, where)
    _refuse_secrets(raw, where)
    _check_maps(raw, where)
    try:
        cfg = msgspec.convert(raw, Config)
    except msgspec.ValidationError as exc:
        msg, _, place = str(exc).partition(" - at `")
        key = place.rstrip("`").removeprefix("$.").removeprefix("$") or "top level"
        raise UserError(f"{where}: at {key}: {msg}") from None
    cfg.path = where
    url = cfg.sources.prometheus.url
    if url is not None and (problem := url_problem(url)) is not None:
        raise UserError(f"{where}: at sources.prometheus.url: {problem}")
    if cfg.source not in SOURCES:
        raise UserError(
            f"{where}: at source: unknown source {cfg.source!r} (known: {', '.join(SOURCES)})"
        )
    return cfg


def _check_maps(raw: Mapping[str, Any], where: str) -> None:
    """Name the key inside free-form tables (msgspec says only ``[...]`` there)."""
    poll = raw.get("poll")
    if isinstance(poll, dict):
        for name, value in poll.items():
            if name not in SOURCES:
                known = ", ".join(SOURCES)
                raise UserError(f"{where}: at poll.{name}: unknown source (known: {known})")
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise UserError(
                    f"{where}: at poll.{name}: expected a positive number of seconds, got {value!r}"
                )
    sources = raw.get("sources")
    prometheus = sources.get("prometheus") if isinstance(sources, dict) else None
    queries = prometheus.get("queries") if isinstance(prometheus, dict) else None
    if isinstance(queries, dict):
        for name, value in queries.items():
            if not isinstance(value, str):
                raise UserError(
                    f"{where}: at sources.prometheus.queries.{name}: expected a PromQL "
                    f'string ("" disables the default), got {type(value).__name__}'
                )


def _refuse_moved(raw: Mapping[str, Any], where: str) -> None:
    tui = raw.get("tui")
    for key, new in _MOVED.items():
        here = key[0] in raw if len(key) == 1 else isinstance(tui, dict) and key[1] in tui
        if here:
            raise UserError(f"{where}: at {'.'.join(key)}: moved; write {new} instead "
                            "(docs/config.md)")


def _refuse_secrets(raw: Mapping[str, Any], where: str, prefix: str = "") -> None:
    for key, value in raw.items():
        dotted = f"{prefix}{key}"
        if key in _SECRET_KEYS:
            ref = _SECRET_KEYS[key]
            raise UserError(
                f"{where}: at {dotted}: secrets do not belong in the config file; name an "
                f"environment variable ({ref}_env) or a file ({ref}_file) instead"
            )
        if isinstance(value, dict) and dotted != "incidents":
            _refuse_secrets(value, where, dotted + ".")
