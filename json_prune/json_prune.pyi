def prune(data: bytes, member: str, keep: list[str]) -> bytes:
    """``data`` with only ``keep`` in each object of the top-level array ``member``.

    Values are copied byte for byte; a key written with an escape is kept.
    Raises ValueError (with the byte offset) when ``data`` is not JSON."""
