"""How long it takes to turn ``squeue --json`` into snapshot jobs.

Builds documents of 1k, 10k and 100k jobs by replicating the jobs of the real 22.05
fixture (tests/fixtures/slurm/22.05/squeue.json) under new job ids, formatted as squeue
prints them, then times the collector's path (json_prune dropping the unmapped keys, then msgspec
into typed Structs) against stdlib ``json.loads`` + walking the dicts into the same model Jobs
with the same helpers, in the same run, on the same bytes, both with the cyclic garbage
collector paused, and checks that both give equal jobs. Targets: 100k jobs in <= 0.5 s,
>= 5x the stdlib way.
Usage: python bench/slurm_parse.py [--sizes 1000,10000,100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402

from quotatop.collectors.gc_pause import gc_paused  # noqa: E402
from quotatop.collectors.model import PENDING, Job, Snapshot  # noqa: E402
from quotatop.collectors.slurm.hostlist import expand_hostlist  # noqa: E402
from quotatop.collectors.slurm.json_decode import decode_squeue, job_state, resources  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "slurm" / "22.05" / "squeue.json"


def build_document(n: int) -> bytes:
    doc = json.loads(FIXTURE.read_bytes())
    base = doc["jobs"]
    jobs = []
    for i in range(n):
        j = dict(base[i % len(base)])
        new_id = 100_000 + i
        if j["array_job_id"]:
            j["array_job_id"] = 100_000 + (i // len(base)) * len(base)
        j["job_id"] = new_id
        j["name"] = f"{j['name']}-{i % 1000}"
        jobs.append(j)
    doc["jobs"] = jobs
    # Like squeue: pretty-printed, and every "/" escaped as "\/" (json.dumps does
    # neither by default; both change what a decoder has to do).
    return json.dumps(doc, indent=2).replace("/", "\\/").encode()


def _stdlib_job(j: dict) -> Job:
    state = job_state(j["job_state"])
    start = j["start_time"] or None
    array_parent = str(j["array_job_id"]) if j["array_job_id"] else None
    array_task = None
    if array_parent:
        task = j["array_task_id"]
        array_task = str(task) if task is not None else j["array_task_string"] or None
    limit = j["time_limit"]
    return Job(
        id=str(j["job_id"]),
        name=j["name"],
        array_parent=array_parent,
        array_task=array_task,
        user=j["user_name"],
        team=j["account"],
        qos=j["qos"],
        partition=j["partition"] or None,
        state=state,
        request=resources(j["tres_req_str"]),
        nodes_requested=j["node_count"] or 1,
        time_limit=limit * 60.0 if limit is not None else None,
        submit_time=float(j["submit_time"] or 0),
        eligible_time=float(j["eligible_time"]) if j["eligible_time"] else None,
        start_time=start if state != PENDING else None,
        end_time=(j["end_time"] or None) if state != PENDING else None,
        priority=j["priority"],
        reason=None if j["state_reason"] == "None" else j["state_reason"],
        estimated_start=start if state == PENDING else None,
        nodes=expand_hostlist(j["nodes"]) if j["nodes"] and state != PENDING else [],
        dependency=j["dependency"] or None,
    )


def via_stdlib(data: bytes) -> Snapshot:
    # The collector is paused here as in decode_squeue: otherwise collections over the
    # millions of containers json.loads builds cost the reference seconds at 100k jobs,
    # a handicap that has nothing to do with decoding.
    with gc_paused():
        doc = json.loads(data)
        return Snapshot(source="slurm", jobs=[_stdlib_job(j) for j in doc["jobs"]])


def via_msgspec(data: bytes) -> Snapshot:
    jobs, _ = decode_squeue(data)
    return Snapshot(source="slurm", jobs=jobs)


class _IdOnly(msgspec.Struct, gc=False):
    job_id: int


class _Doc(msgspec.Struct, gc=False):
    jobs: list[_IdOnly] = []


_floor = msgspec.json.Decoder(_Doc)


def floor(data: bytes) -> Snapshot:
    """Only scanning the bytes (one int per job kept): no decoder can go below this."""
    _floor.decode(data)
    return Snapshot()


def best(fn: Callable[[bytes], Snapshot], data: bytes, repeat: int) -> tuple[float, Snapshot]:
    times, out = [], None
    for _ in range(repeat):
        # Free the previous run's snapshot before the clock starts, not inside the
        # next timed call (it was 50 ms of every run after the first at 100k jobs).
        out = None
        t0 = time.perf_counter()
        out = fn(data)
        times.append(time.perf_counter() - t0)
    assert out is not None
    return min(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    from quotatop.collectors.slurm import json_decode

    pruner = "json_prune (native)" if json_decode._prune is not None else "absent (old core)"
    print(f"key pruner in front of msgspec: {pruner}")
    print(
        f"{'jobs':>8} {'MB':>6} {'collector s':>11} {'stdlib s':>10} {'ratio':>6}"
        f" {'scan floor s':>13}"
    )
    for n in (int(s) for s in args.sizes.split(",")):
        data = build_document(n)
        fast, a = best(via_msgspec, data, args.repeat)
        slow, b = best(via_stdlib, data, args.repeat)
        if len(a.jobs) != n or a.jobs != b.jobs:  # every field of every job
            print("the two paths disagree", file=sys.stderr)
            return 1
        scan, _ = best(floor, data, args.repeat)
        ratio = slow / fast
        print(
            f"{n:>8} {len(data) / 1e6:>6.1f} {fast:>11.4f} {slow:>10.4f} {ratio:>5.1f}x"
            f" {scan:>13.4f}"
        )
        if n == 100_000:
            ok = fast <= 0.5 and ratio >= 5
            print(
                f"target 100k <= 0.5 s and >= 5x stdlib: {'met' if ok else 'NOT met'}"
                f" ({fast:.3f} s, {ratio:.1f}x)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
