"""Every string from a cluster is untrusted (issue #35): each class of control character
sent through every output that can be driven in-process comes out escaped, never raw;
and a URL's credentials never reach a label, a banner or a message.

The one rule is collectors/untrusted.py; these tests hold every output to it."""

from __future__ import annotations

import asyncio
import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text
from tests_tui_helpers import loaded, screen_text
from tui_fixtures import FixedCollector, frozen_clock

from quotatop.cli import main
from quotatop.collectors.model import Job, Node, Partition, Snapshot, Team
from quotatop.collectors.untrusted import (
    json_safe,
    json_safe_bytes,
    markdown_text,
    printable,
    printable_lines,
    printable_tree,
    redact_url,
    redact_urls_in,
)
from quotatop.recording.store import Recorder

T = 1_800_000_000.0

# One of each class the issue names, each as an attack would use it.
CONTROLS = {
    "nul": "\x00",
    "c0": "\x01\x02\x08\x0b\x0c",
    "tab": "\t",
    "newline": "\nforged row",
    "carriage return": "\rover",
    "bel": "\x07",
    "esc csi": "\x1b[2J\x1b[31m",
    "esc osc title": "\x1b]0;pwned\x07",
    "esc osc hyperlink": "\x1b]8;;http://evil\x1b\\",
    "del": "\x7f",
    "c1 csi": "\x9b31m",
    "c1 next line": "\x85",
    "c1 osc": "\x9d0;x\x9c",
    "bidi embedding": "\u202a\u202b\u202c",
    "bidi override": "\u202d\u202egnp.exe",
    "bidi isolate": "\u2066\u2067\u2068\u2069",
    "zero width": "\u200b\u200c\u200d\u2060",
    "direction marks": "\u200e\u200f\u061c",
    "line separators": "\u2028\u2029",
    "bom": "\ufeff",
    "soft hyphen": "\xad",
    "tag characters": "\U000e0001\U000e0041",
}
EVERY = "x" + "".join(CONTROLS.values()) + "y"


def raw_controls(out: str) -> list[str]:
    """The characters of an output a terminal would act on or that hide text: any that
    is not printable, but for the output's own line breaks."""
    return sorted({c for c in out if not c.isprintable() and c != "\n"})


def hostile(tag: str = EVERY) -> Snapshot:
    """A small cluster whose every name the source writes holds ``tag``."""
    nodes = [Node(name=n, partitions=["gpu"], state="mixed",
                  capacity={"cpu": 8, "memory": 1000, "gpu": 8}) for n in ("n1", "n2")]
    nodes[0].allocated = {"cpu": 8, "memory": 1000, "gpu": 8}
    nodes[1].reason = f"drained {tag}"
    team = f"team{tag}"
    running = Job(id=f"1{tag}", name=f"run{tag}", user=f"u{tag}", team=team, state="running",
                  partition="gpu", request={"cpu": 8, "memory": 1000, "gpu": 8},
                  time_limit=100.0, submit_time=T - 20, start_time=T - 10, nodes=["n1"])
    waiting = Job(id=f"2{tag}", name=f"wait{tag}", user=f"v{tag}", team=team, partition="gpu",
                  request={"cpu": 8, "memory": 1000, "gpu": 8}, time_limit=300.0,
                  submit_time=T - 5, priority=200.0, reason=f"Priority{tag}",
                  constraint=f"h100{tag}")
    blocked = Job(id=f"3{tag}", name=f"big{tag}", user=f"w{tag}", team=team, partition="gpu",
                  request={"cpu": 8, "memory": 1000, "gpu": 16}, nodes_requested=1,
                  time_limit=300.0, submit_time=T - 4, priority=100.0)
    return Snapshot(source=f"slurm{tag}", cluster=f"c{tag}", taken_at=T, nodes=nodes,
                    partitions=[Partition(name="gpu", nodes=["n1", "n2"])],
                    teams=[Team(name=team, guarantee={"gpu": 8.0})],
                    jobs=[running, waiting, blocked], warnings=[f"squeue said {tag}"],
                    meta={"unit": "gpu"})


def record(path: Path, *snaps: Snapshot) -> Path:
    with Recorder(path, source="test") as rec:
        for s in snaps:
            rec.append(s)
    return path


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse
        rc = int(e.code or 0)
    got = capsys.readouterr()
    return rc, got.out, got.err


