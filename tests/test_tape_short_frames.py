"""Format 2 short frames: a frame right after its session's previous one names neither
session nor seq; files of format 1 keep full frames, so their readers still read them."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from evaltape.recorder import HarnessEvent, SessionStarted, TapeReader, open_session
from evaltape.recorder._shared import rewrite_tape
from evaltape.recorder.tape import CorruptTape
from evaltape.recorder.tape._buffer import SessionBuffer, append_session
from evaltape.recorder.tape._frames import MAGIC, short_frame

FULL_SYNC, SHORT_SYNC = b"\xf0\x9f\x93\xbc", b"\xf0\x9f\x93\xbd"
A, B, C = "00000000000000a1", "00000000000000b2", "00000000000000c3"


def _layout(data: bytes) -> list[tuple[str, str]]:
    """``(kind, session)`` of each frame, read as docs/format.md lays them out (independent
    of the reader): a short frame's session is the frame's before it."""
    (n,) = struct.unpack_from("<H", data, 12)
    pos, out, session = 18 + n, [], ""
    while pos < len(data):
        if data.startswith(SHORT_SYNC, pos):
            assert session, f"short frame at {pos} follows no frame"
            _flags, low, high, comp = struct.unpack_from("<BHBH", data, pos + 4)
            assert low | high << 16 > 0, f"short frame at {pos} holds no event"
            crc = zlib.crc32(data[pos + 14 : pos + 14 + comp], zlib.crc32(data[pos + 4 : pos + 10]))
            assert crc == struct.unpack_from("<I", data, pos + 10)[0], f"short frame at {pos}"
            out.append(("short", session))
            pos += 14 + comp
        else:
            assert data.startswith(FULL_SYNC, pos), f"no frame at {pos}"
            session = data[pos + 5 : pos + 13].hex()
            out.append(("full", session))
            pos += 29 + struct.unpack_from("<I", data, pos + 21)[0]
    return out


def _header(major: int, minor: int) -> bytes:
    head = struct.pack("<8sHHH", MAGIC, major, minor, 8) + b"old 1.0 "
    return head + struct.pack("<I", zlib.crc32(head))


def _events(n: int) -> list[HarnessEvent]:
    return [HarnessEvent(at=float(i), name=f"step {i}", fields=(("i", i),)) for i in range(n)]


def _start(sid: str) -> SessionStarted:
    return SessionStarted(session_id=sid, started_at=0.0)


def _record(path: Path, sid: str, n: int) -> bytes:
    """Session ``sid`` with ``n`` events (``_events``) appended to ``path``, written alone;
    the file's bytes after it."""
    with open_session(path, _start(sid), clock=lambda: 9.0) as tape:
        for event in _events(n):
            tape.append(event)
    return path.read_bytes()


def test_a_session_written_alone_takes_short_frames_after_its_first(tmp_path: Path) -> None:
    path = tmp_path / "t.tape"
    data = _record(path, A, 5)
    assert struct.unpack_from("<HH", data, 8) == (2, 1)
    assert _layout(data) == [("full", A)] + [("short", A)] * 6
    (session,) = TapeReader(path).sessions()
    assert session.complete and list(session.events[1:-1]) == _events(5)


def test_a_frame_after_another_sessions_frame_is_a_full_one(tmp_path: Path) -> None:
    path = tmp_path / "t.tape"
    a = open_session(path, _start(A), clock=lambda: 9.0)
    b = open_session(path, _start(B), clock=lambda: 9.0)
    one, two, three = _events(3)
    a.append(one)  # B's start came between
    a.append(two)
    b.append(three)
    b.end()
    a.end()
    kinds = ["full", "full", "full", "short", "full", "short", "full"]
    owners = [A, B, A, A, B, B, A]
    assert _layout(path.read_bytes()) == list(zip(kinds, owners, strict=True))
    got = {s.session_id: s.events[1:-1] for s in TapeReader(path).sessions()}
    assert got == {A: (one, two), B: (three,)}


def test_a_format_1_tape_takes_only_full_frames_and_keeps_its_version(tmp_path: Path) -> None:
    path = tmp_path / "old.tape"
    path.write_bytes(_header(1, 2))
    _record(path, A, 3)
    buffer = SessionBuffer(_start(B), clock=lambda: 9.0)
    for event in _events(2):
        buffer.append(event)
    buffer.end()
    append_session(path, buffer.data)
    rewrite_tape(path, drop={A})
    data = path.read_bytes()
    assert struct.unpack_from("<HH", data, 8) == (1, 2)
    assert _layout(data) == [("full", B)] * 4
    (session,) = TapeReader(path).sessions()
    assert session.session_id == B and list(session.events[1:-1]) == _events(2)


