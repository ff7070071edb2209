"""Write k8s-v1.30-openapi.json: the Kubernetes v1.30 API definitions the test API
server serves, as JSON Schema, from the published OpenAPI of that release.

The OpenAPI document (kubernetes/kubernetes api/openapi-spec/swagger.json, 4 MB) is read
here through the model tables the Kubernetes project generates from it for its Python
client (PyPI ``kubernetes==30.1.0``, the 1.30 release line: ``openapi_types`` gives each
definition's fields and types, ``attribute_map`` their JSON names, and the generated
setters the required fields). Run it again to refresh the excerpt:

    pip download kubernetes==30.1.0 --no-deps -d /tmp/k8s30
    python tests/referee/schemas/extract_k8s_openapi.py \
        /tmp/k8s30/kubernetes-30.1.0-py2.py3-none-any.whl

Only the definitions reachable from the kinds the test server stores are kept. Every
object schema refuses fields it does not list (``additionalProperties: false``): the real
API server never serves a field its schema lacks.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

ROOTS = [
    "V1Namespace", "V1NamespaceList", "V1Node", "V1NodeList", "V1Pod", "V1PodList",
    "V1ResourceQuota", "V1ResourceQuotaList", "V1LimitRange", "V1LimitRangeList",
    "V1PriorityClass", "V1PriorityClassList", "VersionInfo", "V1APIResourceList",
    "V1APIGroupList", "V1APIGroup", "V1Status", "V1WatchEvent", "V1PodTemplateSpec",
]
# RFC 3339 as the API server writes it (metav1.Time): seconds precision, UTC "Z" or offset.
DATE_TIME = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
OUT = Path(__file__).with_name("k8s-v1.30-openapi.json")


def _file_for(names: set[str], model: str) -> str:
    # V1PodSpec -> v1_pod_spec.py; the generator's snake case splits before capitals
    # and after version prefixes (V1beta1 stays whole).
    snake = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", model)
    snake = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", snake).lower()
    path = f"kubernetes/client/models/{snake}.py"
    if path not in names:
        raise KeyError(f"{model}: no {path}")
    return path


def _dict_literal(source: str, name: str) -> dict[str, str]:
    m = re.search(rf"^    {name} = (\{{.*?^    \}})", source, re.S | re.M)
    if not m:
        return {}
    return ast.literal_eval(m.group(1))


def _type(t: str, refs: set[str]) -> dict[str, Any]:
    if t.startswith("list[") and t.endswith("]"):
        return {"type": "array", "items": _type(t[5:-1], refs)}
    if t.startswith("dict(str, ") and t.endswith(")"):
        return {"type": "object", "additionalProperties": _type(t[10:-1], refs)}
    simple = {"str": {"type": "string"}, "int": {"type": "integer"},
              "bool": {"type": "boolean"}, "float": {"type": "number"},
              "datetime": {"type": "string", "pattern": DATE_TIME},
              "date": {"type": "string"}, "object": {}}
    if t in simple:
        return dict(simple[t])
    refs.add(t)
    return {"$ref": f"#/definitions/{t}"}


def extract(wheel: Path) -> dict[str, Any]:
    z = zipfile.ZipFile(wheel)
    names = set(z.namelist())
    defs: dict[str, Any] = {}
    todo = list(ROOTS)
    while todo:
        model = todo.pop()
        if model in defs:
            continue
        src = z.read(_file_for(names, model)).decode()
        types = _dict_literal(src, "openapi_types")
        json_names = _dict_literal(src, "attribute_map")
        required = sorted(
            json_names[a]
            for a in re.findall(r"Invalid value for `(\w+)`, must not be `None`", src)
            if a in json_names
        )
        refs: set[str] = set()
        props = {json_names[a]: _type(t, refs) for a, t in types.items()}
        schema: dict[str, Any] = {"type": "object", "properties": props,
                                  "additionalProperties": False}
        if required:
            schema["required"] = required
        defs[model] = schema
        todo += sorted(refs - set(defs))
    return {
        "source": {
            "what": "Kubernetes v1.30 OpenAPI (api/openapi-spec/swagger.json), as the "
            "kubernetes project's generated Python client models of that release state it",
            "package": "kubernetes==30.1.0 (PyPI), kubernetes/client/models/*.py",
            "generator": "tests/referee/schemas/extract_k8s_openapi.py",
        },
        "definitions": dict(sorted(defs.items())),
    }


if __name__ == "__main__":
    doc = extract(Path(sys.argv[1]))
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    print(f"{OUT}: {len(doc['definitions'])} definitions")
