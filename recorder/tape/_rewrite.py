"""Rewriting a tape: drop some sessions, add sessions copied from another tape, atomically.

Tapes are append-only, so replacing a session means writing a new file:
the frames of every kept session are copied (each session owns its zstd
stream, so its frames' payloads stay valid in any file; a frame is written
short or full as where it lands allows), then the frames of the added
sessions.  The new file is written beside the old one, fsynced and
moved over it with ``os.replace``: a crash at any point leaves the old tape
intact and readable, or the new one complete.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator
from pathlib import Path

from .._errors import TapeError
from .._version import WRITER
from ._frame_scan import frames, open_tape, read_file_header
from ._frames import (
    FORMAT_MAJOR,
    SHORT_FRAMES_SINCE,
    FrameHeader,
    file_header,
    frame_as,
)
from ._notes import NoteLog


class _Framer:
    """Frames for the new file, in order: a frame that follows its session's previous
    one is a short frame, if the file's major version has them."""

    def __init__(self, short: bool) -> None:
        self._short = short
        self._last: tuple[bytes, int] | None = None  # (session, seq) of the frame before

    def __call__(self, fh: FrameHeader, payload: bytes) -> bytes:
        follows = self._short and self._last == (fh.session, fh.seq - 1)
        self._last = (fh.session, fh.seq)
        return frame_as(follows, fh.flags, fh.session, fh.seq, fh.raw_len, payload)


def _frames_of(path: str, keep: Callable[[str], bool]) -> Iterator[tuple[FrameHeader, bytes]]:
    """The readable frames of the tape at ``path`` whose session ``keep`` accepts."""
    log = NoteLog(path, strict=False)
    header = read_file_header(log)
    if header is None:
        return
    with open_tape(path) as f:
        for _, fh, payload in frames(f, header, log, {}):
            if keep(fh.session.hex()):
                yield fh, payload


def _head(path: str) -> tuple[bytes, int]:
    """The file header of an existing tape, byte for byte, and its major version; a
    fresh one if it holds none."""
    log = NoteLog(path, strict=False)
    header = read_file_header(log) if os.path.exists(path) else None
    if header is None:
        return file_header(WRITER), FORMAT_MAJOR
    with open_tape(path) as f:
        return f.read(header.size), header.major


def rewrite_tape(
    path: str | os.PathLike[str],
    *,
    drop: Collection[str] = (),
    source: str | os.PathLike[str] | None = None,
    add: Collection[str] = (),
    on_written: Callable[[Path], None] | None = None,
) -> None:
    """Rewrite the tape at ``path`` without the sessions ``drop`` names, plus the sessions
    ``add`` names copied from the tape ``source``; created if missing.

    Session ids are 16 hex digits.  The new file is ``<path>.tmp-<pid>``,
    fsynced, then moved over ``path``; ``on_written`` (a seam for tests) is
    called with it after the fsync and before the move.  A session already in
    ``path`` that ``add`` names is dropped from its old place (no duplicate).
    Sessions being appended to ``path`` by another writer while it is
    rewritten are lost: rewrite only tapes no one is recording into.  Raises
    ``TapeError`` when a file cannot be read or written; ``path`` is then
    unchanged.
    """
    target = os.fspath(path)
    added = frozenset(add)
    if added and source is None:
        raise TapeError(f"{target}: sessions to add need the tape they come from")
    gone = frozenset(drop) | added
    tmp = Path(f"{target}.tmp-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as exc:
        raise TapeError(f"{tmp}: cannot create: {exc.strerror}") from exc
    try:
        with os.fdopen(fd, "wb") as out:
            head, major = _head(target)
            out.write(head)
            framed = _Framer(major >= SHORT_FRAMES_SINCE)
            if os.path.exists(target):
                for fh, payload in _frames_of(target, lambda sid: sid not in gone):
                    out.write(framed(fh, payload))
            if source is not None and added:
                found: set[str] = set()

                def wanted(sid: str) -> bool:
                    if sid in added:
                        found.add(sid)
                        return True
                    return False

                for fh, payload in _frames_of(os.fspath(source), wanted):
                    out.write(framed(fh, payload))
                missing = sorted(added - found)
                if missing:
                    raise TapeError(f"{os.fspath(source)}: no session {', '.join(missing)}")
            out.flush()
            os.fsync(out.fileno())
        if on_written is not None:
            on_written(tmp)
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise TapeError(f"{target}: cannot rewrite: {exc.strerror}") from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_folder(Path(target).parent)


def _fsync_folder(folder: Path) -> None:
    """Make the rename durable (best effort where folders cannot be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
