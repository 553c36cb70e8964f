"""Byte layout of a tape file: the file header and the frame header.

See docs/format.md for the specification.  All integers are little-endian.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import NamedTuple

import attrs

MAGIC = b"\x89EVTAPE\n"
"""First 8 bytes of every tape file."""

FORMAT_MAJOR = 2
"""Readers refuse files with a greater major version."""

FORMAT_MINOR = 1
"""Readers accept greater minor versions, skipping unknown event kinds."""

SHORT_FRAMES_SINCE = 2
"""The first major version whose files may hold short frames."""

SYNC = b"\xf0\x9f\x93\xbc"
"""Start of every full frame (the UTF-8 bytes of the videocassette emoji)."""

SHORT_SYNC = b"\xf0\x9f\x93\xbd"
"""Start of every short frame (the UTF-8 bytes of the film projector emoji)."""

FLAG_START = 0x01
"""The frame opens its session's compressed stream (holds SessionStarted)."""

FLAG_END = 0x02
"""The frame closes its session's compressed stream (holds SessionEnded)."""

MAX_EVENT_BYTES = 256 * 1024 * 1024
"""Largest decompressed event a reader accepts (bounds memory on hostile input)."""

MAX_WINDOW_LOG = 22
"""``MAX_WINDOW`` as a power of 2 (zstd's ``window_log``)."""
MAX_WINDOW = 1 << MAX_WINDOW_LOG
"""zstd window: writers use it, readers refuse streams asking for more."""

_FILE_FIXED = struct.Struct("<8sHHH")  # magic, major, minor, len(writer)
_FRAME = struct.Struct("<4sB8sIII")  # sync, flags, session, seq, raw_len, comp_len
_SHORT = struct.Struct("<4sBHBH")  # sync, flags, raw_len (low 16 bits, high 8), comp_len
_CRC = struct.Struct("<I")
_FRAME_AFTER_SYNC = struct.Struct("<B8sIIII")  # _FRAME's fields after the sync, then the CRC
_SHORT_AFTER_SYNC = struct.Struct("<BHBHI")  # _SHORT's fields after the sync, then the CRC

FRAME_HEADER_SIZE = _FRAME.size + _CRC.size
"""Bytes before a full frame's payload: the fixed fields and the CRC-32."""

SHORT_HEADER_SIZE = _SHORT.size + _CRC.size
"""Bytes before a short frame's payload."""

SHORT_MAX_RAW = (1 << 24) - 1
"""Largest ``raw_len`` a short frame holds (a larger event takes a full frame)."""
SHORT_MAX_COMP = (1 << 16) - 1
"""Largest ``comp_len`` a short frame holds."""


def file_header(writer: str) -> bytes:
    """The bytes that open a tape file written by ``writer`` (e.g. "evaltape 0.1.0")."""
    name = writer.encode()
    head = _FILE_FIXED.pack(MAGIC, FORMAT_MAJOR, FORMAT_MINOR, len(name)) + name
    return head + _CRC.pack(zlib.crc32(head))


@attrs.frozen(kw_only=True)
class FileHeader:
    """What the file header says."""

    major: int
    """Format major version."""
    minor: int
    """Format minor version."""
    writer: str
    """Name and version of the program that created the file."""
    size: int
    """Bytes the header occupies; the first frame follows."""


FILE_FIXED_SIZE = _FILE_FIXED.size
"""Bytes of the file header before the writer name: magic, major, minor, name length."""


def file_header_size(fixed: bytes) -> int:
    """Total header size announced by its first ``FILE_FIXED_SIZE`` bytes."""
    (n,) = struct.unpack_from("<H", fixed, FILE_FIXED_SIZE - 2)
    return FILE_FIXED_SIZE + int(n) + _CRC.size