def test_a_buffered_session_appended_to_a_new_tape_takes_short_frames(tmp_path: Path) -> None:
    buffer = SessionBuffer(_start(C), clock=lambda: 9.0)
    for event in _events(2):
        buffer.append(event)
    buffer.end()
    path = tmp_path / "t.tape"
    append_session(path, buffer.data)
    assert _layout(path.read_bytes()) == [("full", C)] + [("short", C)] * 3


def test_a_rewrite_frames_each_session_as_where_it_lands_allows(tmp_path: Path) -> None:
    path = tmp_path / "t.tape"
    a = open_session(path, _start(A), clock=lambda: 9.0)
    b = open_session(path, _start(B), clock=lambda: 9.0)
    for one, two in zip(_events(2), _events(2), strict=True):
        a.append(one)
        b.append(two)
    a.end()
    b.end()
    assert [kind for kind, _ in _layout(path.read_bytes())] == ["full"] * 8
    rewrite_tape(path, drop={B})
    assert _layout(path.read_bytes()) == [("full", A)] + [("short", A)] * 3
    (session,) = TapeReader(path).sessions()
    assert session.complete and list(session.events[1:-1]) == _events(2)


def test_a_short_frame_cut_short_then_appended_to_is_a_truncation(tmp_path: Path) -> None:
    path = tmp_path / "t.tape"
    data = _record(path, A, 3)
    last = data.rindex(SHORT_SYNC)  # the end frame, a short one
    for into in (1, 5, 13, 20):
        path.write_bytes(data[: last + into])
        with open_session(path, _start(B), clock=lambda: 9.0) as later:
            later.append(HarnessEvent(at=1.0, name="after the crash"))
        reader = TapeReader(path)  # strict: a torn write is not corruption
        got = {s.session_id: s for s in reader.sessions()}
        assert [n.kind for n in reader.notes if n.kind != "incomplete"] == ["truncated"]
        # (The two syncs share 3 bytes: a cut inside them names no session.)
        assert reader.notes[0].offset == last
        assert reader.notes[0].session_id == (A if into >= 4 else "")
        assert got[A].events[1:] == tuple(_events(3)) and not got[A].complete
        assert got[B].complete


def test_a_damaged_length_before_short_frames_is_corruption_not_a_torn_write(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.tape"
    data = bytearray(_record(path, A, 4))
    first = data.index(SHORT_SYNC)
    data[first + 9] ^= 0x40  # comp_len's high byte: the frame claims 16 KiB more
    path.write_bytes(bytes(data))
    reader = TapeReader(path, strict=False)
    (session,) = reader.sessions()
    assert [n.kind for n in reader.notes] == ["corrupt"]
    assert reader.notes[0].offset == first
    assert session.events == (_start(A),) and not session.complete


def test_a_short_frame_with_no_frame_before_it_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "t.tape"
    data = _record(path, A, 1)
    (n,) = struct.unpack_from("<H", data, 12)
    first_short = data.index(SHORT_SYNC)
    path.write_bytes(data[: 18 + n] + data[first_short:])  # the start frame taken out
    reader = TapeReader(path, strict=False)
    assert list(reader.sessions()) == []
    (note,) = reader.notes
    assert note.kind == "corrupt" and "a short frame follows no readable frame" in note.message


def test_a_short_frame_whose_sync_reads_as_a_full_one_is_corruption(tmp_path: Path) -> None:
    """Damaged into the full sync, a short frame's bytes read as a full header; here one
    that claims more bytes than the file has, as a torn write's would.  The frame still
    checks as the short frame it was, so the region is corrupt, not a torn write."""
    path = tmp_path / "t.tape"
    writer = open_session(path, _start(A), clock=lambda: 9.0)
    writer.append(_events(1)[0])
    # Read as a full header: raw_len from payload bytes 3-6, comp_len from 7-10 (4096).
    payload = bytes(7) + (4096).to_bytes(4, "little") + bytes(29)
    crafted = short_frame(0, 64, payload)
    assert crafted is not None
    at = path.stat().st_size
    data = path.read_bytes() + crafted
    damaged = data[: at + 3] + b"\xbc" + data[at + 4 :]  # BD -> BC
    path.write_bytes(damaged)
    with pytest.raises(CorruptTape, match=rf"byte {at}: "):
        list(TapeReader(path).sessions())
    reader = TapeReader(path, strict=False)
    (session,) = reader.sessions()
    assert [n.kind for n in reader.notes if n.kind != "incomplete"] == ["corrupt"]
    assert session.events == (_start(A), _events(1)[0])
    writer.end()


def test_a_tape_whose_header_names_format_0_is_not_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "zero.tape"
    path.write_bytes(_header(0, 3))
    with pytest.raises(CorruptTape, match="names format 0, which is none; not appending"):
        open_session(path, _start(A), clock=lambda: 9.0)
    assert path.read_bytes() == _header(0, 3)
