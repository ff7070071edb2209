"""quotatop.config: the XDG TOML config file, decoded into Config, bad input one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from quotatop.collectors.errors import UserError
from quotatop.config import Config, default_path, load_config, parse_config
from quotatop.sources import open_source

FULL = """
source = "k8s"
refresh = 3

[poll]
prometheus = 30
slurm = 5

[sources.slurm]
ssh_host = "login1"
slow_every = 120

[sources.k8s]
kubeconfig = "/etc/quotatop/kubeconfig"
context = "prod"
team_label = "quotatop.io/team"
timeout = 4
visibility_interval = 15

[sources.prometheus]
url = "https://prom.example:9090"
bearer_token_env = "PROM_TOKEN"
groups = ["dcgm", "kueue"]

[sources.prometheus.queries]
team_gpu_util = "avg by (namespace) (DCGM_FI_DEV_GPU_UTIL{cluster='a'})"
node_gpu_util = ""

[tui]
theme = "nord"
record_dir = "/scratch/rec"

[incidents]
idle_gpu_percent = 5
[incidents.borrowing]
max_minutes = 30
"""


def test_a_full_file_decodes(tmp_path: Path) -> None:
    p = tmp_path / "config.toml"
    p.write_text(FULL)
    cfg = load_config(p)
    assert cfg.source == "k8s" and cfg.refresh == 3.0 and cfg.path == str(p)
    assert cfg.poll_interval("prometheus") == 30 and cfg.poll_interval("k8s") == 3.0
    assert cfg.incidents == {"idle_gpu_percent": 5, "borrowing": {"max_minutes": 30}}  # opaque
    assert (cfg.tui.theme, cfg.tui.record_dir) == ("nord", "/scratch/rec")
    k8s = cfg.source_options()
    assert (k8s.kubeconfig, k8s.context, k8s.team_label) == (
        "/etc/quotatop/kubeconfig",
        "prod",
        "quotatop.io/team",
    )
    assert k8s.timeout == 4 and k8s.kueue_visibility_interval == 15 and k8s.refresh == 3.0
    prom = cfg.source_options("prometheus")
    assert prom.prometheus_url == "https://prom.example:9090" and prom.refresh == 30
    assert prom.prometheus_bearer_token_env == "PROM_TOKEN"
    assert prom.prometheus_groups == ["dcgm", "kueue"]
    assert prom.prometheus_queries["node_gpu_util"] == ""
    assert prom.timeout == 10.0  # not set for prometheus: the SourceOptions default
    slurm = cfg.source_options("slurm")
    assert slurm.ssh_host == "login1" and slurm.slurm_slow_every == 120 and slurm.refresh == 5


def test_flags_override_the_file() -> None:
    cfg = parse_config(FULL, "cfg")
    opts = cfg.source_options("k8s", context="staging", kubeconfig=None)
    assert opts.context == "staging"  # the flag wins
    assert opts.kubeconfig == "/etc/quotatop/kubeconfig"  # None = flag not given


def test_xdg_location_and_absence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "quotatop/config.toml"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_path({"XDG_CONFIG_HOME": "relative"}) == (
        tmp_path / "home/.config/quotatop/config.toml"
    )
    assert load_config(env={"XDG_CONFIG_HOME": str(tmp_path)}) == Config()  # absent: defaults
    (tmp_path / "quotatop").mkdir()
    (tmp_path / "quotatop/config.toml").write_text('source = "slurm"\n')
    assert load_config(env={"XDG_CONFIG_HOME": str(tmp_path)}).source == "slurm"


def test_an_explicit_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"nope\.toml: no such config file"):
        load_config(tmp_path / "nope.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("source = \n", r"cfg: not TOML: "),
        ('source = "lsf"\n', r"cfg: at source: unknown source 'lsf' \(known: demo, slurm"),
        ("refresh = 0\n", r"cfg: at refresh: Expected `float` > 0.0"),
        ('refresh = "fast"\n', r"cfg: at refresh: Expected `float`, got `str`"),
        ("[poll]\nlsf = 3\n", r"cfg: at poll.lsf: unknown source"),
        ("[poll]\nk8s = -1\n", r"cfg: at poll.k8s: expected a positive number of seconds, got -1"),
        (
            "[sources.k8s]\nkubecfg = 'x'\n",
            r"cfg: at sources.k8s: Object contains unknown field `kubecfg`",
        ),
        ("[sources.k8s]\ntimeout = 'x'\n", r"cfg: at sources.k8s.timeout: Expected `float"),
        (
            "[sources.prometheus.queries]\nq = 3\n",
            r"at sources.prometheus.queries.q: expected a PromQL string .*got int",
        ),
        ("[sources.lsf]\nx = 1\n", r"cfg: at sources: Object contains unknown field `lsf`"),
        ("[tui]\ncolour = 1\n", r"cfg: at tui: Object contains unknown field `colour`"),
        ("[tui]\ntheme = 3\n", r"cfg: at tui.theme: Expected `str \| null`, got `int`"),
        # The TUI's former format: each moved key says where it lives now.
        ('[tui]\nsource = "slurm"\n', r"cfg: at tui.source: moved; write source instead"),
        ('[tui]\nreplay = "r.qtr"\n', r"at tui.replay: moved; write sources.replay.recording"),
        ('[slurm]\nssh_host = "x"\n', r"cfg: at slurm: moved; write \[sources.slurm\]"),
        (
            "[sources.prometheus]\npassword = 'hunter2'\n",
            r"at sources.prometheus.password: secrets do not belong .*basic_password_env",
        ),
        (
            "[sources.prometheus]\nbearer_token = 'abc'\n",
            r"bearer_token_env\) or a file \(bearer_token_file",
        ),
    ],
)
def test_bad_config_names_file_key_and_problem(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message) as info:
        parse_config(text, "cfg")
    assert "\n" not in str(info.value)
    assert "hunter2" not in str(info.value) and "abc'" not in str(info.value)


def test_not_utf8(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_bytes(b"source = '\xff'\n")
    with pytest.raises(UserError, match="not UTF-8"):
        load_config(p)


def test_config_drives_the_registry(tmp_path: Path) -> None:
    cfg = parse_config('[sources.demo]\nscenario = "does-not-exist.toml"\n', "cfg")
    with pytest.raises(UserError, match=r"does-not-exist\.toml: no such scenario file"):
        open_source(cfg.source, cfg.source_options())
    col = open_source("demo", parse_config("", "cfg").source_options())
    try:
        assert col.collect().meta["step"] == "1"
    finally:
        col.close()
