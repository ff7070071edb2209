"""What the fuzz tests share: their settings, hostile values, and mutations of real bytes.

Two kinds of input, as docs/fuzzing.md says:

- structured but wrong: the shape an entry point expects, with hostile values in it
  (NaN, ±inf, 1e308, huge and negative integers, empty strings, lone surrogates, NUL,
  the wrong type, null where a value belongs, keys twice);
- raw mutated bytes of real inputs (tests/fixtures/ captures, demo_data/ files): bytes
  flipped, spans replaced, duplicated or cut.

Every size here is bounded (lists, strings, mutation counts) so that a case costs
bounded time and memory: the suite bounds its inputs, not its clock.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import settings
from hypothesis import strategies as st

from fuzz.conftest import profile_name

ROOT = Path(__file__).resolve().parents[2]
SLURM_FIXTURES = ROOT / "tests" / "fixtures" / "slurm"
V2205 = SLURM_FIXTURES / "22.05"
NEWER_JSON = sorted((SLURM_FIXTURES / "23.02+").glob("*/*.json"))
DEMO = ROOT / "demo_data"


class Named(bytes):
    """Bytes whose repr is their name: Hypothesis writes a strategy's arguments into the
    strategy's repr (and warns past 50 kB), where a whole capture would say nothing."""

    name: str

    def __new__(cls, data: bytes, name: str) -> Named:
        out = super().__new__(cls, data)
        out.name = name
        return out

    def __repr__(self) -> str:
        return f"<{self.name}: {len(self)} bytes>"


class NamedText(str):
    """Text whose repr is its name (as ``Named``)."""

    name: str

    def __new__(cls, text: str, name: str) -> NamedText:
        out = super().__new__(cls, text)
        out.name = name
        return out

    def __repr__(self) -> str:
        return f"<{self.name}: {len(self)} characters>"


def read_bytes(path: Path) -> Named:
    return Named(path.read_bytes(), path.name)


def read_text(path: Path) -> NamedText:
    return NamedText(path.read_text(), path.name)


def fuzz(cost: float = 1.0, **overrides: Any) -> settings:
    """The chosen profile's settings; ``cost`` > 1 runs fewer examples of a test whose one
    case is that many times dearer than the suite's typical one (a whole collect round, a
    recording opened, a parser built), so that no test dominates the ci budget."""
    base = settings.get_profile(f"fuzz-{profile_name()}")
    examples = max(10, int(base.max_examples / cost))
    return settings(base, max_examples=examples, **overrides)


# ---- hostile values --------------------------------------------------------------------
BIG_INTS = [
    2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1, 2**32, 2**53, 2**53 + 1, 2**63 - 1, 2**63,
    2**64 - 1, 2**64, -(2**63) - 1, 10**30, -(10**30),
]
FLOATS = [math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0, 0.0, -1.0, 1e16]

hostile_ints = st.sampled_from(BIG_INTS) | st.integers(-(2**70), 2**70) | st.integers(-3, 3)
hostile_floats = st.sampled_from(FLOATS) | st.floats()
hostile_numbers = hostile_ints | hostile_floats

# Text a number field may hold: what Slurm prints for "none", what Python's float() reads
# that Slurm never prints, and overflow.
NUMBER_WORDS = [
    "", " ", "0", "-0", "-1", "1", "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e308",
    "1e999", "-1e999", "1_000", "0x10", "1e-400", "4294967294", "4294967295",
    "18446744073709551616", "9" * 25, "-" + "9" * 25, "9" * 5000, "١٢", "½", "(null)",
    "N/A", "UNLIMITED", "None", "parent", "INFINITE", "1.5.5", "--1", "+1", "1 2",
]
# Text any field may hold: separators of the formats read, control characters, a lone
# surrogate (what surrogateescape makes of invalid UTF-8), a BOM, a very long word.
TEXT_WORDS = [
    "", " ", "\t", "\n", "\r\n", "\x00", "\ud800", "\udcff", "\ufeff", "|", "||", "=", ",",
    ":", "[", "]", "[1-", "]-[", "{", "}", '"', "\\", "%", "'", "é", "💥", "a" * 300,
    "x" * 70_000, "(null)", "None", "N/A",
]
hostile_words = st.sampled_from(TEXT_WORDS + NUMBER_WORDS)
hostile_text = hostile_words | st.text(max_size=30) | st.text(
    alphabet=st.characters(codec="utf-8", categories=("Cc", "Zs", "P", "S", "Nd")), max_size=12
)
# Text that survived a decode(errors="replace"): what a Slurm text parser can be handed.
decoded_text = st.binary(max_size=40).map(lambda b: b.decode(errors="replace")) | hostile_text


