"""Budgets of the fuzz suite, and a count of the cases each test ran.

Two Hypothesis profiles, chosen by ``QUOTATOP_FUZZ_PROFILE``:

- ``ci`` (the default, what ``make test`` and CI run): few examples per test, derandomized
  and without the example database, so that a run is the same every time; a fuzz test that
  fails only sometimes would be a flaky test, which is a bug of its own.
- ``long`` (``make fuzz``): many examples per test, random, with the example database, so
  that each run explores new inputs and re-tries the failures found before first.

``QUOTATOP_FUZZ_EXAMPLES=N`` overrides the number of examples of either profile.

The profiles are registered here but not loaded globally: loading one would change the
default settings of every other Hypothesis test in the process (``pytest`` collects this
folder before ``tests/test_*.py``). Each fuzz test takes them through
``fuzz.strategies.fuzz()`` instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

PROFILE_ENV = "QUOTATOP_FUZZ_PROFILE"
EXAMPLES_ENV = "QUOTATOP_FUZZ_EXAMPLES"
# Per test, before fuzz(cost=...) divides it: the whole folder stays well under 60 s on a
# 2-core machine (docs/fuzzing.md has the measured time).
CI_EXAMPLES = 150
LONG_EXAMPLES = 20_000

# Fuzz inputs are large on purpose (whole Slurm answers, recordings): Hypothesis' checks
# for slow or large generation would only get in the way.
_QUIET = [
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.large_base_example,
    HealthCheck.filter_too_much,
]


def _examples(default: int) -> int:
    raw = os.environ.get(EXAMPLES_ENV)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise pytest.UsageError(f"{EXAMPLES_ENV}={raw!r}: a whole number expected") from None
    if value < 1:
        raise pytest.UsageError(f"{EXAMPLES_ENV}={raw!r}: at least 1")
    return value


settings.register_profile(
    "fuzz-ci",
    max_examples=_examples(CI_EXAMPLES),
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=_QUIET,
)
settings.register_profile(
    "fuzz-long",
    max_examples=_examples(LONG_EXAMPLES),
    deadline=None,
    derandomize=False,
    print_blob=True,
    suppress_health_check=_QUIET,
)


def profile_name() -> str:
    """``ci`` or ``long``, from the environment."""
    name = os.environ.get(PROFILE_ENV, "ci") or "ci"
    if name not in ("ci", "long"):
        raise pytest.UsageError(f"{PROFILE_ENV}={name!r}: use ci or long")
    return name


# ---- cases run per test ------------------------------------------------------------------
# Hypothesis hands its run statistics to the callback in hypothesis.statistics.collector
# (its pytest plugin installs one around each test call, for --hypothesis-show-statistics).
# The hook below runs inside the plugin's (trylast) and chains a callback of its own that
# keeps the counts; the plugin's callback still runs, so its own report is unchanged.
# nodeid -> (test cases run, failing cases, distinct failures). Cases of every phase
# count: explicit examples, replayed ones, generated, and the shrinker's attempts (each
# of which runs the test once); a failure shrunk in 300 steps is many failing cases and
# one distinct failure.
_COUNTS: dict[str, tuple[int, int, int]] = {}


def _count(stats: dict[str, Any]) -> tuple[int, int, int]:
    cases = failing = distinct = 0
    for key, phase in stats.items():
        if key.endswith("-phase") and isinstance(phase, dict):
            distinct = max(distinct, int(phase.get("distinct-failures", 0)))
            for case in phase.get("test-cases", []):
                cases += 1
                failing += case.get("status") == "interesting"
    return cases, failing, distinct


@pytest.hookimpl(hookwrapper=True, trylast=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    from hypothesis.statistics import collector

    outer: Callable[[dict[str, Any]], None] | None = collector.value

    def note(stats: dict[str, Any]) -> None:
        _COUNTS[item.nodeid] = _count(stats)
        if outer is not None:
            outer(stats)

    with collector.with_value(note):
        yield


@pytest.hookimpl(trylast=True)  # after Hypothesis' own statistics: the last lines
def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _COUNTS:
        return
    cases = sum(c for c, _, _ in _COUNTS.values())
    failing = sum(f for _, f, _ in _COUNTS.values())
    distinct = sum(d for _, _, d in _COUNTS.values())
    tr = terminalreporter
    if profile_name() == "long":
        tr.section(f"fuzz ({profile_name()} profile): test cases run and failing, per test")
        width = max(len(n) for n in _COUNTS)
        for nodeid, (c, f, d) in sorted(_COUNTS.items()):
            tr.write_line(f"{nodeid:<{width}}  {c:>8} cases  {f:>6} failing  {d:>3} distinct")
    tr.write_line(
        f"fuzz ({profile_name()} profile): {len(_COUNTS)} tests, {cases} cases run, "
        f"{failing} failing ({distinct} distinct failures)"
    )
