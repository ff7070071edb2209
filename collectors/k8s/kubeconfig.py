"""A kubeconfig checked for shape before the kubernetes client reads it.

The client assumes a well-formed file: a kubeconfig that is a bare string ends in
``'str' object does not support item assignment``, a context that is not a mapping
in an AttributeError far from the file. ``check_kubeconfig`` says instead, in one
line naming the file, which part is wrong."""

from __future__ import annotations

from typing import Any

from quotatop.collectors.errors import UserError
from quotatop.collectors.files import read_small_file
from quotatop.collectors.untrusted import url_problem


class KubeconfigError(ValueError):
    """The kubeconfig is not usable; the message is one line naming the file."""


_LISTS = (("clusters", "cluster"), ("contexts", "context"), ("users", "user"))


def check_kubeconfig(path: str, context: str | None = None) -> None:
    """KubeconfigError unless ``path`` is a readable YAML mapping whose clusters,
    contexts and users are lists of ``{name, <kind>: mapping}``, and whose chosen
    context (``context`` or current-context) names a cluster and a user it defines."""
    import yaml

    try:
        data = read_small_file(path, "kubeconfig")
    except FileNotFoundError:
        raise KubeconfigError(f"kubeconfig {path}: no such file") from None
    except OSError as exc:
        raise KubeconfigError(f"kubeconfig {path}: cannot read: {exc.strerror}") from None
    except UserError as exc:
        raise KubeconfigError(f"kubeconfig {exc}") from None
    try:
        doc: Any = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise KubeconfigError(f"kubeconfig {path}: not YAML{line}") from None
    except (ValueError, RecursionError):
        raise KubeconfigError(f"kubeconfig {path}: not YAML") from None

    def bad(why: str) -> KubeconfigError:
        return KubeconfigError(f"kubeconfig {path}: {why}")

    if not isinstance(doc, dict):
        raise bad(f"not a kubeconfig (a YAML mapping with clusters, contexts and users "
                  f"expected, got {type(doc).__name__})")
    names: dict[str, dict[str, Any]] = {}
    for key, inner in _LISTS:
        items = doc.get(key)
        if items is None:
            items = []
        if not isinstance(items, list):
            raise bad(f"{key} must be a list, not {type(items).__name__}")
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise bad(f"{key}[{i}] must be a mapping with a name")
            body = item.get(inner)
            if body is not None and not isinstance(body, dict):
                raise bad(f"{key}[{i}].{inner} must be a mapping, not {type(body).__name__}")
        names[key] = {item["name"]: item.get(inner) or {} for item in items}
    current = context or doc.get("current-context")
    if current is None or current == "":
        return  # the client says "no context" itself, in one line
    if not isinstance(current, str):
        raise bad("current-context must be a string")
    if current not in names["contexts"]:
        raise bad(f"context {current!r} is not defined")
    ctx = names["contexts"][current]
    for field, key in (("cluster", "clusters"), ("user", "users")):
        ref = ctx.get(field)
        if ref is not None and (not isinstance(ref, str) or ref not in names[key]):
            raise bad(f"context {current!r} names {field} {ref!r}, which is not defined")
    cluster = names["clusters"].get(ctx.get("cluster") or "", {})
    server = cluster.get("server")
    if server is not None:
        # The client hands the server on to urllib3, whose ValueError for a port out
        # of range or a broken IPv6 literal came out of the first request as a
        # traceback; said here, without the URL (its userinfo may be a password).
        problem = url_problem(server) if isinstance(server, str) else "not a string"
        if problem is not None:
            raise bad(f"cluster {ctx.get('cluster')!r}: server: {problem}")
