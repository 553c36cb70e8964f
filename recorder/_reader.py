"""Reading tape files: streaming, crash-tolerant, corruption-aware.

Frames are read in file order.  Each session's frames feed that session's
zstd stream; sessions interleave freely.  A file cut short (a writer killed
mid-frame) yields every complete event and a ``truncated`` note.  A frame
that fails its CRC is reported with the file and byte offset; the reader
then resynchronises on the next valid frame so other sessions stay readable.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import BinaryIO

import attrs
import zstandard

from recorder._codec import UnknownEventKind, from_plain, upgrade
from recorder._errors import CorruptTape, NewerFormat, NotATape, TapeError
from recorder._events import Event, SessionEnded, SessionStarted
from recorder._frames import (
    FLAG_END,
    FLAG_START,
    FORMAT_MAJOR,
    FRAME_HEADER_SIZE,
    MAX_EVENT_BYTES,
    MAX_WINDOW,
    SYNC,
    FileHeader,
    FrameHeader,
    frame_crc,
    parse_file_header,
    parse_frame_header,
)
from recorder._pack import Unpacker

MAX_OPEN_SESSIONS = 1024
"""Unfinished sessions a reader tracks at once (bounds memory on hostile input)."""

_BURST = 64 * 1024 * 1024
"""Most output one decompress call may produce (zstd expands <= 128 KiB per 3 bytes)."""
_SLICE = max(64, 3 * _BURST // (128 * 1024) - 3)


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
    """How many frames (events) the session has in the file."""
    complete: bool
    """True if its end frame is present."""
    offset: int
    """Byte offset of its first frame."""
    size: int
    """Bytes its frames occupy, headers included."""


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


def _bounded_decompress(dobj: zstandard.ZstdDecompressionObj, payload: bytes, limit: int) -> bytes:
    """Decompress ``payload``, refusing to produce more than ``limit`` bytes.

    Input is fed in slices small enough that one slice cannot expand past
    ``_BURST`` bytes, so hostile frames cannot exhaust memory.
    """
    if len(payload) <= _SLICE:
        out = dobj.decompress(payload)
        if len(out) > limit:
            raise ValueError(f"event decompresses past its declared {limit} bytes")
        return out
    parts: list[bytes] = []
    produced = 0
    view = memoryview(payload)
    for start in range(0, len(payload), _SLICE):
        part = dobj.decompress(view[start : start + _SLICE])
        produced += len(part)
        if produced > limit:
            raise ValueError(f"event decompresses past its declared {limit} bytes")
        parts.append(part)
    return b"".join(parts)


class _Stream:
    """Decoding state of one session."""

    def __init__(self, dctx: zstandard.ZstdDecompressor, offset: int) -> None:
        self.dobj = dctx.decompressobj()
        self.unpacker = Unpacker()
        self.next_seq = 0
        self.offset = offset
        self.events: list[Event] = []
        self.broken = ""


class TapeReader:
    """Reads one tape file.

    ``strict`` (the default) raises ``CorruptTape`` at the first corrupt
    region; otherwise the damaged session is cut short with a note and the
    others are read on.  Notes (truncation, skipped unknown events, corruption
    when not strict) are collected in ``notes`` and passed to ``on_note``.
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
        self.header = self._read_file_header()

    # -- file header -------------------------------------------------------

    def _open(self) -> BinaryIO:
        try:
            return open(self.path, "rb")
        except OSError as exc:
            raise TapeError(f"{self.path}: cannot open: {exc.strerror}") from exc

    def _read_file_header(self) -> FileHeader | None:
        with self._open() as f:
            head = f.read(4096)
        if not head:
            return None
        try:
            header = parse_file_header(head)
        except ValueError as exc:
            if str(exc).startswith("not a tape"):
                raise NotATape(f"{self.path}: not an evaltape tape (bad magic)") from exc
            raise CorruptTape(str(exc), path=self.path, offset=0) from exc
        if header is None:
            self._note("truncated", "file ends inside its header; it holds no events", 0)
            return None
        if header.major > FORMAT_MAJOR:
            raise NewerFormat(
                f"{self.path}: written by {header.writer} (tape format {header.major}."
                f"{header.minor}); this evaltape reads format {FORMAT_MAJOR}.x; upgrade evaltape"
            )
        return header

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

    # -- frames ------------------------------------------------------------

    def _resync(self, f: BinaryIO, start: int) -> int | None:
        """Offset of the next frame at or after ``start`` whose CRC checks."""
        pos = start
        while True:
            f.seek(pos)
            block = f.read(1 << 16)
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
                if fh.comp_len <= MAX_EVENT_BYTES:
                    payload = f.read(fh.comp_len)
                    if len(payload) == fh.comp_len and frame_crc(head, payload) == fh.crc:
                        return candidate
            pos = candidate + 1

    def _frames(
        self, f: BinaryIO, verify: bool = True
    ) -> Iterator[tuple[int, FrameHeader, bytes | None]]:
        """Yield (offset, header, payload) for each good frame.

        With ``verify`` false only start frames' payloads are read and no CRC
        is checked for the others (listing).
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
                bad = "short"
            else:
                try:
                    fh = parse_frame_header(head)
                except ValueError:
                    bad = "no frame starts here (bad sync bytes)"
                else:
                    if fh.comp_len > MAX_EVENT_BYTES or fh.raw_len > MAX_EVENT_BYTES:
                        bad = f"frame claims {max(fh.comp_len, fh.raw_len)} bytes, over the limit"
                    elif offset + FRAME_HEADER_SIZE + fh.comp_len > size:
                        bad = "short"
            payload: bytes | None = None
            if fh is not None and not bad:
                if verify or fh.flags & FLAG_START:
                    payload = f.read(fh.comp_len)
                    if frame_crc(head, payload) != fh.crc:
                        bad = "frame fails its CRC-32"
                else:
                    f.seek(fh.comp_len, os.SEEK_CUR)
            if not bad:
                assert fh is not None
                yield offset, fh, payload
                offset += FRAME_HEADER_SIZE + fh.comp_len
                continue
            nxt = self._resync(f, offset + 1)
            if bad == "short" and nxt is None:
                self._note(
                    "truncated",
                    f"file ends inside a frame; {size - offset} bytes of an unfinished event "
                    "dropped (the writer stopped mid-write)",
                    offset,
                )
                return
            if bad == "short":
                bad = "frame length runs past the next frame"
            end = size if nxt is None else nxt
            self._corrupt(f"{bad}; {end - offset} bytes skipped", offset)
            if nxt is None:
                return
            offset = nxt
            f.seek(offset)

    # -- events ------------------------------------------------------------

    def _decode(self, stream: _Stream, fh: FrameHeader, payload: bytes) -> Event | None:
        raw = _bounded_decompress(stream.dobj, payload, fh.raw_len)
        if len(raw) != fh.raw_len:
            raise ValueError(f"event decompressed to {len(raw)} bytes, header says {fh.raw_len}")
        plain = stream.unpacker.unpack(raw)
        assert self.header is not None
        if self.header.major < FORMAT_MAJOR:
            plain = upgrade(plain, self.header.major)
        return from_plain(plain)

    def _sessions(self) -> Iterator[tuple[_Stream, bool, str]]:
        """Yield (stream, complete, session_id) as each session finishes."""
        if self.header is None:
            return
        open_: dict[bytes, _Stream] = {}
        done: set[bytes] = set()
        with self._open() as f:
            for offset, fh, payload in self._frames(f):
                assert payload is not None
                sid = fh.session.hex()
                stream = open_.get(fh.session)
                if fh.flags & FLAG_START:
                    if stream is not None or fh.session in done or fh.seq != 0:
                        self._corrupt(f"session {sid} starts twice", offset, sid)
                        continue
                    if len(open_) >= MAX_OPEN_SESSIONS:
                        self._corrupt(f"over {MAX_OPEN_SESSIONS} unfinished sessions", offset, sid)
                        continue
                    stream = open_[fh.session] = _Stream(self._dctx, offset)
                elif stream is None:
                    if fh.session not in done:
                        done.add(fh.session)
                        self._corrupt(f"session {sid} has no readable start frame", offset, sid)
                    continue
                if stream.broken:
                    continue
                if fh.seq != stream.next_seq:
                    stream.broken = f"frame {stream.next_seq} of session {sid} is missing"
                    self._corrupt(stream.broken, offset, sid)
                    continue
                stream.next_seq += 1
                try:
                    event = self._decode(stream, fh, payload)
                except UnknownEventKind as exc:
                    self._note("skipped", f"{exc} (written by {self.header.writer})", offset, sid)
                    event = None
                except (ValueError, TapeError, zstandard.ZstdError) as exc:
                    stream.broken = f"event {fh.seq} of session {sid} does not decode: {exc}"
                    self._corrupt(stream.broken, offset, sid)
                    continue
                if event is not None:
                    if (fh.seq == 0) != isinstance(event, SessionStarted):
                        stream.broken = f"session {sid} frame {fh.seq} holds a misplaced event"
                        self._corrupt(stream.broken, offset, sid)
                        continue
                    stream.events.append(event)
                if fh.flags & FLAG_END:
                    del open_[fh.session]
                    done.add(fh.session)
                    complete = bool(stream.events) and isinstance(stream.events[-1], SessionEnded)
                    yield stream, complete, sid
        for session, stream in open_.items():
            yield stream, False, session.hex()

    def sessions(self) -> Iterator[RecordedSession]:
        """Yield each session with all its readable events, as it finishes in the file.

        Sessions with no readable start are left out (a corrupt note says so).
        """
        for stream, complete, sid in self._sessions():
            if not stream.events:
                continue
            problem = stream.broken
            if not complete and not problem:
                problem = "no end event: the writer stopped before the session ended"
            yield RecordedSession(
                session_id=sid, events=tuple(stream.events), complete=complete, problem=problem
            )

    def scan(self) -> list[SessionInfo]:
        """List sessions and their headers, decoding only each session's first frame."""
        if self.header is None:
            return []
        infos: dict[bytes, SessionInfo] = {}
        with self._open() as f:
            for offset, fh, payload in self._frames(f, verify=False):
                info = infos.get(fh.session)
                if info is None:
                    header = None
                    if fh.flags & FLAG_START and payload is not None:
                        header = self._decode_start(fh, payload, offset)
                    info = SessionInfo(
                        session_id=fh.session.hex(),
                        header=header,
                        frames=0,
                        complete=False,
                        offset=offset,
                        size=0,
                    )
                infos[fh.session] = attrs.evolve(
                    info,
                    frames=info.frames + 1,
                    size=info.size + FRAME_HEADER_SIZE + fh.comp_len,
                    complete=bool(fh.flags & FLAG_END),
                )
        return list(infos.values())

    def _decode_start(self, fh: FrameHeader, payload: bytes, offset: int) -> SessionStarted | None:
        try:
            event = self._decode(_Stream(self._dctx, offset), fh, payload)
        except (ValueError, TapeError, zstandard.ZstdError) as exc:
            self._corrupt(f"session start does not decode: {exc}", offset, fh.session.hex())
            return None
        return event if isinstance(event, SessionStarted) else None


def read_sessions(
    path: str | os.PathLike[str],
    *,
    strict: bool = True,
    on_note: Callable[[Note], None] | None = None,
) -> Iterator[RecordedSession]:
    """Shorthand for ``TapeReader(path, ...).sessions()``."""
    return TapeReader(path, strict=strict, on_note=on_note).sessions()
