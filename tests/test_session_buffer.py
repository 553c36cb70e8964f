"""A session encoded in memory (``SessionBuffer``) and appended whole (``append_session``).

It must read back exactly as a session written event by event, survive a cut
at any byte as well, and ask readers for no larger zstd window than its events
need (never more than the format's ``MAX_WINDOW``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import zstandard
from builders import chat_exchange

from evaltape.recorder import (
    Event,
    FileEntry,
    HarnessEvent,
    SessionEnded,
    SessionStarted,
    Status,
    TapeError,
    TapeReader,
    WorkspaceSnapshot,
    open_session,
)
from evaltape.recorder._shared import journal_tape
from evaltape.recorder.tape import (
    Journal,
    SessionBuffer,
    append_session,
    discard_journal,
    journal_path,
)
from evaltape.recorder.tape._frames import FRAME_HEADER_SIZE, MAX_WINDOW, parse_frame_header, walk

HEADER = SessionStarted(session_id="00000000000000aa", started_at=1e9, case_id="c1")


def _events(turns: int) -> list[Event]:
    out: list[Event] = []
    messages: list[dict[str, object]] = []
    for t in range(turns):
        messages.append({"role": "user", "content": f"turn {t}: " + "context " * 40})
        out.append(chat_exchange(float(t), list(messages), {"content": f"answer {t}"}))
        out.append(HarnessEvent(at=t + 0.5, name="tool", fields=(("turn", t),)))
    return out


def _buffered(events: list[Event]) -> SessionBuffer:
    buffer = SessionBuffer(HEADER, clock=lambda: 7.0)
    for event in events:
        buffer.append(event)
    return buffer


def _read(path: Path) -> list[tuple[tuple[Event, ...], bool]]:
    return [(s.events, s.complete) for s in TapeReader(path).sessions()]


def _frame_ends(data: bytes, start: int) -> list[int]:
    return [start + pos + size + fh.comp_len for pos, size, fh in walk(data[start:])]


def test_a_buffered_session_reads_back_as_the_same_session_written_event_by_event(
    tmp_path: Path,
) -> None:
    events = _events(6)
    buffer = _buffered(events)
    buffer.end(Status.FAILED, "boom")
    append_session(tmp_path / "buffered.tape", buffer.data)
    with open_session(tmp_path / "written.tape", HEADER, clock=lambda: 7.0) as writer:
        for event in events:
            writer.append(event)
        writer.end(Status.FAILED, "boom")
    whole = (HEADER, *events, SessionEnded(at=7.0, status=Status.FAILED, reason="boom"))
    assert _read(tmp_path / "buffered.tape") == [(whole, True)]
    assert _read(tmp_path / "written.tape") == [(whole, True)]


@pytest.mark.slow
def test_a_buffered_session_cut_at_every_byte_keeps_every_event_before_the_cut(
    tmp_path: Path,
) -> None:
    events = _events(2)
    buffer = _buffered(events)
    buffer.end()
    full = tmp_path / "full.tape"
    append_session(full, buffer.data)
    data = full.read_bytes()
    whole = (HEADER, *events, SessionEnded(at=7.0, status=Status.COMPLETED, reason=""))
    ends = _frame_ends(data, len(data) - len(buffer.data))
    assert len(ends) == len(whole)
    cut_file = tmp_path / "cut.tape"
    for cut in range(len(data) + 1):
        cut_file.write_bytes(data[:cut])
        kept = sum(1 for end in ends if end <= cut)
        expected = [(whole[:kept], kept == len(whole))] if kept else []
        assert _read(cut_file) == expected, f"cut at {cut}"


def test_the_bytes_asked_for_before_the_end_are_the_session_so_far(tmp_path: Path) -> None:
    events = _events(3)
    buffer = _buffered(events[:2])
    append_session(tmp_path / "early.tape", buffer.data)
    for event in events[2:]:
        buffer.append(event)
    buffer.end()
    append_session(tmp_path / "late.tape", buffer.data)
    assert _read(tmp_path / "early.tape") == [((HEADER, *events[:2]), False)]
    end = SessionEnded(at=7.0, status=Status.COMPLETED, reason="")
    assert _read(tmp_path / "late.tape") == [((HEADER, *events, end), True)]


def _window(data: bytes) -> int:
    payload = data[FRAME_HEADER_SIZE : FRAME_HEADER_SIZE + parse_frame_header(data).comp_len]
    window: int = zstandard.get_frame_parameters(payload).window_size
    return window


def test_a_small_session_asks_readers_for_a_small_window(tmp_path: Path) -> None:
    buffer = _buffered(_events(3))
    buffer.end()
    assert _window(buffer.data) <= MAX_WINDOW // 16
    append_session(tmp_path / "t.tape", buffer.data)
    assert _read(tmp_path / "t.tape")[0][1]


def test_a_session_larger_than_the_window_asks_for_the_format_s_largest(tmp_path: Path) -> None:
    blob = os.urandom(MAX_WINDOW + MAX_WINDOW // 4)
    snapshot = WorkspaceSnapshot(at=1.0, files=(FileEntry(path="big.bin", data=blob),))
    buffer = _buffered([snapshot])
    buffer.end()
    assert _window(buffer.data) == MAX_WINDOW
    append_session(tmp_path / "t.tape", buffer.data)
    [(events, complete)] = _read(tmp_path / "t.tape")
    assert complete and events[1] == snapshot


def test_an_event_msgpack_cannot_hold_is_refused_and_the_session_goes_on(tmp_path: Path) -> None:
    buffer = _buffered([])
    with pytest.raises(TapeError, match="cannot record HarnessEvent"):
        buffer.append(HarnessEvent(at=1.0, name="huge", fields=(("n", 2**70),)))
    kept = HarnessEvent(at=2.0, name="ok", fields=(("n", 1),))
    buffer.append(kept)
    buffer.end()
    with pytest.raises(TapeError, match="already ended"):
        buffer.append(kept)
    append_session(tmp_path / "t.tape", buffer.data)
    end = SessionEnded(at=7.0, status=Status.COMPLETED, reason="")
    assert _read(tmp_path / "t.tape") == [((HEADER, kept, end), True)]


def test_the_journal_holds_every_event_taken_so_far_and_then_the_whole_session(
    tmp_path: Path,
) -> None:
    events = _events(3)
    tape = tmp_path / "run.tape"
    journal = journal_path(tape, HEADER.session_id)
    assert journal_tape(journal) == (tape, HEADER.session_id)
    buffer = SessionBuffer(HEADER, clock=lambda: 7.0, sink=Journal(journal, HEADER.session_id))
    assert _read(journal) == [((HEADER,), False)]
    for n, event in enumerate(events, start=1):
        buffer.append(event)  # on disk when append returns: no flush, no end needed
        assert _read(journal) == [((HEADER, *events[:n]), False)]
    buffer.end(Status.FAILED, "boom")
    whole = (HEADER, *events, SessionEnded(at=7.0, status=Status.FAILED, reason="boom"))
    assert _read(journal) == [(whole, True)]
    append_session(tape, buffer.data)
    assert _read(tape) == [(whole, True)]
    discard_journal(tape, HEADER.session_id)
    assert not journal.exists()
    discard_journal(tape, HEADER.session_id)  # already gone: fine


@pytest.mark.slow
def test_a_journal_cut_at_every_byte_keeps_every_event_before_the_cut(tmp_path: Path) -> None:
    events = _events(2)
    journal = tmp_path / "j.journal"
    buffer = SessionBuffer(HEADER, clock=lambda: 7.0, sink=Journal(journal, HEADER.session_id))
    for event in events:
        buffer.append(event)
    data = journal.read_bytes()
    cut_file = tmp_path / "cut.journal"
    seen: list[int] = []
    for cut in range(len(data) + 1):
        cut_file.write_bytes(data[:cut])
        got = [s.events for s in TapeReader(cut_file, strict=False).sessions()]
        kept = len(got[0]) if got else 0
        assert got == ([(HEADER, *events)[:kept]] if kept else []), f"cut at {cut}"
        seen.append(kept)
    assert seen == sorted(seen) and seen[-1] == len(events) + 1


@pytest.mark.parametrize(
    "name", ["run.tape", "run.tape.journal", "run.tape.xyz.journal", "run.tape.00aa.journal"]
)
def test_a_file_not_named_as_a_journal_is_not_taken_for_one(name: str) -> None:
    assert journal_tape(Path(name)) is None
