"""Fuzz of the network sources' answers: Prometheus query results and Kubernetes objects.

Prometheus: ``collect`` never raises (docs/collectors.md): every answer, whatever its
HTTP status and body, ends as series, or a one-line source error in the snapshot's
status with the last good data kept. Kubernetes: quantities are a finite number or
ValueError; objects are read as the API server serves them, so their *types* follow
the schema (a name is a string, a count an integer) while every value may be hostile,
and mapping them never raises. Either way the snapshot must still be recordable and
reach the core.
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fuzz.strategies import (
    RawJson,
    dump_json,
    fuzz,
    hostile_text,
    hostile_words,
    json_values,
    mutated_bytes,
    mutated_tree,
    one_line,
    paths,
)
from harness.kube_apiserver import seed_objects
from quotatop import scheduler_core
from quotatop.collectors.k8s import quantity
from quotatop.collectors.k8s.collector import KubernetesCollector, KubernetesConfig
from quotatop.collectors.k8s.visibility import parse_summary
from quotatop.collectors.model import Snapshot, to_msgpack
from quotatop.collectors.prometheus_source import PrometheusCollector, PrometheusConfig


def _reaches_the_core(snap: Snapshot) -> None:
    to_msgpack(snap)  # recordable (record, replay, the TUI's R)
    try:
        scheduler_core.predict(snap, horizon=3600.0)
    except ValueError as exc:
        one_line(str(exc))


# ---- Prometheus ------------------------------------------------------------------------
def _matrix() -> dict[str, Any]:
    """A query_range answer as Prometheus writes one."""
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": {"namespace": ns, "__name__": "DCGM_FI_DEV_GPU_UTIL"},
                 "values": [[1_700_000_000 + 60 * i, str(v)] for i, v in enumerate(vals)]}
                for ns, vals in (("ml", [40, 55.5, 12]), ("vision", [3, 1, "NaN"]))
            ],
        },
    }


@st.composite
def prometheus_answers(draw: st.DrawFn) -> tuple[int, bytes]:
    """(HTTP status, body): a result with hostile values or the wrong shape, an error
    object, a body that is not JSON, under a success or an error status."""
    status = draw(st.sampled_from([200, 200, 200, 400, 401, 403, 422, 500, 503, 0, 999]))
    kind = draw(st.sampled_from(["tree", "tree", "bytes", "error", "any"]))
    if kind == "tree":
        body = dump_json(draw(mutated_tree(_matrix())))
    elif kind == "bytes":
        body = draw(mutated_bytes(json.dumps(_matrix()).encode(),
                                  alphabet=b'{}[]:,"0123456789.-eENaI'))
    elif kind == "error":
        body = dump_json({"status": "error", "errorType": draw(json_values),
                          "error": draw(json_values)})
    else:
        body = draw(st.sampled_from([b"[" * 100_000, b"null", b"[1]", b'"x"', b"",
                                     b"\xff\xfe", b"{}"])) if draw(st.booleans()) else dump_json(
            draw(json_values))
    return status, body


@fuzz(cost=2)
@given(st.lists(prometheus_answers(), min_size=1, max_size=3),
       st.sampled_from(["namespace", "", "__name__", "\ud800"]))
def test_a_prometheus_round_on_hostile_answers_is_a_snapshot_or_a_source_error(
    answers: list[tuple[int, bytes]], team_label: str
) -> None:
    c = PrometheusCollector(PrometheusConfig(team_label=team_label))
    queue = list(answers)

    def get(path: str, params: dict[str, str], deadline: object) -> tuple[int, bytes]:
        # Each query gets the next answer (the last one repeats): no network at all.
        return queue.pop(0) if len(queue) > 1 else queue[0]

    c._get = get  # type: ignore[method-assign]
    for _ in range(2):  # a second round starts from the first one's last good data
        snap = c.collect()
        for s in snap.status:
            if s.error is not None:
                one_line(s.error)
        if snap.stale_reason is not None:
            one_line(snap.stale_reason)
        for series in snap.utilization:
            assert all(math.isfinite(t) and math.isfinite(v) for t, v in series.points)
        _reaches_the_core(snap)


# ---- Kubernetes quantities ------------------------------------------------------------
quantity_texts = (
    st.from_regex(r"\A[+-]?(\d{1,400}\.?\d{0,5}|\.\d{1,5})(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|"
                  r"[eE][+-]?\d{1,5})?\Z")
    | hostile_words | hostile_text
)


@fuzz()
@given(quantity_texts | st.integers() | st.floats() | st.none() | st.booleans()
       | st.sampled_from([RawJson("1e999"), [1], {"a": 1}, 10**5000]))
def test_a_quantity_is_a_finite_number_or_a_value_error(value: Any) -> None:
    try:
        got = quantity.parse_quantity(value)
    except ValueError:
        return
    assert math.isfinite(got), (value, got)
    assert math.isfinite(quantity.to_model_units("memory", value))


@fuzz()
@given(st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "requests.cpu",
                                        "limits.memory", "hugepages-2Mi", "pods", ""]),
                       quantity_texts | json_values, max_size=6))
def test_resource_lists_convert_to_finite_numbers(resources: dict[str, Any]) -> None:
    for got in (quantity.convert(resources), quantity.convert_quota(resources)):
        assert all(math.isfinite(v) for v in got.values()), got


# ---- Kubernetes objects ----------------------------------------------------------------
_PLURAL = {
    "Namespace": "namespaces", "ResourceQuota": "resourcequotas",
    "LimitRange": "limitranges", "Pod": "pods", "Node": "nodes",
    "PriorityClass": "priorityclasses", "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues", "Workload": "workloads",
    "ResourceFlavor": "resourceflavors", "Cohort": "cohorts",
}
_SEED = seed_objects()
# Values the API server stores as they are: a quantity is a string or a number, a
# timestamp a string, a count an int64 (the server refuses anything wider).
_INT64 = st.integers(-(2**63), 2**63 - 1) | st.sampled_from([0, -1, 2**31, 2**63 - 1])
_QUANTITY = st.sampled_from(["0", "1", "-1", "1e308", "9Ei", "1e-9", "0.5m", "nan", "8",
                             "1" + "0" * 400, "1E3", "1e999"]) | quantity_texts
_STRING = st.sampled_from(["", "True", "False", "Always", "PreemptionByScheduler", "Evicted",
                           "Pending", "Running", "Succeeded", "Failed", "Admitted",
                           "QuotaReserved", "Finished", "Preempted", "nvidia.com/gpu",
                           "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "x"]) | _QUANTITY.map(
    # Go writes valid UTF-8 only: no lone surrogate reaches the collector from the server.
    lambda s: s.encode("utf-8", "replace").decode())


class _Reflector:
    """What KubernetesCollector._build reads of a reflector: its items, no error."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self._items = items
        self.error: str | None = None
        self.error_kind: str | None = None
        self.list_latency_ms = 1.0
        self.attempt = 0

    def items(self) -> list[dict[str, Any]]:
        return self._items


