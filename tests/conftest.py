"""Shared fixtures. The real-component harnesses live in tests/harness/."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "demo_data"
IN_CI = os.environ.get("CI") == "true"


def skip_or_fail(reason: str) -> None:
    """Locally a missing component skips; under CI it is a failure."""
    if IN_CI:
        pytest.fail(f"required under CI: {reason}")
    pytest.skip(reason)


@pytest.fixture
def quotatop_cmd() -> list[str]:
    return [sys.executable, "-m", "quotatop"]
