"""Reading tape files: streaming, crash-tolerant, corruption-aware.

Frames are read in file order and checked (sync bytes, limits, CRC-32).  Each
session's frames are kept, still compressed, until its end frame arrives;
then its zstd stream is decoded in one go, so only one decompression context
is ever live and sessions interleave freely.  A file cut short (a writer
killed mid-frame) yields every complete event and a ``truncated`` note; so
does a frame cut short by frames a later writer appended.  Any other damage
is ``corrupt``: reported with the file and byte offset, after which the reader
resynchronises on the next frame whose CRC checks, so other sessions stay
readable.  See docs/format.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import attrs
import zstandard

from .._errors import OverBudget, TapeError
from .._events import Event, Exchange, SessionEnded, SessionStarted
from ._codec import (
    SCHEMA_OF_MAJOR,
    SCHEMA_VERSION,
    Plain,
    UnknownEventKind,
    from_plain,
    upgrade,
)
from ._frame_scan import (
    READ_BUFFER,
    Suspects,
    frames,
    open_source,
    read_file_header,
)
from ._frames import (
    FLAG_END,
    FLAG_START,
    MAX_WINDOW,
    FileHeader,
    FrameHeader,
    ZstdBlocks,
)
from ._limits import DecodeBudget, TapeBudget
from ._notes import Note, NoteLog
from ._pack import Unpacker

MAX_OPEN_SESSIONS = 1024
"""Unfinished sessions a reader tracks at once (bounds memory on hostile input)."""

DECOMPRESS_BUDGET = 1 << 20
"""Most bytes one decompression call may produce beyond an event's declared size."""


@attrs.frozen(kw_only=True)
class SessionInfo:
    """What listing a tape tells about one session without decoding its body."""

    session_id: str
    """The session's id."""
    header: SessionStarted | None
    """Its SessionStarted event, None if that frame is unreadable."""
    frames: int
    """How many consecutive frames (events) of the session, from the first, are readable."""
    complete: bool
    """True if its end frame is among them."""
    offset: int
    """Byte offset of its first frame."""
    size: int
    """Bytes those frames occupy, headers included."""


@attrs.frozen(kw_only=True)
class RecordedSession:
    """All events of one session, in order."""

    session_id: str
    """The session's id."""
    events: tuple[Event, ...]
    """Its events, SessionStarted first and SessionEnded last when complete."""
    complete: bool
    """True if the session's end was recorded."""
    problem: str = ""
    """Why the session stops early (truncation, corruption), if it does."""

    @property
    def header(self) -> SessionStarted:
        """The session's SessionStarted event."""
        first = self.events[0]
        assert isinstance(first, SessionStarted)
        return first


def _decompress(
    dobj: zstandard.ZstdDecompressionObj, blocks: ZstdBlocks, payload: bytes, raw_len: int
) -> bytes:
    """Decompress one frame's payload, producing at most ``raw_len`` bytes
    plus ``DECOMPRESS_BUDGET`` however hostile the payload."""
    cuts = blocks.cuts(payload, DECOMPRESS_BUDGET)
    if cuts is None:
        raw = dobj.decompress(payload)
    else:
        parts: list[bytes] = []
        produced = start = 0
        view = memoryview(payload)
        for cut in cuts:
            part = dobj.decompress(view[start:cut])
            produced += len(part)
            if produced > raw_len:
                raise ValueError(f"event decompresses past its declared {raw_len} bytes")
            parts.append(part)
            start = cut
        raw = b"".join(parts)
    if len(raw) != raw_len:
        raise ValueError(f"event decompresses to {len(raw)} bytes, its frame says {raw_len}")
    return raw


class _Undecodable(Exception):
    """A frame of a session whose event cannot be decoded."""

    def __init__(self, offset: int, seq: int, reason: str) -> None:
        super().__init__(reason)
        self.offset = offset
        self.seq = seq
        self.reason = reason


class _Pending:
    """A session whose end frame has not been read yet."""

    __slots__ = ("broken", "frames", "next_seq", "offset", "size")

    def __init__(self, offset: int) -> None:
        self.frames: list[tuple[int, FrameHeader, bytes]] = []
        self.next_seq = 0
        self.offset = offset
        self.size = 0
        self.broken = ""


