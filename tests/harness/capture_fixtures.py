"""Regenerate tests/fixtures/slurm/<version>/ from a real cluster started by the harness.

    python3 tests/harness/capture_fixtures.py            # writes tests/fixtures/slurm/22.05/
    python3 tests/harness/capture_fixtures.py --out DIR

``COMMANDS`` is the exact argv list the Slurm collector issues; COMMANDS.md is
generated from it so the two cannot drift apart.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    # Run as a script: make `tests.harness` importable from the repo root.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from quotatop.collectors.slurm import squeue_text
from tests.harness.slurm_cluster import SlurmCluster, Workload

# Text formats: "|" as the field suffix, width 0 (= never truncate, never pad).
# Free text (job name) goes last so a "|" inside it cannot shift other columns.
# The collector issues exactly these fields, so the fixtures are captured with them.
SQUEUE_FIELDS = squeue_text.FIELDS
SPRIO_FORMAT = "%i|%r|%u|%Y|%y|%A|%a|%B|%b|%F|%f|%J|%j|%P|%p|%Q|%q|%S|%N|%T|%t"
SINFO_FIELDS = [
    "NodeList",
    "Partition",
    "StateLong",
    "CPUsState",
    "Memory",
    "AllocMem",
    "Gres",
    "GresUsed",
    "Reason",
]
SSHARE_FIELDS = (
    "Account,User,Cluster,ID,RawShares,NormShares,RawUsage,NormUsage,EffectvUsage,"
    "FairShare,LevelFS,GrpTRESRaw,GrpTRESMins,TRESRunMins"
)
ASSOC_FIELDS = (
    "Cluster,Account,User,Partition,ParentName,ID,LFT,RGT,Fairshare,Priority,DefaultQOS,QOS,"
    "GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJobs,GrpJobsAccrue,GrpSubmitJobs,GrpWall,"
    "MaxTRES,MaxTRESPerNode,MaxTRESMins,MaxJobs,MaxJobsAccrue,MaxSubmitJobs,MaxWall"
)
QOS_FIELDS = (
    "ID,Name,Priority,GraceTime,Preempt,PreemptExemptTime,PreemptMode,Flags,UsageThreshold,"
    "UsageFactor,GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJobs,GrpJobsAccrue,GrpSubmitJobs,"
    "GrpWall,MaxTRES,MaxTRESPerNode,MaxTRESMins,MaxWall,MaxTRESPU,MaxJobsPU,MaxSubmitPU,"
    "MaxTRESPA,MaxJobsPA,MaxSubmitPA,MinTRES"
)


def _o(fields: list[str]) -> str:
    return ",".join(f"{f}:|" for f in fields)


# fixture file -> (argv, why the collector runs it)
COMMANDS: dict[str, tuple[list[str], str]] = {
    "squeue.json": (["squeue", "--all", "--json"], "jobs (openapi/v0.0.38)"),
    "sinfo.json": (["sinfo", "--all", "--json"], "nodes, GRES, GRES used, state"),
    "sacct.json": (
        ["sacct", "--json", "--allusers", "--duplicates", "--starttime=now-7days"],
        "recent history incl. finished and preempted runs (openapi/dbv0.0.38)",
    ),
    "squeue.txt": (
        ["squeue", "--all", "--noheader", "-O", _o(SQUEUE_FIELDS)],
        "jobs incl. backfill StartTime, reason, TRES, array ids",
    ),
    "sprio.txt": (["sprio", "--noheader", "-o", SPRIO_FORMAT], "priority factors per job"),
    "sprio_weights.txt": (
        ["sprio", "--noheader", "--weights", "-o", SPRIO_FORMAT],
        "configured factor weights",
    ),
    "sinfo_nodes.txt": (
        ["sinfo", "--all", "--noheader", "--Node", "-O", _o(SINFO_FIELDS)],
        "per node x partition: state, CPUs A/I/O/T, GRES used with indices",
    ),
    "sshare.txt": (
        ["sshare", "--all", "--long", "--parsable2", "--noheader", "--format", SSHARE_FIELDS],
        "fair-share tree (depth = leading spaces of Account)",
    ),
    "sacctmgr_assoc.txt": (
        ["sacctmgr", "--noheader", "--parsable2", "show", "assoc", f"format={ASSOC_FIELDS}"],
        "account tree, shares, association limits",
    ),
    "sacctmgr_qos.txt": (
        ["sacctmgr", "--noheader", "--parsable2", "show", "qos", f"format={QOS_FIELDS}"],
        "QoS priority, preemption, limits",
    ),
    "sacctmgr_tres.txt": (
        ["sacctmgr", "--noheader", "--parsable2", "show", "tres", "format=ID,Type,Name"],
        "TRES ids (gres/gpu:TYPE)",
    ),
    "scontrol_partition.txt": (["scontrol", "--oneliner", "show", "partition"], "partitions"),
    "scontrol_config.txt": (["scontrol", "show", "config"], "scheduler/priority settings"),
    "scontrol_node.txt": (
        ["scontrol", "--details", "--oneliner", "show", "node"],
        "nodes; --details adds GresUsed=gpu:TYPE:N(IDX:...)",
    ),
    "scontrol_job.txt": (
        ["scontrol", "--details", "--oneliner", "show", "job"],
        "jobs; --details adds per-node GRES=gpu:TYPE:N(IDX:...)",
    ),
    "scontrol_reservation.txt": (
        ["scontrol", "--oneliner", "show", "reservation"],
        "advanced reservations (the workload makes none; tests/test_reservation_slurm.py does)",
    ),
}

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "fixtures" / "slurm" / "22.05"


def wait_for_estimates(cluster: SlurmCluster, workload: Workload, timeout: float = 30) -> None:
    """Backfill writes its start estimates a few seconds after submission."""
    job = workload.jobs["alice_res"].job_id
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        start = cluster.job_info(job).get("StartTime", "Unknown")
        if start not in ("Unknown", "N/A", ""):
            return
        time.sleep(0.5)


def capture(cluster: SlurmCluster, out: Path) -> dict[str, float]:
    out.mkdir(parents=True, exist_ok=True)
    latencies: dict[str, float] = {}
    for fname, (argv, _why) in COMMANDS.items():
        t0 = time.monotonic()
        proc = cluster.run(argv)
        latencies[fname] = time.monotonic() - t0
        text = proc.stdout
        if fname.endswith(".json"):
            json.loads(text)  # never save a truncated capture as a fixture
        (out / fname).write_text(text)
    return latencies


def write_commands_md(
    out: Path, cluster: SlurmCluster, workload: Workload, latencies: dict[str, float]
) -> None:
    version = cluster.run(["sinfo", "--version"]).stdout.strip()
    lines = [
        f"# Slurm fixtures: {version}",
        "",
        "Captured by `python3 tests/harness/capture_fixtures.py` from the real cluster that",
        "`tests/harness/slurm_cluster.py` starts on 127.0.0.1 (8 nodes gpu[01-08], h100 and",
        "a100) with `submit_workload()` running. Each file is the stdout of exactly this argv",
        "(run with `SLURM_CONF` pointing at the harness's slurm.conf, no shell):",
        "",
        "| file | argv | what for | latency |",
        "| --- | --- | --- | --- |",
    ]
    for fname, (argv, why) in COMMANDS.items():
        shown = " ".join(f"'{a}'" if any(c in a for c in "|% ") else a for a in argv)
        shown = shown.replace("|", "\\|")
        lines.append(f"| `{fname}` | `{shown}` | {why} | {latencies[fname] * 1000:.0f} ms |")
    lines += [
        "",
        "Python form (what the collector issues):",
        "",
        "```python",
    ]
    lines += [f"{fname!r}: {argv!r}," for fname, (argv, _w) in COMMANDS.items()]
    lines += [
        "```",
        "",
        "## Workload at capture time",
        "",
        "| key | job id | user | account | qos | expected state | expected reason |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for j in workload.jobs.values():
        lines.append(
            f"| {j.key} | {j.job_id} | {j.user} | {j.account} | {j.qos} | "
            f"{j.expected_state} | {j.expected_reason or ''} |"
        )
    lines += [
        "",
        f"Preempted (requeued) job ids: {', '.join(workload.preempted_job_ids)}.",
        "Rejected at submit time: "
        + "; ".join(f"{k}: `{v.splitlines()[0]}`" for k, v in workload.rejected.items()),
        "",
    ]
    (out / "COMMANDS.md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    with SlurmCluster() as cluster:
        print(f"cluster up in {cluster.startup_seconds:.1f} s at {cluster.dir}")
        workload = cluster.submit_workload()
        wait_for_estimates(cluster, workload)
        latencies = capture(cluster, args.out)
        write_commands_md(args.out, cluster, workload, latencies)
    print(f"wrote {len(COMMANDS)} fixtures to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
