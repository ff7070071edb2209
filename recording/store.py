"""The recording format: snapshots appended to one SQLite file.

Layout (schema version ``FORMAT_VERSION``; v1 files are still read):

* ``meta(key, value)``: ``format`` (= ``quotatop-recording``), ``schema_version``,
  ``cluster``, ``source``, ``quotatop_version`` (the writer hands it down: ``version``),
  ``created``, ``keyframe_every``, ``keyframe_chain``, and ``interval`` (the poll's
  seconds, when its recorder said).
* ``frames(seq, t, kind, key_seq, ref, blob)``: ``kind`` 0 is a keyframe (a whole
  snapshot), 1 a delta against the frame before it; ``key_seq`` is the keyframe
  that starts the delta chain, so a seek reads one keyframe and the deltas after
  it in a single indexed range query. Blobs are msgspec msgpack compressed by zstd.
  ``ref`` names the zstd dictionary: for a keyframe, the seq of an earlier
  keyframe whose raw bytes it is compressed against (0: none — a root, one every
  ``keyframe_chain`` keyframes; the others refer to their root, so a seek
  decompresses at most two; files written before refer to the keyframe before,
  a chain, and read the same way); for a delta, a ``dicts`` row (0: the raw bytes
  of its group's keyframe, as v1 did).
* ``dicts(id, data)`` (v2): zstd dictionaries trained on a recorder's first deltas.

A delta holds the jobs, nodes, teams, QoS and partitions that appeared (whole),
the fields that changed on the ones that stayed (a field list and a sparse item),
the keys that vanished, and the small remaining fields of the snapshot whole.
Whole-number fields that changed on many items at once (every pending job's
priority at each Slurm PriorityCalcPeriod) go in ``columns`` instead: the items'
positions gap-coded and the integer differences, which zstd packs to ~1 byte each.
A frame unlike the one before (most items added, removed or patched) is written
as a keyframe instead: the diff gives up early, so an append costs about a keyframe.
So is a frame whose delta would make its group cost a seek more than a share of a
keyframe's decoding (``read_work``): a priority recalculation of every pending job
starts a group rather than being applied by every seek into it.
Each frame is its own transaction in WAL mode, so a recorder killed mid-write
leaves a file that opens with at most the frame being written lost.
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import gc
import itertools
import math
import operator
import os
import sqlite3
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Iterable, Iterator
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import zstandard
from msgspec import Struct
from msgspec.structs import astuple

from quotatop.collectors.model import Job, Node, Partition, QoS, Snapshot, Team
from quotatop.recording.private_copy import ChangedWhileCopied, PrivateCopy

FORMAT_NAME = "quotatop-recording"
FORMAT_VERSION = 2
APPLICATION_ID = 0x71746F70  # "qtop": marks the SQLite file as ours
KEYFRAME = 0
DELTA = 1
DEFAULT_KEYFRAME_EVERY = 300
# Keyframes compress against an earlier one (~a third to half the size: most jobs
# are still there): one keyframe in this many is a root, compressed alone, and the
# others against their root, so a seek decompresses at most two keyframes (~3 ms
# each for 10k jobs here, page faults included; only the last is decoded). Against
# the keyframe before instead (a chain) they are ~8% smaller at this count, but a
# seek decompresses the whole chain. 4 is the smallest average: a root costs ~2.5x
# a keyframe against it, which grows with its distance from the root.
DEFAULT_KEYFRAME_CHAIN = 4
# Deltas compress against a dictionary trained on this many of the recorder's first
# deltas: ~half the bytes of using the keyframe's, and 10x faster to decompress.
TRAIN_AFTER = 64
DICT_SIZE = 16_384
_EXACT = 2**53  # integer differences of floats below this are exact
# A frame where more than this share of the items are added, removed or patched
# is written as a keyframe: such a delta saves little and, at 100k jobs, costs
# ~100x a keyframe to diff and compress.
UNLIKE_SHARE = 0.5
# Below these a delta is cheap whatever it holds, and still smaller.
_UNLIKE_MIN_ITEMS = 256
_UNLIKE_MIN_BYTES = 65_536
# Loading a raw keyframe (26 MB at 100k jobs) as a dictionary costs ~19 s at
# level 19 and 65 ms at 9; the first deltas of a group use it until one is trained.
_RAW_DICT_LEVEL = 9
# Deltas above this many raw bytes are compressed at the keyframes' level: level
# 19 runs at ~1 MB/s, and a rare big delta saves little by it.
_BIG_DELTA = 1_000_000

# A seek decodes its group's keyframe and applies every delta after it, so a group
# ends (the frame is written as a keyframe) before its deltas would cost a seek more
# than decoding this share of the snapshot's items: the worst seek is then about 1.6
# keyframe decodes (and two decompressions), however busy the cluster. On a Slurm
# cluster a priority recalculation of every pending job alone exceeds it, so each
# starts a group. Below the floor a group is cheap to seek whatever it holds (small
# clusters: ``keyframe_every`` ends it).
GROUP_WORK_SHARE = 0.6
_GROUP_WORK_MIN = 5_000.0
# What applying a delta costs a seek, in keyframe items decoded (1.8 µs each on
# this 2-core machine), fitted on a 10k-job cluster's deltas: per frame (its row,
# decompress, decode, the apply loop), per item added (decoded whole), patched (a
# sparse item decoded, its fields set), removed, per column entry (a number added
# in place: a priority recalculation of 7.5k pending jobs is ~9k) and per key of a
# reordered collection.
_WORK_FRAME = 4.5
_WORK_ADDED = 1.0
_WORK_PATCHED = 1.4
_WORK_REMOVED = 0.2
_WORK_COLUMN = 0.4
_WORK_ORDER = 0.2

# The keyed collections of a snapshot, with the attribute that names each item.
_KEYED = (
    ("jobs", "id"),
    ("nodes", "name"),
    ("teams", "name"),
    ("qos", "name"),
    ("partitions", "name"),
)
_KEY_OF = {attr: attrgetter(key) for attr, key in _KEYED}
_CHANGED = tuple((attr, f"{attr}_changed", attrgetter(key)) for attr, key in _KEYED)


class RecordingError(Exception):
    """The file is not a readable quotatop recording; the message is one line."""


class Column(Struct, array_like=True):
    """One numeric field changed on many items: ``field`` may be ``factors.age``
    (a field of a nested struct). Positions index the previous frame's order."""

    attr: str
    field: str
    gaps: list[int]  # first position, then the distance to each next
    diffs: list[int]  # new value minus old


