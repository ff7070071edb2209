"""Fuzz of every Slurm parser: each answer read is a result or one ParseError of one line
(SlurmReportedError for a --json answer whose "errors" say the command failed).

tests/test_slurm_text.py and tests/test_slurm_json.py already replace random byte spans
of the 22.05 captures; these go further: hostile values in the right places (cells of
--parsable2 rows, Key=Value records, JSON members of both schema generations, keys twice
or escaped), the native pruner against the plain decoder on such documents, and whole
collect rounds, whose snapshot must still be recordable and reach the core.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from unittest import mock

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from slurm_fixture_runner import FixtureRunner

from fuzz.strategies import (
    NEWER_JSON,
    V2205,
    NamedText,
    Pairs,
    RawJson,
    decoded_text,
    dump_json,
    fuzz,
    hostile_words,
    json_values,
    mutated_bytes,
    mutated_json,
    one_line,
    read_bytes,
    read_text,
)
from quotatop import scheduler_core
from quotatop.collectors.model import to_msgpack
from quotatop.collectors.slurm import (
    json_decode,
    mapping,
    sacctmgr,
    sched_config,
    scontrol,
    sprio,
    squeue_text,
    sshare,
)
from quotatop.collectors.slurm.collector import SlurmCollector
from quotatop.collectors.slurm.errors import ParseError, SlurmReportedError
from quotatop.collectors.slurm.json_decode import decode_sacct, decode_sinfo, decode_squeue

JSON_FIXTURES = sorted(
    [V2205 / n for n in ("squeue.json", "sinfo.json", "sinfo_idle.json", "sacct.json")]
    + NEWER_JSON
)
SQUEUE_FIXTURES = [p for p in JSON_FIXTURES if "squeue" in p.name or "slurm-job" in p.name]
DECODERS: list[Callable[[bytes], object]] = [decode_squeue, decode_sinfo, decode_sacct]


def _outcome(call: Callable[[], object]) -> object:
    """The result, or the documented error (its message checked)."""
    try:
        return call()
    except (ParseError, SlurmReportedError) as exc:
        one_line(str(exc))
        return exc


# ---- --json ---------------------------------------------------------------------------
@st.composite
def json_answers(draw: st.DrawFn, fixtures: list[Any] = JSON_FIXTURES) -> bytes:
    path = draw(st.sampled_from(fixtures))
    raw = read_bytes(path)
    if draw(st.integers(0, 3)) == 0:  # now and then bytes, mostly structure
        return draw(mutated_bytes(raw, alphabet=b'{}[]:,"\\0123456789.-eE ntfuirl'))
    return draw(mutated_json(raw))


@fuzz(cost=2)
@given(json_answers())
def test_json_answers_decode_or_are_one_parse_error(data: bytes) -> None:
    for decode in DECODERS:
        got = _outcome(lambda decode=decode: decode(data))
        if not isinstance(got, Exception):
            # What a decoder returns goes into a recording and into the core as it is.
            msgspec.msgpack.encode(got)


def _escaped_key(key: str) -> RawJson:
    """``key`` as a JSON string with every character \\u-escaped: the same key to a JSON
    decoder, different bytes to the native pruner (which keeps it, docs/slurm.md)."""
    return RawJson('"' + "".join(f"\\u{ord(c):04x}" for c in key) + '"')


@st.composite
def squeue_with_odd_keys(draw: st.DrawFn) -> bytes:
    """A squeue answer whose jobs have keys twice, escaped, or hostile values: where the
    pruner and the decoder could disagree on which members a job has."""
    doc = json.loads(draw(st.sampled_from(SQUEUE_FIXTURES)).read_bytes())
    jobs = doc.get("jobs") or []
    for _ in range(draw(st.integers(1, 4))):
        if not jobs:
            break
        i = draw(st.integers(0, len(jobs) - 1))
        job = jobs[i]
        if not isinstance(job, dict) or not job:
            continue
        pairs = Pairs(job.items())
        k = draw(st.integers(0, len(pairs) - 1))
        key, value = pairs[k]
        edit = draw(st.sampled_from(["escape", "twice", "value", "unknown"]))
        if edit == "escape":
            pairs[k] = (_escaped_key(key), value)
        elif edit == "twice":
            pairs.insert(draw(st.integers(0, len(pairs))), (key, draw(json_values)))
        elif edit == "value":
            pairs[k] = (key, draw(json_values))
        else:
            pairs.insert(k, (draw(hostile_words), draw(json_values)))
        jobs[i] = pairs
    return dump_json(doc)


@pytest.mark.skipif(json_decode._prune is None, reason="the core was built without the pruner")
@fuzz()
@given(squeue_with_odd_keys())
def test_pruned_and_plain_squeue_decoding_agree(data: bytes) -> None:
    def run() -> object:
        got = _outcome(lambda: decode_squeue(data))
        return (type(got), str(got)) if isinstance(got, Exception) else got

    pruned = run()
    with mock.patch.object(json_decode, "_prune", None):  # the pure-Python fallback
        plain = run()
    assert pruned == plain


# ---- --parsable2 tables and squeue -O text ---------------------------------------------
def _cell(sep: str) -> st.SearchStrategy[str]:
    """A hostile cell: mostly one that keeps the row's shape (no separator, no line
    break), so the parser reads past the column count into the values."""
    keep = decoded_text.map(lambda s: "".join(s.splitlines()).replace(sep, ""))
    return st.one_of(keep, keep, keep, decoded_text)


@st.composite
def hostile_rows(draw: st.DrawFn, text: str, sep: str = "|") -> str:
    """Real rows with a few cells replaced, a row dropped or repeated."""
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        n = draw(st.integers(0, len(lines) - 1))
        edit = draw(st.sampled_from(["cell", "cell", "cell", "drop", "repeat"]))
        if edit == "cell":
            cells = lines[n].split(sep)
            cells[draw(st.integers(0, len(cells) - 1))] = draw(_cell(sep))
            lines[n] = sep.join(cells)
        elif edit == "drop" and len(lines) > 1:
            del lines[n]
        else:
            lines.insert(n, lines[n])
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\r\n", "\n\n"]))


def _received(text: str) -> str:
    """``text`` as a parser receives it: the collector decodes each command's stdout with
    errors="replace" (collector._text), so a parser never sees a lone surrogate."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _squeue_text_jobs(text: str) -> list[Any]:
    # What SlurmCollector._jobs_from_text does with squeue -O output.
    return [mapping.job_from_text(r) for r in squeue_text.parse_squeue_text(text)]


