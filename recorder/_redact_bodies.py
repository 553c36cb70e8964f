"""Bodies under redaction: decoding content encodings, encoding again, cutting back into chunks."""

from __future__ import annotations

import zlib

import attrs
import zstandard

from evaltape.recorder._events import (
    Chunk,
    Headers,
)


def header_value(headers: Headers, name: str) -> str:
    for key, value in headers:
        if key.lower() == name:
            return value
    return ""


def decode_body(data: bytes, encoding: str) -> bytes | None:
    """The decoded body for a ``content-encoding`` we know, else None.

    Identity returns ``data`` itself.  A stream cut short decodes as far as it
    goes.  Unknown encodings (e.g. ``br``) and undecodable data return None.
    """
    enc = encoding.strip().lower()
    if enc in ("", "identity"):
        return data
    try:
        if enc in ("gzip", "x-gzip", "deflate"):
            wbits = 47 if enc != "deflate" else 15
            try:
                return zlib.decompressobj(wbits).decompress(data)
            except zlib.error:
                if enc != "deflate":
                    raise
                return zlib.decompressobj(-15).decompress(data)  # raw deflate
        if enc == "zstd":
            return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    except (zlib.error, zstandard.ZstdError):
        return None
    return None


def encode_body(data: bytes, encoding: str) -> bytes:
    enc = encoding.strip().lower()
    if enc in ("gzip", "x-gzip"):
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if enc == "deflate":
        return zlib.compress(data)
    if enc == "zstd":
        return zstandard.ZstdCompressor().compress(data)
    return data


def split_like(data: bytes, chunks: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
    """Cut ``data`` into ``len(chunks)`` pieces sized in proportion to ``chunks``."""
    total = sum(len(c.data) for c in chunks) or 1
    out: list[Chunk] = []
    pos = 0
    seen = 0
    for i, chunk in enumerate(chunks):
        seen += len(chunk.data)
        end = len(data) if i == len(chunks) - 1 else len(data) * seen // total
        out.append(attrs.evolve(chunk, data=data[pos:end]))
        pos = end
    return tuple(out)


def cut_at(data: bytes, chunks: tuple[Chunk, ...]) -> tuple[Chunk, ...]:
    """Cut ``data`` (same length as the joined chunks) at the chunks' offsets."""
    out: list[Chunk] = []
    pos = 0
    for chunk in chunks:
        end = pos + len(chunk.data)
        piece = data[pos:end]
        out.append(chunk if piece == chunk.data else attrs.evolve(chunk, data=piece))
        pos = end
    return tuple(out)


def set_length(headers: Headers, size: int) -> Headers:
    return tuple(
        (name, str(size)) if name.lower() == "content-length" else (name, value)
        for name, value in headers
    )
