"""Bodies under redaction: decoding content encodings, encoding again, cutting back into chunks."""

from __future__ import annotations

import importlib
import zlib

import msgspec
import zstandard

from .._events import (
    Chunk,
    Headers,
)
from ..apis._encoding import decode_content


def header_value(headers: Headers, name: str) -> str:
    for key, value in headers:
        if key.lower() == name:
            return value
    return ""


def _codings(encoding: str) -> list[str]:
    names = (c.strip().lower() for c in encoding.split(","))
    return [c for c in names if c not in ("", "identity")]


def decode_body(data: bytes, encoding: str) -> bytes | None:
    """The decoded body, every ``content-encoding`` undone (``gzip, gzip`` too), else None.

    The decoder is the adapters' own (``decode_content``), so what is scanned
    for secrets is what a reader of the tape decodes.  Identity returns
    ``data`` itself.  A stream cut short decodes as far as it goes.  Unknown
    encodings and undecodable data return None.
    """
    if not _codings(encoding):
        return data
    out = decode_content(data, (("content-encoding", encoding),))
    if out.problem and not out.problem.endswith("is cut short"):
        return None
    return out.data


def encode_body(data: bytes, encoding: str) -> bytes:
    """``data`` encoded again with each coding of ``encoding``, in the order listed."""
    for enc in _codings(encoding):
        if enc in ("gzip", "x-gzip"):
            c = zlib.compressobj(6, zlib.DEFLATED, 31)
            data = c.compress(data) + c.flush()
        elif enc == "deflate":
            data = zlib.compress(data)
        elif enc == "zstd":
            data = zstandard.ZstdCompressor().compress(data)
        elif enc == "br":
            data = bytes(importlib.import_module("brotli").compress(data))
    return data


def unreadable_marker(encoding: str) -> bytes:
    """What an undecodable body is recorded as: it cannot be checked for secrets."""
    shown = encoding.strip()[:60].encode("ascii", "replace")
    return (
        b"[evaltape: body not recorded: its content-encoding '" + shown + b"' does not "
        b"decode, so it could not be checked for secrets]"
    )


def without_encoding(headers: Headers, size: int) -> Headers:
    """``headers`` without content-encoding, content-length set to ``size``."""
    kept = tuple((k, v) for k, v in headers if k.lower() != "content-encoding")
    return set_length(kept, size)


def split_like(data: bytes, chunks: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
    """Cut ``data`` into ``len(chunks)`` pieces sized in proportion to ``chunks``."""
    total = sum(len(c.data) for c in chunks) or 1
    out: list[Chunk] = []
    pos = 0
    seen = 0
    for i, chunk in enumerate(chunks):
        seen += len(chunk.data)
        end = len(data) if i == len(chunks) - 1 else len(data) * seen // total
        out.append(msgspec.structs.replace(chunk, data=data[pos:end]))
        pos = end
    return tuple(out)


def cut_at(data: bytes, chunks: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
    """Cut ``data`` (same length as the joined chunks) at the chunks' offsets."""
    out: list[Chunk] = []
    pos = 0
    for chunk in chunks:
        end = pos + len(chunk.data)
        piece = data[pos:end]
        out.append(chunk if piece == chunk.data else msgspec.structs.replace(chunk, data=piece))
        pos = end
    return tuple(out)


def set_length(headers: Headers, size: int) -> Headers:
    return tuple(
        (name, str(size)) if name.lower() == "content-length" else (name, value)
        for name, value in headers
    )