def parse_file_header(data: bytes) -> FileHeader | None:
    """Parse the file header from the first bytes of a file.

    Returns None when ``data`` is too short to hold it; raises ``ValueError``
    when the bytes are not a tape header.
    """
    if len(data) < _FILE_FIXED.size:
        if not MAGIC.startswith(data[: len(MAGIC)]):
            raise ValueError("not a tape file (bad magic)")
        return None
    magic, major, minor, n = _FILE_FIXED.unpack_from(data)
    if magic != MAGIC:
        raise ValueError("not a tape file (bad magic)")
    end = _FILE_FIXED.size + n
    if len(data) < end + _CRC.size:
        return None
    (crc,) = _CRC.unpack_from(data, end)
    if crc != zlib.crc32(data[:end]):
        raise ValueError("file header fails its CRC-32")
    writer = data[_FILE_FIXED.size : end].decode("utf-8", "replace")
    return FileHeader(major=major, minor=minor, writer=writer, size=end + _CRC.size)


class FrameHeader(NamedTuple):
    """The fixed fields in front of each frame's payload (a named tuple: a reader makes
    one a frame)."""

    flags: int
    """FLAG_START / FLAG_END bits."""
    session: bytes
    """8-byte session id."""
    seq: int
    """Index of the frame within its session, from 0."""
    raw_len: int
    """Length of the decompressed payload (one msgpack event)."""
    comp_len: int
    """Length of the compressed payload that follows the header."""
    crc: int
    """CRC-32 of the header fields after SYNC, then of the payload."""
    head: int = FRAME_HEADER_SIZE
    """Bytes of this header: ``FRAME_HEADER_SIZE``, or ``SHORT_HEADER_SIZE`` for a short frame."""


def frame(flags: int, session: bytes, seq: int, raw_len: int, payload: bytes) -> bytes:
    """Build one frame: header, CRC-32, payload."""
    head = _FRAME.pack(SYNC, flags, session, seq, raw_len, len(payload))
    crc = zlib.crc32(payload, zlib.crc32(head[len(SYNC) :]))
    return head + _CRC.pack(crc) + payload


def short_frame(flags: int, raw_len: int, payload: bytes) -> bytes | None:
    """The short frame of an event that follows its session's previous frame directly in
    the file (it names neither session nor seq); None if its lengths need a full frame."""
    if raw_len > SHORT_MAX_RAW or len(payload) > SHORT_MAX_COMP:
        return None
    head = _SHORT.pack(SHORT_SYNC, flags, raw_len & 0xFFFF, raw_len >> 16, len(payload))
    crc = zlib.crc32(payload, zlib.crc32(head[len(SHORT_SYNC) :]))
    return head + _CRC.pack(crc) + payload


def frame_as(
    short: bool, flags: int, session: bytes, seq: int, raw_len: int, payload: bytes
) -> bytes:
    """An event's frame: a short one if ``short`` (it directly follows its session's
    previous frame, in a file that may hold short frames) and its lengths fit, else a
    full one."""
    data = short_frame(flags, raw_len, payload) if short else None
    return frame(flags, session, seq, raw_len, payload) if data is None else data


def parse_short_header(data: bytes, before: FrameHeader | None) -> FrameHeader:
    """Parse ``SHORT_HEADER_SIZE`` bytes of a short frame that directly follows the good
    frame ``before`` (its session and the next seq; none known if None); ``ValueError``
    on a bad sync."""
    sync, flags, low, high, comp_len = _SHORT.unpack_from(data)
    if sync != SHORT_SYNC:
        raise ValueError("no short frame starts here")
    (crc,) = _CRC.unpack_from(data, _SHORT.size)
    return FrameHeader(
        flags=flags,
        session=b"" if before is None else before.session,
        seq=0 if before is None else before.seq + 1,
        raw_len=low | high << 16,
        comp_len=comp_len,
        crc=crc,
        head=SHORT_HEADER_SIZE,
    )


def short_crc(header_bytes: bytes, payload: bytes | memoryview) -> int:
    """The CRC-32 a short frame with these header bytes and payload must carry."""
    return zlib.crc32(payload, zlib.crc32(header_bytes[len(SHORT_SYNC) : _SHORT.size]))


