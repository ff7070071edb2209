"""pytest fixtures for the real Slurm cluster (import them into tests/conftest.py).

    from tests.harness.fixtures import slurm_cluster, slurm_workload  # noqa: F401

A missing Slurm or a failed start skips locally, but fails under CI=true, where
.ci/run has installed the packages and a skip would hide a broken harness.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from .slurm_cluster import HarnessError, SlurmCluster, Workload, missing_binaries

# One cluster per process even if these fixtures are imported into several
# modules (conftest.py and a test module each make their own FixtureDef).
_shared: dict[str, object] = {}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"Slurm harness unavailable under CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    existing = _shared.get("cluster")
    if isinstance(existing, SlurmCluster):
        yield existing
        return
    if "error" in _shared:
        _unavailable(str(_shared["error"]))
    missing = missing_binaries()
    if missing:
        _shared["error"] = (
            f"Slurm binaries missing: {', '.join(missing)} "
            "(run scripts/install-system-deps.sh as root)"
        )
    elif os.geteuid() != 0:
        _shared["error"] = "the Slurm harness must run as root (slurmd, sbatch --uid, useradd)"
    if "error" in _shared:
        _unavailable(str(_shared["error"]))
    cluster = SlurmCluster()
    try:
        cluster.start()
    except HarnessError as exc:
        # Remember the failure so later tests skip at once instead of retrying.
        _shared["error"] = f"Slurm cluster did not start: {exc}"
        _unavailable(str(_shared["error"]))
    _shared["cluster"] = cluster
    try:
        yield cluster
    finally:
        _shared.pop("cluster", None)
        cluster.stop()


@contextmanager
def fresh_cluster(what: str) -> Iterator[SlurmCluster]:
    """A cluster of its own for one test module (the fidelity and preemption tests:
    their workloads need every node, which the session's cluster has busy), stopped
    on leaving. Unavailable: skipped locally, failed under CI=true."""
    missing = missing_binaries()
    if missing:
        _unavailable(f"Slurm binaries missing: {', '.join(missing)}")
    if os.geteuid() != 0:
        _unavailable("the Slurm harness must run as root")
    cluster = SlurmCluster()
    try:
        cluster.start()
    except HarnessError as exc:
        pytest.fail(f"{what} cluster did not start: {exc}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def slurm_workload(slurm_cluster: SlurmCluster) -> Workload:
    """The fixed job mix of SlurmCluster.submit_workload(), submitted once per session.

    A failure here is a real failure (the cluster is up), so it is never skipped.
    """
    existing = _shared.get("workload")
    if isinstance(existing, Workload):
        return existing
    workload = slurm_cluster.submit_workload()
    _shared["workload"] = workload
    return workload
