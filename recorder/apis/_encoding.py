"""Bodies as they crossed the wire: their headers looked up, their Content-Encoding undone.

A tape keeps the bytes still gzip- or zstd-encoded, so every adapter reads
bodies through here first.  Nothing raises: a body that does not decode comes
back as what could be decoded plus a one-line problem.
"""

from __future__ import annotations

import importlib
import operator
import zlib
from typing import Any

import attrs
import zstandard

from .._events import Headers

MAX_DECODED = 256 * 1024 * 1024
"""Most bytes a body may decode to (a hostile tape cannot exhaust memory)."""


@attrs.frozen(kw_only=True)
class Decoded:
    """A body with its content encodings undone."""

    data: bytes
    """The decoded bytes (a prefix, when the body is cut short)."""
    problem: str = ""
    """Why decoding stopped early; empty if it did not."""


_NAME = operator.itemgetter(0)


def header(headers: Headers, name: str) -> str:
    """The value of header ``name`` (lower case); repeated headers joined by ", "."""
    values = [v for k, v in headers if k == name]
    return values[0] if len(values) == 1 else ", ".join(values)


def _zlib(data: bytes, wbits: int, label: str) -> Decoded:
    d = zlib.decompressobj(wbits)
    try:
        out = d.decompress(data, MAX_DECODED)
    except zlib.error as exc:
        return Decoded(data=b"", problem=f"{label} body does not decode: {exc}")
    if d.unconsumed_tail:
        return Decoded(data=out, problem=f"{label} body decodes past {MAX_DECODED} bytes")
    if not d.eof:
        return Decoded(data=out, problem=f"{label} body is cut short")
    return Decoded(data=out)


def _zstd(data: bytes) -> Decoded:
    parts: list[bytes] = []
    size = 0
    rest = data
    try:
        while rest:
            d = zstandard.ZstdDecompressor().decompressobj()
            parts.append(d.decompress(rest))
            size += len(parts[-1])
            if size > MAX_DECODED:
                return Decoded(data=b"", problem=f"zstd body decodes past {MAX_DECODED} bytes")
            if not d.eof:
                return Decoded(data=b"".join(parts), problem="zstd body is cut short")
            rest = d.unused_data
    except zstandard.ZstdError as exc:
        return Decoded(data=b"".join(parts), problem=f"zstd body does not decode: {exc}")
    return Decoded(data=b"".join(parts))


def _brotli(data: bytes) -> Decoded:
    for module in ("brotli", "brotlicffi"):
        try:
            lib: Any = importlib.import_module(module)
        except ImportError:
            continue
        try:
            return Decoded(data=bytes(lib.decompress(data)))
        except Exception as exc:  # the binding's own error type
            return Decoded(data=b"", problem=f"br body does not decode: {exc}")
    return Decoded(data=b"", problem="br body needs the brotli package to decode")


def _one(data: bytes, coding: str) -> Decoded:
    if coding in ("", "identity"):
        return Decoded(data=data)
    if coding in ("gzip", "x-gzip"):
        return _zlib(data, 16 + zlib.MAX_WBITS, "gzip")
    if coding == "deflate":
        # RFC 9110 says zlib-wrapped; some servers send raw deflate.
        wrapped = len(data) >= 2 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
        return _zlib(data, zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS, "deflate")
    if coding == "zstd":
        return _zstd(data)
    if coding == "br":
        return _brotli(data)
    return Decoded(data=b"", problem=f"unknown content-encoding {coding!r}")


def encoded(headers: Headers) -> bool:
    """True if the headers name a Content-Encoding (``content`` then decodes the body)."""
    return "content-encoding" in map(_NAME, headers)


def content(raw: bytes, headers: Headers) -> tuple[bytes, str]:
    """``decode_content``'s data and problem, without the value around them when the
    body has no Content-Encoding (the usual)."""
    if not encoded(headers):
        return raw, ""
    decoded = decode_content(raw, headers)
    return decoded.data, decoded.problem


def decode_content(raw: bytes, headers: Headers) -> Decoded:
    """Undo the response's Content-Encoding (gzip, deflate, zstd; br if brotli is installed)."""
    if not encoded(headers):
        return Decoded(data=raw)  # what the loop below gives for no encoding
    codings = [c.strip().lower() for c in header(headers, "content-encoding").split(",")]
    out = Decoded(data=raw)
    for coding in reversed(codings):
        step = _one(out.data, coding)
        if step.problem:
            return step
        out = step
    return out
