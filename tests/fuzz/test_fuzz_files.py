"""Fuzz of the files quotatop reads: scenarios, the config, kubeconfigs, workload traces
(SWF, GPU CSV, Philly JSON, node lists) and recordings.

Each is read the way its command reads it, and the answer is a result or one UserError
(RecordingError for a recording) of one line. Files that load are taken one step
further where that step is cheap and bounded: a scenario is simulated, a trace run
through the core, every frame of a recording decoded.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
import sqlite3
import struct
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from fuzz.strategies import (
    DEMO,
    ROOT,
    Named,
    NamedText,
    decoded_text,
    dump_json,
    fuzz,
    hostile_numbers,
    hostile_text,
    hostile_words,
    json_values,
    mutated_bytes,
    mutated_json,
    one_line,
    read_text,
)
from quotatop.collectors.errors import UserError
from quotatop.collectors.k8s.kubeconfig import KubeconfigError, check_kubeconfig
from quotatop.collectors.model import Job, Node, Snapshot, Team
from quotatop.config import parse_config
from quotatop.recording.store import Recorder, Recording, RecordingError
from quotatop.simulation.scenario import ScenarioV2, load_scenario
from quotatop.simulation.simulate import jsonl_lines
from quotatop.simulation.trace_simulate import load_trace, simulate_trace
from quotatop.sources import SOURCES


@contextmanager
def _file(data: bytes, name: str) -> Iterator[Path]:
    """``data`` in a file of its own, in a folder removed afterwards (Hypothesis runs
    many cases in one test call: the tmp_path fixture would be shared by all)."""
    with tempfile.TemporaryDirectory(prefix="quotatop-fuzz-") as d:
        path = Path(d) / name
        path.write_bytes(data)
        yield path


def _user_error(call: Callable[[], object]) -> object:
    try:
        return call()
    except UserError as exc:
        one_line(str(exc))
        return exc


# ---- TOML ------------------------------------------------------------------------------
# Values TOML can write that no scenario or config means: non-finite and huge numbers,
# ints past 64 bits (tomllib reads any size), dates, the wrong type, escapes TOML
# refuses, and nesting deep enough to exhaust a recursive reader.
TOML_VALUES = [
    "nan", "+nan", "inf", "-inf", "1e308", "-1e308", "1e400", "9223372036854775807",
    "-9223372036854775809", "9" * 40, "0", "-1", "-0.0", "0x7fffffff", "0o777", "1_000",
    "100000", "1000001", '""', '" "', '"\\u0000"', '"\\ud800"', '"\\U0010FFFF"', "[]", "{}",
    '[1, "a"]', "{ a = 1 }", "true", "1979-05-27T07:32:00Z", "07:32:00", "1979-05-27",
    "'lit'", '"""a\nb"""', '"demo"', '"slurm"', '"multifactor"', '"fifo"', '"normal"',
]


def _deep(n: int) -> str:
    return "[" * n + "]" * n if n % 2 else "{ a = " * n + "1" + " }" * n


toml_values = (
    st.sampled_from(TOML_VALUES)
    | st.integers(1, 3000).map(_deep)
    | hostile_text.map(lambda s: json.dumps(s))  # a JSON string is a TOML basic string
    | hostile_numbers.map(lambda x: repr(x) if isinstance(x, int) else repr(float(x)))
)
_ASSIGN = re.compile(r"^(\s*[A-Za-z0-9_.\"-]+\s*=\s*)(.*)$")


@st.composite
def hostile_toml(draw: st.DrawFn, text: str) -> bytes:
    """A real TOML file with a few lines changed: a value replaced, a line repeated (a key
    twice is a TOML error; a table twice may not be), dropped, or an unknown key added;
    now and then raw byte edits instead."""
    if draw(st.integers(0, 4)) == 0:
        return draw(mutated_bytes(text.encode(), alphabet=b'[]{}="\',.=\n#0123456789-'))
    lines = text.splitlines()
    assigns = [i for i, ln in enumerate(lines) if _ASSIGN.match(ln)] or [0]
    for _ in range(draw(st.integers(1, 5))):
        i = draw(st.sampled_from(assigns))
        edit = draw(st.sampled_from(["value", "value", "value", "repeat", "drop", "key"]))
        m = _ASSIGN.match(lines[i])
        if edit == "value" and m:
            lines[i] = m.group(1) + draw(toml_values)
        elif edit == "repeat":
            lines.insert(i, lines[i])
        elif edit == "drop":
            lines[i] = ""
        else:
            lines.insert(i, f"{draw(st.sampled_from(['x', 'password', 'token', 'path']))} = 1")
    return "\n".join(lines).encode("utf-8", "surrogatepass")


SCENARIOS = sorted(DEMO.glob("*.toml"))
# A scenario that loads is simulated only when small: the loader allows 100,000 nodes and
# 1,000,000 jobs, and a case must cost bounded time.
_SMALL = (2_000, 5_000)  # nodes, job copies


def _small(s: Any) -> bool:
    if not isinstance(s, ScenarioV2):
        return len(s.events) <= _SMALL[1]
    return (sum(n.count for n in s.nodes) <= _SMALL[0]
            and sum(j.count for j in s.jobs) <= _SMALL[1])


@fuzz(cost=3)
@given(st.data())
def test_scenario_files_load_and_simulate_or_are_one_user_error(data: st.DataObject) -> None:
    base = data.draw(st.sampled_from(SCENARIOS), label="scenario")
    raw = data.draw(hostile_toml(read_text(base)), label="file")
    with _file(raw, base.name) as path:
        got = _user_error(lambda: load_scenario(path))
    if isinstance(got, Exception) or not _small(got):
        return
    # What `quotatop simulate FILE --jsonl` does with it.
    _user_error(lambda: list(jsonl_lines(got)))


def _config_example() -> str:
    """The annotated example of docs/config.md: every table and key the format has."""
    text = (ROOT / "docs" / "config.md").read_text()
    m = re.search(r"```toml\n(.*?)```", text, re.S)
    assert m, "docs/config.md lost its ```toml example"
    return NamedText(m.group(1), "docs/config.md example")


@fuzz()
@given(hostile_toml(_config_example()))
def test_config_files_are_options_or_one_user_error(raw: bytes) -> None:
    cfg = _user_error(lambda: parse_config(raw, "config.toml"))
    if isinstance(cfg, Exception):
        return
    for source in SOURCES:  # each source's options, as `quotatop --source NAME` takes them
        _user_error(lambda source=source: cfg.source_options(source))


# ---- kubeconfig ------------------------------------------------------------------------
def _kubeconfig() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "prod",
        "clusters": [{"name": "c1", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "contexts": [{"name": "prod", "context": {"cluster": "c1", "user": "u1"}}],
        "users": [{"name": "u1", "user": {"token": "x"}}],
    }


# YAML's own hazards: aliases of aliases (a "billion laughs"), tags a safe loader
# refuses, nesting that exhausts a recursive reader, and not YAML at all.
_YAML_HAZARDS = [
    b"a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: &d [*c, *c]\ne: [*d, *d]\n"
    b"clusters: [*d]\n",
    b"!!python/object/apply:os.system ['true']\n",
    b"clusters: !!binary aGVsbG8=\n",
    b"[" * 5000 + b"]" * 5000,
    b"{" * 5000,
    b"\x00\xff\xfe",
    b"%YAML 9.9\n---\na: 1\n",
    b"--- |\n  text\n...\n--- [1]\n",
    b"current-context: *nowhere\n",
]


@st.composite
def kubeconfigs(draw: st.DrawFn) -> bytes:
    import yaml

    if draw(st.integers(0, 5)) == 0:
        return draw(st.sampled_from(_YAML_HAZARDS))
    text = yaml.safe_dump(_kubeconfig()).encode()
    if draw(st.booleans()):
        return draw(mutated_bytes(text, alphabet=b"-:[]{}&*!|>'\"\n #"))
    # JSON is YAML: the structured mutations of the JSON fuzz apply as they are.
    return draw(mutated_json(json.dumps(_kubeconfig()).encode()))


@fuzz()
@given(kubeconfigs(), st.none() | hostile_words)
def test_kubeconfigs_are_checked_or_one_kubeconfig_error(raw: bytes, context: str | None) -> None:
    with _file(raw, "kubeconfig") as path:
        try:
            check_kubeconfig(str(path), context)
        except KubeconfigError as exc:
            one_line(str(exc))


# ---- traces ----------------------------------------------------------------------------
def _swf_head() -> str:
    """The bundled NASA log's header and first jobs: the whole 1.7 MB per case would
    spend the budget reading the same lines."""
    lines = (DEMO / "traces" / "NASA-iPSC-1993-3.1-cln.swf").read_text().splitlines()
    return NamedText("\n".join(lines[:60]) + "\n", "NASA-iPSC head")


_SWF_FIELD = st.sampled_from(["-1", "0", "1", "nan", "inf", "-inf", "1e308", "1e10", "1e11",
                              "-0", "1_0", "9" * 30, "x", "", "; MaxProcs: 1e300"])


@st.composite
def swf_files(draw: st.DrawFn) -> bytes:
    text = _swf_head()
    if draw(st.booleans()):
        return draw(mutated_bytes(text.encode(), alphabet=b" ;:-0123456789.\n"))
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(lines) - 1))
        if lines[i].startswith(";"):
            key = draw(st.sampled_from(["MaxProcs", "MaxNodes", "maxprocs", "Note"]))
            lines[i] = f"; {key}: {draw(_SWF_FIELD | hostile_words)}"
        else:
            fields = lines[i].split()
            if fields:
                fields[draw(st.integers(0, len(fields) - 1))] = draw(_SWF_FIELD | hostile_words)
            lines[i] = " ".join(fields)
    return "\n".join(lines).encode("utf-8", "surrogatepass")


# Layouts the CSV importer recognises by their header, and a generic one, each with a
# row it reads: cases start from rows that load and change a few cells, so that they
# reach the importer's arithmetic and the core, not only its first refusal.
_CSV_LAYOUTS: list[dict[str, str]] = [
    {"job_id": "j1", "user": "u1", "vc": "vc1", "gpu_num": "8", "cpu_num": "16",
     "node_num": "1", "state": "COMPLETED", "submit_time": "2020-01-01 00:00:00",
     "start_time": "2020-01-01 00:01:00", "end_time": "2020-01-01 01:00:00"},  # Helios
    {"job_name": "j1", "organization": "o1", "gpu_num": "1", "submit_time": "0",
     "duration": "100", "status": "Terminated"},
    {"id": "j1", "team": "a", "gpus": "1", "submit": "0", "start": "5", "end": "10",
     "duration": "10", "workers": "1", "gpu_milli": "1000", "qos": "HP", "gpu_type": "A100"},
]
_CSV_CELL = st.sampled_from(["", "0", "1", "-1", "8", "nan", "inf", "1e308", "1e7", "1e11",
                             "100001", "0.5", "2017-10-01 00:00:00", "9999-12-31T23:59:59",
                             "0001-01-01", "2017-10-01T00:00:00+14:00", "None", "null",
                             "x" * 140_000, '"', '""', "a,b", "\r"]) | decoded_text


@st.composite
def csv_files(draw: st.DrawFn) -> bytes:
    layout = draw(st.sampled_from(_CSV_LAYOUTS))
    head = list(layout)
    if draw(st.integers(0, 4)) == 0:  # columns missing or in another order
        head = draw(st.permutations(head))[: draw(st.integers(0, len(head)))]
    rows = [head]
    for _ in range(draw(st.integers(0, 8))):
        row = [layout[c] for c in head]
        for _ in range(draw(st.integers(0, 3))):
            if row:
                row[draw(st.integers(0, len(row) - 1))] = draw(_CSV_CELL)
        if draw(st.integers(0, 6)) == 0:  # a cell too many or too few
            row = row[:-1] if draw(st.booleans()) else [*row, draw(_CSV_CELL)]
        rows.append(row)
    out = io.StringIO()
    writer = csv.writer(out)
    for row in rows:
        writer.writerow(row)
    raw = out.getvalue().encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 3)) == 0:
        raw = draw(mutated_bytes(raw, alphabet=b',"\r\n0123456789-:'))
    return raw


def _philly_job() -> dict[str, Any]:
    return {
        "status": "Pass", "vc": "vc1", "jobid": "application_1", "user": "u1",
        "submitted_time": "2017-10-01 00:00:00",
        "attempts": [{"start_time": "2017-10-01 00:01:00", "end_time": "2017-10-01 01:00:00",
                      "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]}],
    }


@st.composite
def philly_files(draw: st.DrawFn) -> bytes:
    doc = [_philly_job() for _ in range(draw(st.integers(1, 3)))]
    raw = json.dumps(doc).encode()
    if draw(st.integers(0, 4)) == 0:
        return draw(mutated_bytes(raw, alphabet=b'{}[]:,"0123456789-'))
    return draw(mutated_json(raw))


@st.composite
def node_files(draw: st.DrawFn) -> bytes:
    rows = ["node_name,gpu_model,gpu_capacity_num,cpu_num"]
    for i in range(draw(st.integers(0, 4))):
        cells = [f"n{i}", "A100", "8", "96"]
        if draw(st.booleans()):
            cells[draw(st.integers(0, 3))] = draw(_CSV_CELL).replace(",", "")
        rows.append(",".join(cells))
    raw = "\n".join(rows).encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 3)) == 0:
        raw = draw(mutated_bytes(raw, alphabet=b',\n0123456789.'))
    return raw


_FORMATS = {"swf": (swf_files(), ".swf"), "csv": (csv_files(), ".csv"),
            "philly": (philly_files(), ".json")}


@fuzz(cost=2)
@given(st.sampled_from(sorted(_FORMATS)), st.data())
def test_traces_load_and_simulate_or_are_one_user_error(fmt: str, data: st.DataObject) -> None:
    files, suffix = _FORMATS[fmt]
    raw = data.draw(files, label="trace")
    nodes = data.draw(st.none() | node_files(), label="nodes file") if fmt != "swf" else None
    with _file(raw, "trace" + suffix) as path, _file(nodes or b"", "nodes.csv") as nodes_path:
        trace = _user_error(lambda: load_trace(
            str(path), fmt, nodes_file=str(nodes_path) if nodes is not None else None))
        if isinstance(trace, Exception) or len(trace.jobs) > 50:
            return
        # What `quotatop simulate TRACE` does next (the generated traces are a few jobs).
        _user_error(lambda: simulate_trace(trace, "easy"))


# ---- recordings ------------------------------------------------------------------------
def _frames() -> list[Snapshot]:
    """A few frames of a small cluster whose jobs come, run and go: keyframes, deltas
    and patched columns all appear in the file."""
    out = []
    for t in range(8):
        jobs = [Job(id=str(i), team=f"t{i % 3}", state="running" if i < t else "pending",
                    request={"gpu": float(1 + i % 4)}, submit_time=1000.0 + i,
                    nodes=[f"n{i % 4}"] if i < t else [])
                for i in range(t, t + 6)]
        out.append(Snapshot(
            cluster="c", source="fuzz", taken_at=1_700_000_000.0 + 2 * t,
            nodes=[Node(name=f"n{k}", capacity={"gpu": 8.0}, allocated={"gpu": float(t % 8)})
                   for k in range(4)],
            teams=[Team(name=f"t{k}", max={"gpu": 16.0}) for k in range(3)], jobs=jobs))
    return out


@cache
def _recording() -> bytes:
    with tempfile.TemporaryDirectory(prefix="quotatop-fuzz-") as d:
        path = Path(d) / "base.qtrec"
        rec = Recorder(path, cluster="c", source="fuzz", keyframe_every=3).start()
        for snap in _frames():
            rec.append(snap)
        rec.stop()
        return Named(path.read_bytes(), "base recording")


def _zstd_claiming(size: int) -> bytes:
    """A zstd frame whose header says it decompresses to ``size`` bytes (it holds 3)."""
    header = b"\x28\xb5\x2f\xfd" + bytes([0xE0]) + struct.pack("<Q", size)
    return header + (1 | 3 << 3).to_bytes(3, "little") + b"abc"


_SQL_VALUES = st.one_of(
    st.none(), hostile_numbers.filter(lambda x: not isinstance(x, int) or abs(x) < 2**63),
    hostile_text.map(lambda s: s.encode("utf-8", "replace").decode()), st.binary(max_size=40),
)


def _damage(conn: sqlite3.Connection, draw: st.DrawFn, edit: str, seq: int) -> None:
    if edit == "meta":
        key = draw(st.sampled_from(["format", "schema_version", "cluster", "x"]))
        conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                     (key, draw(_SQL_VALUES | hostile_words.map(str))))
    elif edit == "t":
        # Numbers only: a t of text is a known bug, kept out of the fuzz until fixed
        # (test_a_frame_time_of_text_is_a_recording_error).
        conn.execute("UPDATE frames SET t = ? WHERE seq = ?", (draw(hostile_numbers.filter(
            lambda x: not isinstance(x, int) or abs(x) < 2**63)), seq))
    elif edit == "link":
        col = draw(st.sampled_from(["kind", "key_seq", "ref", "seq"]))
        conn.execute(f"UPDATE OR IGNORE frames SET {col} = ? WHERE seq = ?",
                     (draw(st.integers(-2, 12) | _SQL_VALUES), seq))
    elif edit == "blob":
        zc = zstandard.ZstdCompressor()
        blob = draw(st.one_of(
            st.binary(max_size=64),
            # Sizes a process can allocate: one past that is a known bug, kept
            # out of the fuzz until fixed (test_a_frame_claiming_a_terabyte_...).
            st.sampled_from([2**20, 2**26]).map(_zstd_claiming),
            json_values.map(lambda v: zc.compress(dump_json(v))),
            st.binary(max_size=64).map(zc.compress),
        ))
        conn.execute("UPDATE frames SET blob = ? WHERE seq = ?", (blob, seq))
    elif edit == "delete":
        conn.execute("DELETE FROM frames WHERE seq = ?", (seq,))
    elif edit == "dicts":
        conn.execute("INSERT OR REPLACE INTO dicts VALUES (?, ?)",
                     (draw(st.integers(0, 3)), draw(st.binary(max_size=64))))
    elif edit == "drop":
        conn.execute(f"DROP TABLE IF EXISTS {draw(st.sampled_from(['dicts', 'meta']))}")
    else:
        conn.execute("INSERT OR IGNORE INTO frames VALUES (?, ?, ?, ?, ?, ?)",
                     (draw(st.integers(0, 12)), draw(_SQL_VALUES),
                      draw(st.integers(0, 1)), draw(st.integers(0, 12)),
                      draw(st.integers(0, 2)), draw(_SQL_VALUES)))


@st.composite
def damaged_recordings(draw: st.DrawFn) -> bytes:
    """A real recording with what a damaged or hostile file may hold: raw byte edits,
    or (a valid SQLite file still) hostile rows: meta values, frame times and links,
    blobs that are not zstd, zstd of the wrong thing, a frame claiming a huge size."""
    raw = _recording()
    if draw(st.booleans()):
        return Named(draw(mutated_bytes(raw, max_edits=12)), "recording with bytes edited")
    with _file(raw, "r.qtrec") as path:
        conn = sqlite3.connect(path)
        for _ in range(draw(st.integers(1, 3))):
            seq = draw(st.integers(-1, 9))
            edit = draw(st.sampled_from(
                ["meta", "t", "link", "blob", "blob", "delete", "dicts", "drop", "insert"]))
            # A NULL where the schema says NOT NULL, a table an earlier edit dropped.
            with contextlib.suppress(sqlite3.IntegrityError, sqlite3.OperationalError):
                _damage(conn, draw, edit, seq)
        conn.commit()
        conn.close()
        return Named(path.read_bytes(), "recording with rows edited")


def _read_all(path: Path, read_only: bool) -> None:
    """Everything the replay reader offers: open, seek, every frame, refresh."""
    with Recording(path, read_only=read_only) as rec:
        for i in range(len(rec)):
            rec.frame(i)
        rec.index_at(1_700_000_005.0)
        if len(rec):
            rec.forget()
            rec.frame(len(rec) // 2)
        rec.refresh()


@fuzz(cost=3)
@given(damaged_recordings(), st.booleans())
def test_recordings_read_or_are_one_recording_error(raw: bytes, read_only: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="quotatop-fuzz-") as d:
        path = Path(d) / "r.qtrec"
        path.write_bytes(raw)
        try:
            _read_all(path, read_only)
        except RecordingError as exc:
            one_line(str(exc))
        # A file of ours with no -wal beside it is read in place: nothing may be changed.
        if read_only:
            assert path.read_bytes() == raw


# Found here: recording.py decompressed a blob to the size its zstd header claims (1 TiB:
# MemoryError; 2 GiB would be allocated). Now a frame may claim at most MAX_FRAME_BYTES.
def test_a_frame_claiming_a_terabyte_is_a_recording_error() -> None:
    with _file(_recording(), "r.qtrec") as path:
        conn = sqlite3.connect(path)
        conn.execute("UPDATE frames SET blob = ? WHERE seq = (SELECT MAX(seq) FROM frames)",
                     (_zstd_claiming(2**40),))
        conn.commit()
        conn.close()
        with pytest.raises(RecordingError):
            Recording(path)


# Found here: a damaged file whose t is text (the column's REAL affinity keeps text that
# is not a number) opened, and index_at (the TUI's seek, replay --at) raised TypeError.
# Frame times are checked when the file is opened or refreshed now.
def test_a_frame_time_of_text_is_a_recording_error() -> None:
    with _file(_recording(), "r.qtrec") as path:
        conn = sqlite3.connect(path)
        conn.execute("UPDATE frames SET t = 'noon' WHERE seq = 5")  # bisect's first probe
        conn.commit()
        conn.close()
        try:
            with Recording(path) as rec:
                rec.index_at(1_700_000_005.0)
        except RecordingError:
            return


def test_the_base_recording_reads() -> None:
    # The fuzz cases start from this file: it must be a good one.
    with _file(_recording(), "r.qtrec") as path, Recording(path) as rec:
        assert [rec.frame(i).taken_at for i in range(len(rec))] == [
            s.taken_at for s in _frames()]


@pytest.mark.parametrize("nesting", ["[" * 2000 + "]" * 2000, "{ a = " * 800 + "1" + " }" * 800])
def test_found_toml_nested_too_deeply_is_one_user_error(nesting: str) -> None:
    # Found by this suite: tomllib recurses once per level, so a 10 kB scenario or config
    # ended in RecursionError, not a UserError.
    with _file(f"x = {nesting}\n".encode(), "deep.toml") as path:
        with pytest.raises(UserError, match="nested too deeply"):
            load_scenario(path)
        with pytest.raises(UserError, match="nested too deeply"):
            parse_config(path.read_bytes(), str(path))


def test_found_a_csv_field_over_the_csv_limit_is_one_user_error() -> None:
    # Found by this suite: csv.Error ("field larger than field limit") escaped both the
    # trace and the node-list readers.
    big = b"id,team,gpus,submit,duration\n1,a," + b"9" * 200_000 + b",0,10\n"
    with _file(big, "t.csv") as path, pytest.raises(UserError, match="not CSV"):
        load_trace(str(path), "csv")
    nodes = b"node_name,gpu_model,gpu_capacity_num\nn1," + b"x" * 200_000 + b",8\n"
    ok = b"id,team,gpus,submit,duration\n1,a,1,0,10\n"
    with _file(ok, "t.csv") as path, _file(nodes, "n.csv") as nodes_path, pytest.raises(
            UserError, match="not CSV"):
        load_trace(str(path), "csv", nodes_file=str(nodes_path))


def test_found_philly_attempts_that_are_not_a_list_skip_the_job() -> None:
    # Found by this suite: "attempts": {...} ended in KeyError(-1) out of the importer.
    job = {**_philly_job(), "attempts": {"x": 1}}
    with _file(json.dumps([job, _philly_job()]).encode(), "p.json") as path:
        trace = load_trace(str(path), "philly")
    assert len(trace.jobs) == 1 and "attempts is a dict" in trace.warnings[0]


def test_found_a_trace_of_jobs_asking_no_gpus_simulates() -> None:
    # Found by this suite: when every job asks 0 GPUs the cluster has 0 per node, and
    # core_inputs divided by it (ZeroDivisionError out of `quotatop simulate TRACE`).
    with _file(b"id,team,gpus,submit,duration\n1,a,0,0,10\n2,a,0,5,10\n", "t.csv") as path:
        result = simulate_trace(load_trace(str(path), "csv"), "easy")
    assert result.metrics.finished == 2