def _same_type(draw: st.DrawFn, value: Any) -> Any:
    """A hostile value of ``value``'s JSON type (what a schema lets through)."""
    if isinstance(value, bool):
        return draw(st.booleans())
    if isinstance(value, int):
        return draw(_INT64)
    if isinstance(value, float):
        return draw(st.floats(allow_nan=False, allow_infinity=False))
    if isinstance(value, str):
        return draw(_STRING)
    if isinstance(value, list):
        return draw(st.sampled_from([[], value, value * 3]))
    if isinstance(value, dict):
        return draw(st.sampled_from([{}, value]))
    return value


# Keys the API server always serves (required in the schema): never dropped.
_REQUIRED = {"metadata", "name", "uid", "value", "kind", "apiVersion"}


@st.composite
def cluster_objects(draw: st.DrawFn) -> list[dict[str, Any]]:
    """The harness' seeded cluster with a few values changed, each to a hostile value of
    its own type, an optional key dropped (Go omits an empty field), or an object
    repeated."""
    objs = copy.deepcopy(_SEED)
    for _ in range(draw(st.integers(1, 12))):
        obj = objs[draw(st.integers(0, len(objs) - 1))]
        where = [p for p in paths(obj) if p and p[-1] not in _REQUIRED]
        if not where:  # an earlier edit left only what the schema requires
            continue
        path = where[draw(st.integers(0, len(where) - 1))]
        parent = obj
        try:
            for key in path[:-1]:
                parent = parent[key]
            current = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        edit = draw(st.sampled_from(["value", "value", "value", "drop", "copy"]))
        if edit == "drop" and isinstance(parent, dict):
            del parent[path[-1]]
        elif edit == "copy":
            objs.append(copy.deepcopy(obj))  # a second object of the same name
        elif not isinstance(current, dict) or "metadata" not in path:
            parent[path[-1]] = _same_type(draw, current)
    return objs


