"""No import circles inside the house (issue #32 item 6): in the Python package and in
the Rust core, every arrow between two modules points one way. import-linter's
contracts (pyproject.toml) keep the layers apart; this keeps each layer's own modules
from leaning on each other both ways, which makes a module impossible to read or move
alone. A name two modules share goes down to the lower module it belongs to.

Python: grimp's graph (what import-linter reads), function-level and TYPE_CHECKING
imports included, since a circle is a circle whenever it is closed. Rust: every path
naming another module of the crate (``crate::a::b``, ``super::x``, a child module's
path from ``mod.rs``); a child's ``use super::*`` is not counted, since a module's
children see its items by the language's own nesting, not by an import."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
RUST_SRC = ROOT / "scheduler_core" / "src"


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, without
    recursion), each sorted; a self-import is not a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, todo = work[-1]
            if todo:
                w = todo.pop()
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, sorted(graph.get(w, ()))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def python_graph() -> dict[str, set[str]]:
    g = grimp.build_graph("quotatop", cache_dir=None)
    return {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}


def _rust_module(path: Path) -> str:
    parts = list(path.relative_to(RUST_SRC).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts.pop()
    return "::".join(parts)


_PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
_BRACED = re.compile(r"\buse\s+crate::\{([^}]*)\}")
_CHILD_USE = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?use\s+([a-z_][a-z0-9_]*)::", re.M)


def _code(text: str) -> str:
    """The text without comments (a doc line may name a module it does not use)."""
    return re.sub(r"//[^\n]*", "", text)


def rust_graph() -> dict[str, set[str]]:
    files = sorted(RUST_SRC.rglob("*.rs"))
    modules = {_rust_module(f) for f in files}
    graph: dict[str, set[str]] = {m: set() for m in modules}

    def module_of(parts: list[str]) -> str | None:
        """The longest prefix of ``parts`` that is a module of the crate."""
        for n in range(len(parts), 0, -1):
            name = "::".join(parts[:n])
            if name in modules:
                return name
        return None

    for f in files:
        here = _rust_module(f)
        own = here.split("::") if here else []
        text = _code(f.read_text())
        refs: list[list[str]] = []
        for m in _PATH.finditer(text):
            head, rest = m.group(1), m.group(2).split("::")[1:]
            if head == "crate":
                refs.append(rest)
            elif head == "super":
                # ``mod.rs`` is its folder's module: its super is the folder's parent.
                refs.append(own[:-1] + rest)
            else:
                refs.append(own + rest)
        for m in _BRACED.finditer(text):
            refs += [p.strip().split("::") for p in m.group(1).split(",") if p.strip()]
        if f.name in ("mod.rs", "lib.rs"):  # ``use child::Name`` of its own children
            refs += [[*own, m.group(1)] for m in _CHILD_USE.finditer(text)]
        for parts in refs:
            target = module_of(parts)
            if target is not None and target != here:
                graph[here].add(target)
    return graph


def test_the_python_package_has_no_import_circle() -> None:
    graph = python_graph()
    assert len(graph) > 100, "grimp found too few modules: the graph is not the package"
    assert circles(graph) == []


def test_the_rust_core_has_no_module_circle() -> None:
    graph = rust_graph()
    assert {"cluster", "limits", "engine", "engine::pass", "engine::backfill"} <= set(graph)
    assert "engine::pass" in graph["engine"]  # a child's path from mod.rs is read
    assert "cluster" in graph["engine"]
    assert circles(graph) == []


def test_a_circle_is_found_where_there_is_one() -> None:
    """The finder itself: a test that could not fail would prove nothing."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"a", "b"}, "b": set()}) == []
    assert circles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == [["a", "b"],
                                                                         ["c", "d"]]
