"""The TUI hands the core's freed working memory back to the system (glibc's
malloc_trim), so a 100k-job answer does not stay charged to quotatop on a
shared login node."""

from __future__ import annotations

import ctypes
import platform

import psutil
import pytest

from quotatop.tui import heap

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def _rss() -> int:
    return psutil.Process().memory_info().rss


@pytest.mark.skipif(not GLIBC, reason="malloc_trim is a glibc call")
def test_freed_heap_pages_below_a_live_block_go_back() -> None:
    assert heap.can_give_back()
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    # 64 MB in 64 KiB blocks: below glibc's mmap threshold, so they come from the
    # heap; the last block stays live, so freeing the others cannot shrink it from the top.
    blocks = [libc.malloc(64 * 1024) for _ in range(1024)]
    assert all(blocks)
    for b in blocks:
        ctypes.memset(b, 1, 64 * 1024)  # touch, so the pages are resident
    keeper = blocks.pop()
    for b in blocks:
        libc.free(b)
    before = _rss()
    try:
        assert heap.give_back_free_heap()
        released = before - _rss()
        assert released > 32 * 1024 * 1024, f"only {released} bytes went back"
    finally:
        libc.free(keeper)


def test_without_the_call_nothing_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_malloc_trim", lambda: None)
    assert not heap.can_give_back()
    assert heap.give_back_free_heap() is False


def test_the_predict_worker_gives_the_heap_back(monkeypatch: pytest.MonkeyPatch) -> None:
    import quotatop.tui.session as session_module
    from quotatop.tui.session import Predicted, Session

    calls: list[str] = []
    monkeypatch.setattr(session_module, "predict_taken", lambda box: calls.append("predict") or "P")
    monkeypatch.setattr(session_module, "give_back_free_heap",
                        lambda: calls.append("trim") or True)

    session = Session(_NoSource(), emit=lambda e: calls.append(type(e).__name__))
    assert session.predict([]) == "P"
    assert calls == ["predict", "trim", Predicted.__name__]


class _NoSource:
    name = "none"

    def collect(self):  # type: ignore[no-untyped-def]
        raise AssertionError("predict collects nothing")