class Delta(Struct, kw_only=True, omit_defaults=True):
    header: Snapshot  # the snapshot with its keyed collections emptied
    jobs: list[Job] = []  # new items, whole
    nodes: list[Node] = []
    teams: list[Team] = []
    qos: list[QoS] = []
    partitions: list[Partition] = []
    # Changed items: the names of the changed fields and the item holding only
    # those (fields back at their default are omitted by the encoder).
    jobs_changed: list[tuple[list[str], Job]] = []
    nodes_changed: list[tuple[list[str], Node]] = []
    teams_changed: list[tuple[list[str], Team]] = []
    qos_changed: list[tuple[list[str], QoS]] = []
    partitions_changed: list[tuple[list[str], Partition]] = []
    removed: dict[str, list[str]] = {}
    # Full key order of a collection, only when upserts and removals alone
    # would not reproduce the source's order.
    order: dict[str, list[str]] = {}
    columns: list[Column] = []  # applied first, against the previous frame (v2)


_encoder = msgspec.msgpack.Encoder()
_snapshot_decoder = msgspec.msgpack.Decoder(Snapshot)
_delta_decoder = msgspec.msgpack.Decoder(Delta)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS frames (
    seq INTEGER PRIMARY KEY,
    t REAL NOT NULL,
    kind INTEGER NOT NULL,
    key_seq INTEGER NOT NULL,
    ref INTEGER NOT NULL DEFAULT 0,
    blob BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS dicts (id INTEGER PRIMARY KEY, data BLOB NOT NULL);
"""


MAX_DURATION = 100 * 365 * 86400.0  # a retention or an offset into a recording


def parse_duration(text: str, *, allow_zero: bool = False) -> float:
    """``72h``, ``30m``, ``2d``, ``90s`` or plain seconds → seconds."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    t = text.strip().lower()
    try:
        value = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except ValueError:
        raise ValueError(f"bad duration {text!r}: use e.g. 90s, 30m, 72h, 2d") from None
    if not math.isfinite(value) or value > MAX_DURATION:
        raise ValueError(f"bad duration {text!r}: must be finite, at most "
                         f"{MAX_DURATION / 86400 / 365:g} years")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"bad duration {text!r}: must be positive")
    return value


def _header(snap: Snapshot) -> Snapshot:
    return msgspec.structs.replace(snap, jobs=[], nodes=[], teams=[], qos=[], partitions=[])


def make_delta(prev: Snapshot, cur: Snapshot) -> Delta:
    delta = make_bounded_delta(prev, cur, budget=None)
    assert delta is not None
    return delta


def item_count(snap: Snapshot) -> int:
    return sum(len(getattr(snap, attr)) for attr, _ in _KEYED)


def read_work(delta: Delta) -> float:
    """What applying ``delta`` costs a seek, in keyframe items decoded."""
    work = _WORK_FRAME
    for attr, changed_attr, _ in _CHANGED:
        work += _WORK_ADDED * len(getattr(delta, attr))
        work += _WORK_PATCHED * len(getattr(delta, changed_attr))
    work += _WORK_REMOVED * sum(map(len, delta.removed.values()))
    work += _WORK_ORDER * sum(map(len, delta.order.values()))
    work += _WORK_COLUMN * sum(len(c.diffs) for c in delta.columns)
    return work


def make_bounded_delta(prev: Snapshot, cur: Snapshot, *, budget: float | None,
                       work_budget: float | None = None) -> Delta | None:
    """The delta from ``prev`` to ``cur``, or None as soon as more than ``budget``
    items are seen to be added, removed or patched (changes a column carries are
    nearly free, so they do not count), or its ``read_work`` is estimated (from
    sampled changed items) above ``work_budget``. Giving up early keeps an append
    between unlike snapshots as cheap as a keyframe: diffing and compressing a delta
    the size of a snapshot costs ~100x more at 100k jobs; building the columns of a
    priority recalculation that will be written as a keyframe anyway ~1 s."""
    delta = Delta(header=_header(cur))
    spent = 0.0
    work = _WORK_FRAME
    for attr, key in _KEYED:
        old = {getattr(x, key): x for x in getattr(prev, attr)}
        new_items = getattr(cur, attr)
        added, changed = [], []
        pairs = []
        limit = None if budget is None else budget - spent
        for x in new_items:
            before = old.get(getattr(x, key))
            if before is None:
                added.append(x)
                if limit is not None and len(added) > limit:
                    return None
            elif before != x:
                pairs.append((before, x))
        if budget is not None:
            spent += len(added) + len(old) - (len(new_items) - len(added))
            if pairs and spent + len(pairs) > budget:
                spent += _patched_estimate(pairs)
            if spent > budget:
                return None
        if work_budget is not None:
            work += _WORK_ADDED * len(added)
            work += _WORK_REMOVED * (len(old) - (len(new_items) - len(added)))
            if pairs:
                work += _work_estimate(pairs)
            if work > work_budget:
                return None
        if pairs:
            changed, columns = _changes(attr, key, old, pairs)
            delta.columns.extend(columns)
        new_keys = [getattr(x, key) for x in new_items]
        new_set = set(new_keys)
        removed = [k for k in old if k not in new_set]
        setattr(delta, attr, added)
        setattr(delta, f"{attr}_changed", changed)
        if removed:
            delta.removed[attr] = removed
        if _apply_order(list(old), added, removed, key) != new_keys:
            delta.order[attr] = new_keys
    return delta


_MIN_COLUMN = 16
_SAMPLE = 128


