"""Property tests for the Slurm value parsers: hostlists, TRES, durations, timestamps,
GRES with indices. Each round-trips and never fails on junk with anything but
a one-line ParseError."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quotatop.collectors.slurm.durations import format_duration, parse_duration
from quotatop.collectors.slurm.errors import ParseError
from quotatop.collectors.slurm.gres import Gres, format_gres, parse_gres
from quotatop.collectors.slurm.hostlist import compress_hostlist, expand_hostlist
from quotatop.collectors.slurm.timestamps import format_timestamp, parse_timestamp
from quotatop.collectors.slurm.tres import format_tres, parse_tres

FEW = settings(max_examples=150, deadline=None)
JUNK = st.text(alphabet=st.characters(codec="utf-8"), max_size=40) | st.text(
    alphabet="gpu[]0123456789-,:=%_()IDXNA/.GMKT ", max_size=40
)


def _one_line_or_ok(fn, text):
    try:
        fn(text)
    except ParseError as exc:
        assert "\n" not in str(exc)


# ---- hostlists ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("gpu[01-04,07]", ["gpu01", "gpu02", "gpu03", "gpu04", "gpu07"]),
        ("a[1-2]b[3-4]", ["a1b3", "a1b4", "a2b3", "a2b4"]),
        ("n1,n[3-4],login", ["n1", "n3", "n4", "login"]),
        ("gpu[08-10]", ["gpu08", "gpu09", "gpu10"]),
        ("", []),
        ("(null)", []),
    ],
)
def test_hostlist_examples(text: str, hosts: list[str]) -> None:
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize(
    "bad", ["gpu[01-", "gpu]", "gpu[4-1]", "a[[1]]", "a,,b", "gpu[x]", "n[0-99999999]"]
)
def test_hostlist_rejects(bad: str) -> None:
    with pytest.raises(ParseError):
        expand_hostlist(bad)


HOSTS = st.lists(
    st.builds(
        lambda p, n, w: f"{p}{n:0{w}d}" if n is not None else p,
        st.sampled_from(["gpu", "cpu-", "n", "rack1-n", ""]),
        st.none() | st.integers(0, 300),
        st.integers(1, 3),
    ).filter(bool),
    max_size=30,
)


@FEW
@given(HOSTS)
def test_hostlist_round_trip(hosts: list[str]) -> None:
    back = expand_hostlist(compress_hostlist(hosts))
    assert sorted(back) == sorted(set(hosts))


@FEW
@given(JUNK)
def test_hostlist_never_crashes(text: str) -> None:
    _one_line_or_ok(expand_hostlist, text)


# ---- TRES --------------------------------------------------------------------------
def test_tres_example() -> None:
    r = parse_tres("cpu=64,mem=500G,gres/gpu=8,gres/gpu:h100=8,billing=64,node=1")
    assert r == {"cpu": 64, "memory": 512000, "gpu": 8, "gpu:h100": 8, "billing": 64, "node": 1}
    assert parse_tres("mem=7812.50G")["memory"] == 7812.5 * 1024
    assert parse_tres("mem=1000000M") == {"memory": 1_000_000}
    assert parse_tres("(null)") == {} and parse_tres("") == {}


@pytest.mark.parametrize("bad", ["cpu", "cpu=", "cpu=x", "=4", "cpu=4,,", "mem=4Q"])
def test_tres_rejects(bad: str) -> None:
    with pytest.raises(ParseError):
        parse_tres(bad)


RES = st.dictionaries(
    st.sampled_from(["cpu", "memory", "gpu", "gpu:h100", "gpu:a100", "billing", "node"]),
    st.integers(0, 10**9).map(float) | st.sampled_from([0.5, 2.25]),
)


@FEW
@given(RES)
def test_tres_round_trip(res: dict[str, float]) -> None:
    assert parse_tres(format_tres(res)) == res


@FEW
@given(JUNK)
def test_tres_never_crashes(text: str) -> None:
    _one_line_or_ok(parse_tres, text)


# ---- durations ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "secs"),
    [
        ("1-02:03:04", 93784),
        ("3-00:00:00", 259200),
        ("02:03:04", 7384),
        ("1:00:00", 3600),
        ("05:30", 330),
        ("90", 5400),
        ("2-12", 216000),
        ("2-12:30", 217800),
        ("00:01.500", 1.5),
        ("UNLIMITED", None),
        ("INVALID", None),
        ("N/A", None),
        ("Partition_Limit", None),
    ],
)
def test_duration_examples(text: str, secs: float | None) -> None:
    assert parse_duration(text) == secs


@pytest.mark.parametrize("bad", ["1:2:3:4", "x", "1-", "-5", "1-2:3:4:5", "1:xx"])
def test_duration_rejects(bad: str) -> None:
    with pytest.raises(ParseError):
        parse_duration(bad)


@FEW
@given(st.integers(0, 400 * 86400))
def test_duration_round_trip(secs: int) -> None:
    assert parse_duration(format_duration(secs)) == secs


@FEW
@given(JUNK)
def test_duration_never_crashes(text: str) -> None:
    _one_line_or_ok(parse_duration, text)


# ---- timestamps --------------------------------------------------------------------
def test_timestamp_examples() -> None:
    utc = dt.UTC
    assert (
        parse_timestamp("2026-12-02T10:00:00", utc)
        == dt.datetime(2026, 12, 2, 10, tzinfo=utc).timestamp()
    )
    for none in ("Unknown", "N/A", "None", "(null)", ""):
        assert parse_timestamp(none) is None
    with pytest.raises(ParseError):
        parse_timestamp("2026-13-02T10:00:00")
    with pytest.raises(ParseError):
        parse_timestamp("yesterday")


@FEW
@given(st.integers(0, 4_000_000_000))
def test_timestamp_round_trip(epoch: int) -> None:
    utc = dt.UTC
    assert parse_timestamp(format_timestamp(epoch, utc), utc) == epoch


@FEW
@given(JUNK)
def test_timestamp_never_crashes(text: str) -> None:
    _one_line_or_ok(parse_timestamp, text)


# ---- GRES --------------------------------------------------------------------------
def test_gres_examples() -> None:
    assert parse_gres("gpu:h100:8(IDX:0-3,5)") == [Gres("gpu", "h100", 8, (0, 1, 2, 3, 5))]
    assert parse_gres("gpu:2") == [Gres("gpu", None, 2)]
    assert parse_gres("gpu:a100:8(S:0-1)") == [Gres("gpu", "a100", 8)]
    assert parse_gres("gpu:a100:0(IDX:N/A),shard:4") == [
        Gres("gpu", "a100", 0, ()),
        Gres("shard", None, 4),
    ]
    assert parse_gres("(null)") == []


@pytest.mark.parametrize("bad", ["gpu:h100:8(IDX:3-1)", "gpu:h100:8(IDX:0-", ":8", "gpu:h100:8)"])
def test_gres_rejects(bad: str) -> None:
    with pytest.raises(ParseError):
        parse_gres(bad)


GRES = st.lists(
    st.builds(
        Gres,
        st.sampled_from(["gpu", "shard", "mps"]),
        st.none() | st.sampled_from(["h100", "a100", "l4"]),
        st.integers(0, 64),
        st.none() | st.lists(st.integers(0, 63), unique=True).map(lambda xs: tuple(sorted(xs))),
    ),
    max_size=4,
)


@FEW
@given(GRES)
def test_gres_round_trip(items: list[Gres]) -> None:
    assert parse_gres(format_gres(items)) == items


@FEW
@given(JUNK)
def test_gres_never_crashes(text: str) -> None:
    _one_line_or_ok(parse_gres, text)
