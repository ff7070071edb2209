"""The test API server's answers, field by field, against the published schemas.

tests/harness/kube_apiserver.py stands in for a kube-apiserver with Kueue; what it
serves must be what a real one could: every object it lists validates against the
Kubernetes v1.30 OpenAPI (the version its /version claims) and Kueue's CRD schemas
(``k8s-v1.30-openapi.json``, ``kueue-crd-excerpts.json`` beside this file, each naming
its source). Each error names the object and the field path, so one run lists every
field out of shape.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7

from harness.kube_apiserver import CORE, KubeAPIServer, seed

HERE = Path(__file__).parent
K8S = json.loads((HERE / "k8s-v1.30-openapi.json").read_text())
KUEUE = json.loads((HERE / "kueue-crd-excerpts.json").read_text())
REGISTRY = Registry().with_resource(
    "k8s", Resource.from_contents(K8S, default_specification=DRAFT7)
)
TOKEN = "test-token-for-quotatop"


def _validator(schema: dict[str, Any]) -> Draft7Validator:
    return Draft7Validator(schema, registry=REGISTRY)


def _k8s(definition: str) -> Draft7Validator:
    return _validator({"$ref": f"k8s#/definitions/{definition}"})


def _drop_nulls(value: Any) -> Any:
    """Go's encoder writes an unset metav1.Time as null (``"creationTimestamp": null``);
    the OpenAPI leaves nullability out, so a null stands for an absent field here."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _errors(validator: Draft7Validator, obj: Any, what: str) -> list[str]:
    """One line per field out of shape (list indices as [], so that the same fault in
    every item of a list is one line)."""
    out: list[str] = []
    for err in validator.iter_errors(_drop_nulls(obj)):
        path = ".".join("[]" if isinstance(p, int) else str(p) for p in err.absolute_path)
        line = f"{what}: {path or '(top)'}: {err.message[:200]}"
        if line not in out:
            out.append(line)
    return out


def _get(api: KubeAPIServer, path: str) -> Any:
    req = urllib.request.Request(api.url + path, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


@pytest.fixture(scope="module", params=[("v1beta1",), ("v1beta1", "v1beta2")], ids=str)
def api(request: pytest.FixtureRequest) -> Iterator[KubeAPIServer]:
    server = KubeAPIServer(kueue_versions=request.param)
    server.start()
    seed(server)
    yield server
    server.stop()


def test_version_claims_1_30(api: KubeAPIServer) -> None:
    info = _get(api, "/version")
    problems = _errors(_k8s("VersionInfo"), info, "/version")
    assert not problems, "\n".join(problems)
    assert (info["major"], info["minor"]) == ("1", "30")  # the OpenAPI excerpt's release


def test_core_objects_match_the_openapi(api: KubeAPIServer) -> None:
    problems: list[str] = []
    for rt in CORE:
        prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/{rt.version}".replace(
            "/v1", "/api/v1"
        )
        listed = _get(api, f"{prefix}/{rt.plural}")
        assert listed["items"], f"{rt.plural}: the seed serves none, nothing is checked"
        problems += _errors(_k8s(f"V1{rt.kind}List"), listed, f"{rt.kind}List")
    assert not problems, "\n".join(problems)


def test_discovery_matches_the_openapi(api: KubeAPIServer) -> None:
    problems = list(_errors(_k8s("V1APIResourceList"), _get(api, "/api/v1"), "/api/v1"))
    problems += _errors(_k8s("V1APIGroupList"), _get(api, "/apis"), "/apis")
    assert not problems, "\n".join(problems)


def test_kueue_objects_match_the_crds(api: KubeAPIServer) -> None:
    problems: list[str] = []
    checked = 0
    unchecked: list[str] = []
    for rt in api.resources:
        if rt.group != "kueue.x-k8s.io":
            continue
        schema = KUEUE["kinds"].get(rt.kind, {}).get("versions", {}).get(rt.version)
        listed = _get(api, f"/apis/{rt.group}/{rt.version}/{rt.plural}")
        if schema is None:
            unchecked.append(f"{rt.kind} {rt.version}")
            continue
        validator = _validator(schema)
        for item in listed["items"]:
            assert item["apiVersion"] == f"{rt.group}/{rt.version}"
            for line in _errors(validator, item, f"{rt.kind}/{rt.version}"):
                if line not in problems:
                    problems.append(line)
            checked += 1
    print(f"\nKueue objects checked against CRDs: {checked}; versions not checked: {unchecked}")
    assert checked > 0
    assert not problems, "\n".join(problems)
