"""slurmctld's own RPC counters (``sdiag``), read from the harness's cluster.

``sdiag`` prints, since the last ``sdiag --reset`` (root or SlurmUser only), the RPCs
slurmctld served, "by message type" and "by user". Commands talking to slurmdbd
(``sacctmgr``, ``sacct``) are not among them: slurmctld never sees those.
Used by bench/rpc_load.py and tests/test_live_source.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .slurm_cluster import SlurmCluster

# "	REQUEST_JOB_INFO                        ( 2003) count:2      ave_time:282 ..."
# "	root            (       0) count:2      ave_time:275 ..."
_ROW = re.compile(r"^\s+(\S+)\s+\(\s*(\d+)\)\s+count:(\d+)")
_BY_TYPE = "Remote Procedure Call statistics by message type"
_BY_USER = "Remote Procedure Call statistics by user"
# The one RPC each read costs itself: `sdiag` asks with REQUEST_STATS_INFO.
STATS_RPC = "REQUEST_STATS_INFO"


@dataclass
class RpcStats:
    by_type: dict[str, int] = field(default_factory=dict)
    by_user: dict[str, int] = field(default_factory=dict)  # user name -> count

    @property
    def total(self) -> int:
        return sum(self.by_type.values())

    def user(self, name: str) -> int:
        return self.by_user.get(name, 0)


def parse_sdiag(text: str) -> RpcStats:
    stats = RpcStats()
    section: dict[str, int] | None = None
    for line in text.splitlines():
        if line.startswith(_BY_TYPE):
            section = stats.by_type
        elif line.startswith(_BY_USER):
            section = stats.by_user
        elif line and not line[0].isspace():
            section = None  # "Pending RPC statistics" and whatever follows
        elif section is not None and (m := _ROW.match(line)):
            section[m.group(1)] = section.get(m.group(1), 0) + int(m.group(3))
    return stats


def reset(cluster: SlurmCluster) -> None:
    """Zero the counters (the harness runs as root, its SlurmUser)."""
    cluster.run(["sdiag", "--reset"])


def read(cluster: SlurmCluster, *, as_user: str = "root") -> RpcStats:
    """The counters since the last reset, without the REQUEST_STATS_INFO of this
    read itself (counted for ``as_user``, who runs it)."""
    stats = parse_sdiag(cluster.run(["sdiag"]).stdout)
    for table, key in ((stats.by_type, STATS_RPC), (stats.by_user, as_user)):
        if table.get(key, 0) > 0:
            table[key] -= 1
            if table[key] == 0:
                del table[key]
    return stats
