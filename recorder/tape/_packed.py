"""Sessions still compressed: sorted out of a tape here, decoded somewhere else.

A rescore on many cores reads its tapes in one process and scores sessions in
others.  Shipping decoded sessions costs ~50x the bytes the tape holds (and
the reading process's time to decode and pickle them); a ``PackedSession`` is
a session's frames as the tape stores them, compressed, with its start event
(decoded, so the reading process can choose and route it) and what the
reader already knows (whether its end was read, why it stops early).
``unpack_session`` decodes it wherever it lands, with the same checks and
notes as ``TapeReader.sessions``.

Whoever decodes a session can count what it decodes to against a budget
(``unpack_session``'s ``budget``), so the reading process can still bound
what a tape decodes to, from the counts that come back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs
import zstandard

from .._events import SessionStarted
from ._frames import MAX_WINDOW, FileHeader, FrameHeader
from ._limits import TapeBudget
from ._notes import Note, NoteLog
from ._reader import RecordedSession, TapeReader, _Pending

Frame = tuple[int, FrameHeader, bytes]
"""One stored frame: its byte offset in the tape, its header, its compressed payload."""


@attrs.frozen(kw_only=True)
class PackedSession:
    """One session of a tape, still compressed, with its decoded start event."""

    session_id: str
    """The session's id."""
    header: SessionStarted
    """Its start event."""
    tape: str
    """The tape it was read from (named in notes)."""
    file: FileHeader
    """The tape's file header (its format version decides how events decode)."""
    frames: tuple[Frame, ...] = attrs.field(repr=False)
    """Its readable frames, in order."""
    ended: bool
    """Its end frame was read."""
    broken: str = ""
    """Why its frames stop early (a gap, a corrupt frame), if they do."""
    offset: int = 0
    """Byte offset of its first frame."""

    @property
    def stored_bytes(self) -> int:
        """Compressed payload bytes it carries."""
        return sum(len(payload) for _, _, payload in self.frames)

    def __reduce__(self) -> tuple[Callable[..., PackedSession], tuple[Any, ...]]:
        """Pickled with each frame as a plain tuple: a session is sent to another process
        this way, and pickling its frames' named tuples (each through Python-level code)
        cost the sending process more than reading them."""
        frames = tuple([(at, *fh, payload) for at, fh, payload in self.frames])
        fields = (self.session_id, self.header, self.tape, self.file, self.ended, self.broken)
        return _unpickled, (*fields, self.offset, frames)


def _unpickled(
    session_id: str,
    header: SessionStarted,
    tape: str,
    file: FileHeader,
    ended: bool,
    broken: str,
    offset: int,
    frames: tuple[tuple[Any, ...], ...],
) -> PackedSession:
    """The ``PackedSession`` that ``PackedSession.__reduce__`` pickled."""
    return PackedSession(
        session_id=session_id,
        header=header,
        tape=tape,
        file=file,
        frames=tuple([(f[0], FrameHeader._make(f[1:-1]), f[-1]) for f in frames]),
        ended=ended,
        broken=broken,
        offset=offset,
    )


def packed_sessions(reader: TapeReader) -> Iterator[PackedSession]:
    """Each session of ``reader``'s tape with a readable start, as it finishes in the file,
    without decoding more than its first frame.  Sessions whose start does not decode are
    left out with a note, as ``TapeReader.sessions`` leaves them out."""
    for key, pending, ended in reader._gathered():
        if not pending.frames:
            continue
        offset, fh, payload = pending.frames[0]
        if fh.seq != 0:
            continue
        header = reader._decode_start(fh, payload, offset)
        if header is None:
            continue
        assert reader.header is not None
        yield PackedSession(
            session_id=key.hex(),
            header=header,
            tape=reader.path,
            file=reader.header,
            frames=tuple(pending.frames),
            ended=ended,
            broken=pending.broken,
            offset=pending.offset,
        )


def unpack_session(
    packed: PackedSession,
    on_note: Callable[[Note], None] | None = None,
    budget: TapeBudget | None = None,
) -> RecordedSession:
    """Decode ``packed`` as the reader of its tape would have: every readable event, with
    a note for what does not decode (damage never raises; the session stops early).
    What it decodes to counts against ``budget`` (``OverBudget`` past it)."""
    reader = TapeReader.__new__(TapeReader)
    reader.path = packed.tape
    reader._tape = budget
    reader.strict = False
    reader._log = NoteLog(packed.tape, strict=False, on_note=on_note)
    reader.notes = reader._log.notes
    reader._dctx = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW)
    reader.header = packed.file
    pending = _Pending(packed.offset)
    pending.frames = list(packed.frames)
    pending.next_seq = len(packed.frames)
    pending.broken = packed.broken
    return reader._decode_session(bytes.fromhex(packed.session_id), pending, ended=packed.ended)