class TapeReader:
    """Reads one tape file.

    ``strict`` (the default) raises ``CorruptTape`` at the first corrupt
    region; otherwise the damaged session is cut short with a note and the
    others are read on.  Notes (truncation, skipped unknown events, sessions
    without an end, corruption when not strict) are collected in ``notes``
    and passed to ``on_note``.  A file from a newer major format version
    raises ``NewerFormat``; a file that is not a tape raises ``NotATape``.

    ``tape_limit`` bounds the decoded bytes of all its sessions together (see
    ``MAX_TAPE_BYTES``): reading past it raises ``OverBudget`` naming the file,
    whatever ``strict`` says, since the tape is refused as a whole.

    ``data``, when given, is the tape's bytes (sent from elsewhere): they are read
    instead of the file, and notes still name ``path``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        strict: bool = True,
        on_note: Callable[[Note], None] | None = None,
        tape_limit: int | None = None,
        data: bytes | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self._data = data
        self._tape = TapeBudget(tape_limit) if tape_limit is not None else None
        self.strict = strict
        self._log = NoteLog(self.path, strict=strict, on_note=on_note)
        self.notes: list[Note] = self._log.notes
        self._dctx = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW)
        self.header: FileHeader | None = read_file_header(self._log, data)
        """The file header; None for an empty file or one cut inside its header."""

    # -- sessions ----------------------------------------------------------

    def _sessions(self) -> Iterator[RecordedSession]:
        """Sort good frames into sessions; decode each once its end is read."""
        for key, pending, ended in self._gathered():
            yield self._decode_session(key, pending, ended=ended)

    def _gathered(self) -> Iterator[tuple[bytes, _Pending, bool]]:
        """Sort good frames into sessions; each one (still compressed) once its end is
        read, then the unfinished ones, with whether its end was read."""
        if self.header is None:
            return
        open_: dict[bytes, _Pending] = {}
        ended: set[bytes] = set()  # sessions whose end frame was read
        dropped: set[bytes] = set()  # sessions refused or without a readable start
        suspects: Suspects = {}
        with open_source(self.path, self._data, READ_BUFFER) as f:
            for frame in frames(f, self.header, self._log, suspects):
                offset, fh, _ = frame
                key = fh.session
                pending = open_.get(key)
                if fh.flags & FLAG_START:
                    sid = key.hex()
                    if pending is not None or key in ended or key in dropped or fh.seq != 0:
                        self._log.corrupt(f"session {sid} starts twice", offset, sid)
                        continue
                    if len(open_) >= MAX_OPEN_SESSIONS:
                        dropped.add(key)
                        self._log.corrupt(
                            f"over {MAX_OPEN_SESSIONS} unfinished sessions", offset, sid
                        )
                        continue
                    pending = open_[key] = _Pending(offset)
                elif pending is None:
                    sid = key.hex()
                    if key in ended:
                        self._log.corrupt(
                            f"frame {fh.seq} of session {sid} follows its end", offset, sid
                        )
                    elif key not in dropped:
                        dropped.add(key)
                        if (key, 0) not in suspects:
                            self._log.corrupt(
                                f"session {sid} has no readable start frame", offset, sid
                            )
                    continue
                if not pending.broken:
                    if fh.seq == pending.next_seq:
                        pending.next_seq += 1
                        pending.frames.append(frame)
                    else:
                        pending.broken = self._gap(suspects, key, pending.next_seq, offset)
                if fh.flags & FLAG_END:
                    del open_[key]
                    (dropped if pending.broken else ended).add(key)
                    yield key, pending, not pending.broken
        for key, pending in open_.items():
            if not pending.broken:
                damaged = suspects.get((key, pending.next_seq))
                if damaged is not None:
                    pending.broken = f"frame {pending.next_seq} (byte {damaged}) is corrupt"
            yield key, pending, False

    def _gap(self, suspects: Suspects, key: bytes, seq: int, offset: int) -> str:
        damaged = suspects.get((key, seq))
        if damaged is not None:
            return f"frame {seq} (byte {damaged}) is corrupt"
        problem = f"frame {seq} of session {key.hex()} is missing"
        self._log.corrupt(problem, offset, key.hex())
        return problem

    def _events(
        self, frames: list[tuple[int, FrameHeader, bytes]]
    ) -> Iterator[tuple[int, FrameHeader, Event | str]]:
        """Decode a session's frames in order; an event of a kind this version
        does not know comes as its tag.  Raises what the first undecodable
        frame raises."""
        assert self.header is not None
        schema = SCHEMA_OF_MAJOR.get(self.header.major, SCHEMA_VERSION)
        dobj = self._dctx.decompressobj()
        blocks = ZstdBlocks()
        unpacker = Unpacker(DecodeBudget(tape=self._tape))
        for offset, fh, payload in frames:
            try:
                raw = _decompress(dobj, blocks, payload, fh.raw_len)
                unpacked = unpacker.unpack_event(raw)
                if isinstance(unpacked, Exchange):
                    event: Event | str = unpacked
                else:
                    plain: Plain = upgrade(unpacked, schema)
                    event = from_plain(plain)
            except UnknownEventKind:
                event = str(plain["k"])
            except OverBudget as exc:
                raise OverBudget(f"{self.path}: {exc}") from None
            except (ValueError, TapeError, zstandard.ZstdError) as exc:
                raise _Undecodable(offset, fh.seq, str(exc)) from exc
            yield offset, fh, event

    def _decode_session(self, key: bytes, pending: _Pending, *, ended: bool) -> RecordedSession:
        sid = key.hex()
        events: list[Event] = []
        problem = pending.broken
        offset, seq = pending.offset, 0
        try:
            for offset, fh, event in self._events(pending.frames):
                seq = fh.seq
                if isinstance(event, str):
                    if seq == 0:
                        raise ValueError(f"the session starts with unknown event kind {event!r}")
                    writer = self.header.writer if self.header else "?"
                    self._log.note(
                        "skipped",
                        f"unknown event kind {event!r} (written by {writer})",
                        offset,
                        sid,
                    )
                    continue
                if (
                    seq == 0
                    or fh.flags & FLAG_END
                    or isinstance(event, SessionStarted | SessionEnded)
                ) and (
                    (seq == 0) != isinstance(event, SessionStarted)
                    or bool(fh.flags & FLAG_END) != isinstance(event, SessionEnded)
                ):
                    raise ValueError(f"frame {seq} holds a misplaced {type(event).__name__}")
                if (
                    seq == 0
                    and isinstance(event, SessionStarted)
                    and event.session_id.lower() != sid
                ):
                    raise ValueError(f"its start names session {event.session_id!r}")
                events.append(event)
        except _Undecodable as exc:
            problem = f"event {exc.seq} of session {sid} does not decode: {exc.reason}"
            self._log.corrupt(problem, exc.offset, sid)
        except ValueError as exc:
            problem = f"event {seq} of session {sid} does not decode: {exc}"
            self._log.corrupt(problem, offset, sid)
        complete = ended and not problem and bool(events) and isinstance(events[-1], SessionEnded)
        if not complete and not problem and events:
            problem = "no end event: its writer stopped (or is still writing)"
            self._log.note("incomplete", f"session {sid} has {problem}", pending.offset, sid)
        return RecordedSession(
            session_id=sid, events=tuple(events), complete=complete, problem=problem
        )

    def sessions(self) -> Iterator[RecordedSession]:
        """Yield each session with all its readable events, as it finishes in the file.

        Sessions with no readable start are left out (a corrupt note says so).
        """
        for session in self._sessions():
            if session.events and isinstance(session.events[0], SessionStarted):
                yield session

    def scan(self) -> list[SessionInfo]:
        """List sessions and their headers, decoding only each session's first frame."""
        if self.header is None:
            return []
        infos: dict[bytes, SessionInfo] = {}
        suspects: Suspects = {}
        with open_source(self.path, self._data, READ_BUFFER) as f:
            for offset, fh, payload in frames(f, self.header, self._log, suspects):
                info = infos.get(fh.session)
                if info is None:
                    header = None
                    if fh.flags & FLAG_START and fh.seq == 0:
                        header = self._decode_start(fh, payload, offset)
                    info = infos[fh.session] = SessionInfo(
                        session_id=fh.session.hex(),
                        header=header,
                        frames=0,
                        complete=False,
                        offset=offset,
                        size=0,
                    )
                if info.complete or fh.seq != info.frames:
                    continue
                infos[fh.session] = attrs.evolve(
                    info,
                    frames=info.frames + 1,
                    size=info.size + fh.head + fh.comp_len,
                    complete=bool(fh.flags & FLAG_END),
                )
        return list(infos.values())

    def _decode_start(self, fh: FrameHeader, payload: bytes, offset: int) -> SessionStarted | None:
        try:
            for _, _, event in self._events([(offset, fh, payload)]):
                return event if isinstance(event, SessionStarted) else None
        except _Undecodable as exc:
            self._log.corrupt(
                f"session start does not decode: {exc.reason}", offset, fh.session.hex()
            )
        return None


def read_sessions(
    path: str | os.PathLike[str],
    *,
    strict: bool = True,
    on_note: Callable[[Note], None] | None = None,
) -> Iterator[RecordedSession]:
    """Shorthand for ``TapeReader(path, ...).sessions()``."""
    return TapeReader(path, strict=strict, on_note=on_note).sessions()
