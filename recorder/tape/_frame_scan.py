"""Finding a tape's frames: the file header, each frame's checks, and resynchronising.

A region that fails its checks is noted (``NoteLog``): a frame cut short by
its writer stopping mid-write is ``truncated``, any other damage ``corrupt``,
and reading resumes at the next frame whose CRC checks.
"""

from __future__ import annotations

import io
import os
import stat
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from .._errors import NewerFormat, NotATape, TapeError
from ._frames import (
    FILE_FIXED_SIZE,
    FORMAT_MAJOR,
    FORMAT_MINOR,
    FRAME_HEADER_SIZE,
    MAGIC,
    MAX_EVENT_BYTES,
    SHORT_FRAMES_SINCE,
    SHORT_HEADER_SIZE,
    SHORT_MAX_COMP,
    SHORT_SYNC,
    SYNC,
    FileHeader,
    FrameHeader,
    file_header_size,
    frame_crc,
    good_frame,
    parse_file_header,
    parse_frame_header,
    parse_short_header,
    short_crc,
    short_with_comp_len,
    with_comp_len,
)
from ._notes import NoteLog

_READ = 1 << 16

Suspects = dict[tuple[bytes, int], int]
"""(session, seq) named by refused frame headers -> the frame's offset."""


SCAN_BLOCK = 1 << 20
"""Bytes of a tape ``frames`` reads at a time and checks frame after frame in memory
(``good_frame``); a frame that is not good, or larger than a block, is checked again on
its own.  A block is read only from a frame that runs past the end of the one before, so
reading stays linear in the file's size."""

READ_BUFFER = 256 * 1024
"""Bytes a reader of frames asks the file for at a time: its frames are read one after
the other, a few KB each, and the default buffer (8 KB) took a system call every few."""


