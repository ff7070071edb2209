"""`quotatop web` relays a session's stderr to the server's terminal (textual-serve
writes what it reads as it is): escaped first (#35), so that nothing a TUI's stderr
quotes (a job name, a cluster's error text) acts on that terminal."""

from __future__ import annotations

import asyncio
import sys

import pytest

from quotatop.commands.web_sessions import PrintableStream

pytest.importorskip("textual_serve")

# C0, ESC (a colour, an OSC title), BEL, DEL, C1 and a bidi override, around text in
# UTF-8 (é: two bytes) that must come through as it is.
HOSTILE = (b"job \x1b[31mred\x1b[0m \x1b]0;owned\x07 del\x7f c1\xc2\x9b bidi\xe2\x80\xae "
           b"caf\xc3\xa9\nsecond line\r\n")
RAW = [chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if chr(c) != "\n"]
RAW += ["\u202e"]


async def child_writing(data: bytes) -> asyncio.subprocess.Process:
    """A real child process that writes ``data`` to its stderr and exits."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", f"import sys; sys.stderr.buffer.write({data!r})",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)


def test_textual_serve_relays_a_sessions_stderr_escaped(
        capsys: pytest.CaptureFixture[str]) -> None:
    from textual_serve.app_service import AppService

    async def nothing(*_: object) -> None:
        return None

    async def relay() -> None:
        process = await child_writing(HOSTILE)
        assert process.stderr is not None
        process.stderr = PrintableStream(process.stderr)  # type: ignore[assignment]
        service = AppService("quotatop", write_bytes=nothing, write_str=nothing,
                             close=nothing, download_manager=None)  # type: ignore[arg-type]
        service._process = process  # as the web's Session._open_app_process sets it
        await service.run()  # textual-serve's own loop: the child never starts a TUI
        await process.wait()

    asyncio.run(relay())
    shown = capsys.readouterr().out
    assert "second line" in shown  # the relay happened
    assert [c for c in RAW if c in shown] == []
    assert "\\x1b[31mred" in shown and "\\x07" in shown and "\\u202e" in shown
    assert "café" in shown


def test_utf8_split_between_reads_is_decoded_whole() -> None:
    async def read_all() -> str:
        process = await child_writing("é€ 🚀\x1b\n".encode() * 3)
        assert process.stderr is not None
        stream = PrintableStream(process.stderr)
        chunks = []
        while chunk := await stream.read(1):  # one byte at a time: every split
            chunks.append(chunk)
        await process.wait()
        return b"".join(chunks).decode()

    assert asyncio.run(read_all()) == "é€ 🚀\\x1b\n" * 3
