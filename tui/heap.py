"""Hand the C heap's free pages back to the system, where the C library can.

After the core answers for 100k pending jobs, glibc keeps the ~50 MB of working
memory it freed: its heaps shrink only from the top, and a few live blocks sit
above the freed ones. On a shared login node those pages stay charged to
quotatop until the next answer reuses them. ``malloc_trim(0)`` releases every
wholly free page of every arena (about 3 ms at that size). Other C libraries
(musl, macOS) have no such call; there this does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None).malloc_trim  # the C library this process already runs on
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


def can_give_back() -> bool:
    return _malloc_trim() is not None


def give_back_free_heap() -> bool:
    """True when the C library released some memory."""
    fn = _malloc_trim()
    return bool(fn(0)) if fn is not None else False