TABLES: list[tuple[Callable[[str], object], str]] = [
    (sprio.parse_sprio, "sprio.txt"),
    (sprio.parse_sprio_weights, "sprio_weights.txt"),
    (sshare.parse_sshare, "sshare.txt"),
    (sacctmgr.parse_assoc, "sacctmgr_assoc.txt"),
    (sacctmgr.parse_qos, "sacctmgr_qos.txt"),
    (sacctmgr.parse_tres_table, "sacctmgr_tres.txt"),
    (_squeue_text_jobs, "squeue.txt"),
]


@fuzz()
@given(st.data())
def test_table_rows_with_hostile_cells_parse_or_are_one_parse_error(
    data: st.DataObject,
) -> None:
    parse, name = data.draw(st.sampled_from(TABLES), label="parser")
    text = _received(data.draw(hostile_rows(read_text(V2205 / name)), label="text"))
    got = _outcome(lambda: parse(text))
    if not isinstance(got, Exception):
        msgspec.msgpack.encode(got)  # what a parser returns is recorded as it is


# ---- scontrol Key=Value records and show config ----------------------------------------
@st.composite
def hostile_records(draw: st.DrawFn, text: str) -> str:
    """Real ``scontrol --oneliner`` records with a few values (or keys) replaced."""
    records = [scontrol.parse_record(ln.strip()) for ln in text.splitlines() if ln.strip()]
    for _ in range(draw(st.integers(1, 4))):
        pairs = records[draw(st.integers(0, len(records) - 1))]
        i = draw(st.integers(0, len(pairs) - 1))
        key, value = pairs[i]
        if draw(st.integers(0, 4)) == 0:
            key = draw(st.sampled_from([key, "", "1x", key + " ", f"{key}={key}"]))
        else:
            value = draw(_cell(" "))
        pairs[i] = (key, value)
        if draw(st.integers(0, 5)) == 0:  # a key twice: the parsers keep the first
            pairs.insert(draw(st.integers(1, len(pairs))), (key, draw(_cell(" "))))
    return "\n".join(" ".join(f"{k}={v}" for k, v in pairs) for pairs in records) + "\n"


