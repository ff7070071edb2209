"""Pausing Python's cyclic garbage collector around bulk builds and decodes.

Decoded JSON, msgpack and trace lines are trees, never cycles; yet 100k new
tracked objects trigger full collections that scan every object alive and find
nothing, which at that size costs more than the work itself.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
