"""Text from a cluster, made safe to show; URLs, made safe to show and label.

Every name, reason and message a source hands over (a job name, an account, squeue's
stderr, a Prometheus label) is written by whoever can submit a job or run the cluster,
and reaches a terminal, a CSV, a web page or a Prometheus label. A raw ESC there starts
an escape sequence (retitle the window, rewrite the screen, on some terminals write a
file), a C1 byte (U+009B is CSI on its own) does the same on a terminal that takes 8-bit
controls, a line break forges a row, and a bidi override (U+202E) or a zero-width
character makes one name read as another. So one rule, for every output:

``printable(text)``: every character ``str.isprintable`` refuses (C0 controls with TAB,
LF, CR and BEL, DEL, C1 U+0080–U+009F, the Unicode format characters such as the bidi
embeddings, overrides and isolates U+202A–U+202E, U+2066–U+2069, the zero-width ones and
U+FEFF, line and paragraph separators, unassigned and private-use code points, lone
surrogates from undecodable bytes) is written as Python writes it in a string literal:
``\\x1b``, ``\\n``, ``\\u202e``. Escaped, not replaced by U+FFFD or dropped: the reader
sees that something was there and which character it was, two names that differ only
there stay two names (a dropped character would merge them, e.g. two Prometheus label
sets), and the result is plain ASCII for the character, so it passes any terminal, CSV
reader or HTML page unchanged. The backslash itself is not escaped: ``DOMAIN\\user`` is
an ordinary Slurm user name, and an output is read by people, not parsed back; the one
cost is that a name spelled ``a\\x1b`` with a literal backslash reads like an escaped one.

``json_safe(doc)``: a JSON document (json.dumps with ensure_ascii=False, msgspec) with
the same characters written as ``\\uXXXX`` escapes: a JSON reader gets the data back
exactly, and the bytes on the terminal hold no control character. (json.dumps escapes
only U+0000–U+001F; DEL, C1 and the format characters it writes raw.)

``markdown_text(text)``: ``printable`` text for a Markdown document (a table cell, a
title, a note): a ``|`` would end a table cell and forge one, ``<…>`` is HTML to most
Markdown viewers (``<img src=x onerror=…>`` runs), so ``\\``, ``|``, ``<``, ``>`` and ``&``
are escaped as Markdown and HTML read them back (``\\|``, ``&lt;``): the viewer shows
the name exactly, as the HTML report's ``html.escape`` does.

``redact_url(url)``: the URL without ``user:password@`` and with the value of every
token-like query parameter replaced by ``***``, wherever a URL is shown, logged,
labelled or named in a snapshot.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit, urlunsplit

import msgspec

T = TypeVar("T")


def _escape(c: str) -> str:
    # repr's spelling (\x1b, \n, \u202e, \U000e0001): what the CLI's one-line errors
    # (quotatop/flags.py) and the core's (scheduler_core/__init__.py) already write.
    return repr(c)[1:-1]


def printable(text: str) -> str:
    """``text`` with every character that is not printable escaped (module docstring);
    one line, nothing in it a terminal acts on. The same object when it is clean."""
    if text.isprintable():  # the common case, in C
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def printable_lines(text: str) -> str:
    """A multi-line output (a report, a table) with its own line breaks kept and every
    other character that is not printable escaped. For text whose fields were not
    each made ``printable``: a line break inside a field still starts a line."""
    return "\n".join(printable(line) for line in text.split("\n"))


_MARKDOWN = {"\\": "\\\\", "|": "\\|", "&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Inline syntax too: a name like "[click](http://evil)" or "![i](http://e/x.png)" became
# a link or a remote image fetch in the viewer, "**B**" bold. CommonMark shows any
# backslash-escaped ASCII punctuation as itself; escaping the brackets is enough to
# break every link and image, so parentheses stay as they read ("(all)", "(3h50m)"), and
# an underscore too: inside a name (queue_storm) CommonMark never takes it for emphasis.
_MARKDOWN.update({c: "\\" + c for c in "`*[]~"})
_MARKDOWN_RE = re.compile("[" + re.escape("".join(_MARKDOWN)) + "]")


def markdown_text(text: str) -> str:
    """``printable(text)`` with Markdown's and HTML's own characters escaped (module
    docstring): one cell of a table, shown as written, forging no cell and no tag."""
    return _MARKDOWN_RE.sub(lambda m: _MARKDOWN[m.group(0)], printable(text))


def _json_escape(c: str) -> str:
    o = ord(c)
    if o > 0xFFFF:  # JSON spells a character beyond the BMP as its surrogate pair
        o -= 0x10000
        return f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}"
    return f"\\u{o:04x}"


# Outside strings a JSON document holds only ASCII punctuation, digits, letters and
# whitespace: every character this matches is inside a string, where \uXXXX means it.
_NOT_ASCII_PRINTABLE = re.compile(r"[^\x20-\x7e\t\n\r]+")


def _json_run(m: re.Match[str]) -> str:
    run = m.group()
    if run.isprintable():  # a run of ordinary non-ASCII text (accents, CJK): as it is
        return run
    return "".join(c if c.isprintable() else _json_escape(c) for c in run)


def json_safe(doc: str) -> str:
    """A JSON document with every non-printable character inside its strings written as a
    ``\\uXXXX`` escape: the same data to a JSON reader, no control bytes on the wire."""
    if doc.isascii():  # json.dumps and msgspec escape C0 already; DEL is the one left
        return doc.replace("\x7f", "\\u007f")
    return _NOT_ASCII_PRINTABLE.sub(_json_run, doc)


def json_safe_bytes(doc: bytes) -> bytes:
    """``json_safe`` of a UTF-8 document (msgspec's encoders return bytes)."""
    if doc.isascii():
        return doc.replace(b"\x7f", b"\\u007f")
    return json_safe(doc.decode("utf-8", "surrogatepass")).encode("utf-8", "surrogatepass")


# ---- snapshots and other structures, for a viewer -----------------------------------

def printable_tree(obj: T) -> T:
    """``obj`` (a msgspec Struct such as a Snapshot, or lists, dicts and tuples of them)
    with every string in it, dict keys included, made ``printable``; what is already
    clean is returned as it is (the same object), so a clean snapshot costs one encode
    and one scan, not a copy. For a view that paints every field it is given: the TUI
    paints a snapshot's names in many cells, and cleaning it once where it enters keeps
    every one of them clean, including those added later."""
    if _clean(obj):
        return obj
    return _walk(obj)


def _clean(obj: Any) -> bool:
    """True when no string in ``obj`` needs escaping (a fast, conservative check: False
    means "look closer", never a wrong True). ~50 ms for a snapshot of 100k jobs, most
    of it msgspec's encode; a Python walk of the same takes seconds."""
    try:
        doc = _encoder.encode(obj)
    except (TypeError, ValueError, UnicodeError):  # lone surrogates, an odd type: walk it
        return False
    # msgspec escapes C0 (``\u001b``, ``\n``) and ``"``: a backslash left once the
    # escaped backslashes (``DOMAIN\\user``) are taken out may be one of those, so it
    # sends the object to the walk; DEL, C1 and the rest arrive raw.
    if b"\\" in doc and b"\\" in doc.replace(b"\\\\", b""):
        return False
    if doc.isascii():  # printable ASCII, but for DEL (the C0 ones are escaped)
        return b"\x7f" not in doc
    return doc.decode().isprintable()


_encoder = msgspec.json.Encoder()


def _walk(obj: Any) -> Any:
    if isinstance(obj, str):
        return printable(obj)
    if isinstance(obj, msgspec.Struct):
        changes = {}
        for name in obj.__struct_fields__:
            value = getattr(obj, name)
            new = _walk(value)
            if new is not value:
                changes[name] = new
        return msgspec.structs.replace(obj, **changes) if changes else obj
    if isinstance(obj, list):
        # A Struct found clean by the encoder is kept without a walk: one dirty job among
        # 100k costs 100k small encodes (~0.1 s), not a walk of every field (seconds).
        items = [v if isinstance(v, msgspec.Struct) and _clean(v) else _walk(v) for v in obj]
        return items if any(a is not b for a, b in zip(items, obj, strict=True)) else obj
    if isinstance(obj, tuple):
        items = [_walk(v) for v in obj]
        if any(a is not b for a, b in zip(items, obj, strict=True)):
            return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
        return obj
    if isinstance(obj, dict):
        pairs = [(_walk(k), _walk(v)) for k, v in obj.items()]
        if any(a is not k or b is not v for (a, b), (k, v) in zip(pairs, obj.items(),
                                                                    strict=True)):
            return dict(pairs)
        return obj
    return obj


# ---- URLs -----------------------------------------------------------------------------

# Query parameters that carry a credential (OAuth's access_token, a Grafana or S3
# signature, ?password=): their value is never shown. Matched anywhere in the key,
# case-insensitively, so X-Amz-Security-Token and api_key are caught too; redacting a
# harmless parameter by mistake costs nothing.
_SECRET_KEY = re.compile(r"token|secret|passw|pwd|api[-_]?key|signature|credential|auth|sig$",
                         re.IGNORECASE)
_USERINFO = re.compile(r"(//)[^/?#@]*@")
_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def _redact_query(query: str) -> str:
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(_SECRET_KEY.search(k) for k, _ in pairs):
        return query
    return urlencode([(k, "***" if _SECRET_KEY.search(k) else v) for k, v in pairs],
                     safe="*")


def redact_url(url: str) -> str:
    """``url`` without its userinfo (``user:password@``) and with every token-like query
    parameter's value as ``***``; fit for a status line, a log, a label or a snapshot.
    Never raises: text that does not parse as a URL loses anything that looks like
    userinfo."""
    try:
        parts: SplitResult = urlsplit(url)
    except ValueError:  # "http://[::1" and the like
        return _USERINFO.sub(r"\1", url)
    netloc = parts.netloc.rpartition("@")[2]  # the host as written: [::1]:9090 stays
    query = _redact_query(parts.query) if parts.query else parts.query
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_problem(url: str) -> str | None:
    """Why ``url`` is no http(s) URL to connect to (None: it is one), as one line that
    quotes the URL with its credentials stripped (redact_url): a scheme http or https,
    a host, a port (if given) from 1 to 65535. Checked where a URL is read (a flag, a
    config key, a kubeconfig), so that http.client's ValueError (``Port out of
    range``, ``Invalid IPv6 URL``) never surfaces as a traceback from a request."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises for a port that is no number or out of range
    except ValueError as e:
        why = _url_error(e)
        if why is None:
            # Not quoted at all: with no @, urlsplit takes "user:SECRET" for
            # "host:port", and redact_url has no userinfo to strip.
            return "the URL given is not a URL (its port is not a number)"
        return f"{redact_url(url)!r} is not a URL ({why})"
    shown = repr(redact_url(url))
    if parts.scheme not in ("http", "https"):
        return f"{shown} is not an http(s) URL"
    if not parts.hostname:
        return f"{shown} has no host"
    if port == 0:
        return f"{shown} has port 0 (a port is from 1 to 65535)"
    return None


def _url_error(e: ValueError) -> str | None:
    """urllib's complaint in words of ours; None for a port that is not a number."""
    text = str(e)
    if text.startswith("Port could not be cast"):
        return None
    if text.startswith("Port out of range"):
        return "port out of range 1-65535"
    if "IPv6" in text:
        return "an IPv6 address without its closing ]"
    return "it does not parse"


def redact_urls_in(text: str) -> str:
    """``text`` (a command line, a message) with every URL in it ``redact_url``-ed."""
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group()), text)

