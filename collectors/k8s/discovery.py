"""API discovery: which Kueue and Kueue-visibility versions the server serves that
quotatop understands, and a note when one is there in a version it does not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from quotatop.collectors.k8s import visibility as vis

KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSIONS = ("v1beta2", "v1beta1")  # understood by collectors/k8s/kueue.py; preferred first
KUEUE_PLURALS = ("clusterqueues", "localqueues", "workloads", "resourceflavors")

Obj = dict[str, Any]


def _versions(group: Obj) -> list[Any]:
    return [v.get("version") for v in group.get("versions") or []]


def discover_kueue(groups: list[Obj], wanted: bool | None) -> tuple[str | None, str | None]:
    """(the Kueue version to use or None, a note when Kueue is asked for or unknown)."""
    if wanted is False:
        return None, None
    for group in groups:
        if group.get("name") != KUEUE_GROUP:
            continue
        versions = _versions(group)
        for known in KUEUE_VERSIONS:
            if known in versions:
                return known, None
        return None, (
            f"Kueue API {KUEUE_GROUP} serves {', '.join(map(str, versions))}; quotatop "
            f"understands {', '.join(KUEUE_VERSIONS)}: Kueue data not shown"
        )
    if wanted:
        return None, f"Kueue requested but {KUEUE_GROUP} is not served"
    return None, None


def discover_visibility(
    groups: list[Obj], kueue_version: str | None, wanted: bool | None
) -> tuple[str | None, str | None]:
    """(the visibility version to poll or None, why positions are not shown)."""
    if kueue_version is None or wanted is False:
        return None, None
    for group in groups:
        if group.get("name") == vis.GROUP:
            versions = _versions(group)
            for known in vis.VERSIONS:
                if known in versions:
                    return known, None
            return None, (
                f"{vis.GROUP} serves {', '.join(map(str, versions))}: queue positions not shown"
            )
    return None, f"{vis.GROUP} {vis.NOT_SERVED}"


def cohort_version(get_json: Callable[[str], Obj], kueue_version: str) -> str | None:
    """The version serving Cohorts: they moved from v1alpha1 to the main versions in
    later Kueue releases."""
    for version in (kueue_version, "v1alpha1"):
        try:
            body = get_json(f"/apis/{KUEUE_GROUP}/{version}")
        except Exception:
            continue
        if any(r.get("name") == "cohorts" for r in body.get("resources") or []):
            return version
    return None
