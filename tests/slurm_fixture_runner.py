"""A Runner that answers from the captured fixtures instead of running processes.

It keeps the real allowlist check (wire_argv) so the collector can only ask for
commands it could also run for real."""

from __future__ import annotations

from pathlib import Path

from quotatop.collectors.slurm import commands as cmd
from quotatop.collectors.slurm.runner import CommandError, Result, Runner

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "slurm"
V2205 = FIXTURES / "22.05"

FILES = {
    tuple(cmd.SQUEUE_JSON): "squeue.json",
    tuple(cmd.SINFO_JSON): "sinfo.json",
    tuple(cmd.SACCT_JSON): "sacct.json",
    tuple(cmd.SQUEUE_TEXT): "squeue.txt",
    # the change detector's form: only its bytes are compared, never parsed
    tuple(cmd.SQUEUE_SIGNATURE): "squeue.txt",
    tuple(cmd.SPRIO): "sprio.txt",
    tuple(cmd.SPRIO_WEIGHTS): "sprio_weights.txt",
    tuple(cmd.SSHARE): "sshare.txt",
    tuple(cmd.SACCTMGR_ASSOC): "sacctmgr_assoc.txt",
    tuple(cmd.SACCTMGR_QOS): "sacctmgr_qos.txt",
    tuple(cmd.SACCTMGR_TRES): "sacctmgr_tres.txt",
    tuple(cmd.SCONTROL_PARTITION): "scontrol_partition.txt",
    tuple(cmd.SCONTROL_CONFIG): "scontrol_config.txt",
    tuple(cmd.SCONTROL_NODE): "scontrol_node.txt",
    tuple(cmd.SCONTROL_JOB): "scontrol_job.txt",
    tuple(cmd.SCONTROL_RESERVATION): "scontrol_reservation.txt",
}


class FixtureRunner(Runner):
    def __init__(self, directory: Path = V2205) -> None:
        super().__init__()
        self.directory = directory
        self.override: dict[str, bytes | Exception] = {}  # fixture file name -> output/error
        self.calls: list[tuple[str, ...]] = []

    def _exec(self, wire: list[str], timeout: float) -> Result:
        self.calls.append(tuple(wire))
        name = FILES[tuple(wire)]
        got = self.override.get(name)
        if isinstance(got, Exception):
            raise got
        data = got if got is not None else (self.directory / name).read_bytes()
        return Result(stdout=data, stderr="", latency_ms=1.0)


def fail(message: str) -> CommandError:
    return CommandError(message)
