"""Pending reasons in words. Sources speak in codes (Slurm's squeue %r, Kueue's
conditions); users want a sentence that says what the job is waiting for."""

from __future__ import annotations

_WORDS = {
    "priority": "higher-priority jobs go first",
    "resources": "waiting for free nodes/GPUs",
    "quota": "team is at its quota",
    "dependency": "waiting on a dependency",
    "dependencyneversatisfied": "dependency can never be satisfied",
    "begintime": "start time not reached yet",
    "jobheldadmin": "held by an administrator",
    "jobhelduser": "held by its user",
    "reqnodenotavail": "requested nodes are unavailable",
    "reservation": "waiting for its advanced reservation to begin",
    "partitiondown": "partition is down",
    "partitiontimelimit": "time limit exceeds the partition's",
    "partitionnodelimit": "node count exceeds the partition's",
    "nodedown": "a required node is down",
    "assocgrpgreslimit": "team at its GrpTRES GPU limit",
    "assocgrpgres": "team at its GrpTRES GPU limit",
    "assocgrpcpulimit": "team at its GrpTRES CPU limit",
    "assocgrptres": "team at its GrpTRES limit",
    "assocmaxjobslimit": "team at its running-job limit",
    "qosmaxgresperuser": "user at the QoS per-user GPU limit",
    "qosmaxjobsperuserlimit": "user at the QoS running-job limit",
    "qosgrpgres": "QoS group GPU limit reached",
    "qosmaxwalldurationperjoblimit": "time limit exceeds the QoS MaxWall",
    "qosnotallowed": "QoS not allowed for this account",
    "launchfailedrequeuehold": "launch failed; requeued and held",
    "inadmissible": "Kueue cannot admit it (no flavor fits)",
    "pendingflavors": "Kueue is looking for a flavor with room",
    "borrowinglimit": "cohort borrowing limit reached",
    "preempted": "preempted; waiting to restart",
    "gang": "waiting for its whole gang to fit",
}


def in_words(reason: str | None) -> str:
    """A sentence for a pending reason; unknown codes pass through unchanged."""
    if not reason:
        return ""
    key = reason.strip().strip("()").replace("_", "").replace(" ", "").lower()
    words = _WORDS.get(key)
    return f"{words} ({reason})" if words else reason
