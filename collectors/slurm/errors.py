"""The one error every Slurm parser raises on input it cannot read."""

from __future__ import annotations


class ParseError(ValueError):
    """Malformed Slurm output; the message is one line fit for a banner."""

    def __init__(self, what: str, text: object, why: str = "") -> None:
        shown = repr(text)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        msg = f"cannot parse {what} {shown}" + (f": {why}" if why else "")
        super().__init__(msg.replace("\n", " "))


class SlurmReportedError(RuntimeError):
    """A --json document whose ``errors`` say the command failed (exit status 0 anyway,
    as 22.05 does when slurmctld is down)."""
