"""Session fixtures: a real Prometheus (plain and with basic auth) and a Kubernetes API server.

Import them into a test module (``from harness.fixtures_k8s_prom import ...``).
A component that cannot start skips the tests locally and fails them under CI
(CI=true), where every component must be there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from .kube_apiserver import KubeAPIServer, seed
from .prometheus_server import ComponentUnavailable, PrometheusServer

BASIC_AUTH = ("quotatop", "not-a-real-password-5731")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"required under CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def prometheus_server() -> Iterator[PrometheusServer]:
    server = PrometheusServer()
    try:
        server.start()
    except ComponentUnavailable as exc:
        _unavailable(f"prometheus: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def prometheus_server_basic_auth() -> Iterator[PrometheusServer]:
    try:
        import bcrypt  # noqa: F401
    except ImportError:
        _unavailable("python package bcrypt is needed to hash the basic-auth password")
    server = PrometheusServer(basic_auth=BASIC_AUTH)
    try:
        server.start()
    except ComponentUnavailable as exc:
        _unavailable(f"prometheus with basic auth: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kube_api() -> Iterator[KubeAPIServer]:
    """The seeded test API server (read-only tests share it; mutate a fresh one instead)."""
    try:
        import kubernetes  # noqa: F401  (the tests drive the official client)
    except ImportError:
        _unavailable("python package kubernetes is not installed")
    server = KubeAPIServer()
    try:
        server.start()
    except OSError as exc:
        _unavailable(f"kube api server on 127.0.0.1: {exc}")
    seed(server)
    try:
        yield server
    finally:
        server.stop()
