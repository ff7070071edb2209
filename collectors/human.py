"""One human format for durations, for every output a person reads.

The TUI, the command tables (predict, snapshot, report, whatif, replay, simulate, advise)
and the core's reasons all write a wait, an age or a span the same way, so a table's
``in 25m`` and the reason beside it never disagree (issue #32). The format is
Kubernetes' ``duration.HumanDuration``, the one kubectl's AGE column and k9s show, which
people on these clusters already read: two units at most, whole units, truncated.

Upstream: kubernetes/kubernetes
``staging/src/k8s.io/apimachinery/pkg/util/duration/duration.go`` (published as
k8s.io/apimachinery ``pkg/util/duration``), ``HumanDuration``. Thresholds as there:
under 2 minutes seconds; under 10 minutes ``{m}m{s}s``; under 3 hours minutes; under
8 hours ``{h}h{m}m``; under 48 hours hours; under 8 days ``{d}d{h}h``; under 2 years
days; under 8 years ``{y}y{d}d`` (a year is 365 days); beyond, years. The one
difference: upstream writes ``<invalid>`` below -1 s (clock skew); here any negative
duration is ``0s``, as a wait already over is nothing left to wait.

The same function is ``human_duration`` in scheduler_core/src/engine/explain.rs;
tests/test_human_duration.py holds the two to one table.

Slurm's own layouts (``D-HH:MM:SS`` where a column mirrors squeue's TIME_LIMIT) stay in
collectors/slurm/durations.py. This module is on the floor: it imports nothing of the
project, so every floor above can use it.
"""

from __future__ import annotations

import math

_MINUTE = 60
_HOUR = 3600
_DAY = 86400
_YEAR = 365 * _DAY


def _two(big: int, unit: str, rest: int, rest_unit: str) -> str:
    """``big`` of ``unit``, then ``rest`` of the smaller unit unless it is 0: 5m30s, 5m."""
    return f"{big}{unit}{rest}{rest_unit}" if rest else f"{big}{unit}"


def human_duration(seconds: float) -> str:
    """``seconds`` as kubectl's AGE column writes it: 45s, 5m30s, 25m, 7h59m, 3d4h, 2y.

    Truncated to whole seconds first (upstream's ``int(d.Seconds())``), so 119.9 s is
    ``119s``; NaN and negative durations are ``0s``; an infinite one is ``∞``, which no
    integer layout can hold."""
    if math.isnan(seconds) or seconds < 0:
        return "0s"
    if math.isinf(seconds):
        return "∞"
    s = int(seconds)
    if s < 2 * _MINUTE:
        return f"{s}s"
    minutes = s // _MINUTE
    if minutes < 10:
        return _two(minutes, "m", s % _MINUTE, "s")
    if minutes < 3 * 60:
        return f"{minutes}m"
    hours = s // _HOUR
    if hours < 8:
        return _two(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return _two(days, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        return _two(years, "y", days % 365, "d")
    return f"{years}y"
