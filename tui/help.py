"""The help screen's rows, made from the Binding declarations themselves (as posting
does), so that a key added to a binding list is in the help without a second edit.

A row is (scope, keys, what): the keys as Textual names them (``?``, ``esc``, ``pgup``;
a binding's ``key_display`` when it has one), what as the binding's ``tooltip``, else
its ``description`` (the footer's short word). Bindings of one ``Binding.Group`` make
one row, the group's description. Keys that no Binding declares (the mouse,
shift+letter sorting, enter on a table row) are the owning class's ``HELP_EXTRA``.
No key changes a job."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from textual.binding import Binding, BindingType
from textual.keys import format_key

HelpRow = tuple[str, str, str]  # scope, keys, what
# (keys, what) of a key a class handles without a Binding (on_key, on_click)
HelpExtra = tuple[str, str]

_SPELLED = {"enter": "enter"}  # the footer's ⏎ reads worse in a table of keys


def key_names(binding: Binding) -> list[str]:
    """Each key of ``binding`` as shown: ``up,k`` → ``["↑", "k"]``."""
    return [_SPELLED.get(k) or format_key(k) for k in binding.key.split(",")]


def keys_text(binding: Binding) -> str:
    return binding.key_display or " / ".join(key_names(binding))


def group_keys(bindings: Sequence[Binding]) -> str:
    """Keys of a group, alternatives apart: (up,k) (down,j) → ``↑ ↓ / k j``."""
    if any(b.key_display for b in bindings):
        return " ".join(keys_text(b) for b in bindings)
    names = [key_names(b) for b in bindings]
    width = max(len(n) for n in names)
    return " / ".join(" ".join(n[i] for n in names if i < len(n)) for i in range(width))


def _binding(b: BindingType) -> Binding:
    # Not Binding.make_bindings: it splits "up,k" into two, and the help keeps them one row.
    return b if isinstance(b, Binding) else Binding(*b)


def rows(scope: str, bindings: Iterable[BindingType], extras: Iterable[HelpExtra] = (),
         seen: set[tuple[str, str]] | None = None) -> list[HelpRow]:
    """One scope's rows in declaration order. A binding whose key and description are
    already in ``seen`` (an earlier scope said it) is left out; ``seen`` is added to."""
    seen = set() if seen is None else seen
    out: list[HelpRow] = []
    grouped: dict[int, list[Binding]] = {}
    group_at: dict[int, int] = {}
    for b in map(_binding, bindings):
        if (b.key, b.description) in seen:
            continue
        seen.add((b.key, b.description))
        if b.group is not None:
            gid = id(b.group)
            if gid not in grouped:
                grouped[gid], group_at[gid] = [], len(out)
                out.append((scope, "", b.group.description))
            grouped[gid].append(b)
        else:
            out.append((scope, keys_text(b), b.tooltip or b.description))
    for gid, members in grouped.items():
        at = group_at[gid]
        out[at] = (scope, group_keys(members), out[at][2])
    out += [(scope, keys, what) for keys, what in extras]
    return out


def help_rows(sources: Iterable[tuple[str, Any]]) -> list[HelpRow]:
    """Every key of the app, by where it works: everywhere, in tables, on one screen.
    ``sources`` is (scope, class) in the help's order (``tui.app.help_sources``: the app
    knows its classes, so this module imports none of them); a class's own BINDINGS, or
    HELP_BINDINGS when it lists keys its subclasses bind, and its HELP_EXTRA."""
    # A key listed once already (CURSOR_BINDINGS in each list) is not listed again.
    seen: set[tuple[str, str]] = set()
    out: list[HelpRow] = []
    for scope, cls in sources:
        out += rows(scope, help_bindings(cls), getattr(cls, "HELP_EXTRA", ()), seen)
    return out


def help_bindings(cls: Any) -> list[BindingType]:
    """The bindings ``cls`` declares itself (a base's are listed under the base)."""
    return list(cls.__dict__.get("HELP_BINDINGS", cls.__dict__.get("BINDINGS", [])))

