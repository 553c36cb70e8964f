"""Compressing a whole session's packed events into tape frames at once.

A session kept in memory until it ends (``SessionBuffer``) need not hold a
zstd stream while it is open: it keeps its events packed and compresses them
all when its bytes are asked for.  Knowing the session's size then, the stream
gets the window and match-finder tables zstd itself picks for an input of that
size (never a window over the format's ``MAX_WINDOW``, nor tables over a large
open writer's), and the frames have
the layout a long-lived stream writes (one zstd frame per session, flushed
at a block boundary after each event), from a context that lives only for
the call.
"""

from __future__ import annotations

from collections.abc import Sequence

import zstandard

from ._frames import FLAG_END, MAX_WINDOW_LOG, frame_as
from ._table_budget import LARGE_LOG, capped

Packed = tuple[int, bytes]
"""One packed event and its frame flags (``FLAG_START`` / ``FLAG_END``)."""


def sized_params(level: int, size: int) -> zstandard.ZstdCompressionParameters:
    """zstd's parameters at ``level`` for ``size`` bytes of input, the window capped at
    ``MAX_WINDOW`` (a smaller window is one every reader accepts) and the match-finder
    tables at a large open writer's (so a few sessions ending at once stay small)."""
    sized = zstandard.ZstdCompressionParameters.from_level(level, source_size=max(size, 1))
    return zstandard.ZstdCompressionParameters.from_level(
        level,
        source_size=max(size, 1),
        window_log=min(sized.window_log, MAX_WINDOW_LOG),
        **capped(sized, LARGE_LOG),
    )


def encode_frames(session: bytes, events: Sequence[Packed], level: int) -> bytes:
    """The tape frames of ``events`` (from seq 0) of the 8-byte ``session``: one zstd
    stream, flushed after each event and finished by the event flagged ``FLAG_END``.
    Written in one piece, every frame after the first is a short one where it fits."""
    size = sum(len(raw) for _, raw in events)
    params = sized_params(level, size)
    stream = zstandard.ZstdCompressor(compression_params=params).compressobj()
    out = bytearray()
    for seq, (flags, raw) in enumerate(events):
        payload = stream.compress(raw)
        mode = (
            zstandard.COMPRESSOBJ_FLUSH_FINISH
            if flags & FLAG_END
            else zstandard.COMPRESSOBJ_FLUSH_BLOCK
        )
        payload += stream.flush(mode)
        out += frame_as(seq > 0, flags, session, seq, len(raw), payload)
    return bytes(out)