# ---- the rule ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", CONTROLS)
def test_each_class_is_escaped_visibly_and_once(name: str) -> None:
    text = f"a{CONTROLS[name]}b"
    out = printable(text)
    assert out.isprintable() and out.startswith("a") and out.endswith("b")
    assert out != text.replace(CONTROLS[name], "")  # escaped, not dropped
    assert "\\" in out
    assert printable(out) == out  # escaping an escaped text changes nothing


def test_clean_text_and_clean_snapshots_are_the_same_objects() -> None:
    name = "plain ünïcode 名前 DOMAIN\\user"
    assert printable(name) is name
    snap = hostile(tag="-ok")
    assert printable_tree(snap) is snap


def test_a_snapshot_is_escaped_where_dirty_and_shared_where_clean() -> None:
    snap = hostile()
    snap.jobs.append(Job(id="clean", team="t"))
    out = printable_tree(snap)
    assert out is not snap and out.jobs[-1] is snap.jobs[-1]
    assert out.nodes[0] is snap.nodes[0]  # nothing dirty in it
    assert raw_controls(json.dumps(msgspec_builtins(out), ensure_ascii=False)) == []
    assert out.jobs[0].team == printable(snap.jobs[0].team)


def msgspec_builtins(obj: object) -> object:
    import msgspec

    return msgspec.to_builtins(obj)


def test_json_keeps_the_data_and_no_raw_control() -> None:
    doc = json.dumps({"k": EVERY, "ok": "é名"}, ensure_ascii=False)
    # json.dumps leaves DEL, C1 and the format characters raw: the reason for json_safe.
    assert raw_controls(doc) != []
    safe = json_safe(doc)
    assert raw_controls(safe) == [] and json.loads(safe) == {"k": EVERY, "ok": "é名"}
    assert "é名" in safe  # ordinary non-ASCII stays readable
    import msgspec

    raw = msgspec.json.encode({"k": EVERY})
    assert json.loads(json_safe_bytes(raw)) == {"k": EVERY}
    assert raw_controls(json_safe_bytes(raw).decode()) == []


def test_printable_lines_keeps_line_breaks_only() -> None:
    assert printable_lines("a\x1bb\nc\u202ed") == "a\\x1bb\nc\\u202ed"


# ---- every output ---------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [[], ["--csv"], ["--json"]], ids=["table", "csv", "json"])
def test_predict_outputs_hold_no_raw_control(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             fmt: list[str]) -> None:
    rec = record(tmp_path / "r.qtr", hostile())
    rc, out, err = run_cli(["predict", "--source", "replay", str(rec), *fmt], capsys)
    assert rc == 0, err
    assert raw_controls(out) == [] and raw_controls(err) == []
    if fmt == ["--json"]:
        doc = json.loads(out)
        assert {j["team"] for j in doc["jobs"]} == {f"team{EVERY}"}  # the data, exactly
    elif fmt == []:
        assert len(out.strip().splitlines()) == 1 + 2  # the header, two pending jobs
        assert printable(f"team{EVERY}")[:14] in out