def short_with_comp_len(header_bytes: bytes, comp_len: int) -> bytes:
    """Short ``header_bytes`` with the comp_len field replaced (to test a damaged length)."""
    fields = list(_SHORT.unpack_from(header_bytes))
    fields[-1] = comp_len
    return _SHORT.pack(*fields) + header_bytes[_SHORT.size : SHORT_HEADER_SIZE]


def parse_frame_header(data: bytes) -> FrameHeader:
    """Parse ``FRAME_HEADER_SIZE`` bytes; raises ``ValueError`` on a bad sync."""
    sync, flags, session, seq, raw_len, comp_len = _FRAME.unpack_from(data)
    if sync != SYNC:
        raise ValueError("no frame starts here")
    (crc,) = _CRC.unpack_from(data, _FRAME.size)
    return FrameHeader(
        flags=flags, session=session, seq=seq, raw_len=raw_len, comp_len=comp_len, crc=crc
    )


def frame_crc(header_bytes: bytes, payload: bytes | memoryview) -> int:
    """The CRC-32 a frame with these header bytes and payload must carry."""
    return zlib.crc32(payload, zlib.crc32(header_bytes[len(SYNC) : _FRAME.size]))


_new_header = tuple.__new__  # FrameHeader(...) without its keyword-taking __new__


def good_frame(
    data: bytes, at: int, room: int, before: FrameHeader | None
) -> tuple[FrameHeader, bytes] | int:
    """The frame at ``data[at:]``, as ``(header, payload)``, if it passes every check a
    reader makes: its sync (a short frame's only after ``before``, the good frame it
    directly follows, else None), its lengths within ``MAX_EVENT_BYTES`` and ``room`` (the
    bytes the file has from ``at`` on), its CRC-32.  Otherwise, if the frame (or its
    header) may run past the end of ``data``, the bytes from ``at`` it needs; else 0: no
    good frame starts there.

    One precompiled unpack and two CRC calls a frame: what reading a sound tape costs."""
    end = len(data)
    if at + FRAME_HEADER_SIZE > end and end - at < room:
        return min(FRAME_HEADER_SIZE, room)
    if before is not None and data.startswith(SHORT_SYNC, at):
        if at + SHORT_HEADER_SIZE > end:
            return 0
        flags, low, high, comp_len, crc = _SHORT_AFTER_SYNC.unpack_from(data, at + 4)
        start = at + SHORT_HEADER_SIZE
        stop: int = start + comp_len
        if stop - at > room:
            return 0
        if stop > end:
            return stop - at
        payload = data[start:stop]
        if zlib.crc32(payload, zlib.crc32(data[at + 4 : at + _SHORT.size])) != crc:
            return 0
        fields = (flags, before.session, before.seq + 1, low | high << 16, comp_len, crc)
        return _new_header(FrameHeader, (*fields, SHORT_HEADER_SIZE)), payload
    if at + FRAME_HEADER_SIZE > end or not data.startswith(SYNC, at):
        return 0
    fields = _FRAME_AFTER_SYNC.unpack_from(data, at + 4)
    raw_len, comp_len, crc = fields[3:]
    start = at + FRAME_HEADER_SIZE
    stop = start + comp_len
    if raw_len > MAX_EVENT_BYTES or comp_len > MAX_EVENT_BYTES or stop - at > room:
        return 0
    if stop > end:
        return stop - at
    payload = data[start:stop]
    if zlib.crc32(payload, zlib.crc32(data[at + 4 : at + _FRAME.size])) != crc:
        return 0
    return _new_header(FrameHeader, (*fields, FRAME_HEADER_SIZE)), payload


def walk(data: bytes) -> Iterator[tuple[int, int, FrameHeader]]:
    """``(offset, header size, header)`` of each frame of well-formed ``data`` (whole
    frames, as a writer builds them, from a full one on); ``ValueError`` if it is not."""
    pos = 0
    before: FrameHeader | None = None
    while pos < len(data):
        if data.startswith(SHORT_SYNC, pos) and before is not None:
            size, fh = SHORT_HEADER_SIZE, parse_short_header(data[pos:], before)
        else:
            size, fh = FRAME_HEADER_SIZE, parse_frame_header(data[pos : pos + FRAME_HEADER_SIZE])
        yield pos, size, fh
        pos += size + fh.comp_len
        before = fh


