"""Kubernetes resource quantities ("500m", "1Gi", "1e3", "2k") and the model's units."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0,
    "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
}  # fmt: skip
# Suffix alternatives before the exponent: "1E" is exa, "1E3" is 1000 (the regex
# backtracks into the exponent branch when digits follow).
_QUANTITY = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$"
)
MIB = 2**20


def parse_quantity(value: Any) -> float:
    """A quantity in base units (cores, bytes, counts). Raises ValueError on junk."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        try:
            out = float(value)
        except OverflowError:  # an int beyond a float
            raise ValueError(f"quantity out of range: {value!r}") from None
    else:
        text = str(value).strip()
        m = _QUANTITY.match(text)
        if not m:
            raise ValueError(f"not a quantity: {value!r}")
        number, suffix, exponent = m.groups()
        base = float(number)
        try:
            if exponent is not None:
                out = base * 10.0 ** int(exponent)
            elif suffix in _BINARY:
                out = base * _BINARY[suffix]
            else:
                out = base * _DECIMAL[suffix or ""]
        except OverflowError:  # "1e309": 10.0 ** 309 overflows
            raise ValueError(f"quantity out of range: {value!r}") from None
    if not math.isfinite(out):
        raise ValueError(f"quantity out of range: {value!r}")
    return out


def resource_key(name: str) -> str:
    """The model's key for a Kubernetes resource name."""
    if name == "nvidia.com/gpu":
        return "gpu"
    return name


def to_model_units(name: str, value: Any) -> float:
    """cpu in cores, memory (and storage) in MiB, everything else as a count."""
    q = parse_quantity(value)
    if name in ("memory", "ephemeral-storage", "storage") or name.startswith("hugepages-"):
        return q / MIB
    return q


def convert(resources: Mapping[str, Any] | None) -> dict[str, float]:
    """A Kubernetes ResourceList → model Resources (unparseable values are skipped)."""
    out: dict[str, float] = {}
    for name, value in (resources or {}).items():
        try:
            out[resource_key(name)] = to_model_units(name, value)
        except ValueError:
            continue
    return out


def quota_key(name: str) -> str:
    """ResourceQuota keys: requests.X and bare X are requests; limits.X stays limits.X.

    ``pods`` and ``count/pods`` stay apart: ``pods`` counts the pods holding resources,
    ``count/pods`` every pod object, finished ones too (pkg/quota/v1/evaluator/core)."""
    if name in ("pods", "count/pods"):
        return name
    if name.startswith("requests."):
        return resource_key(name[len("requests.") :])
    if name.startswith("limits."):
        return "limits." + resource_key(name[len("limits.") :])
    return resource_key(name)


def convert_quota(resources: Mapping[str, Any] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value in (resources or {}).items():
        base = name.split(".", 1)[1] if name.startswith(("requests.", "limits.")) else name
        try:
            out[quota_key(name)] = to_model_units(base, value)
        except ValueError:
            continue
    return out