def open_tape(path: str, buffering: int = -1) -> BinaryIO:
    """The tape file, opened for reading (``buffering`` as ``open`` takes it); ``TapeError``
    if it cannot be."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or a device would block or never end
            raise TapeError(f"{path}: not a regular file; a tape is a file")
        return open(path, "rb", buffering=buffering)
    except OSError as exc:
        raise TapeError(f"{path}: cannot open: {exc.strerror}") from exc


def open_source(path: str, data: bytes | None, buffering: int = -1) -> BinaryIO:
    """The tape to read: ``data`` when given (a tape sent as its bytes, named ``path`` in
    notes), else the file at ``path`` (``open_tape``)."""
    return io.BytesIO(data) if data is not None else open_tape(path, buffering)


def size_of(f: BinaryIO) -> int:
    """Bytes in the tape ``f`` reads (a file, or a tape's bytes)."""
    if isinstance(f, io.BytesIO):  # its buffer would copy the bytes: ask where the end is
        at = f.tell()
        size = f.seek(0, io.SEEK_END)
        f.seek(at)
        return size
    return os.fstat(f.fileno()).st_size


def read_file_header(log: NoteLog, data: bytes | None = None) -> FileHeader | None:
    """The file header of ``log.path`` (or of the tape ``data`` holds); None for an empty
    file or one cut inside its header.

    Raises ``NotATape`` for another kind of file and ``NewerFormat`` for a
    newer major format; a damaged header is noted (``_salvage``).
    """
    with open_source(log.path, data) as f:
        try:
            head = f.read(FILE_FIXED_SIZE)
        except OSError as exc:  # /proc/self/mem and the like open, then refuse to be read
            raise TapeError(f"{log.path}: cannot read: {exc.strerror}") from exc
        if not head:
            return None
        # A magic with a byte or two wrong is a damaged tape, not another file.
        damaged = sum(a != b for a, b in zip(head, MAGIC, strict=False))
        if damaged > (2 if len(head) >= len(MAGIC) else 0):
            raise NotATape(f"{log.path}: not an evaltape tape (bad magic)")
        if damaged:
            return _salvage(log, f, "file header is damaged (bad magic)", data)
        if len(head) < FILE_FIXED_SIZE:
            log.note("truncated", "file ends inside its header; it holds no events", 0)
            return None
        head += f.read(file_header_size(head) - FILE_FIXED_SIZE)
        try:
            header = parse_file_header(head)
        except ValueError as exc:
            return _salvage(log, f, str(exc), data)
        if header is None:
            if resync(f, len(MAGIC)) is not None:
                return _salvage(log, f, "file header claims more bytes than it has", data)
            log.note("truncated", "file ends inside its header; it holds no events", 0)
            return None
    if header.major > FORMAT_MAJOR:
        raise NewerFormat(
            f"{log.path}: written by {header.writer} (tape format {header.major}."
            f"{header.minor}); this evaltape reads format {FORMAT_MAJOR}.x; upgrade evaltape"
        )
    if header.major < 1:
        why = f"file header names format {header.major}, which is none"
        return _salvage(log, None, why, data)
    return header


def _salvage(
    log: NoteLog, f: BinaryIO | None, problem: str, data: bytes | None = None
) -> FileHeader:
    """A damaged file header: corrupt in strict mode, else read the frames
    after it as if it named this version's format."""
    log.corrupt(problem, 0)
    if f is None:
        f = open_source(log.path, data)
    with f:
        first = resync(f, len(MAGIC))
        size = size_of(f)
    return FileHeader(
        major=FORMAT_MAJOR,
        minor=FORMAT_MINOR,
        writer="an unknown writer (damaged file header)",
        size=size if first is None else first,
    )


def crc_checks(f: BinaryIO, at: int, head: bytes, fh: FrameHeader) -> bool:
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


class ScanBudget:
    """Bytes a reader may read while looking for the next frame after damage.

    Every byte after ``SYNC`` could start a frame whose CRC covers the many
    bytes its header claims, so fake headers could make resynchronising read
    the file over and over.  The budget (a few times the file size) keeps it
    linear: once spent, the rest of the file is reported skipped.
    """

    def __init__(self, size: int) -> None:
        self.left = 4 * size + (16 << 20)
        self.spent = False

    def take(self, n: int) -> bool:
        """Spend ``n`` bytes; False (and ``spent``) if they are not left."""
        if n > self.left:
            self.spent = True
            return False
        self.left -= n
        return True


def resync(f: BinaryIO, start: int, budget: ScanBudget | None = None) -> int | None:
    """Offset of the next frame at or after ``start`` whose CRC checks.

    Reads each block once and each candidate's claimed payload once, all
    charged to ``budget`` (a fresh one for this file if None); None when no
    frame follows or the budget is spent.
    """
    size = size_of(f)
    if budget is None:
        budget = ScanBudget(size)
    pos = start
    while True:
        f.seek(pos)
        block = f.read(_READ)
        if len(block) < len(SYNC) or not budget.take(len(block)):
            return None
        i = block.find(SYNC)
        while i >= 0:
            candidate = pos + i
            head = block[i : i + FRAME_HEADER_SIZE]
            if len(head) < FRAME_HEADER_SIZE:
                f.seek(candidate)
                head = f.read(FRAME_HEADER_SIZE)
            if len(head) == FRAME_HEADER_SIZE:
                fh = parse_frame_header(head)
                if (
                    fh.comp_len <= MAX_EVENT_BYTES
                    and fh.raw_len <= MAX_EVENT_BYTES
                    and candidate + FRAME_HEADER_SIZE + fh.comp_len <= size
                ):
                    if not budget.take(fh.comp_len):
                        return None
                    if crc_checks(f, candidate, head, fh):
                        return candidate
            i = block.find(SYNC, i + 1)
        if len(block) < _READ:
            return None
        pos += len(block) - len(SYNC) + 1


def torn_session(
    f: BinaryIO,
    offset: int,
    head: bytes,
    end: int,
    before: FrameHeader | None,
    budget: ScanBudget,
) -> str | None:
    """If the bad frame at ``offset`` is the start of a frame whose writer
    stopped mid-write (the region up to ``end``, the next good frame or the
    end of the file, is shorter than the frame claims), its session id.
    ``before`` is the good frame that ends at ``offset`` (a short frame's
    session) in a file that may hold short frames, else None."""
    n = end - offset
    # (The two syncs share their first three bytes: a region shorter than a sync names
    # no session.)
    short = before is not None and n >= len(SHORT_SYNC) and head.startswith(SHORT_SYNC)
    size = SHORT_HEADER_SIZE if short else FRAME_HEADER_SIZE
    if before is not None and not short and n >= SHORT_HEADER_SIZE and head.startswith(SYNC):
        # A short frame whose sync was damaged into the full one's is corrupt.
        f.seek(offset + len(SYNC))
        if _starts_short(SHORT_SYNC + f.read(min(n, SHORT_HEADER_SIZE + SHORT_MAX_COMP) - 4)):
            return None
    if n < size:
        if short and before is not None:
            return before.session.hex()
        return "" if head[: min(len(SYNC), n)] == SYNC[:n] else None
    try:
        fh = parse_short_header(head, before) if short and before else parse_frame_header(head)
    except ValueError:
        return None
    if (
        fh.comp_len > MAX_EVENT_BYTES
        or fh.raw_len > MAX_EVENT_BYTES
        or offset + size + fh.comp_len <= end
    ):
        return None
    # A damaged length field, not a torn write, if the frame checks with
    # the length the region actually has.
    fixed = (short_with_comp_len if short else with_comp_len)(head, n - size)
    f.seek(offset + size)
    rest = f.read(n - size)
    crc = short_crc if short else frame_crc
    if crc(fixed, rest) == fh.crc:
        return None
    # A writer stopped mid-write leaves the start of one frame, and the next writer's
    # frame is a full one: a short frame that checks inside the region means the bad
    # frame's length was damaged, and the region holds the frames that followed it.
    if before is not None and _holds_short_frame(rest, budget):
        return None
    return fh.session.hex()


def _starts_short(data: bytes | memoryview, budget: ScanBudget | None = None) -> bool:
    """Whether ``data`` starts with a whole short frame that passes its CRC (its payload
    charged to ``budget``, if given)."""
    if len(data) < SHORT_HEADER_SIZE:
        return False
    head = bytes(data[:SHORT_HEADER_SIZE])
    fh = parse_short_header(head, None)
    payload = data[SHORT_HEADER_SIZE : SHORT_HEADER_SIZE + fh.comp_len]
    if len(payload) != fh.comp_len or (budget is not None and not budget.take(fh.comp_len)):
        return False
    return short_crc(head, payload) == fh.crc


def _holds_short_frame(region: bytes, budget: ScanBudget) -> bool:
    """Whether a short frame that passes its CRC lies wholly in ``region`` (each
    candidate's payload charged to ``budget``)."""
    view = memoryview(region)
    at = region.find(SHORT_SYNC)
    while at >= 0:
        if _starts_short(view[at:], budget):
            return True
        at = region.find(SHORT_SYNC, at + 1)
    return False


def _check(
    f: BinaryIO, offset: int, size: int, head: bytes, before: FrameHeader | None, short: bool
) -> tuple[FrameHeader | None, int, bytes, str]:
    """``(header, header size, payload, "")`` of a good frame at ``offset`` (whose first
    bytes ``head`` were read), else ``(header or None, 0, b"", what is wrong)``."""
    if short and before is not None and head.startswith(SHORT_SYNC):
        if len(head) < SHORT_HEADER_SIZE:
            return None, 0, b"", "file ends inside a frame header"
        fh = parse_short_header(head, before)
        hsize, crc = SHORT_HEADER_SIZE, short_crc
    elif len(head) < FRAME_HEADER_SIZE:
        return None, 0, b"", "file ends inside a frame header"
    else:
        try:
            fh = parse_frame_header(head)
        except ValueError:
            return None, 0, b"", "no frame starts here (bad sync bytes)"
        hsize, crc = FRAME_HEADER_SIZE, frame_crc
    if fh.comp_len > MAX_EVENT_BYTES or fh.raw_len > MAX_EVENT_BYTES:
        limit = f"over the {MAX_EVENT_BYTES}-byte limit"
        return fh, 0, b"", f"frame claims {max(fh.comp_len, fh.raw_len)} bytes, {limit}"
    if offset + hsize + fh.comp_len > size:
        return fh, 0, b"", "frame runs past the end of the file"
    ahead = len(head) - hsize  # payload bytes read with the header (a short one's)
    if not ahead:
        payload = f.read(fh.comp_len)
    elif fh.comp_len >= ahead:
        payload = head[hsize:] + f.read(fh.comp_len - ahead)
    else:
        payload = head[hsize : hsize + fh.comp_len]
        f.seek(offset + hsize + fh.comp_len)
    if crc(head, payload) != fh.crc:
        return fh, 0, b"", "frame fails its CRC-32"
    return fh, hsize, payload, ""


def frames(
    f: BinaryIO, header: FileHeader, log: NoteLog, suspects: Suspects
) -> Iterator[tuple[int, FrameHeader, bytes]]:
    """Yield (offset, header, payload) for each frame after ``header`` that passes its checks.

    A short frame (format 2) takes its session and seq from the good frame right
    before it.  Bad regions are noted; the (session, seq) a refused frame's header
    names goes into ``suspects`` so that the gap it leaves in its session is not
    reported a second time.
    """
    size = size_of(f)
    budget = ScanBudget(size)
    short = header.major >= SHORT_FRAMES_SINCE
    offset = header.size
    before: FrameHeader | None = None  # the good frame that ends at ``offset``
    block, start = b"", offset  # bytes of the file from ``start`` on
    while offset < size:
        found = good_frame(block, offset - start, size - offset, before if short else None)
        if type(found) is int and 0 < found <= SCAN_BLOCK:  # it runs past the block
            f.seek(offset)
            block, start = f.read(min(SCAN_BLOCK, size - offset)), offset
            found = good_frame(block, 0, size - offset, before if short else None)
        if type(found) is tuple:
            good, payload = found
            yield offset, good, payload
            offset += good.head + good.comp_len
            before = good
            continue
        # Not a good frame (or one larger than a block): check it again, piece by piece,
        # to say what is wrong and where reading resumes.
        f.seek(offset)
        head = f.read(FRAME_HEADER_SIZE)
        fh, hsize, payload, bad = _check(f, offset, size, head, before, short)
        if not bad:
            assert fh is not None
            yield offset, fh, payload
            offset += hsize + fh.comp_len
            before = fh
            continue
        if short and before is None and head.startswith(SHORT_SYNC):
            bad = "a short frame follows no readable frame"
        # A short frame's session is known only from the frame before it, so reading
        # resumes at the next good full frame.
        nxt = resync(f, offset + 1, budget)
        if budget.spent:
            log.corrupt(
                f"{bad}; gave up looking for the next frame (too many false frame "
                f"headers); the remaining {size - offset} bytes are skipped",
                offset,
            )
            return
        end = size if nxt is None else nxt
        torn = torn_session(f, offset, head, end, before if short else None, budget)
        if torn is not None:
            what = "file ends" if nxt is None else "a frame appended later starts"
            log.note(
                "truncated",
                f"{what} inside a frame; {end - offset} bytes of an unfinished event "
                "dropped (its writer stopped mid-write)",
                offset,
                torn,
            )
        else:
            if fh is not None:
                suspects[fh.session, fh.seq] = offset
            log.corrupt(f"{bad}; {end - offset} bytes skipped", offset)
        if nxt is None:
            return
        offset = nxt
        before = None
