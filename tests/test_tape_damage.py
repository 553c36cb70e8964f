"""Damaged tapes: cut at any byte, any byte flipped, hostile frames, `evaltape show`.

The reader must return exactly the events that survive, say where the
damage is (file and byte offset), never return a wrong event and never raise
anything but ``CorruptTape`` (strict) or nothing at all (non-strict).
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs
import msgpack
import pytest
import zstandard
from builders import exchange

from evaltape.recorder import (
    Assembled,
    Event,
    Exchange,
    FileEntry,
    HarnessEvent,
    RunnerFact,
    SessionEnded,
    SessionStarted,
    Status,
    TapeReader,
    WorkspaceSnapshot,
    open_session,
)
from evaltape.recorder._events import FactKind, with_assembled
from evaltape.recorder._shared import to_plain
from evaltape.recorder._version import WRITER
from evaltape.recorder.tape import CorruptTape
from evaltape.recorder.tape._frames import FLAG_START, MAX_EVENT_BYTES, file_header, frame


@attrs.frozen
class Written:
    """A tape written by the tests, with where each event's frame lies."""

    data: bytes
    sessions: dict[str, tuple[Event, ...]]
    """Events of each session, in order, including start and end when written."""
    starts: dict[str, tuple[int, ...]]
    """Offset of each of those events' frames."""
    ends: dict[str, tuple[int, ...]]
    """Offset just past each of those events' frames."""
    header_size: int

    def owner(self, offset: int) -> str | None:
        """The session whose frame holds byte ``offset`` (None: the file header)."""
        for sid in self.sessions:
            if any(a <= offset < b for a, b in zip(self.starts[sid], self.ends[sid], strict=True)):
                return sid
        return None

    def survivors(self, cut: int) -> dict[str, tuple[Event, ...]]:
        """What a reader must return from the first ``cut`` bytes."""
        out = {}
        for sid, events in self.sessions.items():
            n = sum(1 for end in self.ends[sid] if end <= cut)
            if n:
                out[sid] = events[:n]
        return out


