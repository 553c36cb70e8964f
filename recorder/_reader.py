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
import zlib
from collections.abc import Callable, Iterator
from typing import BinaryIO

import attrs
import zstandard

from evaltape.recorder._codec import UnknownEventKind, from_plain, upgrade
from evaltape.recorder._errors import CorruptTape, NewerFormat, NotATape, TapeError
from evaltape.recorder._events import Event, SessionEnded, SessionStarted
from evaltape.recorder._frames import (
    FILE_FIXED_SIZE,
    FLAG_END,
    FLAG_START,
    FORMAT_MAJOR,
    FORMAT_MINOR,
    FRAME_HEADER_SIZE,
    MAGIC,
    MAX_EVENT_BYTES,
    MAX_WINDOW,
    SYNC,
    FileHeader,
    FrameHeader,
    ZstdBlocks,
    file_header_size,
    frame_crc,
    parse_file_header,
    parse_frame_header,
    with_comp_len,
)
from evaltape.recorder._pack import Unpacker

MAX_OPEN_SESSIONS = 1024
"""Unfinished sessions a reader tracks at once (bounds memory on hostile input)."""

DECOMPRESS_BUDGET = 1 << 20
"""Most bytes one decompression call may produce beyond an event's declared size."""

_READ = 1 << 16

Suspects = dict[tuple[bytes, int], int]
"""(session, seq) named by refused frame headers -> the frame's offset."""


