"""``sshare --all --long --parsable2 --noheader --format ...``: the fair-share tree."""

from __future__ import annotations

from msgspec import Struct

from quotatop.collectors.model import FairShare
from quotatop.collectors.slurm.table import rows, to_float

FORMAT = (
    "Account,User,Cluster,ID,RawShares,NormShares,RawUsage,NormUsage,EffectvUsage,"
    "FairShare,LevelFS,GrpTRESRaw,GrpTRESMins,TRESRunMins"
)
COLUMNS = FORMAT.split(",")


class ShareRow(Struct):
    account: str
    user: str | None
    depth: int  # sshare indents the account by one space per tree level
    fairshare: FairShare


def parse_sshare(text: str) -> list[ShareRow]:
    out = []
    for r in rows(text, COLUMNS, "sshare line"):
        name = r["Account"]
        stripped = name.lstrip(" ")
        if not stripped:
            continue
        raw_shares = r["RawShares"].strip()
        fs = FairShare(
            # "parent" means the account takes its parent's shares: no own number.
            raw_shares=None if raw_shares == "parent" else to_float(raw_shares, "RawShares"),
            norm_shares=to_float(r["NormShares"], "NormShares"),
            raw_usage=to_float(r["RawUsage"], "RawUsage"),
            effective_usage=to_float(r["EffectvUsage"], "EffectvUsage"),
            factor=to_float(r["FairShare"], "FairShare"),
            level_fs=_level_fs(r["LevelFS"]),
        )
        out.append(
            ShareRow(
                account=stripped,
                user=r["User"] or None,
                depth=len(name) - len(stripped),
                fairshare=fs,
            )
        )
    return out


def _level_fs(text: str) -> float | None:
    # An account with shares but no usage has LevelFS "inf".
    if text.strip().lower() == "inf":
        return float("inf")
    return to_float(text, "LevelFS")