def _events(i: int, turns: int, size: int) -> list[Event]:
    out: list[Event] = []
    history = b""
    for t in range(turns):
        history += b'{"role":"user","content":"turn %d of %d"},' % (t, i) + b"." * size
        body = b'{"messages":[' + history + b'],"tools":["read","write"]}'
        reply = b"data: reply %d/%d\n\n" % (i, t) * (1 + size // 20)
        sent = exchange(
            "http://127.0.0.1:9/v1/chat",
            body,
            at=float(t),
            duration=0.25,
            chunks=[reply[n : n + 7] for n in range(0, len(reply), 7)],
            chunk_at=0.0,
            chunk_every=0.07,
            streamed=True,
        )
        if t % 2 == 0 and sent.response is not None:  # with the message assembled
            message = Assembled(
                version=1, output_text=f"reply {i}/{t}", usage=(t, 1, 0, 0, 0, None)
            )
            sent = attrs.evolve(sent, response=with_assembled(sent.response, message))
        out.append(sent)
        if t % 2:
            out.append(HarnessEvent(at=t + 0.5, name="tool", fields=(("ok", True), ("n", t))))
    out.append(RunnerFact(at=turns + 0.1, fact=FactKind.NOTE, message=f"session {i}"))
    out.append(
        WorkspaceSnapshot(at=turns + 0.2, files=(FileEntry(path="a.txt", data=b"\x00\xff" * i),))
    )
    return out


def _write(
    path: Path, n_sessions: int, turns: int, size: int, seed: int, leave_open: bool = True
) -> Written:
    """Several sessions appended alternately; the last one never ends if ``leave_open``."""
    rng = random.Random(seed)
    writers, todo = [], []
    sessions: dict[str, list[Event]] = {}
    starts: dict[str, list[int]] = {}
    ends: dict[str, list[int]] = {}

    def wrote(sid: str, event: Event, before: int) -> None:
        sessions.setdefault(sid, []).append(event)
        starts.setdefault(sid, []).append(before)
        ends.setdefault(sid, []).append(path.stat().st_size)

    for i in range(n_sessions):
        sid = f"{seed:08x}{i:08x}"
        header = SessionStarted(session_id=sid, started_at=1e9 + i, case_id=f"c{i}")
        before = path.stat().st_size if path.exists() else 0
        writers.append(open_session(path, header, clock=lambda: 99.0))
        wrote(sid, header, before)
        todo.append(_events(i, turns, size))
    while any(todo):
        i = rng.choice([k for k, t in enumerate(todo) if t])
        event = todo[i].pop(0)
        before = path.stat().st_size
        writers[i].append(event)
        wrote(writers[i].header.session_id, event, before)
    for i, writer in enumerate(writers[:-1] if leave_open else writers):
        status, reason = (Status.COMPLETED, "") if i % 2 else (Status.FAILED, "boom")
        before = path.stat().st_size
        writer.end(status, reason)
        wrote(writer.header.session_id, SessionEnded(at=99.0, status=status, reason=reason), before)
    return Written(
        data=path.read_bytes(),
        sessions={k: tuple(v) for k, v in sessions.items()},
        starts={k: tuple(v) for k, v in starts.items()},
        ends={k: tuple(v) for k, v in ends.items()},
        header_size=starts[f"{seed:08x}{0:08x}"][0] + len(file_header(WRITER)),
    )


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Written:
    return _write(tmp_path_factory.mktemp("small") / "s.tape", 3, 2, 0, seed=1)


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Written:
    return _write(tmp_path_factory.mktemp("large") / "l.tape", 5, 24, 400, seed=2)


# -- truncation ----------------------------------------------------------------


def _messages(events: Sequence[Event]) -> list[Assembled | None]:
    """The assembled messages of the events' responses (not part of their equality)."""
    return [
        e.response.assembled for e in events if isinstance(e, Exchange) and e.response is not None
    ]


def _check_cut(path: Path, tape: Written, cut: int) -> None:
    path.write_bytes(tape.data[:cut])
    reader = TapeReader(path)  # strict: a cut is never corruption
    got = {s.session_id: s for s in reader.sessions()}
    expected = tape.survivors(cut)
    assert {sid: s.events for sid, s in got.items()} == expected, f"cut at {cut}"
    assert {sid: _messages(s.events) for sid, s in got.items()} == {
        sid: _messages(events) for sid, events in expected.items()
    }
    for sid, session in got.items():
        assert session.complete == isinstance(expected[sid][-1], SessionEnded)
        assert session.complete == (session.problem == "")
    boundaries = {0, tape.header_size, *(e for ends in tape.ends.values() for e in ends)}
    kinds = [n.kind for n in reader.notes]
    assert ("truncated" in kinds) == (cut not in boundaries), f"cut at {cut}: {reader.notes}"
    assert kinds.count("truncated") <= 1
    assert "corrupt" not in kinds
    for note in reader.notes:
        assert note.message.startswith(f"{path}: byte {note.offset}: ")
    listed = {i.session_id: (i.frames, i.complete) for i in reader.scan()}
    assert listed == {sid: (len(e), isinstance(e[-1], SessionEnded)) for sid, e in expected.items()}


@pytest.mark.slow
def test_a_tape_cut_at_every_byte_reads_exactly_the_events_before_the_cut(
    small: Written, tmp_path: Path
) -> None:
    assert len(small.data) < 4000
    for cut in range(len(small.data) + 1):
        _check_cut(tmp_path / "cut.tape", small, cut)


@pytest.mark.slow
def test_a_larger_tape_cut_at_a_dense_sample_of_offsets(large: Written, tmp_path: Path) -> None:
    rng = random.Random(7)
    ends = [e for es in large.ends.values() for e in es]
    offsets = {o + d for o in ends for d in (-1, 0, 1, 29)}
    offsets |= {rng.randrange(len(large.data)) for _ in range(60)}
    assert len(large.data) > 10_000
    for cut in sorted(o for o in offsets if 0 <= o <= len(large.data)):
        _check_cut(tmp_path / "cut.tape", large, cut)


# -- byte flips ----------------------------------------------------------------


def _check_flip(path: Path, tape: Written, offset: int, mask: int) -> None:
    data = bytearray(tape.data)
    data[offset] ^= mask
    path.write_bytes(bytes(data))
    # Strict: every byte of a tape is covered by a check, so a flip anywhere is
    # reported as corruption naming the file and a byte offset.
    with pytest.raises(CorruptTape) as info:
        list(TapeReader(path).sessions())
    assert re.match(rf"{re.escape(str(path))}: byte \d+: ", str(info.value)), str(info.value)
    # Not strict: never raises, says "corrupt", and only the touched session suffers.
    reader = TapeReader(path, strict=False)
    got = {s.session_id: s.events for s in reader.sessions()}
    assert "corrupt" in [n.kind for n in reader.notes], f"flip at {offset}"
    touched = tape.owner(offset)
    for sid, events in tape.sessions.items():
        if sid != touched:
            assert got.get(sid) == events, f"flip at {offset} damaged session {sid}"
        elif sid in got:
            assert got[sid] == events[: len(got[sid])], f"flip at {offset}: wrong events"
    assert set(got) <= set(tape.sessions)


@pytest.mark.slow
def test_a_flipped_byte_anywhere_is_caught_and_spares_the_other_sessions(
    small: Written, tmp_path: Path
) -> None:
    for offset in range(len(small.data)):
        _check_flip(tmp_path / "flip.tape", small, offset, 0xFF if offset % 2 else 0x01)


@pytest.mark.slow
def test_flipped_bytes_in_a_larger_tape(large: Written, tmp_path: Path) -> None:
    rng = random.Random(11)
    for _ in range(100):
        _check_flip(
            tmp_path / "flip.tape", large, rng.randrange(len(large.data)), 1 << rng.randrange(8)
        )


def _read_all(path: Path) -> tuple[object, ...]:
    """Everything a non-strict reader of ``path`` says: sessions, listing and notes."""
    reader = TapeReader(path, strict=False)
    sessions = [(s.session_id, s.events, s.complete, s.problem) for s in reader.sessions()]
    return sessions, reader.scan(), [(n.kind, n.offset, n.message) for n in reader.notes]


def test_reading_in_blocks_says_what_checking_each_frame_on_its_own_says(
    large: Written, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Frames are checked in blocks read at once, and a frame the block cannot hold, or
    one that is not good, on its own: the blocks' size never changes what is read."""
    from evaltape.recorder.tape import _frame_scan

    rng = random.Random(5)
    variants = [large.data, large.data[: len(large.data) - 7]]
    for _ in range(12):
        data = bytearray(large.data)
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        variants.append(bytes(data))
    path = tmp_path / "blocks.tape"
    for data in variants:
        path.write_bytes(data)
        said = []
        for block in (0, 61, 4096, _frame_scan.SCAN_BLOCK):  # 0: every frame on its own
            monkeypatch.setattr(_frame_scan, "SCAN_BLOCK", block)
            said.append(_read_all(path))
        assert said[1:] == said[:1] * 3


def _read_bytes(path: Path, data: bytes) -> tuple[object, ...]:
    """``_read_all`` of a reader given ``data`` in memory, named ``path``."""
    reader = TapeReader(path, strict=False, data=data)
    sessions = [(s.session_id, s.events, s.complete, s.problem) for s in reader.sessions()]
    return sessions, reader.scan(), [(n.kind, n.offset, n.message) for n in reader.notes]


def test_reading_a_tapes_bytes_says_what_reading_its_file_says(
    large: Written, tmp_path: Path
) -> None:
    """A tape sent whole to a worker is read from its bytes: cut, flipped, with its file
    header damaged, the sessions and notes are the file's, naming the same path."""
    rng = random.Random(11)
    variants = [large.data, large.data[: len(large.data) - 7], b"", large.data[:5]]
    header = bytearray(large.data)
    header[3] ^= 0x01  # a damaged magic: salvaged, read on as this version's format
    variants.append(bytes(header))
    for _ in range(10):
        data = bytearray(large.data)
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        variants.append(bytes(data))
    path = tmp_path / "bytes.tape"
    noted = 0
    for data in variants:
        path.write_bytes(data)
        from_file = _read_all(path)
        path.unlink()  # what is read is the bytes
        assert _read_bytes(path, data) == from_file
        noted += len(from_file[2])
    assert noted >= 10  # the damaged variants were noted: there was something to compare


def test_a_packed_session_pickles_to_the_same_session_damage_and_all(
    large: Written, tmp_path: Path
) -> None:
    """Sessions travel to scoring processes pickled, still compressed: what arrives is
    what was read, frame for frame, and decodes to the same events."""
    import pickle

    from evaltape.recorder._shared import packed_sessions, unpack_session
    from evaltape.recorder.tape._frames import FrameHeader

    data = bytearray(large.data)
    data[large.starts[next(iter(large.sessions))][3] + 30] ^= 0x10  # one session broken
    path = tmp_path / "packed.tape"
    path.write_bytes(bytes(data))
    packs = list(packed_sessions(TapeReader(path, strict=False)))
    assert {p.broken != "" for p in packs} == {True, False}
    assert {p.ended for p in packs} == {True, False}
    arrived = pickle.loads(pickle.dumps(packs))
    assert arrived == packs
    assert all(type(f[1]) is FrameHeader for p in arrived for f in p.frames)
    assert [unpack_session(p) for p in arrived] == [unpack_session(p) for p in packs]


# -- writers that stopped mid-write ----------------------------------------------


@pytest.mark.parametrize("into_frame", [1, 3, 10, 24, 25, -1])
def test_a_frame_cut_short_then_appended_to_is_a_truncation_not_corruption(
    small: Written, tmp_path: Path, into_frame: int
) -> None:
    """A writer killed inside its write leaves part of a frame; the next
    writer's frames follow it.  Only what the cut removed is lost."""
    sid = next(iter(small.sessions))
    start, end = small.starts[sid][-1], small.ends[sid][-1]  # its end frame
    cut = start + into_frame % (end - start)
    path = tmp_path / "torn.tape"
    path.write_bytes(small.data[:cut])
    later = SessionStarted(session_id="00000000000000aa", started_at=0.0)
    with open_session(path, later, clock=lambda: 1.0) as tape:
        tape.append(HarnessEvent(at=0.5, name="after the crash"))
    reader = TapeReader(path)
    got = {s.session_id: s.events for s in reader.sessions()}
    assert [n.kind for n in reader.notes if n.kind != "incomplete"] == ["truncated"]
    assert reader.notes[0].offset == start
    assert got.pop("00000000000000aa")[1:-1] == (HarnessEvent(at=0.5, name="after the crash"),)
    assert got == small.survivors(cut)
    assert len(got[sid]) == len(small.sessions[sid]) - 1


def test_a_file_holding_part_of_its_header_is_emptied_by_the_next_writer(tmp_path: Path) -> None:
    path = tmp_path / "h.tape"
    path.write_bytes(file_header("evaltape 0.0.1")[:9])
    reader = TapeReader(path)
    assert list(reader.sessions()) == []
    assert [n.kind for n in reader.notes] == ["truncated"]
    header = SessionStarted(session_id="00000000000000bb", started_at=0.0)
    open_session(path, header, clock=lambda: 1.0).end()
    (session,) = TapeReader(path).sessions()
    assert session.complete and session.header == header


# -- hostile frames ----------------------------------------------------------------

SID = bytes.fromhex("00000000000000cc")
GOOD = bytes.fromhex("00000000000000dd")


def _good_frames(tmp_path: Path, sid: str) -> bytes:
    """The frames of a complete session written by open_session."""
    path = tmp_path / f"{sid}.tape"
    with open_session(path, SessionStarted(session_id=sid, started_at=0.0), clock=lambda: 1.0):
        pass
    return path.read_bytes()[len(file_header(WRITER)) :]


def _hostile_tape(
    path: Path, second: Callable[[zstandard.ZstdCompressionObj], tuple[int, bytes]]
) -> int:
    """Session SID, whose second frame ``second`` builds (returning raw_len
    and payload), between two good sessions."""
    zstd = zstandard.ZstdCompressor().compressobj()
    start = msgpack.packb(to_plain(SessionStarted(session_id=SID.hex(), started_at=0.0)))
    p0 = zstd.compress(start) + zstd.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
    raw_len, p1 = second(zstd)
    before = (
        file_header("hostile 1.0")
        + _good_frames(path.parent, "00000000000000d1")
        + frame(FLAG_START, SID, 0, len(start), p0)
    )
    path.write_bytes(
        before + frame(0, SID, 1, raw_len, p1) + _good_frames(path.parent, "00000000000000d2")
    )
    return len(before)


def _packed(value: object) -> Callable[[zstandard.ZstdCompressionObj], tuple[int, bytes]]:
    raw = value if isinstance(value, bytes) else msgpack.packb(value)

    def build(zstd: zstandard.ZstdCompressionObj) -> tuple[int, bytes]:
        return len(raw), zstd.compress(raw) + zstd.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)

    return build


def _bomb(zstd: zstandard.ZstdCompressionObj) -> tuple[int, bytes]:
    """64 MiB of zeros in a few KiB, declared as 100 bytes."""
    payload = b"".join(zstd.compress(bytes(1 << 20)) for _ in range(64))
    payload += zstd.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
    assert len(payload) < 64 * 1024
    return 100, payload


def _oversized(zstd: zstandard.ZstdCompressionObj) -> tuple[int, bytes]:
    return MAX_EVENT_BYTES + 1, zstd.compress(b"\x80") + zstd.flush(
        zstandard.COMPRESSOBJ_FLUSH_BLOCK
    )


HOSTILE = {
    "raw length over the limit": (_oversized, "over the 268435456-byte limit"),
    "zstd bomb": (_bomb, "decompresses past its declared 100 bytes"),
    "deeply nested msgpack": (_packed(b"\x91" * 100_000 + b"\xc0"), "bad msgpack (StackError"),
    "event that is not a map": (_packed([1, 2, 3]), "event is a msgpack list, not a map"),
    "field of the wrong type": (
        _packed({"k": "harness", "at": "noon", "name": "x"}),
        "malformed 'harness' event: field 'at' holds str",
    ),
    "huge array header": (_packed(b"\x81\xa1k\xdd\xff\xff\xff\xff"), "bad msgpack"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_frames_are_refused_clearly_in_bounded_memory(tmp_path: Path, name: str) -> None:
    build, message = HOSTILE[name]
    path = tmp_path / "hostile.tape"
    offset = _hostile_tape(path, build)
    tracemalloc.start()
    try:
        with pytest.raises(CorruptTape, match=re.escape(message)) as info:
            list(TapeReader(path).sessions())
        reader = TapeReader(path, strict=False)
        got = {s.session_id: s for s in reader.sessions()}
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024, f"peak {peak} bytes"
    assert str(info.value).startswith(f"{path}: byte {offset}: ")
    assert [n.kind for n in reader.notes] == ["corrupt"]
    assert message in reader.notes[0].message
    assert got["00000000000000d1"].complete and got["00000000000000d2"].complete
    # Its start is intact; the hostile event is where it stops.
    assert len(got[SID.hex()].events) == 1
    assert not got[SID.hex()].complete
    assert got[SID.hex()].problem


# -- evaltape show ---------------------------------------------------------------


def _show(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "show", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
def test_show_on_a_corrupt_tape_names_the_offset_lists_the_rest_and_exits_1(
    tmp_path: Path,
) -> None:
    tape = _write(tmp_path / "good.tape", 3, 2, 0, seed=3, leave_open=False)
    victim = next(iter(tape.sessions))
    flip = tape.ends[victim][1] - 3  # inside the payload of its second frame
    data = bytearray(tape.data)
    data[flip] ^= 0x55
    path = tmp_path / "bad.tape"
    path.write_bytes(bytes(data))
    result = _show(str(path))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    offset = tape.starts[victim][1]
    assert line.startswith(f"evaltape: corrupt: {path}: byte {offset}: frame fails its CRC-32")
    for sid in tape.sessions:
        assert f"session {sid}:" in result.stdout
    (shown,) = [x for x in result.stdout.splitlines() if x.startswith(f"session {victim}:")]
    assert f"1 events, INCOMPLETE (frame 1 (byte {offset}) is corrupt)" in shown
    assert result.stdout.count(", complete") == len(tape.sessions) - 1


@pytest.mark.slow
def test_show_on_a_file_that_is_not_a_tape_prints_one_line_and_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "readme.md"
    path.write_text("# hello\n")
    result = _show(str(path))
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == f"evaltape: error: {path}: not an evaltape tape (bad magic)\n"


@pytest.mark.slow
def test_show_on_a_missing_file_prints_one_line_and_exits_1(tmp_path: Path) -> None:
    result = _show(str(tmp_path / "nope.tape"))
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "nope.tape" in result.stderr


@pytest.mark.slow
def test_reading_does_not_depend_on_the_environment(small: Written, tmp_path: Path) -> None:
    path = tmp_path / "env.tape"
    path.write_bytes(small.data)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_")} | {"LANG": "C"}
    result = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "show", "--json", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == sum(len(e) for e in small.sessions.values())
