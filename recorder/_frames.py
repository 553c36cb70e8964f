"""Byte layout of a tape file: the file header and the frame header.

See docs/format.md for the specification.  All integers are little-endian.
"""

from __future__ import annotations

import struct
import zlib

import attrs

MAGIC = b"\x89EVTAPE\n"
"""First 8 bytes of every tape file."""

FORMAT_MAJOR = 1
"""Readers refuse files with a greater major version."""

FORMAT_MINOR = 0
"""Readers accept greater minor versions, skipping unknown event kinds."""

SYNC = b"\xf0\x9f\x93\xbc"
"""Start of every frame (the UTF-8 bytes of the videocassette emoji)."""

FLAG_START = 0x01
"""The frame opens its session's compressed stream (holds SessionStarted)."""

FLAG_END = 0x02
"""The frame closes its session's compressed stream (holds SessionEnded)."""

MAX_EVENT_BYTES = 256 * 1024 * 1024
"""Largest decompressed event a reader accepts (bounds memory on hostile input)."""

MAX_WINDOW = 1 << 22
"""zstd window: writers use it, readers refuse streams asking for more."""

_FILE_FIXED = struct.Struct("<8sHHH")  # magic, major, minor, len(writer)
_FRAME = struct.Struct("<4sB8sIII")  # sync, flags, session, seq, raw_len, comp_len
_CRC = struct.Struct("<I")

FRAME_HEADER_SIZE = _FRAME.size + _CRC.size
"""Bytes before a frame's payload: the fixed fields and the CRC-32."""


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


@attrs.frozen(kw_only=True)
class FrameHeader:
    """The fixed fields in front of each frame's payload."""

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


def frame(flags: int, session: bytes, seq: int, raw_len: int, payload: bytes) -> bytes:
    """Build one frame: header, CRC-32, payload."""
    head = _FRAME.pack(SYNC, flags, session, seq, raw_len, len(payload))
    crc = zlib.crc32(payload, zlib.crc32(head[len(SYNC) :]))
    return head + _CRC.pack(crc) + payload


def parse_frame_header(data: bytes) -> FrameHeader:
    """Parse ``FRAME_HEADER_SIZE`` bytes; raises ``ValueError`` on a bad sync."""
    sync, flags, session, seq, raw_len, comp_len = _FRAME.unpack_from(data)
    if sync != SYNC:
        raise ValueError("no frame starts here")
    (crc,) = _CRC.unpack_from(data, _FRAME.size)
    return FrameHeader(
        flags=flags, session=session, seq=seq, raw_len=raw_len, comp_len=comp_len, crc=crc
    )


def frame_crc(header_bytes: bytes, payload: bytes) -> int:
    """The CRC-32 a frame with these header bytes and payload must carry."""
    return zlib.crc32(payload, zlib.crc32(header_bytes[len(SYNC) : _FRAME.size]))
