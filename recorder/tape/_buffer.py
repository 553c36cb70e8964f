"""A session encoded in memory, then appended to a tape in one write.

``SessionBuffer`` frames events as ``SessionWriter`` does (one zstd
stream per session, one frame per event, the same refusals), but into bytes
held in memory.  ``append_session`` later appends those bytes to a tape under
the same exclusive ``flock``, so the process that computes a session need not
be the one that owns the tape file: a worker on another machine returns the
bytes and the driver writes them.

The events are kept packed and compressed in one go when the bytes are asked
for (``_encode.py``): an open session holds its packed events, not a zstd
stream with its window and match-finder tables (several MiB each, times the
attempts running at once).  So that a killed process loses at most the event
in flight, each packed event can also go to a ``sink`` the moment it is taken
(a ``Journal`` on disk, or a stream to the process that owns the journal).
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable

from .._errors import TapeError
from .._events import Event, SessionEnded, SessionStarted, Status
from ._codec import to_plain
from ._encode import Packed, encode_frames
from ._frames import FLAG_END, FLAG_START, full_frames
from ._journal import Sink
from ._pack import Packer
from ._writer import DEFAULT_LEVEL, _check_file, _write_all, monotonic_clock


class SessionBuffer:
    """Encodes one session's events into tape frames in memory (``SessionWriter``'s API).

    Thread-safe; an event msgpack cannot hold is refused with ``TapeError``
    and the session goes on; after ``end()`` later appends are refused.
    ``sink`` gets every packed event (header first, end last) as it is taken,
    in order, under the buffer's lock.
    """

    def __init__(
        self,
        header: SessionStarted,
        *,
        clock: Callable[[], float] | None = None,
        level: int = DEFAULT_LEVEL,
        sink: Sink | None = None,
    ) -> None:
        try:
            self._session = bytes.fromhex(header.session_id)
        except ValueError:
            self._session = b""
        if len(self._session) != 8:
            raise TapeError(f"session_id must be 16 hex digits, got {header.session_id!r}")
        self.header = header
        self._clock = clock or monotonic_clock()
        self._level = level
        self._sink = sink
        self._packer = Packer()
        self._lock = threading.Lock()
        self._packed: list[Packed] = []
        self._frames = b""
        self._framed = 0  # events in self._frames
        self._ended = False
        self._frame(header, FLAG_START)

    def now(self) -> float:
        """Seconds since the session started, by the session's clock."""
        return self._clock()

    def _frame(self, event: Event, flags: int) -> None:
        try:
            raw = self._packer.pack(to_plain(event))
        except (TypeError, ValueError, OverflowError) as exc:
            raise TapeError(
                f"cannot record {type(event).__name__}: {type(exc).__name__}: {exc}"
            ) from exc
        self._packed.append((flags, raw))
        if self._sink is not None:
            self._sink(flags, raw)

    def append(self, event: Event) -> None:
        """Take one event (packed now, so a refusal comes here; compressed at the end)."""
        if isinstance(event, SessionStarted | SessionEnded):
            raise TapeError("session start and end are written by the constructor / end()")
        with self._lock:
            if self._ended:
                raise TapeError(f"session {self.header.session_id} has already ended")
            self._frame(event, 0)

    def end(
        self, status: Status = Status.COMPLETED, reason: str = "", *, at: float | None = None
    ) -> None:
        """Encode the session's end (``at`` seconds after its start; None: now); the bytes
        are then complete."""
        with self._lock:
            if not self._ended:
                self._ended = True
                when = self._clock() if at is None else at
                self._frame(SessionEnded(at=when, status=status, reason=reason), FLAG_END)
                self._encode()
                self._packed = []  # the frames hold it all now

    def _encode(self) -> None:
        if self._framed < len(self._packed):
            self._frames = encode_frames(self._session, self._packed, self._level)
            self._framed = len(self._packed)

    @property
    def data(self) -> bytes:
        """The session's frames so far (a whole session once ``end()`` was called)."""
        with self._lock:
            self._encode()
            return self._frames


def append_session(path: str | os.PathLike[str], data: bytes) -> None:
    """Append a session's frames (``SessionBuffer.data``) to the tape at ``path``, fsynced.

    The file is created with its header if missing; a file that is not a tape, or of
    a newer major version, is refused as ``SessionWriter`` refuses it.  The frames are
    written in one piece, so all but the first are short ones, except in a file of
    major version 1, which takes them as full frames.
    """
    where = os.fspath(path)
    try:
        fd = os.open(where, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise TapeError(f"{where}: cannot open for writing: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            head, short = _check_file(fd, where)
            _write_all(fd, head + (data if short else full_frames(data)))
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError as exc:
        raise TapeError(f"{where}: cannot write: {exc.strerror}") from exc
    finally:
        os.close(fd)
