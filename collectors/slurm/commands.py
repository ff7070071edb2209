"""The exact argv the collector issues (as in tests/fixtures/slurm/22.05/COMMANDS.md)."""

from __future__ import annotations

from quotatop.collectors.slurm import sacctmgr, sprio, squeue_text, sshare

SINFO_NODE_FORMAT = (
    "NodeList:|,Partition:|,StateLong:|,CPUsState:|,Memory:|,AllocMem:|,Gres:|,GresUsed:|,Reason:|"
)

SQUEUE_JSON = ["squeue", "--all", "--json"]
SINFO_JSON = ["sinfo", "--all", "--json"]
SACCT_JSON = ["sacct", "--json", "--allusers", "--duplicates", "--starttime=now-7days"]
SQUEUE_TEXT = ["squeue", "--all", "--noheader", "-O", squeue_text.FORMAT]
SQUEUE_SIGNATURE = ["squeue", "--all", "--noheader", "-O", squeue_text.SIGNATURE_FORMAT]
SPRIO = ["sprio", "--noheader", "-o", sprio.FORMAT]
SPRIO_WEIGHTS = ["sprio", "--noheader", "--weights", "-o", sprio.FORMAT]
SSHARE = ["sshare", "--all", "--long", "--parsable2", "--noheader", "--format", sshare.FORMAT]
SACCTMGR_ASSOC = [
    "sacctmgr",
    "--noheader",
    "--parsable2",
    "show",
    "assoc",
    f"format={sacctmgr.ASSOC_FORMAT}",
]
SACCTMGR_QOS = [
    "sacctmgr",
    "--noheader",
    "--parsable2",
    "show",
    "qos",
    f"format={sacctmgr.QOS_FORMAT}",
]
SACCTMGR_TRES = [
    "sacctmgr",
    "--noheader",
    "--parsable2",
    "show",
    "tres",
    f"format={sacctmgr.TRES_FORMAT}",
]
SCONTROL_PARTITION = ["scontrol", "--oneliner", "show", "partition"]
SCONTROL_CONFIG = ["scontrol", "show", "config"]
SCONTROL_NODE = ["scontrol", "--details", "--oneliner", "show", "node"]
SCONTROL_JOB = ["scontrol", "--details", "--oneliner", "show", "job"]
SCONTROL_RESERVATION = ["scontrol", "--oneliner", "show", "reservation"]

# Values with '|' are allowed only if they are one of these exact format strings.
FORMATS = frozenset(
    {
        squeue_text.FORMAT,
        squeue_text.SIGNATURE_FORMAT,
        sprio.FORMAT,
        SINFO_NODE_FORMAT,
        sshare.FORMAT,
        f"format={sacctmgr.ASSOC_FORMAT}",
        f"format={sacctmgr.QOS_FORMAT}",
        f"format={sacctmgr.TRES_FORMAT}",
    }
)