RECORDS: list[tuple[Callable[[str], object], str]] = [
    (scontrol.parse_partitions, "scontrol_partition.txt"),
    (scontrol.parse_nodes, "scontrol_node.txt"),
    (scontrol.parse_jobs, "scontrol_job.txt"),
]


@fuzz()
@given(st.data())
def test_scontrol_records_with_hostile_values_parse_or_are_one_parse_error(
    data: st.DataObject,
) -> None:
    parse, name = data.draw(st.sampled_from(RECORDS), label="parser")
    text = _received(data.draw(hostile_records(read_text(V2205 / name)), label="text"))
    got = _outcome(lambda: parse(text))
    if not isinstance(got, Exception):
        msgspec.msgpack.encode(got)


_CONFIG = scontrol.parse_config((V2205 / "scontrol_config.txt").read_text())
# The keys scheduler_config reads, most of them hostile at once in a case.
_SCHED_KEYS = sorted(
    {*sched_config.RAW_KEYS, "PriorityWeightTRES", "PreemptExemptTime", "ClusterName"}
)


@fuzz()
@given(
    st.dictionaries(st.sampled_from(_SCHED_KEYS), _cell("\n") | hostile_words, max_size=12),
    st.lists(st.tuples(st.sampled_from(["bf_window", "bf_interval", "bf_resolution",
                                        "bf_max_job_test", "default_queue_depth",
                                        "sched_interval", "bf_continue"]),
                       hostile_words), max_size=4),
)
def test_scheduler_settings_from_hostile_show_config(
    changes: dict[str, str], params: list[tuple[str, str]]
) -> None:
    config = {**_CONFIG, **changes}
    if params:
        config["SchedulerParameters"] = ",".join(f"{k}={v}" for k, v in params)
    text = _received("\n".join(f"{k} = {v}" for k, v in config.items()))
    # Through the text parser first, as the collector does: a value with a line break in
    # it is cut there, as it would be in scontrol's output.
    got = _outcome(lambda: sched_config.scheduler_config(scontrol.parse_config(text)))
    if got is not None and not isinstance(got, Exception):
        msgspec.msgpack.encode(got)


# ---- whole rounds ----------------------------------------------------------------------
_TEXT_FILES = {
    "sprio.txt": "|",
    "sprio_weights.txt": "|",
    "sshare.txt": "|",
    "sacctmgr_assoc.txt": "|",
    "sacctmgr_qos.txt": "|",
}
_RECORD_FILES = ["scontrol_partition.txt", "scontrol_node.txt"]
_JSON_FILES = ["squeue.json", "sinfo.json", "sacct.json"]
# What _take makes of an exception other than ParseError (a parser bug), and what
# collect makes of one out of _build (a mapping bug): both hide a bug behind a banner.
_BUG = re.compile(r"^cannot parse [\w ]+ output |^slurm collector: ")


class _Clock:
    now = 1_796_229_000.0

    def __call__(self) -> float:
        return self.now