class RawJson(str):
    """A token written into the JSON text as it is (a number no serializer writes)."""


RAW_NUMBERS = ["1e999", "-1e999", "-0", "1" + "0" * 30, "9" * 5000, "NaN", "Infinity",
               "-Infinity", "1E400", "0.0000000000000000000000001e-400"]


def json_scalars() -> st.SearchStrategy[Any]:
    return (st.none() | st.booleans() | hostile_numbers | hostile_text
            | st.sampled_from(RAW_NUMBERS).map(RawJson))


# JSON values of any type, a few levels deep: the wrong type where an object, a list, a
# number or a string belongs.
json_values = st.recursive(
    json_scalars(),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8) | hostile_words, inner, max_size=4),
    max_leaves=12,
)


# ---- JSON with what json.dumps will not write -------------------------------------------
class Pairs(list):  # type: ignore[type-arg]
    """A JSON object as its (key, value) pairs, so that a key may come twice."""


def dump_json(value: Any) -> bytes:
    """JSON text of ``value`` as a hostile producer might write it: NaN and Infinity
    bare (as Python's json module does), lone surrogates escaped, ``Pairs`` with their
    repeated keys, ``RawJson`` numbers no serializer writes."""
    return _dump(value).encode("utf-8", "surrogatepass")


def _dump(v: Any) -> str:
    if isinstance(v, Pairs):
        return "{" + ",".join(f"{_dump(str(k))}:{_dump(x)}" for k, x in v) + "}"
    if isinstance(v, dict):
        return "{" + ",".join(f"{_dump(str(k))}:{_dump(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list | tuple):
        return "[" + ",".join(_dump(x) for x in v) + "]"
    if isinstance(v, RawJson):
        return str(v)
    return json.dumps(v)


def pack_msgpack(value: Any) -> bytes:
    """msgpack of ``value``, ``Pairs`` with their repeated keys (msgspec writes a map
    from a dict only); a ``RawJson`` number as the float or string it reads as."""
    if isinstance(value, Pairs | dict):
        items = list(value) if isinstance(value, Pairs) else list(value.items())
        n = len(items)
        head = bytes([0x80 | n]) if n < 16 else b"\xde" + n.to_bytes(2, "big")
        return head + b"".join(pack_msgpack(k) + pack_msgpack(v) for k, v in items)
    if isinstance(value, list | tuple):
        n = len(value)
        head = bytes([0x90 | n]) if n < 16 else b"\xdc" + n.to_bytes(2, "big")
        return head + b"".join(pack_msgpack(v) for v in value)
    if isinstance(value, RawJson):
        try:
            value = float(value)
        except ValueError:
            value = str(value)
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        value = float(value)  # msgpack has no integer this wide
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogatepass")  # a lone surrogate, as raw bytes
        n = len(value)
        return b"\xdb" + n.to_bytes(4, "big") + value  # str32: any bytes, even not UTF-8
    return msgspec.msgpack.encode(value)


def paths(doc: Any, limit: int = 20_000) -> list[tuple[Any, ...]]:
    """Every container and leaf position in ``doc`` (up to ``limit``), as key paths."""
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), doc)]
    while stack and len(out) < limit:
        path, node = stack.pop()
        out.append(path)
        if isinstance(node, dict):
            stack.extend(((*path, k), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend(((*path, i), v) for i, v in enumerate(node))
    return out


def _get(node: Any, key: Any) -> Any:
    if isinstance(node, Pairs):  # the first of a repeated key
        return next(v for k, v in node if k == key)
    return node[key]


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = _get(doc, key)
    return doc


@st.composite
def mutated_json(draw: st.DrawFn, raw: bytes, *, max_edits: int = 6) -> bytes:
    """A real JSON document with a few positions changed (``mutated_tree``)."""
    return dump_json(draw(mutated_tree(json.loads(raw), max_edits=max_edits)))


@st.composite
def mutated_tree(draw: st.DrawFn, doc: Any, *, max_edits: int = 6) -> Any:
    """``doc`` (JSON-like; changed in place) with a few positions changed: a value
    replaced by a hostile one or one of the wrong type, a key dropped, or a key written
    twice (the hostile value first or last: decoders differ in which one wins)."""
    where = paths(doc)
    twice: list[tuple[tuple[Any, ...], Any, bool]] = []
    for _ in range(draw(st.integers(1, max_edits))):
        path = where[draw(st.integers(0, len(where) - 1))]
        edit = draw(st.sampled_from(["value", "value", "drop", "twice", "wrap"]))
        if not path:
            continue
        try:  # an earlier edit may have replaced a container on the way
            parent = _at(doc, path[:-1])
            current = parent[path[-1]]
        except (KeyError, IndexError, TypeError, StopIteration):
            continue
        if not isinstance(parent, dict | list):  # a string replaced it: indexable, not one
            continue
        if edit == "value":
            parent[path[-1]] = draw(json_values)
        elif edit == "wrap":  # the right value in the wrong container
            parent[path[-1]] = draw(st.sampled_from([[current], {"number": current}]))
        elif edit == "drop" and isinstance(parent, dict):
            del parent[path[-1]]
        elif edit == "twice" and isinstance(parent, dict):
            twice.append((path, draw(json_values), draw(st.booleans())))
    # Repeated keys last: an object turned into Pairs is no longer a dict to edit.
    for path, value, first in twice:
        try:
            parent = _at(doc, path[:-1])
        except (KeyError, IndexError, TypeError, StopIteration):
            continue
        if not isinstance(parent, dict | Pairs):
            continue
        pairs = parent if isinstance(parent, Pairs) else Pairs(parent.items())
        pairs.insert(0 if first else len(pairs), (path[-1], value))
        if len(path) == 1:
            doc = pairs
        else:
            grand = _at(doc, path[:-2])
            if not isinstance(grand, dict | list):
                continue
            if isinstance(grand, Pairs):
                grand[next(i for i, (k, _) in enumerate(grand) if k == path[-2])] = (
                    path[-2], pairs)
            else:
                grand[path[-2]] = pairs
    return doc


@st.composite
def mutated_bytes(draw: st.DrawFn, raw: bytes, *, max_edits: int = 6,
                  alphabet: bytes = b"") -> bytes:
    """``raw`` with a few edits: a span replaced by random bytes (or bytes of
    ``alphabet``, the format's separators, which reach deeper than noise), a span
    duplicated, a bit flipped, or the end cut off."""
    data = bytearray(raw)
    for _ in range(draw(st.integers(1, max_edits))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        edit = draw(st.sampled_from(["replace", "replace", "flip", "duplicate", "cut"]))
        if edit == "replace":
            span = draw(st.integers(0, 8))
            if alphabet and draw(st.booleans()):
                new = bytes(draw(st.lists(st.sampled_from(alphabet), max_size=8)))
            else:
                new = draw(st.binary(max_size=8))
            data[at : at + span] = new
        elif edit == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif edit == "duplicate":
            span = draw(st.integers(1, 64))
            data[at:at] = data[at : at + span]
        else:
            data = data[:at]
    return bytes(data)


def one_line(message: str) -> None:
    """The project's rule for an error message: one line fit for a banner or stderr."""
    assert message.strip(), "an error with no message"
    assert "\n" not in message and "\r" not in message, f"not one line: {message!r}"
    assert "Traceback" not in message, message