def full_frames(data: bytes) -> bytes:
    """Well-formed ``data`` (``walk``) with every short frame written as a full one: the
    frames a file of major version 1 may take."""
    if SHORT_SYNC not in data:
        return data
    out = bytearray()
    for pos, size, fh in walk(data):
        payload = data[pos + size : pos + size + fh.comp_len]
        out += frame(fh.flags, fh.session, fh.seq, fh.raw_len, payload)
    return bytes(out)


def with_comp_len(header_bytes: bytes, comp_len: int) -> bytes:
    """``header_bytes`` with the comp_len field replaced (to test a damaged length)."""
    fields = list(_FRAME.unpack_from(header_bytes))
    fields[-1] = comp_len
    return _FRAME.pack(*fields) + header_bytes[_FRAME.size : FRAME_HEADER_SIZE]


# -- zstd block structure ----------------------------------------------------
#
# Each session is one zstd frame (RFC 8878) whose blocks are split between tape
# frames at block boundaries.  Walking the 3-byte block headers tells the
# reader, before it decompresses anything, at most how many bytes each block
# can produce, so a hostile payload cannot make it allocate more than an
# event's declared size plus one budget.

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
"""First bytes of a zstd frame (0xFD2FB528, little-endian)."""

BLOCK_MAX = 128 * 1024
"""Most bytes one zstd block decompresses to."""

_DICT_ID_SIZE = (0, 1, 2, 4)
_CONTENT_SIZE_SIZE = (0, 2, 4, 8)


class ZstdBlocks:
    """Where a session's zstd frame stands, payload after payload."""

    def __init__(self) -> None:
        self._started = False
        self._finished = False
        self._checksum = 0

    @property
    def finished(self) -> bool:
        """True once the frame's last block (and checksum) went by."""
        return self._finished

    def cuts(self, payload: bytes, budget: int) -> list[int] | None:
        """Offsets that split ``payload`` into pieces decompressing to at most
        ``budget`` bytes each (a piece holds at least one block); None when
        the whole payload is one such piece, as it nearly always is.

        Raises ``ValueError`` when the payload does not consist of whole zstd
        blocks continuing the session's frame.
        """
        n = len(payload)
        pos = 0 if self._started else self._frame_header(payload)
        cuts: list[int] | None = None
        pending = 0
        while pos < n:
            if self._finished:
                raise ValueError("data after the end of the session's zstd frame")
            if pos + 3 > n:
                raise ValueError("payload ends inside a zstd block header")
            head = payload[pos] | payload[pos + 1] << 8 | payload[pos + 2] << 16
            kind = (head >> 1) & 3
            size = head >> 3
            if kind == 3 or size > BLOCK_MAX:
                raise ValueError("not a valid zstd block header")
            out = BLOCK_MAX if kind == 2 else size
            if pending and pending + out > budget:
                if cuts is None:
                    cuts = []
                cuts.append(pos)
                pending = 0
            pending += out
            pos += 4 if kind == 1 else 3 + size
            if head & 1:
                self._finished = True
                pos += self._checksum
        if pos > n:
            raise ValueError("payload ends inside a zstd block")
        if cuts is not None:
            cuts.append(n)
        return cuts

    def _frame_header(self, payload: bytes) -> int:
        self._started = True
        if len(payload) < 5 or payload[:4] != ZSTD_MAGIC:
            raise ValueError("session stream does not start with a zstd frame")
        descriptor = payload[4]
        if descriptor & 0x08:
            raise ValueError("zstd frame header sets a reserved bit")
        single_segment = (descriptor >> 5) & 1
        content_size = _CONTENT_SIZE_SIZE[descriptor >> 6] or single_segment
        self._checksum = 4 if descriptor & 0x04 else 0
        size = 5 + (1 - single_segment) + _DICT_ID_SIZE[descriptor & 3] + content_size
        if len(payload) < size:
            raise ValueError("payload ends inside the zstd frame header")
        return size