@fuzz(cost=6)
@given(st.data())
def test_a_collect_round_on_hostile_answers_is_a_snapshot_the_core_reads(
    data: st.DataObject,
) -> None:
    runner = FixtureRunner()
    for name in data.draw(
        st.lists(st.sampled_from([*_TEXT_FILES, *_RECORD_FILES, *_JSON_FILES]),
                 min_size=1, max_size=3, unique=True), label="answers changed"
    ):
        raw = read_bytes(V2205 / name)
        text = NamedText(raw.decode(), name)
        if name in _TEXT_FILES:
            new = data.draw(hostile_rows(text), label=name).encode("utf-8", "surrogatepass")
        elif name in _RECORD_FILES:
            new = data.draw(hostile_records(text), label=name).encode("utf-8", "surrogatepass")
        else:
            new = data.draw(mutated_json(raw), label=name)
        runner.override[name] = new
    clock = _Clock()
    c = SlurmCollector(runner, clock=clock, refresh=0, slow_every=0)  # type: ignore[arg-type]
    snap = c.collect()
    for name, error in c._errors.items():
        one_line(error)
        assert not _BUG.search(error), f"{name}: a parser raised past ParseError: {error}"
    assert not _BUG.search(snap.stale_reason or ""), snap.stale_reason
    to_msgpack(snap)  # recordable
    try:
        scheduler_core.predict(snap, horizon=3600.0)
    except ValueError as exc:  # the core's one error for a snapshot it refuses
        one_line(str(exc))


@pytest.mark.parametrize("text", ["9" * 5000, "9" * 400, "1-" + "9" * 20, "9" * 17 + ":00",
                                  "0:" + "9" * 400 + ".5", "99999999999999999"])
def test_found_a_duration_out_of_range_is_a_parse_error(text: str) -> None:
    # Found by this suite: int() of 5,000 digits raised ValueError, a 400-digit field
    # OverflowError (times 60, into a float), a 400-digit seconds field read as inf.
    from quotatop.collectors.slurm.durations import parse_duration

    with pytest.raises(ParseError, match="duration"):
        parse_duration(text)


# ---- squeue's numbers and ids: each record read, or skipped with a named reason ---------
NUMBER_FIELDS = {"time_limit": "time_limit", "priority": "priority",
                 "node_count": "nodes_requested"}
_MISSING = object()


@st.composite
def hostile_numbers(draw: st.DrawFn) -> tuple[bytes, str, str, object]:
    """A squeue answer with one job's time limit, priority or node count replaced by a
    hostile number (wrapped as 23.02+ does, or plain), now and then that job listed twice:
    (document, job id, field, the value put there)."""
    doc = json.loads(draw(st.sampled_from(SQUEUE_FIXTURES)).read_bytes())
    jobs = doc.get("jobs") or []
    job = jobs[draw(st.integers(0, len(jobs) - 1))]
    field = draw(st.sampled_from(sorted(NUMBER_FIELDS)))
    number = st.one_of(st.integers(-10**6, 10**6), st.floats(-1e9, 1e9), st.none(),
                       st.booleans(), st.text(max_size=4), st.just(_MISSING))
    if draw(st.booleans()):
        wrapped: dict[str, object] = {}
        for key, values in (("set", st.booleans()), ("infinite", st.booleans()),
                            ("number", number)):
            v = draw(st.one_of(st.just(_MISSING), values))
            if v is not _MISSING:
                wrapped[key] = v
        value: object = wrapped
    else:
        value = draw(number)
    if value is _MISSING:
        job.pop(field, None)
    else:
        job[field] = value
    if draw(st.integers(0, 3)) == 0:
        jobs.append(dict(job))
    return json.dumps(doc).encode(), str(job["job_id"]), field, value


@fuzz(cost=2)
@given(hostile_numbers())
def test_hostile_squeue_numbers_are_read_or_their_record_skipped_by_name(
    case: tuple[bytes, str, str, object],
) -> None:
    data, job_id, field, value = case
    got = _outcome(lambda: decode_squeue(data))
    assert not isinstance(got, Exception), got  # one record never fails the answer
    jobs, info = got  # type: ignore[misc]
    ids = [j.id for j in jobs]
    assert len(ids) == len(set(ids))  # the first of each id, the rest named
    if ids.count(job_id) == 0:
        named = (f"job {job_id}:", f"(job {job_id})")
        assert any(n in w for w in info.warnings for n in named), info.warnings
        return
    kept = getattr(next(j for j in jobs if j.id == job_id), NUMBER_FIELDS[field])
    # A value kept is one Slurm could mean: none, or a number not below zero.
    assert kept is None or (isinstance(kept, (int, float)) and kept >= 0), kept
    if isinstance(value, dict) and (value.get("set") is False or value.get("infinite")):
        assert kept == (1 if field == "node_count" else None)  # no value / no limit