@attrs.frozen(kw_only=True)
class Note:
    """Something a reader noticed: the file was cut short, a region is corrupt..."""

    kind: str
    """"truncated", "corrupt", "skipped" or "incomplete"."""
    message: str
    """One line naming the file and byte offset."""
    offset: int
    """Byte offset the note is about."""
    session_id: str = ""
    """The session concerned, when known."""


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
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        strict: bool = True,
        on_note: Callable[[Note], None] | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.strict = strict
        self.notes: list[Note] = []
        self._on_note = on_note
        self._dctx = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW)
        self.header: FileHeader | None = self._read_file_header()
        """The file header; None for an empty file or one cut inside its header."""

    # -- notes -------------------------------------------------------------

    def _note(self, kind: str, message: str, offset: int, session_id: str = "") -> None:
        note = Note(
            kind=kind,
            message=f"{self.path}: byte {offset}: {message}",
            offset=offset,
            session_id=session_id,
        )
        self.notes.append(note)
        if self._on_note is not None:
            self._on_note(note)

    def _corrupt(self, message: str, offset: int, session_id: str = "") -> None:
        if self.strict:
            raise CorruptTape(message, path=self.path, offset=offset)
        self._note("corrupt", message, offset, session_id)

    # -- file header -------------------------------------------------------

    def _open(self) -> BinaryIO:
        try:
            return open(self.path, "rb")
        except OSError as exc:
            raise TapeError(f"{self.path}: cannot open: {exc.strerror}") from exc

    def _read_file_header(self) -> FileHeader | None:
        with self._open() as f:
            head = f.read(FILE_FIXED_SIZE)
            if not head:
                return None
            # A magic with a byte or two wrong is a damaged tape, not another file.
            damaged = sum(a != b for a, b in zip(head, MAGIC, strict=False))
            if damaged > (2 if len(head) >= len(MAGIC) else 0):
                raise NotATape(f"{self.path}: not an evaltape tape (bad magic)")
            if damaged:
                return self._salvage(f, "file header is damaged (bad magic)")
            if len(head) < FILE_FIXED_SIZE:
                self._note("truncated", "file ends inside its header; it holds no events", 0)
                return None
            head += f.read(file_header_size(head) - FILE_FIXED_SIZE)
            try:
                header = parse_file_header(head)
            except ValueError as exc:
                return self._salvage(f, str(exc))
            if header is None:
                if self._resync(f, len(MAGIC)) is not None:
                    return self._salvage(f, "file header claims more bytes than it has")
                self._note("truncated", "file ends inside its header; it holds no events", 0)
                return None
        if header.major > FORMAT_MAJOR:
            raise NewerFormat(
                f"{self.path}: written by {header.writer} (tape format {header.major}."
                f"{header.minor}); this evaltape reads format {FORMAT_MAJOR}.x; upgrade evaltape"
            )
        if header.major < 1:
            return self._salvage(None, f"file header names format {header.major}, which is none")
        return header

    def _salvage(self, f: BinaryIO | None, problem: str) -> FileHeader:
        """A damaged file header: corrupt in strict mode, else read the frames
        after it as if it named this version's format."""
        self._corrupt(problem, 0)
        if f is None:
            f = self._open()
        with f:
            first = self._resync(f, len(MAGIC))
            size = os.fstat(f.fileno()).st_size
        return FileHeader(
            major=FORMAT_MAJOR,
            minor=FORMAT_MINOR,
            writer="an unknown writer (damaged file header)",
            size=size if first is None else first,
        )

    # -- frames ------------------------------------------------------------

    def _crc_checks(self, f: BinaryIO, at: int, head: bytes, fh: FrameHeader) -> bool:
        """Whether the frame at ``at`` passes its CRC, read in pieces (no big buffers)."""
        f.seek(at + FRAME_HEADER_SIZE)
        crc = zlib.crc32(head[len(SYNC) : FRAME_HEADER_SIZE - 4])
        left = fh.comp_len
        while left:
            piece = f.read(min(left, _READ))
            if not piece:
                return False
            crc = zlib.crc32(piece, crc)
            left -= len(piece)
        return crc == fh.crc

    def _resync(self, f: BinaryIO, start: int) -> int | None:
        """Offset of the next frame at or after ``start`` whose CRC checks."""
        size = os.fstat(f.fileno()).st_size
        pos = start
        while True:
            f.seek(pos)
            block = f.read(_READ)
            if len(block) < len(SYNC):
                return None
            i = block.find(SYNC)
            if i < 0:
                pos += len(block) - len(SYNC) + 1
                continue
            candidate = pos + i
            f.seek(candidate)
            head = f.read(FRAME_HEADER_SIZE)
            if len(head) == FRAME_HEADER_SIZE:
                fh = parse_frame_header(head)
                if (
                    fh.comp_len <= MAX_EVENT_BYTES
                    and fh.raw_len <= MAX_EVENT_BYTES
                    and candidate + FRAME_HEADER_SIZE + fh.comp_len <= size
                    and self._crc_checks(f, candidate, head, fh)
                ):
                    return candidate
            pos = candidate + 1

    def _torn(self, f: BinaryIO, offset: int, head: bytes, end: int) -> str | None:
        """If the bad frame at ``offset`` is the start of a frame whose writer
        stopped mid-write (the region up to ``end``, the next good frame or the
        end of the file, is shorter than the frame claims), its session id."""
        if end - offset < FRAME_HEADER_SIZE:
            return "" if head[: min(len(SYNC), end - offset)] == SYNC[: end - offset] else None
        try:
            fh = parse_frame_header(head)
        except ValueError:
            return None
        if (
            fh.comp_len > MAX_EVENT_BYTES
            or fh.raw_len > MAX_EVENT_BYTES
            or offset + FRAME_HEADER_SIZE + fh.comp_len <= end
        ):
            return None
        # A damaged length field, not a torn write, if the frame checks with
        # the length the region actually has.
        fixed = with_comp_len(head, end - offset - FRAME_HEADER_SIZE)
        f.seek(offset + FRAME_HEADER_SIZE)
        if frame_crc(fixed, f.read(end - offset - FRAME_HEADER_SIZE)) == fh.crc:
            return None
        return fh.session.hex()

    def _frames(self, f: BinaryIO, suspects: Suspects) -> Iterator[tuple[int, FrameHeader, bytes]]:
        """Yield (offset, header, payload) for each frame that passes its checks.

        Bad regions are noted; the (session, seq) a refused frame's header
        names goes into ``suspects`` so that the gap it leaves in its session
        is not reported a second time.
        """
        assert self.header is not None
        size = os.fstat(f.fileno()).st_size
        offset = self.header.size
        f.seek(offset)
        while offset < size:
            head = f.read(FRAME_HEADER_SIZE)
            bad = ""
            fh: FrameHeader | None = None
            if len(head) < FRAME_HEADER_SIZE:
                bad = "file ends inside a frame header"
            else:
                try:
                    fh = parse_frame_header(head)
                except ValueError:
                    bad = "no frame starts here (bad sync bytes)"
                else:
                    if fh.comp_len > MAX_EVENT_BYTES or fh.raw_len > MAX_EVENT_BYTES:
                        bad = (
                            f"frame claims {max(fh.comp_len, fh.raw_len)} bytes, "
                            f"over the {MAX_EVENT_BYTES}-byte limit"
                        )
                    elif offset + FRAME_HEADER_SIZE + fh.comp_len > size:
                        bad = "frame runs past the end of the file"
                    else:
                        payload = f.read(fh.comp_len)
                        if frame_crc(head, payload) == fh.crc:
                            yield offset, fh, payload
                            offset += FRAME_HEADER_SIZE + fh.comp_len
                            continue
                        bad = "frame fails its CRC-32"
            nxt = self._resync(f, offset + 1)
            end = size if nxt is None else nxt
            torn = self._torn(f, offset, head, end)
            if torn is not None:
                what = "file ends" if nxt is None else "a frame appended later starts"
                self._note(
                    "truncated",
                    f"{what} inside a frame; {end - offset} bytes of an unfinished event "
                    "dropped (its writer stopped mid-write)",
                    offset,
                    torn,
                )
            else:
                if fh is not None:
                    suspects[fh.session, fh.seq] = offset
                self._corrupt(f"{bad}; {end - offset} bytes skipped", offset)
            if nxt is None:
                return
            offset = nxt
            f.seek(offset)

    # -- sessions ----------------------------------------------------------

    def _sessions(self) -> Iterator[RecordedSession]:
        """Sort good frames into sessions; decode each once its end is read."""
        if self.header is None:
            return
        open_: dict[bytes, _Pending] = {}
        ended: set[bytes] = set()  # sessions whose end frame was read
        dropped: set[bytes] = set()  # sessions refused or without a readable start
        suspects: Suspects = {}
        with self._open() as f:
            for offset, fh, payload in self._frames(f, suspects):
                key = fh.session
                sid = key.hex()
                pending = open_.get(key)
                if fh.flags & FLAG_START:
                    if pending is not None or key in ended or key in dropped or fh.seq != 0:
                        self._corrupt(f"session {sid} starts twice", offset, sid)
                        continue
                    if len(open_) >= MAX_OPEN_SESSIONS:
                        dropped.add(key)
                        self._corrupt(f"over {MAX_OPEN_SESSIONS} unfinished sessions", offset, sid)
                        continue
                    pending = open_[key] = _Pending(offset)
                elif pending is None:
                    if key in ended:
                        self._corrupt(
                            f"frame {fh.seq} of session {sid} follows its end", offset, sid
                        )
                    elif key not in dropped:
                        dropped.add(key)
                        if (key, 0) not in suspects:
                            self._corrupt(f"session {sid} has no readable start frame", offset, sid)
                    continue
                if not pending.broken:
                    if fh.seq == pending.next_seq:
                        pending.next_seq += 1
                        pending.frames.append((offset, fh, payload))
                    else:
                        pending.broken = self._gap(suspects, key, pending.next_seq, offset)
                if fh.flags & FLAG_END:
                    del open_[key]
                    (dropped if pending.broken else ended).add(key)
                    yield self._decode_session(key, pending, ended=not pending.broken)
        for key, pending in open_.items():
            if not pending.broken:
                damaged = suspects.get((key, pending.next_seq))
                if damaged is not None:
                    pending.broken = f"frame {pending.next_seq} (byte {damaged}) is corrupt"
            yield self._decode_session(key, pending, ended=False)

    def _gap(self, suspects: Suspects, key: bytes, seq: int, offset: int) -> str:
        damaged = suspects.get((key, seq))
        if damaged is not None:
            return f"frame {seq} (byte {damaged}) is corrupt"
        problem = f"frame {seq} of session {key.hex()} is missing"
        self._corrupt(problem, offset, key.hex())
        return problem

    def _events(
        self, frames: list[tuple[int, FrameHeader, bytes]]
    ) -> Iterator[tuple[int, FrameHeader, Event | str]]:
        """Decode a session's frames in order; an event of a kind this version
        does not know comes as its tag.  Raises what the first undecodable
        frame raises."""
        assert self.header is not None
        old_schema = self.header.major if self.header.major < FORMAT_MAJOR else 0
        dobj = self._dctx.decompressobj()
        blocks = ZstdBlocks()
        unpacker = Unpacker()
        for offset, fh, payload in frames:
            try:
                plain = unpacker.unpack(_decompress(dobj, blocks, payload, fh.raw_len))
                if old_schema:
                    plain = upgrade(plain, old_schema)
                event: Event | str = from_plain(plain)
            except UnknownEventKind:
                event = str(plain["k"])
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
                    self._note(
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
            self._corrupt(problem, exc.offset, sid)
        except ValueError as exc:
            problem = f"event {seq} of session {sid} does not decode: {exc}"
            self._corrupt(problem, offset, sid)
        complete = ended and not problem and bool(events) and isinstance(events[-1], SessionEnded)
        if not complete and not problem and events:
            problem = "no end event: its writer stopped (or is still writing)"
            self._note("incomplete", f"session {sid} has {problem}", pending.offset, sid)
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
        with self._open() as f:
            for offset, fh, payload in self._frames(f, suspects):
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
                    size=info.size + FRAME_HEADER_SIZE + fh.comp_len,
                    complete=bool(fh.flags & FLAG_END),
                )
        return list(infos.values())

    def _decode_start(self, fh: FrameHeader, payload: bytes, offset: int) -> SessionStarted | None:
        try:
            for _, _, event in self._events([(offset, fh, payload)]):
                return event if isinstance(event, SessionStarted) else None
        except _Undecodable as exc:
            self._corrupt(f"session start does not decode: {exc.reason}", offset, fh.session.hex())
        return None


def read_sessions(
    path: str | os.PathLike[str],
    *,
    strict: bool = True,
    on_note: Callable[[Note], None] | None = None,
) -> Iterator[RecordedSession]:
    """Shorthand for ``TapeReader(path, ...).sessions()``."""
    return TapeReader(path, strict=strict, on_note=on_note).sessions()
