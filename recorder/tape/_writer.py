"""Appending sessions to tape files.

Each session owns a zstd stream; every event is compressed, flushed as one
frame and written with a single ``write`` on an ``O_APPEND`` descriptor while
holding an exclusive ``flock`` on the file.  Sessions of several threads or
processes therefore interleave whole frames and never corrupt each other.  A
frame that lands right after its session's previous one is a short frame
(no session id or seq); a writer knows that under the lock, from where the
file ends.  A crash loses at most the frame being written; the session's end
is fsynced.  See docs/format.md.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Protocol

import zstandard

from .._errors import CorruptTape, NewerFormat, NotATape, TapeError
from .._events import Event, Exchange, SessionEnded, SessionStarted, Status
from .._version import WRITER
from . import _table_budget
from ._codec import to_plain
from ._frames import (
    FILE_FIXED_SIZE,
    FLAG_END,
    FLAG_START,
    FORMAT_MAJOR,
    FORMAT_MINOR,
    MAX_WINDOW_LOG,
    SHORT_FRAMES_SINCE,
    SYNC,
    file_header,
    file_header_size,
    frame_as,
    parse_file_header,
)
from ._pack import Packer

DEFAULT_LEVEL = 9
"""zstd level of a session compressed in one go when it ends and not kept for a
release (a replay attempt's); a session written as it goes starts from it
(``AS_IT_GOES``)."""

AS_IT_GOES = {"search_log": 6, "min_match": 4}
"""How a writer compresses a session written as it goes: level 9 (lazy matching),
comparing 64 candidates a position instead of 16 and taking matches from 4 bytes
instead of 5.  Flushed after every event, a 500-turn coding-agent session comes out
about 2% smaller than at level 9, for about 1.5 times level 9's compression time (a
few percent of recording's cost), which grows with the turns about as level 9's does,
in the same tables.  zstd's optimal parser (btultra) would make it about 1.3% smaller
again, but costs about 8 times level 9 a turn and, with its tables out of the cache,
grows faster than the turns (evals/perf/bench_size_sdk.py, bench_sdk_transport.py;
docs/performance.md, What is left)."""


class Appends(Protocol):
    """What the recording transport needs from a session writer (``SessionWriter`` fits)."""

    def append(self, event: Exchange) -> None:
        """Record one event; must be safe to call from several threads."""

    def now(self) -> float:
        """Seconds since the session started."""


def stream_params(level: int | None, table_log: int) -> zstandard.ZstdCompressionParameters:
    """zstd's parameters for a session written as it goes, with the format's largest
    window: ``level`` (``None``: level 9 with ``AS_IT_GOES``) with match-finder tables
    capped at ``table_log`` (``_table_budget.capped``)."""
    further = AS_IT_GOES if level is None else {}
    level = DEFAULT_LEVEL if level is None else level
    usual = zstandard.ZstdCompressionParameters.from_level(level, window_log=MAX_WINDOW_LOG)
    return zstandard.ZstdCompressionParameters.from_level(
        level, window_log=MAX_WINDOW_LOG, **_table_budget.capped(usual, table_log), **further
    )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _check_file(fd: int, path: str) -> tuple[bytes, bool]:
    """What must precede the first frame this writer appends (the file header if the
    file holds none yet, else nothing), and whether the file may hold short frames
    (not a tape of major version 1, whose readers know only full ones).  Called under
    the lock.

    Refuses files that are not tapes, or of a newer major version.  A file holding
    only the start of a header (its first writer died mid-write) holds no event and
    is emptied.
    """
    size = os.fstat(fd).st_size
    if size == 0:
        return file_header(WRITER), True
    head = os.pread(fd, FILE_FIXED_SIZE, 0)
    if len(head) == FILE_FIXED_SIZE:
        head += os.pread(fd, file_header_size(head) - FILE_FIXED_SIZE, FILE_FIXED_SIZE)
    try:
        header = parse_file_header(head)
    except ValueError as exc:
        if str(exc).startswith("not a tape"):
            raise NotATape(f"{path}: not an evaltape tape (bad magic); not appending") from exc
        raise CorruptTape(f"{exc}; not appending", path=path, offset=0) from exc
    if header is None:
        if SYNC in os.pread(fd, 1 << 16, 0):
            raise CorruptTape("file header is damaged; not appending", path=path, offset=0)
        os.ftruncate(fd, 0)
        return file_header(WRITER), True
    if header.major > FORMAT_MAJOR:
        raise NewerFormat(
            f"{path}: written by {header.writer} (tape format {header.major}.{header.minor}); "
            f"this evaltape writes format {FORMAT_MAJOR}.{FORMAT_MINOR}; upgrade evaltape "
            "or record into a new file"
        )
    if header.major < 1:
        raise CorruptTape(
            f"file header names format {header.major}, which is none; not appending",
            path=path,
            offset=0,
        )
    return b"", header.major >= SHORT_FRAMES_SINCE


class SessionWriter:
    """Appends the events of one session to a tape file.

    Use ``open_session``.  Thread-safe: events are framed in call order.
    Closing without ``end()`` records a SessionEnded (completed, or failed
    with the exception that left the ``with`` block).  An event msgpack
    cannot hold is refused with ``TapeError`` and the session goes on; a
    failed write (disk full) ends the session's usefulness: later calls raise.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: SessionStarted,
        *,
        clock: Callable[[], float],
        level: int | None = None,
    ) -> None:
        try:
            self._session = bytes.fromhex(header.session_id)
        except ValueError:
            self._session = b""
        if len(self._session) != 8:
            raise TapeError(f"session_id must be 16 hex digits, got {header.session_id!r}")
        self.path = os.fspath(path)
        self.header = header
        self._clock = clock
        budget = _table_budget.TABLES
        self._table_log = budget.take()
        # Given back when the session ends, or if the writer is dropped unended.
        self._give_back = weakref.finalize(self, budget.give, self._table_log)
        params = stream_params(level, self._table_log)
        self._zstd: zstandard.ZstdCompressionObj | None = zstandard.ZstdCompressor(
            compression_params=params
        ).compressobj()
        self._packer = Packer()
        self._lock = threading.Lock()
        self._seq = 0
        self._short = False  # the file may hold short frames
        self._end = -1  # where this writer's last frame ends in the file
        self._ended = False
        self._failed = ""
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            self._release()
            raise TapeError(f"{self.path}: cannot open for writing: {exc.strerror}") from exc
        try:
            self._write(header, FLAG_START)
        except BaseException:
            os.close(self._fd)
            self._ended = True
            self._release()
            raise

    def _release(self) -> None:
        """Free the zstd stream and give its tables' share back (once the session is over)."""
        self._zstd = None
        self._give_back()

    def now(self) -> float:
        """Seconds since the session started, by the session's clock."""
        return self._clock()

    def _write(self, event: Event, flags: int) -> None:
        if self._failed:
            raise TapeError(f"{self.path}: session {self.header.session_id}: {self._failed}")
        try:
            raw = self._packer.pack(to_plain(event), last=bool(flags & FLAG_END))
        except (TypeError, ValueError, OverflowError) as exc:
            raise TapeError(
                f"{self.path}: cannot record {type(event).__name__}: {type(exc).__name__}: {exc}"
            ) from exc
        stream = self._zstd
        assert stream is not None, "a released writer is never written to"
        payload = stream.compress(raw)
        if flags & FLAG_END:
            payload += stream.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)
        else:
            payload += stream.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        # From here the compressed stream counts this frame as written: if
        # the write fails the session cannot go on.
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                head = b""
                if self._seq == 0:
                    head, self._short = _check_file(self._fd, self.path)
                at = os.lseek(self._fd, 0, os.SEEK_END) + len(head)
                # Short if the file ends where this writer's last frame did.
                follows = self._seq > 0 and self._short and at == self._end
                data = frame_as(follows, flags, self._session, self._seq, len(raw), payload)
                _write_all(self._fd, head + data)
                self._end = at + len(data)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        except OSError as exc:
            self._failed = f"an earlier write failed: {exc.strerror}"
            raise TapeError(f"{self.path}: cannot write: {exc.strerror}") from exc
        except TapeError as exc:
            self._failed = str(exc)
            raise
        self._seq += 1

    def append(self, event: Event) -> None:
        """Record one event (handed to the OS, not yet fsynced, when this returns)."""
        if isinstance(event, SessionStarted | SessionEnded):
            raise TapeError("session start and end are written by open_session / end()")
        with self._lock:
            if self._ended:
                raise TapeError(f"session {self.header.session_id} has already ended")
            self._write(event, 0)

    def end(self, status: Status = Status.COMPLETED, reason: str = "") -> None:
        """Record the session's end, fsync and close the file."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
            try:
                if not self._failed:
                    self._write(
                        SessionEnded(at=self._clock(), status=status, reason=reason), FLAG_END
                    )
                    os.fsync(self._fd)
            except OSError as exc:
                raise TapeError(f"{self.path}: cannot fsync: {exc.strerror}") from exc
            finally:
                os.close(self._fd)
                self._release()

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.end()
        elif isinstance(exc, KeyboardInterrupt):
            self.end(Status.INTERRUPTED, "interrupted")
        else:
            self.end(Status.FAILED, f"{type(exc).__name__}: {exc}")


def monotonic_clock() -> Callable[[], float]:
    """A clock reading seconds since the moment this function was called."""
    start = time.monotonic()
    return lambda: time.monotonic() - start


def open_session(
    path: str | os.PathLike[str],
    header: SessionStarted,
    *,
    clock: Callable[[], float] | None = None,
    level: int | None = None,
) -> SessionWriter:
    """Start a session in the tape at ``path`` (created if missing).

    ``clock`` returns seconds since the session started; by default a
    monotonic clock started now.  ``level`` is a zstd level; by default the
    writer compresses as ``stream_params`` says for ``None``.
    """
    return SessionWriter(path, header, clock=clock or monotonic_clock(), level=level)


def new_session_id() -> str:
    """A random 16-hex-digit session id."""
    return os.urandom(8).hex()