@fuzz(cost=3)
@given(cluster_objects(), st.none() | st.sampled_from(["team", "x", ""]))
def test_hostile_kubernetes_objects_map_into_a_snapshot_the_core_reads(
    objs: list[dict[str, Any]], team_label: str | None
) -> None:
    by_kind: dict[str, list[dict[str, Any]]] = {k: [] for k in _PLURAL.values()}
    for obj in objs:
        by_kind[_PLURAL[obj["kind"]]].append(obj)
    c = KubernetesCollector(KubernetesConfig(team_label=team_label, visibility=False))
    c.reflectors = {k: _Reflector(v) for k, v in by_kind.items()}  # type: ignore[misc]
    c._kueue_version = "v1beta1"
    c._server = "https://127.0.0.1:6443"
    snap = c._build(1_800_000_000.0)
    _reaches_the_core(snap)


@fuzz()
@given(st.dictionaries(st.sampled_from(["items", "kind", "x"]),
                       st.lists(st.fixed_dictionaries(
                           {"metadata": st.fixed_dictionaries(
                               {"name": st.text(max_size=4), "namespace": st.text(max_size=4)}),
                            "positionInClusterQueue": _INT64 | st.integers(),
                            "positionInLocalQueue": _INT64 | st.integers()}), max_size=4),
                       max_size=2))
def test_queue_positions_are_read_or_skipped(body: dict[str, Any]) -> None:
    positions = parse_summary(body)
    # Positions land in Job.queue_position, which a recording writes as msgpack.
    for in_cq, in_lq in positions.values():
        assert -(2**63) <= in_cq < 2**64 and -(2**63) <= in_lq < 2**64, (in_cq, in_lq)


def test_found_an_error_body_that_is_not_an_object_is_a_source_error() -> None:
    # Found by this suite: HTTP 400 with the body "null" (or [1], or deep nesting) raised
    # AttributeError (RecursionError) out of collect() instead of a status line.
    for body in (b"null", b"[1]", b'"x"', b"[" * 100_000):
        c = PrometheusCollector(PrometheusConfig())
        c._get = lambda path, params, deadline, body=body: (400, body)  # type: ignore[method-assign]
        snap = c.collect()
        assert snap.stale and snap.stale_reason and snap.stale_reason.startswith(
            "prometheus: HTTP 400"), snap.stale_reason
        one_line(snap.stale_reason)


def test_found_queue_positions_out_of_int32_are_skipped() -> None:
    # Found by this suite: a position past 2^64 became Job.queue_position, and the
    # recording could not write the frame (msgpack has no such integer); a bool passed
    # isinstance(int) and would not decode again.
    items = [{"metadata": {"name": n, "namespace": "ns"}, "positionInClusterQueue": cq,
              "positionInLocalQueue": 0}
             for n, cq in (("a", 2**64), ("b", -1), ("c", True), ("d", 3))]
    assert parse_summary({"items": items}) == {("ns", "d"): (3, 0)}
