"""Appending sessions to tape files.

Each session owns a zstd stream; every event is compressed, flushed as one
frame and written with a single ``write`` on an ``O_APPEND`` descriptor while
holding an exclusive ``flock`` on the file.  Sessions of several threads or
processes therefore interleave whole frames and never corrupt each other.  A
crash loses at most the frame being written; the session's end is fsynced.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable
from types import TracebackType

import zstandard

from recorder._codec import to_plain
from recorder._errors import TapeError
from recorder._events import Event, SessionEnded, SessionStarted, Status
from recorder._frames import FLAG_END, FLAG_START, MAX_WINDOW, file_header, frame
from recorder._pack import Packer
from recorder._version import WRITER

DEFAULT_LEVEL = 9
"""zstd level: tapes are written once and read often, so compress well."""


def _append(fd: int, data: bytes) -> None:
    """Write ``data`` at the end of the file, adding the file header if empty."""
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        if os.fstat(fd).st_size == 0:
            data = file_header(WRITER) + data
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


class SessionWriter:
    """Appends the events of one session to a tape file.

    Use ``open_session``.  Thread-safe: events are framed in call order.
    Closing without ``end()`` records a SessionEnded (completed, or failed
    with the exception that left the ``with`` block).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: SessionStarted,
        *,
        clock: Callable[[], float],
        level: int = DEFAULT_LEVEL,
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
        params = zstandard.ZstdCompressionParameters.from_level(
            level, window_log=MAX_WINDOW.bit_length() - 1
        )
        self._zstd = zstandard.ZstdCompressor(compression_params=params).compressobj()
        self._packer = Packer()
        self._lock = threading.Lock()
        self._seq = 0
        self._ended = False
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise TapeError(f"{self.path}: cannot open for writing: {exc.strerror}") from exc
        self._write(header, FLAG_START)

    def now(self) -> float:
        """Seconds since the session started, by the session's clock."""
        return self._clock()

    def _write(self, event: Event, flags: int) -> None:
        raw = self._packer.pack(to_plain(event))
        payload = self._zstd.compress(raw)
        if flags & FLAG_END:
            payload += self._zstd.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)
        else:
            payload += self._zstd.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        _append(self._fd, frame(flags, self._session, self._seq, len(raw), payload))
        self._seq += 1

    def append(self, event: Event) -> None:
        """Record one event (flushed to the OS before returning)."""
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
                self._write(SessionEnded(at=self._clock(), status=status, reason=reason), FLAG_END)
                os.fsync(self._fd)
            finally:
                os.close(self._fd)

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
    level: int = DEFAULT_LEVEL,
) -> SessionWriter:
    """Start a session in the tape at ``path`` (created if missing).

    ``clock`` returns seconds since the session started; by default a
    monotonic clock started now.
    """
    return SessionWriter(path, header, clock=clock or monotonic_clock(), level=level)


def new_session_id() -> str:
    """A random 16-hex-digit session id."""
    return os.urandom(8).hex()