def _patched_estimate(pairs: list[tuple[Any, Any]]) -> float:
    """How many of the changed items need a patch (not only columns), from an
    evenly spaced sample: exact counting costs as much as building the delta."""
    sample = pairs[:: max(1, len(pairs) // _SAMPLE)]
    patched = sum(1 for b, a in sample if _numeric_changes(b, a)[0])
    return patched / len(sample) * len(pairs)


def _work_estimate(pairs: list[tuple[Any, Any]]) -> float:
    """The ``read_work`` of the changed items, from an evenly spaced sample: a patch
    for an item with a change only a patch carries, a column entry per number."""
    sample = pairs[:: max(1, len(pairs) // _SAMPLE)]
    each = 0.0
    for b, a in sample:
        other, nums = _numeric_changes(b, a)
        each += (_WORK_PATCHED if other else 0.0) + _WORK_COLUMN * len(nums)
    return each / len(sample) * len(pairs)


def _int_diff(a: Any, b: Any) -> int | None:
    """``b - a`` when both are numbers of one type, whole and exact; else None."""
    t = type(a)
    if t is not type(b) or t not in (int, float):
        return None
    if t is float and not (a.is_integer() and b.is_integer() and abs(a) < _EXACT
                           and abs(b) < _EXACT):
        return None
    return int(b - a)


def _numeric_changes(before: Any, after: Any) -> tuple[list[str], dict[str, int]]:
    """The changed fields split into those only a patch can carry and whole-number
    differences by column name (``priority``, ``factors.age``)."""
    other, nums = [], {}
    # Tuples compared at C speed: a patch usually touches 1–3 of ~20 fields.
    for f, a, b in zip(before.__struct_fields__, astuple(before), astuple(after), strict=True):
        if a == b:
            continue
        d = _int_diff(a, b)
        if d is not None:
            nums[f] = d
            continue
        if isinstance(a, Struct) and type(a) is type(b):
            subs = {f"{f}.{s}": _int_diff(getattr(a, s), getattr(b, s))
                    for s in a.__struct_fields__ if getattr(a, s) != getattr(b, s)}
            if None not in subs.values():
                nums.update(subs)  # type: ignore[arg-type]
                continue
        other.append(f)
    return other, nums


def _changes(attr: str, key: str, old: dict[str, Any], pairs: list[tuple[Any, Any]]
             ) -> tuple[list[tuple[list[str], Any]], list[Column]]:
    """Patches and columns for the items that changed. A column pays only when
    many items share it; an item's change to a field goes to a patch (whole) unless
    every part of it is in a column that pays."""
    split = [(b, a, *_numeric_changes(b, a)) for b, a in pairs]
    counts: dict[str, int] = {}
    for *_, nums in split:
        for name in nums:
            counts[name] = counts.get(name, 0) + 1
    paying = {n for n, c in counts.items() if c >= _MIN_COLUMN}
    position = {k: i for i, k in enumerate(old)} if paying else {}
    cols: dict[str, tuple[list[int], list[int]]] = {n: ([], []) for n in sorted(paying)}
    patches = []
    for before, after, other, nums in split:
        k = getattr(after, key)
        top = {n.split(".", 1)[0] for n in nums}
        unpaid = {n.split(".", 1)[0] for n in nums if n not in paying}
        names = other + [f for f in before.__struct_fields__ if f in unpaid]
        for n, d in nums.items():
            if n.split(".", 1)[0] in top - unpaid:
                cols[n][0].append(position[k])
                cols[n][1].append(d)
        if names:
            sparse = type(after)(**{key: k}, **{f: getattr(after, f) for f in names})
            patches.append((names, sparse))
    columns = [Column(attr, n, _gaps(p), d) for n, (p, d) in cols.items() if p]
    return patches, columns


def _gaps(positions: list[int]) -> list[int]:
    return [positions[0]] + [b - a for a, b in itertools.pairwise(positions)]


def _apply_order(old_keys: list[str], added: list[Any], removed: list[str], key: str) -> list[str]:
    gone = set(removed)
    keys = [k for k in old_keys if k not in gone]
    keys += [getattr(x, key) for x in added]
    return keys


def _raw_dict(keyframe: bytes) -> zstandard.ZstdCompressionDict:
    return zstandard.ZstdCompressionDict(keyframe, dict_type=zstandard.DICT_TYPE_RAWCONTENT)


class _State:
    """A snapshot being rebuilt from a delta chain: keyed dicts, so applying one
    delta costs what the delta holds, not what the cluster holds.

    While ``owned`` (the items were decoded for this state alone and no snapshot
    shares them yet) changes are made in place: at a priority recalculation that
    is ~7k jobs, and a replace per job made it the costliest part of a seek. Once
    ``snapshot()`` has handed the items out, changed items are copied first."""

    def __init__(self, snap: Snapshot, *, owned: bool = False) -> None:
        self.header = snap
        self.owned = owned
        self.items: dict[str, dict[str, Any]] = {
            attr: {key_of(x): x for x in getattr(snap, attr)} for attr, key_of in _KEY_OF.items()
        }

    def apply(self, delta: Delta) -> None:
        self.header = delta.header
        if delta.columns:
            self._apply_columns(delta.columns)
        removed, order = delta.removed, delta.order
        for attr, changed_attr, key_of in _CHANGED:
            items = self.items[attr]
            gone = removed.get(attr)
            if gone:
                for k in gone:
                    items.pop(k, None)
            changed = getattr(delta, changed_attr)
            if changed:
                if self.owned:
                    for names, sparse in changed:
                        item = items[key_of(sparse)]
                        for f in names:
                            setattr(item, f, getattr(sparse, f))
                else:
                    replace = msgspec.structs.replace
                    for names, sparse in changed:
                        k = key_of(sparse)
                        items[k] = replace(items[k], **{f: getattr(sparse, f) for f in names})
            new = getattr(delta, attr)
            if new:
                items.update(zip(map(key_of, new), new, strict=True))
            keys = order.get(attr)
            if keys is not None:
                self.items[attr] = {k: items[k] for k in keys}

    def _apply_columns(self, columns: list[Column]) -> None:
        by_attr: dict[str, list[Column]] = {}
        for c in columns:
            if len(c.gaps) != len(c.diffs):
                raise ValueError(f"column {c.attr}.{c.field} has {len(c.gaps)} positions "
                                 f"and {len(c.diffs)} values")
            by_attr.setdefault(c.attr, []).append(c)
        for attr, cols in by_attr.items():
            items = self.items[attr]
            keys = list(items)  # positions index the previous frame's order
            touched = [list(map(keys.__getitem__, itertools.accumulate(c.gaps))) for c in cols]
            if not self.owned:
                _copy_touched(items, cols, touched)
            # Whole columns in C (map: no Python frame per item). A recalculation of
            # 7.5k pending jobs (3 columns) costs a seek 13-16 ms this way, ~24 ms with
            # a replace per job: the items are scattered in memory, so it is bound by
            # fetching them, not by the arithmetic.
            for c, ks in zip(cols, touched, strict=True):
                objs: Iterable[Any] = map(items.__getitem__, ks)
                field, _, sub = c.field.partition(".")
                if sub:
                    objs, field = map(attrgetter(field), objs), sub
                targets = list(objs)
                values = map(operator.add, map(attrgetter(field), targets), c.diffs)
                deque(map(setattr, targets, itertools.repeat(field), values), maxlen=0)

    def snapshot(self) -> Snapshot:
        self.owned = False  # the items are shared from here on
        return msgspec.structs.replace(
            self.header, **{attr: list(self.items[attr].values()) for attr, _ in _KEYED}
        )


def _copy_touched(items: dict[str, Any], cols: list[Column], touched: list[list[str]]) -> None:
    """Copy the items (and the nested structs) columns are about to change in place,
    since snapshots already handed out share them."""
    for k in set().union(*touched):
        items[k] = copy.copy(items[k])
    nested: dict[str, set[str]] = {}
    for c, ks in zip(cols, touched, strict=True):
        field, _, sub = c.field.partition(".")
        if sub:
            nested.setdefault(field, set()).update(ks)
    for field, ks in nested.items():
        for k in ks:
            item = items[k]
            setattr(item, field, copy.copy(getattr(item, field)))


def apply_delta(prev: Snapshot, delta: Delta) -> Snapshot:
    state = _State(prev)  # not owned: prev's items stay as they are
    state.apply(delta)
    return state.snapshot()


_SQLITE_MAGIC = b"SQLite format 3\x00"
# sqlite3 errors, and the UnicodeDecodeError Python raises decoding an error message
# that quotes a damaged (non-UTF-8) schema.
_DB_ERRORS = (sqlite3.DatabaseError, UnicodeDecodeError)


def _uri(path: str, **params: str) -> str:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"file:{urllib.parse.quote(os.path.abspath(path))}?{query}"


def _connect(target: str, *, uri: bool) -> sqlite3.Connection:
    # The TUI reads frames from worker threads, one at a time (never at once).
    conn = sqlite3.connect(target, isolation_level=None, timeout=10, check_same_thread=False,
                           uri=uri)
    # A damaged meta value must not end in a UnicodeDecodeError.
    conn.text_factory = lambda b: b.decode("utf-8", "replace")
    return conn


class _Db:
    """An open recording file: validated on open, every read error made one line.

    An existing file is read-only until it is known to be a quotatop recording: its
    header's ``application_id`` is ours, or (files from before it was set) it has the
    ``meta`` and ``frames`` tables with ``format = quotatop-recording``. Only then is
    it opened for writing (``write``) and switched to WAL; another application's
    SQLite file is never changed, nor left with -wal/-shm files beside it. A new
    recording (``create`` and no file yet) is made with mode 0600.

    ``read_only`` with a ``-wal`` beside the file reads a private copy of it
    (``private_copy.py``: SQLite would write the ``-shm``) unless ``follow`` (a viewer
    of a file a writer is appending to, which shares the writer's index by design)."""

    def __init__(self, path: str | Path, *, create: bool = False, write: bool = False,
                 read_only: bool = False, follow: bool = False) -> None:
        self.path = str(path)  # what messages name: the user's file, never the copy
        self.target = self.path  # what SQLite opens: the file, or its private copy
        self.copy: PrivateCopy | None = None
        self.fresh = False
        self.immutable = False  # opened read-only with no writer beside it (read_only)
        p = Path(self.path)
        if create and not p.exists():
            self._create(p)
            return
        if not p.is_file():
            raise RecordingError(f"{self.path}: no such recording")
        try:
            with p.open("rb") as fh:
                head = fh.read(100)
        except OSError as e:
            raise RecordingError(f"{self.path}: cannot read ({e.strerror})") from None
        if read_only and not follow and Path(self.path + "-wal").exists():
            self._check_header(head)  # another application's file is refused, not copied
            self._copy()
        try:
            if create and not head:  # an empty file: nothing in it to lose
                self.fresh = True
                self._open(write=True)
                return
            self._identify(head)
            if read_only:
                self._open_read_only()
            else:
                self._open(write=write or create)
        except BaseException:
            self._remove_copy()
            raise

    def _copy(self) -> None:
        try:
            self.copy = PrivateCopy(self.path)
        except ChangedWhileCopied:
            raise RecordingError(
                f"{self.path}: a recorder is writing it (it changed each time it was "
                f"copied to be read unchanged): follow it with --source live") from None
        except OSError as e:
            raise RecordingError(
                f"{self.path}: cannot copy it to read it unchanged "
                f"({e.strerror or e})") from None
        self.target = self.copy.path

    def _remove_copy(self) -> None:
        if self.copy is not None:
            self.copy.remove()

    def _create(self, p: Path) -> None:
        parent = p.parent
        if not parent.is_dir():
            raise RecordingError(f"{self.path}: folder {parent} does not exist")
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as e:
            raise RecordingError(f"{self.path}: cannot create ({e.strerror})") from None
        os.close(fd)
        self.fresh = True
        self._open(write=True)

    def _check_header(self, head: bytes) -> int:
        """The header's application_id; RecordingError unless SQLite's and 0 or ours."""
        if not head.startswith(_SQLITE_MAGIC) or len(head) < 100:
            raise RecordingError(f"{self.path}: not a quotatop recording (not an SQLite file)")
        app_id = int.from_bytes(head[68:72], "big")
        if app_id not in (0, APPLICATION_ID):
            raise RecordingError(
                f"{self.path}: not a quotatop recording (an SQLite file of another "
                f"application, id {app_id:#x})")
        return app_id

    def _identify(self, head: bytes) -> None:
        if self._check_header(head) == APPLICATION_ID:
            return
        # No id: a recording from before it was set, or anything else. Look at its tables
        # without changing it (_read_params): immutable (no lock, no -shm) unless a -wal
        # beside it may hold what a writer has not checkpointed yet; its private copy.
        try:
            conn = _connect(_uri(self.target, **self._read_params()), uri=True)
        except _DB_ERRORS as e:
            raise RecordingError(f"{self.path}: not a quotatop recording ({e})") from None
        try:
            tables = {r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")}
            fmt = (conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
                   if {"meta", "frames"} <= tables else None)
        except _DB_ERRORS as e:
            raise RecordingError(f"{self.path}: not a quotatop recording ({e})") from None
        finally:
            conn.close()
        if fmt is None or fmt[0] != FORMAT_NAME:
            raise RecordingError(
                f"{self.path}: not a quotatop recording (an SQLite file without its tables)")

    def _open(self, *, write: bool) -> None:
        try:
            if write:
                self.conn = _connect(self.path, uri=False)
                if self.fresh:
                    # Marked as ours before anything else is written, so the main file's
                    # header says so even while the WAL holds the rest.
                    self.conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                    self.conn.execute(f"PRAGMA user_version={FORMAT_VERSION}")
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
            else:
                # Ours: an ordinary connection, so closing the last one removes the -wal
                # and -shm files (a read-only one would leave them); nothing is written.
                self.conn = _connect(self.path, uri=False)
        except _DB_ERRORS as e:
            if hasattr(self, "conn"):
                self.conn.close()
            raise RecordingError(f"{self.path}: not a quotatop recording ({e})") from None

    def _read_params(self) -> dict[str, str]:
        """How a look that must change nothing opens ``target``: a private copy as an
        ordinary file (it is ours; its index is made beside it), else ``mode=ro``, and
        ``immutable`` too when no ``-wal`` is beside it (``_open_read_only``)."""
        if self.copy is not None:
            return {}
        if Path(self.path + "-wal").exists():
            return {"mode": "ro"}
        return {"mode": "ro", "immutable": "1"}

    def _open_read_only(self) -> None:
        """A viewer's connection to a file a live poller may be writing: it can never
        change the file, take a lock that stops the poller, or change its journal mode.

        With a ``-wal`` beside the file a writer has it open (or died holding it): an
        ordinary ``mode=ro`` connection, which reads what the writer committed to the
        WAL and takes read locks in the ``-shm`` (the WAL index: shared memory, not the
        data; SQLite ≥ 3.22 falls back to a private copy of it when the viewer may
        only read the ``-shm``). Without one, no writer has the file open: ``mode=ro``
        would create an empty ``-wal`` and ``-shm`` and leave them (a read-only
        connection does not remove them on close; refused outright where the viewer
        cannot write the folder), so the file is read as ``immutable``, which creates
        nothing; the caller reopens once a ``-wal`` appears (``immutable`` caches what
        it read and never looks again). A private copy (``__init__``) is read as an
        ordinary file, and counts as immutable: it sees nothing written after it."""
        self.immutable = self.copy is not None or not Path(self.path + "-wal").exists()
        try:
            self.conn = _connect(_uri(self.target, **self._read_params()), uri=True)
            # Belt and braces over mode=ro: this connection refuses any write itself.
            self.conn.execute("PRAGMA query_only=1")
            self.conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except _DB_ERRORS as e:
            if hasattr(self, "conn"):
                self.conn.close()
            if "unable to open" in str(e) or "readonly" in str(e):
                raise RecordingError(
                    f"{self.path}: cannot open it read-only ({e}): a viewer needs to read "
                    f"the file and its -wal and -shm") from None
            raise RecordingError(f"{self.path}: damaged recording ({e})") from None

    def meta(self) -> dict[str, str]:
        try:
            tables = {
                r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if not {"meta", "frames"} <= tables:
                raise RecordingError(
                    f"{self.path}: not a quotatop recording (an SQLite file without its tables)"
                )
            meta = dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
        except _DB_ERRORS as e:
            raise RecordingError(f"{self.path}: damaged recording ({e})") from None
        if meta.get("format") != FORMAT_NAME:
            raise RecordingError(f"{self.path}: not a quotatop recording")
        try:
            version = int(meta.get("schema_version", ""))
        except ValueError:
            raise RecordingError(f"{self.path}: recording has no schema version") from None
        if version < 1:
            raise RecordingError(
                f"{self.path}: recording schema v{version} is not one quotatop writes "
                f"(v1 to v{FORMAT_VERSION})")
        if version > FORMAT_VERSION:
            raise RecordingError(
                f"{self.path}: recording schema v{version} is newer than this quotatop "
                f"reads (v{FORMAT_VERSION}); upgrade quotatop to replay it"
            )
        return meta

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            self._remove_copy()


class Recorder:
    """Appends snapshots to a recording; each append is one transaction.

    ``start()`` opens (or creates) the file, ``append(snap)`` writes one frame,
    ``stop()`` closes it. Appending to an existing recording continues it with a
    fresh keyframe (a chain root) and a freshly trained delta dictionary."""

    def __init__(
        self,
        path: str | Path,
        *,
        cluster: str = "",
        source: str = "",
        keyframe_every: int = DEFAULT_KEYFRAME_EVERY,
        keyframe_chain: int = DEFAULT_KEYFRAME_CHAIN,
        retention: float | None = None,
        level: int = 19,
        keyframe_level: int = 9,
        interval: float | None = None,
        version: str = "",
    ) -> None:
        self.path = Path(path)
        self.cluster, self.source = cluster, source
        # The quotatop version the file states, handed down by the writer (the command
        # line or the TUI): the store sits below the roof that knows it.
        self.version = version
        # The poller's seconds between frames, kept in meta so that a live viewer
        # knows how long a silence means the poller has stopped (None: not said).
        self.interval = interval
        self.keyframe_every = max(1, keyframe_every)
        self.keyframe_chain = max(1, keyframe_chain)
        self.retention = retention
        # Deltas are small: the slowest level costs ~1 ms a frame and saves ~5%.
        self._level = level
        # Keyframes are rare and large: a slower level pays (≈25% smaller at level 9).
        self._key_level = keyframe_level
        self._delta_cctx: zstandard.ZstdCompressor | None = None
        self._big_delta_cctx: zstandard.ZstdCompressor | None = None
        self._delta_dict: zstandard.ZstdCompressionDict | None = None
        self._db: _Db | None = None
        self._prev: Snapshot | None = None
        self._prev_key: tuple[int, bytes] | None = None  # (seq, raw msgpack)
        self._root_key: tuple[int, bytes] | None = None  # the keyframes' dictionary
        self._chain_len = 0  # keyframes since (and with) the root
        self._since_key = 0
        self._chain_work = 0.0  # read_work of the deltas since the keyframe
        self._key_seq = 0
        self._dict_id = 0
        self._samples: list[bytes] = []
        self.frames_written = 0

    def start(self) -> Recorder:
        db = _Db(self.path, create=True)
        try:
            if db.fresh:
                db.conn.executescript(_SCHEMA)
                rows = {
                    "format": FORMAT_NAME,
                    "schema_version": str(FORMAT_VERSION),
                    "cluster": self.cluster,
                    "source": self.source,
                    "quotatop_version": self.version,
                    "created": f"{time.time():.3f}",
                    "keyframe_every": str(self.keyframe_every),
                    "keyframe_chain": str(self.keyframe_chain),
                }
                if self.interval is not None:
                    rows["interval"] = f"{self.interval:g}"
                with db.conn:
                    db.conn.execute("BEGIN")
                    db.conn.executemany("INSERT INTO meta VALUES (?, ?)", rows.items())
            else:
                meta = db.meta()
                if int(meta["schema_version"]) != FORMAT_VERSION:
                    raise RecordingError(
                        f"{self.path}: cannot append to a v{meta['schema_version']} recording"
                    )
                if self.interval is not None:  # this recorder's cadence, not the last one's
                    with db.conn:
                        db.conn.execute("BEGIN IMMEDIATE")
                        db.conn.execute("INSERT OR REPLACE INTO meta VALUES ('interval', ?)",
                                        (f"{self.interval:g}",))
        except _DB_ERRORS as e:
            db.close()
            raise RecordingError(f"{self.path}: cannot record here ({e})") from None
        except RecordingError:
            db.close()
            raise
        self._db = db
        self._prev = self._prev_key = self._root_key = None
        self._dict_id, self._samples = 0, []
        return self

    def _keyframe(self, snap: Snapshot) -> tuple[bytes, bytes, int]:
        payload = _encoder.encode(snap)
        ref = 0
        if self._root_key is not None and self._chain_len < self.keyframe_chain:
            ref, base = self._root_key
            cctx = zstandard.ZstdCompressor(level=self._key_level, dict_data=_raw_dict(base))
        else:
            cctx = zstandard.ZstdCompressor(level=self._key_level)
        blob = cctx.compress(payload)
        if self._dict_id == 0:
            # Until a dictionary is trained, deltas compress against their keyframe's
            # bytes: new jobs look like old ones.
            self._delta_dict = _raw_dict(payload)
            self._delta_cctx = zstandard.ZstdCompressor(
                level=min(self._level, _RAW_DICT_LEVEL), dict_data=self._delta_dict,
                write_content_size=True,
            )
            self._big_delta_cctx = None
        return payload, blob, ref

    def _compress_delta(self, payload: bytes) -> bytes:
        assert self._delta_cctx is not None
        if len(payload) <= _BIG_DELTA:
            return self._delta_cctx.compress(payload)
        if self._big_delta_cctx is None:
            self._big_delta_cctx = zstandard.ZstdCompressor(
                level=min(self._level, self._key_level), dict_data=self._delta_dict,
                write_content_size=True, write_dict_id=self._dict_id == 0,
            )
        return self._big_delta_cctx.compress(payload)

    def _delta_payload(self, snap: Snapshot) -> tuple[bytes, float] | None:
        """The encoded delta from the previous frame and what it costs a seek to
        apply, or None when a keyframe is the better frame: most items changed
        (cheaper and smaller), or the group's deltas would cost a seek more than
        its budget (see ``read_work``)."""
        assert self._prev is not None and self._prev_key is not None
        items = max(item_count(snap), item_count(self._prev))
        left = max(GROUP_WORK_SHARE * items, _GROUP_WORK_MIN) - self._chain_work
        delta = make_bounded_delta(
            self._prev, snap, budget=max(UNLIKE_SHARE * items, _UNLIKE_MIN_ITEMS),
            work_budget=left,
        )
        if delta is None:
            return None
        work = read_work(delta)
        if work > left:
            return None
        payload = _encoder.encode(delta)
        if len(payload) > max(UNLIKE_SHARE * len(self._prev_key[1]), _UNLIKE_MIN_BYTES):
            return None
        return payload, work

    def _train(self) -> None:
        assert self._db is not None
        try:
            trained = zstandard.train_dictionary(DICT_SIZE, self._samples, level=self._level)
        except zstandard.ZstdError:
            self._samples = []  # too little to learn from (tiny snapshots): keep v1's way
            return
        data = trained.as_bytes()
        self._delta_dict = zstandard.ZstdCompressionDict(data)
        self._big_delta_cctx = None
        with self._db.conn:
            self._db.conn.execute("BEGIN IMMEDIATE")
            cur = self._db.conn.execute("INSERT INTO dicts (data) VALUES (?)", (data,))
        self._dict_id = int(cur.lastrowid or 0)
        self._delta_cctx = zstandard.ZstdCompressor(
            level=self._level, dict_data=self._delta_dict,
            write_content_size=True, write_dict_id=False,
        )
        self._samples = []

    def append(self, snap: Snapshot) -> int:
        """Write one frame; returns its sequence number. A write SQLite refuses (a full
        disk, SQLITE_FULL) is a RecordingError of one line: that frame is rolled back,
        the ones before it are kept, and ``stop()`` still closes the file."""
        if self._db is None:
            raise RuntimeError("Recorder.append before start()")
        try:
            return self._append(snap)
        except _DB_ERRORS as e:
            raise RecordingError(
                f"{self.path}: cannot write frame {self.frames_written + 1} ({e}); the "
                f"{self.frames_written} frame(s) before it are kept") from None

    def _append(self, snap: Snapshot) -> int:
        assert self._db is not None
        conn = self._db.conn
        delta = None
        if self._prev is not None and self._since_key < self.keyframe_every:
            delta = self._delta_payload(snap)
        work = 0.0
        if delta is None:
            kind = KEYFRAME
            payload, blob, ref = self._keyframe(snap)
        else:
            kind, (payload, work) = DELTA, delta
            blob, ref = self._compress_delta(payload), self._dict_id
            if self._dict_id == 0 and self._samples is not None:
                self._samples.append(payload)
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            seq = (conn.execute("SELECT COALESCE(MAX(seq), 0) FROM frames").fetchone()[0]) + 1
            key_seq = seq if kind == KEYFRAME else self._key_seq
            conn.execute(
                "INSERT INTO frames (seq, t, kind, key_seq, ref, blob) VALUES (?, ?, ?, ?, ?, ?)",
                (seq, snap.taken_at, kind, key_seq, ref, blob),
            )
        if kind == KEYFRAME:
            self._key_seq, self._since_key, self._chain_work = seq, 1, 0.0
            self._chain_len = 1 if ref == 0 else self._chain_len + 1
            self._prev_key = (seq, payload)
            if ref == 0:
                self._root_key = self._prev_key
        else:
            self._since_key += 1
            self._chain_work += work
            if self._dict_id == 0 and len(self._samples) >= TRAIN_AFTER:
                self._train()
        self._prev = snap
        self.frames_written += 1
        if self.retention is not None and self.frames_written % 100 == 1:
            purge(conn, snap.taken_at - self.retention)
            first = conn.execute("SELECT MIN(seq) FROM frames").fetchone()[0]
            if self._root_key is not None and self._root_key[0] < first:
                self._root_key = None  # purged: the next keyframe is a root
        return seq

    def stop(self) -> None:
        if self._db is None:
            return
        db, self._db = self._db, None
        try:
            db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except _DB_ERRORS:
            # No room to fold the -wal in (a full disk): the frames stay in the -wal,
            # which every reader reads; closing must not turn that into a traceback.
            pass
        finally:
            with contextlib.suppress(*_DB_ERRORS):
                db.close()

    def __enter__(self) -> Recorder:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _has_ref(conn: sqlite3.Connection) -> bool:
    """v1 files have no ``ref`` column: every dictionary there is the keyframe."""
    return any(r[1] == "ref" for r in conn.execute("PRAGMA table_info(frames)"))


# A keyframe and the keyframes it is compressed against, newest first, in one query.
# ``f.seq < c.seq`` ends the walk on a damaged file whose refs loop.
_KEY_CHAIN = """
WITH RECURSIVE chain(seq, kind, ref, blob) AS (
    SELECT seq, kind, ref, blob FROM frames WHERE seq = ?
    UNION ALL
    SELECT f.seq, f.kind, f.ref, f.blob FROM frames AS f JOIN chain AS c
        ON f.seq = c.ref WHERE c.kind = 0 AND c.ref != 0 AND f.seq < c.seq
)
SELECT seq, kind, ref, blob FROM chain
"""


# The most bytes one frame may decompress to. zstd allocates what a frame's header
# claims; a damaged or hostile blob claiming a terabyte must be a damaged recording,
# not a MemoryError. A 100k-job snapshot is ~30 MB of msgpack.
MAX_FRAME_BYTES = 1 << 30


def _bounded(blob: bytes) -> bytes:
    """``blob`` if the size its zstd header claims is within MAX_FRAME_BYTES."""
    try:
        size = zstandard.frame_content_size(blob)
    except zstandard.ZstdError:
        return blob  # not a frame header zstd can read: decompress says why
    if size > MAX_FRAME_BYTES:
        raise RecordingError(f"a frame claims {size} bytes (at most {MAX_FRAME_BYTES})")
    return blob


# A frame time is an epoch second from 1970 to the end of year 9999: past that a
# datetime cannot hold it, and every clock shown of it (predict's, the TUI's timeline)
# would end in an OverflowError instead of the one line of a damaged recording.
MAX_FRAME_TIME = 253_402_300_800.0  # 10000-01-01T00:00:00Z


def _check_times(rows: list[tuple[object, object, object]]) -> None:
    """Frame times are finite numbers within MAX_FRAME_TIME: a damaged file may hold
    text in the REAL column, or a number no clock can show."""
    for seq, t, _ in rows:
        if not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t):
            raise RecordingError(f"damaged recording (frame {seq} has time {t!r})")
        if not 0 <= t < MAX_FRAME_TIME:
            raise RecordingError(
                f"damaged recording (frame {seq} has time {t!r}, not between 1970 and 9999)")


def _keyframe_raw(conn: sqlite3.Connection, seq: int, has_ref: bool) -> bytes:
    """The msgpack bytes of keyframe ``seq``: its chain read in one query and
    decompressed root first in one call (``decompress_content_dict_chain`` is our
    chaining exactly: each frame against the previous one's bytes as raw content;
    a msgpack map never starts with the zstd dictionary magic)."""
    if has_ref:
        rows = conn.execute(_KEY_CHAIN, (seq,)).fetchall()
    else:
        rows = conn.execute("SELECT seq, kind, 0, blob FROM frames WHERE seq = ?",
                            (seq,)).fetchall()
    if not rows:
        raise RecordingError(f"keyframe {seq} is missing")
    for i, (at, kind, ref, _) in enumerate(rows):
        if kind != KEYFRAME or (i == len(rows) - 1 and ref != 0):
            raise RecordingError(f"keyframe {ref if kind == KEYFRAME else at} is missing")
    blobs = [_bounded(blob) for *_, blob in reversed(rows)]
    dctx = zstandard.ZstdDecompressor()
    return dctx.decompress(blobs[0]) if len(blobs) == 1 else dctx.decompress_content_dict_chain(
        blobs)


def purge(conn: sqlite3.Connection, cutoff: float) -> int:
    """Delete frames older than ``cutoff`` in whole keyframe groups (a delta
    chain is only readable from its keyframe), so up to one group of frames
    older than the cut may stay. Kept keyframes compressed against a deleted one
    (the first kept keyframe, and the others of its root's set) are recompressed
    first, in the same transaction: the first kept one alone, as a root, the
    others against it. Returns the number of frames deleted."""
    row = conn.execute(
        "SELECT key_seq FROM frames WHERE t >= ? ORDER BY seq LIMIT 1", (cutoff,)
    ).fetchone()
    if row is None:  # every frame is older: keep the newest group
        row = conn.execute("SELECT key_seq FROM frames ORDER BY seq DESC LIMIT 1").fetchone()
        if row is None:
            return 0
    keep = row[0]
    has_ref = _has_ref(conn)
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        if has_ref:
            orphans = [seq for (seq,) in conn.execute(
                "SELECT seq FROM frames WHERE kind = ? AND seq >= ? AND ref != 0 AND ref < ? "
                "ORDER BY seq", (KEYFRAME, keep, keep))]
            if orphans:
                _rebase(conn, keep, orphans)
        cur = conn.execute("DELETE FROM frames WHERE seq < ?", (keep,))
        if has_ref:
            conn.execute(
                "DELETE FROM dicts WHERE id < (SELECT MAX(id) FROM dicts) AND id NOT IN "
                "(SELECT DISTINCT ref FROM frames WHERE kind = ?)", (DELTA,)
            )
    return cur.rowcount


def _rebase(conn: sqlite3.Connection, keep: int, orphans: list[int]) -> None:
    """Recompress the kept keyframes compressed against one about to be deleted:
    ``keep`` alone, as a root, the others against it. Their raw bytes do not
    change, so keyframes compressed against them stay readable."""
    raws = {seq: _keyframe_raw(conn, seq, True) for seq in {keep, *orphans}}
    root = zstandard.ZstdCompressor(level=9, dict_data=_raw_dict(raws[keep]))
    for seq in orphans:
        if seq == keep:
            blob, ref = zstandard.ZstdCompressor(level=9).compress(raws[seq]), 0
        else:
            blob, ref = root.compress(raws[seq]), keep
        conn.execute("UPDATE frames SET ref = ?, blob = ? WHERE seq = ?", (ref, blob, seq))


class _Cursor:
    """Where the last read left a delta chain, so stepping forward is cheap."""

    def __init__(self, key_seq: int, seq: int, state: _State, key_raw: bytes) -> None:
        self.key_seq, self.seq, self.state, self.key_raw = key_seq, seq, state, key_raw
        self.key_dctx: zstandard.ZstdDecompressor | None = None

    def dctx_for_keyframe(self) -> zstandard.ZstdDecompressor:
        if self.key_dctx is None:
            self.key_dctx = zstandard.ZstdDecompressor(dict_data=_raw_dict(self.key_raw))
        return self.key_dctx


class Recording:
    """A recording opened for reading: frame times, and any frame by index."""

    def __init__(self, path: str | Path, *, read_only: bool = True,
                 follow: bool = False) -> None:
        # Read-only by default: reading never changes a recording, not even one whose
        # recorder was killed (an ordinary connection folds its -wal into the file and
        # deletes -wal and -shm). ``read_only=False`` is that repair, asked for.
        # A viewer of a file a poller is still writing reads it so too (``refresh``),
        # with ``follow``: the file itself. Without, a file with a -wal beside it is
        # read from a private copy (_Db), so that not even its -shm changes.
        # Reads and close take turns: a viewer's collect thread may still be reading
        # when it closes the source, and SQLite closed under a running statement
        # crashed the process (a segfault, found by CI). A read after the close is a
        # RecordingError ("closed database").
        self._lock = threading.RLock()
        self._db = _Db(path, read_only=read_only, follow=follow)
        try:
            self.meta = self._db.meta()
            rows = self._db.conn.execute(
                "SELECT seq, t, key_seq FROM frames ORDER BY seq"
            ).fetchall()
            self._has_ref = _has_ref(self._db.conn)
        except _DB_ERRORS as e:
            self._db.close()
            raise RecordingError(f"{path}: damaged recording ({e})") from None
        except RecordingError:
            self._db.close()
            raise
        self.path = str(path)
        try:
            _check_times(rows)
        except RecordingError as e:
            self._db.close()
            raise RecordingError(f"{path}: {e}") from None
        self.seqs = [r[0] for r in rows]
        self.times = [r[1] for r in rows]
        self._key_seqs = [r[2] for r in rows]
        self._cache: _Cursor | None = None
        self._dicts: dict[int, zstandard.ZstdDecompressor] = {}
        if self.seqs:
            self.frame(len(self.seqs) - 1)  # a truncated file fails here, at open

    def __len__(self) -> int:
        return len(self.seqs)

    @property
    def immutable(self) -> bool:
        """Opened read-only with no writer beside it: ``refresh`` sees nothing new
        until the file is opened again."""
        return self._db.immutable

    @contextlib.contextmanager
    def read_transaction(self) -> Iterator[None]:
        """The reads inside see one state of the file, however many frames a writer
        commits meanwhile (a WAL reader keeps the snapshot of its first read): the
        frame list ``refresh`` takes and the frames then decoded agree. Short, so a
        poller's checkpoints are never held back for long."""
        with self._lock:
            conn = self._db.conn
            try:
                conn.execute("BEGIN")
            except _DB_ERRORS as e:
                raise RecordingError(f"{self.path}: cannot read ({e})") from None
            try:
                yield
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")  # ends the read; nothing was written

    def refresh(self) -> int:
        """Take in the frames a writer appended since the last look: only the rows
        after the newest seq known are read (and the meta table, a few rows). Frames a
        retention purge has deleted since are forgotten. Returns how many are new."""
        with self._lock:
            return self._refresh()

    def _refresh(self) -> int:
        conn = self._db.conn
        last = self.seqs[-1] if self.seqs else 0
        try:
            self.meta = self._db.meta()
            first, newest = conn.execute("SELECT MIN(seq), MAX(seq) FROM frames").fetchone()
            if newest is None or newest < last:
                # Emptied and started again (seqs restart at 1): read it afresh.
                self.seqs, self.times, self._key_seqs = [], [], []
                self._cache, last = None, 0
            rows = conn.execute(
                "SELECT seq, t, key_seq FROM frames WHERE seq > ? ORDER BY seq", (last,)
            ).fetchall()
        except _DB_ERRORS as e:
            raise RecordingError(f"{self.path}: damaged recording ({e})") from None
        if first is not None and self.seqs and first > self.seqs[0]:
            cut = bisect.bisect_left(self.seqs, first)
            del self.seqs[:cut], self.times[:cut], self._key_seqs[:cut]
            if self._cache is not None and self._cache.key_seq < first:
                self._cache = None
        try:
            _check_times(rows)
        except RecordingError as e:
            raise RecordingError(f"{self.path}: {e}") from None
        for seq, t, key_seq in rows:
            self.seqs.append(seq)
            self.times.append(t)
            self._key_seqs.append(key_seq)
        return len(rows)

    def close(self) -> None:
        with self._lock:  # after the read under way, if any
            self._db.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def forget(self) -> None:
        """Drop what earlier reads left decoded, so the next read is a cold seek."""
        self._cache = None
        self._dicts = {}

    def index_at(self, t: float) -> int:
        """The last frame taken at or before ``t`` (the first frame if ``t`` is earlier)."""
        return max(0, bisect.bisect_right(self.times, t) - 1)

    def frame(self, index: int) -> Snapshot:
        """The snapshot at frame ``index`` (0-based; negative counts from the end).

        Snapshots share unchanged items with their neighbours: treat them as
        read-only."""
        if not self.seqs:
            raise RecordingError(f"{self.path}: recording has no frames")
        index = range(len(self.seqs))[index]
        # Decoding allocates ~10^5 objects at once; the cyclic GC pausing over them
        # would double a seek, and the decoded structs hold no cycles.
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            with self._lock:
                return self._frame(index)
        finally:
            if gc_was_on:
                gc.enable()

    def _delta_dctx(self, ref: int, cache: _Cursor) -> zstandard.ZstdDecompressor:
        if ref == 0:
            return cache.dctx_for_keyframe()
        dctx = self._dicts.get(ref)
        if dctx is None:
            row = self._db.conn.execute("SELECT data FROM dicts WHERE id = ?", (ref,)).fetchone()
            if row is None:
                raise RecordingError(f"{self.path}: dictionary {ref} is missing")
            dctx = zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(row[0]))
            self._dicts[ref] = dctx
        return dctx

    def _frame(self, index: int) -> Snapshot:
        seq, key_seq = self.seqs[index], self._key_seqs[index]
        cache = self._cache
        ref_col = "ref" if self._has_ref else "0"
        try:
            if cache is not None and cache.key_seq == key_seq and cache.seq <= seq:
                start = cache.seq + 1  # stepping forward inside a group
            else:
                try:
                    raw = _keyframe_raw(self._db.conn, key_seq, self._has_ref)
                except RecordingError:
                    raise RecordingError(
                        f"{self.path}: frame {index + 1} has no keyframe"
                    ) from None
                state = _State(_snapshot_decoder.decode(raw), owned=True)
                cache = _Cursor(key_seq, key_seq, state, raw)
                start = key_seq + 1
            if start <= seq:
                rows = self._db.conn.execute(
                    f"SELECT kind, {ref_col}, blob FROM frames WHERE seq BETWEEN ? AND ? "
                    "ORDER BY seq",
                    (start, seq),
                ).fetchall()
                if len(rows) != seq - start + 1 or any(k != DELTA for k, _, _ in rows):
                    raise RecordingError(f"{self.path}: frames missing before frame {index + 1}")
                for _, ref, blob in rows:
                    raw_delta = self._delta_dctx(ref, cache).decompress(_bounded(blob))
                    cache.state.apply(_delta_decoder.decode(raw_delta))
                cache.seq = seq
        except (
            sqlite3.DatabaseError,
            zstandard.ZstdError,
            msgspec.DecodeError,
            msgspec.ValidationError,
            KeyError,
            IndexError,
            TypeError,
            ValueError,  # a column whose positions and values differ in number
            AttributeError,  # a patch naming a field the item does not have
            MemoryError,  # a chain whose frames together claim more than memory holds
        ) as e:
            self._cache = None
            raise RecordingError(f"{self.path}: damaged frame {index + 1} ({e})") from None
        self._cache = cache
        return cache.state.snapshot()

    def __iter__(self) -> Iterator[Snapshot]:
        for i in range(len(self.seqs)):
            yield self.frame(i)


def open_recording(path: str | Path, *, repair: bool = False) -> Recording:
    """The recording at ``path`` for reading, left byte for byte as it is; ``repair``:
    fold a killed recorder's -wal into the file and remove -wal and -shm."""
    return Recording(path, read_only=not repair)


def purge_file(path: str | Path, retention: float) -> int:
    """Apply a retention window to a recording file relative to its newest frame."""
    db = _Db(path, write=True)
    try:
        db.meta()
        last = db.conn.execute("SELECT MAX(t) FROM frames").fetchone()[0]
        return 0 if last is None else purge(db.conn, last - retention)
    finally:
        db.close()
