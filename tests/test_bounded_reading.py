"""Bounded reading: a few KB of hostile tape cannot cost gigabytes or quadratic work.

Each reader runs in a subprocess under ``RLIMIT_AS`` (an address-space cap);
work is measured as the bytes the process read (``rchar`` of
``/proc/self/io``), never as seconds.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from builders import exchange, packed_tape

from evaltape.recorder import (
    HarnessEvent,
    Mode,
    SessionStarted,
    Status,
    TapeError,
    open_session,
    read_sessions,
)
from evaltape.recorder._shared import to_plain
from evaltape.recorder.tape._frames import SYNC, file_header, frame

pytestmark = pytest.mark.slow

SID = bytes.fromhex("00000000000000b1")
BODY = 64 * 1024 * 1024
"""The delta bomb's one real body: 64 MiB."""
CAP = 1536 * 1024 * 1024
"""Address space a reader subprocess gets beyond what it uses before reading."""
_posted = functools.partial(
    exchange, "https://api.openai.com/v1/x", response=b"{}", duration=0.0, chunk_at=0.0
)
"""A POST of a body, answered ``{}`` at once."""


def _header(sid: str = SID.hex()) -> SessionStarted:
    return SessionStarted(
        session_id=sid, started_at=0.0, case_id="c", attempt=0, model="m", mode=Mode.LIVE
    )


def _delta_bomb(path: Path, copies: int) -> None:
    """One 64 MiB request body, then ``copies`` empty deltas that each rebuild it whole."""
    plains = [to_plain(_header()), to_plain(_posted(b" " * BODY))]
    delta = to_plain(_posted(b""))
    delta["request"] = {**delta["request"], "base": [1, BODY, 0]}
    plains += [delta] * copies
    plains.append({"k": "end", "at": 1.0, "status": "completed", "reason": ""})
    packed_tape(path, SID.hex(), plains)


def _fake_headers(path: Path, size: int) -> None:
    """``size`` bytes of frame headers, each claiming a payload up to the end of the file."""
    head = file_header("hostile 1.0")
    one = len(frame(0, SID, 1, 0, b""))
    count = size // one
    parts = [head]
    for i in range(count):
        left = (count - i - 1) * one
        parts.append(frame(0, SID, 1, left, b"")[:one])
        parts[-1] = parts[-1][: one - 8] + left.to_bytes(4, "little") + b"\0\0\0\0"
    path.write_bytes(b"".join(parts))


_READER = textwrap.dedent(
    """
    import resource, sys
    from evaltape.recorder import read_sessions
    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * resource.getpagesize()
    used = rss()
    cap = int(sys.argv[2])
    with open("/proc/self/status") as f:
        vm = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + cap, vm + cap))
    problems = []
    events = 0
    for s in read_sessions(sys.argv[1], strict=False, on_note=lambda n: problems.append(str(n))):
        events += len(s.events)
    with open("/proc/self/io") as f:
        rchar = next(int(l.split()[1]) for l in f if l.startswith("rchar:"))
    print(events, rchar)
    print("\\n".join(problems))
    """
)


def _read_capped(path: Path) -> tuple[int, int, str]:
    """(events read, bytes read, notes) of a subprocess reading ``path`` under ``CAP``."""
    done = subprocess.run(
        [sys.executable, "-c", _READER, str(path), str(CAP)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    first, _, notes = done.stdout.partition("\n")
    events, rchar = (int(x) for x in first.split())
    return events, rchar, notes


def test_a_delta_bomb_is_refused_with_its_offset_within_a_memory_cap(tmp_path: Path) -> None:
    path = tmp_path / "bomb.tape"
    _delta_bomb(path, copies=40)  # unbounded: 41 x 64 MiB = 2.6 GiB
    assert path.stat().st_size < 64 * 1024
    events, _, notes = _read_capped(path)
    assert 2 < events < 12  # the start, the real body, a few copies: then refused
    assert f"{path}: byte " in notes
    assert "session decodes past its 512 MiB budget" in notes


def test_a_delta_bomb_is_one_clear_line_from_show(tmp_path: Path) -> None:
    path = tmp_path / "bomb.tape"
    _delta_bomb(path, copies=40)
    done = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "show", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "Traceback" not in done.stderr
    assert "session decodes past its 512 MiB budget" in done.stdout + done.stderr


def test_fake_frame_headers_cost_linear_reading(tmp_path: Path) -> None:
    small, large = tmp_path / "small.tape", tmp_path / "large.tape"
    _fake_headers(small, 1 << 20)
    _fake_headers(large, 4 << 20)
    assert large.read_bytes().count(SYNC) > 100_000
    _, read_small, notes = _read_capped(small)
    _, read_large, _ = _read_capped(large)
    base = _read_capped_baseline(tmp_path)
    work_small, work_large = read_small - base, read_large - base
    assert "gave up looking for the next frame" in notes
    # Quadratic resynchronising read ~10^12 bytes here; linear reads a few file sizes.
    assert work_large < 6 * large.stat().st_size + (16 << 20)
    assert work_large < 6 * max(work_small, 1 << 20), (work_small, work_large)


def _read_capped_baseline(tmp_path: Path) -> int:
    """Bytes the reader subprocess reads for an empty tape (imports and all)."""
    empty = tmp_path / "empty.tape"
    empty.write_bytes(file_header("hostile 1.0"))
    return _read_capped(empty)[1]


def test_an_oversize_event_is_refused_at_write_time_and_the_session_stays_readable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "big.tape"
    with open_session(path, _header("00000000000000b2")) as writer:
        writer.append(HarnessEvent(at=0.1, name="before"))
        with pytest.raises(TapeError, match="limit a reader accepts"):
            writer.append(_posted(os.urandom(257 * 1024 * 1024)))
        writer.append(HarnessEvent(at=0.2, name="after"))
        writer.end(Status.COMPLETED)
    (session,) = read_sessions(path)
    assert session.complete
    names = [e.name for e in session.events if isinstance(e, HarnessEvent)]
    assert names == ["before", "after"]


def test_a_writer_refuses_a_session_past_the_readers_budget(tmp_path: Path) -> None:
    path = tmp_path / "long.tape"
    body = os.urandom(60 * 1024 * 1024)
    refused = 0
    with open_session(path, _header("00000000000000b3")) as writer:
        for i in range(12):
            try:
                writer.append(_posted(body[: len(body) - i]))
            except TapeError as exc:
                assert "session decodes past its 512 MiB budget" in str(exc)
                refused += 1
    assert refused >= 4
    (session,) = read_sessions(path)
    assert session.complete
    assert len(session.events) == 2 + 12 - refused
