"""The native key pruner (json_prune/, built into quotatop.scheduler_core._core) in front of
squeue --json decoding: the build the tests run against carries it, and whatever it is
given, decode_squeue answers exactly as it does without it — the same jobs, or the same
one-line error about the original bytes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import skip_or_fail
from quotatop.collectors.slurm import json_decode
from quotatop.collectors.slurm.errors import ParseError, SlurmReportedError
from quotatop.collectors.slurm.json_decode import decode_squeue

FIXTURES = Path(__file__).parent / "fixtures" / "slurm"
SQUEUE = sorted(
    p
    for p in FIXTURES.rglob("*.json")
    if p.name.startswith("squeue") or p.name.startswith("slurm-job")
)


Prune = Callable[[bytes, str, list[str]], bytes]
MISSING = "the core was built without the native pruner (pip install . / make build give it)"


def _native_prune() -> Prune:
    import quotatop.scheduler_core._core as core

    prune = getattr(core, "prune_json_keys", None)
    if prune is None:
        skip_or_fail(f"{MISSING}: {core.__file__}")
    return prune  # type: ignore[no-any-return]


@pytest.fixture
def native() -> Prune:
    return _native_prune()


def test_the_built_core_carries_the_pruner_and_the_decoder_uses_it() -> None:
    # One build (pip install ., make build) gives the pruner inside the core's extension;
    # a build that lost it would silently decode on the slower path, so under CI this fails.
    prune = _native_prune()
    assert json_decode._prune is prune
    assert prune(b'{"jobs": [{"a": 1, "b": 2}], "n": 3}', "jobs", ["a"]) == (
        b'{"jobs":[{"a":1}],"n":3}'
    )


def _answer(data: bytes, pruner: object) -> object:
    saved = json_decode._prune
    json_decode._prune = pruner  # type: ignore[assignment]
    try:
        return decode_squeue(data)
    except (ParseError, SlurmReportedError) as exc:
        return type(exc).__name__, str(exc)
    finally:
        json_decode._prune = saved


def test_fixtures_are_found() -> None:
    assert len(SQUEUE) >= 5


@pytest.mark.parametrize("path", SQUEUE, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_real_output_decodes_the_same_pruned(native: Prune, path: Path) -> None:
    data = path.read_bytes()
    hint = json_decode._sniff(data)
    assert hint is not None
    gen = json_decode.generation(hint)
    smaller = json_decode.pruned(data, gen)
    assert len(smaller) < len(data)  # it did drop keys
    jobs = json.loads(smaller)["jobs"]
    assert jobs and all(set(j) <= set(json_decode._KEEP[gen]) for j in jobs)
    assert _answer(data, native) == _answer(data, None)


def test_a_large_queue_split_over_two_threads_decodes_the_same(native: Prune) -> None:
    doc = json.loads((FIXTURES / "22.05" / "squeue.json").read_bytes())
    base = doc["jobs"]
    doc["jobs"] = [dict(base[i % len(base)], job_id=10_000 + i) for i in range(4000)]
    data = json.dumps(doc, indent=2).replace("/", "\\/").encode()
    assert len(data) > 4 << 20  # above json_prune's SPLIT_FROM
    mine, theirs = _answer(data, native), _answer(data, None)
    assert mine == theirs and len(mine[0]) == 4000  # type: ignore[index]


def test_an_escaped_or_unknown_key_changes_nothing(native: Prune) -> None:
    data = (FIXTURES / "22.05" / "squeue.json").read_bytes()
    escaped = data.replace(b'"user_name"', b'"user\\u005fname"', 1)
    assert escaped != data
    assert _answer(escaped, native) == _answer(escaped, None)
    assert _answer(escaped, native)[0][0].user  # type: ignore[index]


def test_what_is_not_json_is_handed_on_as_it_is(native: Prune) -> None:
    for bad in (b"", b"{", b'{"jobs": [{"a": tru}]}', b'{"jobs": []} trailing', b"\xff"):
        assert json_decode.pruned(bad, 38) is bad
    with pytest.raises(ValueError, match="at byte 18"):
        native(b'{"jobs": [{"a": 1}x', "jobs", ["a"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_output_answers_the_same_pruned_or_not(data: st.DataObject) -> None:
    prune = _native_prune()
    path = data.draw(st.sampled_from(SQUEUE))
    raw = bytearray(path.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(raw) - 1))
        raw[at : at + data.draw(st.integers(0, 8))] = data.draw(
            st.binary(max_size=8) | st.sampled_from([b'"', b"\\", b"{", b"}", b",", b"]", b"\\/"])
        )
    assert _answer(bytes(raw), prune) == _answer(bytes(raw), None)


@pytest.mark.parametrize(
    "escape",
    [b"\\ud800", b"\\uDBFF", b"\\udc00", b"\\ud800\\u0041", b"\\ud800\\ud800", b"\\ud800\\n"],
)
def test_a_lone_surrogate_in_a_dropped_value_is_refused_as_without_the_pruner(
    native: Prune, escape: bytes
) -> None:
    data = (FIXTURES / "22.05" / "squeue.json").read_bytes()
    at = data.index(b'"jobs"')
    dropped = b'"admin_comment": "'  # a key of each job the Structs do not declare
    assert dropped[1:-4].decode() not in json_decode._KEEP[38]
    bad = data[:at] + data[at:].replace(dropped, dropped + escape, 1)
    assert bad != data
    plain = _answer(bad, None)
    assert plain[0] == "ParseError"  # msgspec refuses it
    assert _answer(bad, native) == plain


def test_a_surrogate_pair_in_a_dropped_value_is_accepted_either_way(native: Prune) -> None:
    data = (FIXTURES / "22.05" / "squeue.json").read_bytes()
    at = data.index(b'"jobs"')
    dropped = b'"admin_comment": "'
    good = data[:at] + data[at:].replace(dropped, dropped + b"\\ud83d\\ude00", 1)
    mine = _answer(good, native)
    assert mine == _answer(good, None) and len(mine[0]) == 21  # type: ignore[arg-type]