def test_snapshot_summary_and_json_hold_no_raw_control(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec = record(tmp_path / "r.qtr", hostile())
    for fmt in ([], ["--json"]):
        rc, out, err = run_cli(["snapshot", "--source", "replay", "--recording", str(rec),
                                *fmt], capsys)
        assert rc == 0, err
        assert raw_controls(out) == [] and raw_controls(err) == []
        if fmt:
            assert json.loads(out)["cluster"] == f"c{EVERY}"
        else:
            assert "warning: squeue said x" in out and "\\x1b" in out


@pytest.mark.parametrize("fmt", ["md", "csv", "html", "json"])
def test_report_formats_hold_no_raw_control(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            fmt: str) -> None:
    first, second = hostile(), hostile()
    second.taken_at = T + 600
    second.jobs[0].state = "completed"
    second.jobs[0].end_time = T + 300
    rec = record(tmp_path / "r.qtr", first, second)
    rc, out, err = run_cli(["report", "--source", "replay", str(rec), "--since", "1d",
                            "--format", fmt], capsys)
    assert rc == 0, err
    assert raw_controls(out) == [] and raw_controls(err) == []
    if fmt == "json":
        assert json.loads(out)["cluster"] == f"c{EVERY}"
    else:  # Markdown escapes printable's own backslashes too, for its viewer
        assert (markdown_text if fmt == "md" else printable)(f"team{EVERY}")[:20] in out


@pytest.mark.parametrize("fmt", [[], ["--json"]], ids=["text", "json"])
def test_whatif_outputs_hold_no_raw_control(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            fmt: list[str]) -> None:
    rec = record(tmp_path / "r.qtr", hostile())
    change = f"team='team{EVERY}' max.gpu=16"
    rc, out, err = run_cli(["whatif", "--source", "replay", str(rec), "--set", change, *fmt],
                           capsys)
    assert rc == 0, err
    assert raw_controls(out) == [] and raw_controls(err) == []
    if fmt:
        json.loads(out)


def test_replay_json_holds_no_raw_control(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    rec = record(tmp_path / "r.qtr", hostile())
    rc, out, err = run_cli(["replay", str(rec), "--json"], capsys)
    assert rc == 0, err
    assert raw_controls(out) == [] and json.loads(out)["snapshot"]["cluster"] == f"c{EVERY}"


def test_an_error_quoting_hostile_text_is_one_clean_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A file name is as hostile as a job name: the message quotes it.
    missing = tmp_path / f"rec{EVERY.replace(chr(0), '')}.qtr"
    rc, out, err = run_cli(["predict", "--source", "replay", str(missing)], capsys)
    assert rc == 2 and out == ""
    assert raw_controls(err) == [] and err.count("\n") == 1 and err.startswith("quotatop: ")
    rc, out, err = run_cli(["predict", f"--bogus{EVERY}"], capsys)  # argparse's own
    assert rc == 2 and raw_controls(err) == [] and err.count("\n") == 1


def test_exporter_labels_hold_no_raw_control() -> None:
    pytest.importorskip("prometheus_client")
    from prometheus_client import generate_latest

    from quotatop.commands.exporter import Exporter

    ex = Exporter(FixedCollector(hostile()), cluster=f"c{EVERY}", refresh=60.0)  # type: ignore[arg-type]
    ex.poll()
    text = generate_latest(ex.registry).decode()
    assert raw_controls(text) == []
    team_lines = [ln for ln in text.splitlines() if ln.startswith("quotatop_team_jobs_pending")]
    assert len(team_lines) == 1 and "team" in team_lines[0]


def test_rich_passes_esc_through_so_the_tui_escapes_first() -> None:
    """Why the TUI cleans a snapshot: Rich strips only BEL, BS, VT, FF and CR, and a
    Text (markup or not) hands ESC and C1 to the terminal as they are."""
    def rendered(text: str) -> str:
        buf = io.StringIO()
        Console(file=buf, force_terminal=True, color_system=None, width=200).print(
            Text(text), end="")
        return buf.getvalue()

    assert "\x1b]0;pwned" in rendered(f"job{EVERY}")  # raw, as the issue says
    shown = printable_tree(hostile())
    for job in shown.jobs:
        out = rendered(" ".join([job.id, job.name, job.user, job.team, job.reason or ""]))
        assert "\x1b" not in out and raw_controls(out) == []


async def test_every_tui_screen_shows_no_raw_control() -> None:
    from quotatop.tui.app import QuotatopApp
    from quotatop.tui.views_registry import VIEW_IDS

    snap = hostile()
    snap.stale, snap.stale_reason = True, f"squeue: {EVERY}"  # the banner too
    app = QuotatopApp(FixedCollector(snap), refresh=60.0, clock=frozen_clock)
    async with app.run_test(size=(160, 40)) as pilot:
        await loaded(pilot)
        seen = ""
        for key in "1234567"[:len(VIEW_IDS)]:
            await pilot.press(key)
            await pilot.pause()
            text = screen_text(app)
            assert raw_controls(text) == [], (key, raw_controls(text))
            seen += text
        assert "\\x1b" in seen and "team" in seen  # the names are there, escaped
        # The recording keeps the source's own words; only the screen is escaped.
        assert app.session._raw is snap


# ---- URL credentials --------------------------------------------------------------------


@pytest.mark.parametrize(("url", "shown"), [
    ("http://u:secret@prom:9090/api", "http://prom:9090/api"),
    ("https://secret@[::1]:9090", "https://[::1]:9090"),
    ("http://prom:9090/?token=secret&step=60", "http://prom:9090/?token=***&step=60"),
    ("http://prom/?access_token=secret", "http://prom/?access_token=***"),
    ("http://prom/?password=secret&X-Amz-Security-Token=secret",
     "http://prom/?password=***&X-Amz-Security-Token=***"),
    ("http://prom:9090", "http://prom:9090"),
    ("http://u:secret@[::1", "http://[::1"),  # not a URL urlsplit reads: never raises
])
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown and "secret" not in redact_url(url)


def test_redact_urls_in_a_command_line() -> None:
    line = "python -m quotatop --prometheus-url 'http://u:secret@h:9090' --x=https://t@h2/"
    assert redact_urls_in(line) == "python -m quotatop --prometheus-url 'http://h:9090' " \
                                   "--x=https://h2/"


def test_exporter_default_cluster_label_has_no_credentials() -> None:
    from quotatop.commands.exporter import default_cluster
    from quotatop.sources import SourceOptions

    opts = SourceOptions(prometheus_url="http://u:secret@prom:9090/?token=secret")
    assert default_cluster("prometheus", opts) == "prometheus/prom:9090"


def test_web_banner_has_no_credentials() -> None:
    pytest.importorskip("textual_serve")
    from quotatop.commands.web_sessions import make_server

    # A URL with credentials given to some other flag than --prometheus-url (which goes
    # to the sessions by environment): the banner redacts it all the same.
    server = make_server(["--source", "prometheus", "--prometheus-url",
                          "http://u:secret@prom:9090/?token=secret",
                          "--record-dir", "http://u:secret@prom:9090/?token=secret"],
                         "127.0.0.1", 8000, "http://127.0.0.1:8000", 4)
    buf = io.StringIO()
    server.console = Console(file=buf, width=400)
    asyncio.run(server.on_startup(None))
    out = buf.getvalue()
    assert "secret" not in out and "http://prom:9090/?token=***" in out
    assert "Serving" in out


def test_source_and_web_messages_have_no_credentials(
        capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(["predict", "--source", "prometheus", "--prometheus-url",
                          "ftp://u:secret@prom/"], capsys)
    assert rc == 2 and "secret" not in err and "ftp://prom/" in err
    rc, _, err = run_cli(["web", "--public-url", "ftp://u:secret@h/", "--source", "demo"],
                         capsys)
    assert rc == 2 and "secret" not in err and "ftp://h/" in err


# URLs that http.client refused only when the first request was made, as a traceback
# (exit 1): a port out of range, a broken IPv6 literal; and ones with no host or port 0.
BAD_URLS = {
    "port out of range": "http://USER:SECRET@127.0.0.1:99999",
    "ipv6 unclosed": "http://USER:SECRET@[::1",
    "port not a number": "http://USER:SECRET/",  # no @: "USER:SECRET" read as host:port
    "no host": "http://USER:SECRET@:9090/",
    "port 0": "https://USER:SECRET@prom:0/",
    "not http": "ftp://USER:SECRET@prom/",
}


@pytest.mark.parametrize("url", list(BAD_URLS.values()), ids=list(BAD_URLS))
def test_a_bad_url_is_one_line_naming_where_it_was_read_without_the_secret(
        url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from quotatop.collectors.errors import UserError
    from quotatop.collectors.k8s.kubeconfig import KubeconfigError, check_kubeconfig
    from quotatop.config import parse_config
    from quotatop.source_flags import PROMETHEUS_URL_ENV

    for argv, names in (
            (["snapshot", "--source", "prometheus", "--prometheus-url", url], "--prometheus-url"),
            (["web", "--public-url", url, "--source", "demo"], "--public-url")):
        rc, out, err = run_cli(argv, capsys)
        assert rc == 2 and out == "" and len(err.splitlines()) == 1, (argv, err)
        assert names in err and "SECRET" not in err, err
    monkeypatch.setenv(PROMETHEUS_URL_ENV, url)
    rc, _, err = run_cli(["predict", "--source", "prometheus"], capsys)
    assert rc == 2 and err.startswith(f"quotatop: ${PROMETHEUS_URL_ENV}: ") and \
        "SECRET" not in err, err
    with pytest.raises(UserError, match=r"at sources\.prometheus\.url: ") as e:
        parse_config(f'[sources.prometheus]\nurl = "{url}"\n', "c.toml")
    assert "SECRET" not in str(e.value)
    kube = tmp_path / "kubeconfig"
    kube.write_text(f"clusters: [{{name: c, cluster: {{server: '{url}'}}}}]\n"
                    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                    "users: [{name: u, user: {}}]\ncurrent-context: x\n")
    with pytest.raises(KubeconfigError, match=r"cluster 'c': server: ") as k:
        check_kubeconfig(str(kube))
    assert "SECRET" not in str(k.value)


def test_a_good_url_passes_everywhere_it_is_read() -> None:
    from quotatop.collectors.untrusted import url_problem

    for url in ("http://u:p@127.0.0.1:9090/prom", "https://[::1]:1/", "http://prom"):
        assert url_problem(url) is None, url


def test_k8s_snapshot_and_messages_have_no_credentials() -> None:
    pytest.importorskip("kubernetes")
    from quotatop.collectors.k8s import reflector as rf

    _, message = rf.classify(ConnectionRefusedError(), "discovery",
                             "https://u:secret@api:6443")
    assert "secret" not in message and "https://api:6443" in message


def test_prometheus_snapshot_names_no_credentials() -> None:
    from quotatop.collectors.prometheus_source import PrometheusCollector, PrometheusConfig

    c = PrometheusCollector(PrometheusConfig(url="http://u:secret@127.0.0.1:9/?token=secret",
                                             timeout=0.5))
    snap = c.collect()
    assert "secret" not in repr(c)
    blob = json.dumps(msgspec_builtins(snap))
    assert "secret" not in blob and snap.meta["prometheus_url"] == \
        "http://127.0.0.1:9/?token=***"


async def test_the_banner_shows_the_clusters_brackets_as_text_not_markup() -> None:
    """A str given to a Static is Textual markup: a stderr line with "[reverse]" hid
    text and one with "[@click=app.quit]" made a link that acts."""
    from quotatop.tui.app import QuotatopApp

    snap = hostile(tag="-ok")
    snap.stale = True
    snap.stale_reason = "squeue: [reverse]x[/reverse] gpu[01-04] [@click=app.quit]q[/]"
    app = QuotatopApp(FixedCollector(snap), refresh=60.0, clock=frozen_clock)
    async with app.run_test(size=(200, 40)) as pilot:
        await loaded(pilot)
        banner = [ln for ln in screen_text(app).splitlines() if "source stale" in ln]
        assert banner and f"source stale: {snap.stale_reason}" in banner[0], banner


# An HTML tag, a forged cell, an entity, and Markdown's inline link, image, emphasis,
# code and strike-through.
MARKUP = "<img src=x onerror=alert(1)>|a\\|b&amp;[l](http://e)![x](y)**b**_i_`c`~s~#"


def _cells(row: str) -> list[str]:
    """A Markdown table row's cells, as a GFM reader splits them: at each "|" that no
    backslash escapes."""
    return re.split(r"(?<!\\)((?:\\\\)*)\|", row.strip())[::2][1:-1]


def test_markdown_report_escapes_cells_as_html_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = hostile(MARKUP), hostile(MARKUP)
    second.taken_at = T + 600
    rec = record(tmp_path / "r.qtr", first, second)
    rc, out, err = run_cli(["report", "--source", "replay", str(rec), "--since", "1d",
                            "--format", "md"], capsys)
    assert rc == 0, err
    assert "<" not in out and ">" not in out.replace("\n> ", "\n")  # notes are quotes
    for block in out.split("\n## ")[1:]:
        rows = [line for line in block.splitlines() if line.startswith("|")]
        widths = {len(_cells(r)) for r in rows}
        assert len(widths) == 1, (block.splitlines()[0], widths)  # no forged cell
    # Read back as Markdown and HTML read it, a cell is the name exactly.
    back = (markdown_text(f"team{MARKUP}").replace("&lt;", "<").replace("&gt;", ">")
            .replace("&amp;", "&"))
    assert re.sub(r"\\(.)", r"\1", back) == f"team{MARKUP}"
    assert markdown_text(f"team{MARKUP}") in out
