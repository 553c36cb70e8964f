"""Whatever is written with open_session reads back exactly, alone or interleaved."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import attrs
import msgpack
import pytest
import zstandard
from builders import OldPacker
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import SessionPlan, record, session_plans

from evaltape.recorder import (
    Exchange,
    HarnessEvent,
    Request,
    Response,
    SessionStarted,
    Status,
    TapeError,
    TapeReader,
    open_session,
)
from evaltape.recorder._shared import to_plain
from evaltape.recorder.tape import NewerFormat, NotATape, new_session_id
from evaltape.recorder.tape._frames import FLAG_END, FLAG_START, MAGIC, frame
from evaltape.recorder.tape._pack import Packer

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read_all(path: Path) -> dict[str, tuple[object, ...]]:
    reader = TapeReader(path)
    sessions = {s.session_id: s for s in reader.sessions()}
    assert reader.notes == []
    assert all(s.complete and not s.problem for s in sessions.values())
    return {sid: s.events for sid, s in sessions.items()}


@pytest.mark.slow
@FAST
@given(plan=session_plans())
def test_any_session_round_trips_event_for_event(plan: SessionPlan) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "one.tape"
        record(path, plan)
        assert _read_all(path) == {plan.header.session_id: plan.expected()}
        (info,) = TapeReader(path).scan()
        assert info.header == plan.header
        assert info.complete
        assert info.frames == len(plan.expected())
        assert info.size == path.stat().st_size - info.offset


@pytest.mark.slow
@settings(FAST, max_examples=20)
@given(
    plans=st.lists(
        session_plans(max_events=5), min_size=2, max_size=4, unique_by=lambda p: p.header.session_id
    ),
    schedule=st.lists(st.integers(0, 3), max_size=40),
)
def test_sessions_written_alternately_into_one_file_read_back_exactly(
    plans: list[SessionPlan], schedule: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "many.tape"
        writers = [open_session(path, p.header, clock=lambda p=p: p.end_at) for p in plans]
        todo = [list(p.events) for p in plans]
        # Append in the drawn order, then drain what is left round-robin.
        order = [i % len(plans) for i in schedule] + [
            i for _ in range(max(map(len, todo), default=0)) for i in range(len(plans))
        ]
        for i in order:
            if todo[i]:
                writers[i].append(todo[i].pop(0))
        for writer, plan in zip(reversed(writers), reversed(plans), strict=True):
            writer.end(plan.status, plan.reason)
        assert _read_all(path) == {p.header.session_id: p.expected() for p in plans}
        listed = {i.session_id: i for i in TapeReader(path).scan()}
        assert {sid: (i.header, i.frames, i.complete) for sid, i in listed.items()} == {
            p.header.session_id: (p.header, len(p.expected()), True) for p in plans
        }


def test_growing_conversation_bodies_are_stored_as_deltas_against_recent_ones() -> None:
    a = b'{"messages":[' + b"m" * 500
    b = b'{"messages":[' + b"n" * 500
    bodies = (a + b"]}", b + b"]}", a + b",turn2]}", b + b",turn2]}")
    events = [
        Exchange(at=0.0, duration=0.0, request=Request(method="POST", url="u", body=body))
        for body in bodies
    ]
    v1, compact = OldPacker("exchange"), Packer()
    stored = [msgpack.unpackb(v1.pack(to_plain(e)))["request"] for e in events]
    assert "base" not in stored[0] and "base" not in stored[1]
    # Each new turn refers to its own conversation, two bodies back.
    assert stored[2]["base"] == [2, len(a), 2] and stored[2]["body"] == b",turn2"
    assert stored[3]["base"] == [2, len(b), 2] and stored[3]["body"] == b",turn2"
    # The compact exchange (format 1.1) holds the same reference, the prefix given
    # as the base bytes it skips (0 here: the new turn is inserted).
    q = [msgpack.unpackb(compact.pack(to_plain(e)))["x"][2] for e in events]
    assert [x[4] for x in q] == [None, None, [2, 0, 2], [2, 0, 2]]
    assert [x[3] for x in q][2:] == [b",turn2", b",turn2"]


def test_event_msgpack_cannot_hold_is_refused_and_the_session_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "t.tape"
    header = SessionStarted(session_id=new_session_id(), started_at=0.0)
    first = b"{" + b"x" * 300 + b"}"
    refused = b"{" + b"y" * 300 + b"}"

    def exchange(body: bytes, status: int = 200) -> Exchange:
        response = Response(status=status)
        return Exchange(
            at=0.0,
            duration=0.0,
            request=Request(method="POST", url="u", body=body),
            response=response,
        )

    with open_session(path, header, clock=lambda: 2.0) as tape:
        tape.append(exchange(first))
        with pytest.raises(TapeError, match="cannot record Exchange: OverflowError"):
            tape.append(exchange(refused, status=2**70))
        # Shares a long prefix with the refused body, which the reader never saw.
        tape.append(exchange(refused + b"1"))
    (session,) = TapeReader(path).sessions()
    assert session.complete
    assert list(session.events[1:-1]) == [exchange(first), exchange(refused + b"1")]


def test_a_file_that_is_not_a_tape_is_refused_by_reader_and_writer(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just some notes, not a tape\n")
    with pytest.raises(NotATape, match=r"notes\.txt: not an evaltape tape"):
        TapeReader(path)
    header = SessionStarted(session_id=new_session_id(), started_at=0.0)
    with pytest.raises(NotATape, match="not appending"):
        open_session(path, header)
    assert path.read_text() == "just some notes, not a tape\n"


def _file_header(major: int, minor: int, writer: bytes) -> bytes:
    """The file header as docs/format.md specifies it, built independently."""
    head = struct.pack("<8sHHH", MAGIC, major, minor, len(writer)) + writer
    return head + struct.pack("<I", zlib.crc32(head))


def test_a_tape_from_a_newer_major_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.tape"
    path.write_bytes(_file_header(3, 0, b"evaltape 9.1.0") + b"\xf0\x9f\x93\xbc" + b"?" * 40)
    with pytest.raises(NewerFormat) as info:
        TapeReader(path, strict=False)
    assert "written by evaltape 9.1.0" in str(info.value)
    assert "upgrade" in str(info.value)
    with pytest.raises(NewerFormat, match="upgrade"):
        open_session(path, SessionStarted(session_id=new_session_id(), started_at=0.0))


def test_a_newer_minor_version_with_an_unknown_event_kind_skips_just_that_event(
    tmp_path: Path,
) -> None:
    path = tmp_path / "minor.tape"
    sid = new_session_id()
    header = SessionStarted(session_id=sid, started_at=5.0, model="m")
    known = [HarnessEvent(at=1.0, name="before"), HarnessEvent(at=3.0, name="after")]
    plains = [
        to_plain(header),
        to_plain(known[0]),
        {"k": "telepathy", "at": 2.0, "thought": "hello", "request": {"body": b"x" * 100}},
        to_plain(known[1]),
        {"k": "session_ended", "at": 4.0, "status": "completed", "new_field": [1, 2]},
    ]
    packer = Packer()
    zstd = zstandard.ZstdCompressor().compressobj()
    data = _file_header(1, 7, b"evaltape 1.9.0")
    for seq, plain in enumerate(plains):
        raw = packer.pack(plain)
        last = seq == len(plains) - 1
        payload = zstd.compress(raw) + zstd.flush(
            zstandard.COMPRESSOBJ_FLUSH_FINISH if last else zstandard.COMPRESSOBJ_FLUSH_BLOCK
        )
        flags = (FLAG_START if seq == 0 else 0) | (FLAG_END if last else 0)
        data += frame(flags, bytes.fromhex(sid), seq, len(raw), payload)
    path.write_bytes(data)
    reader = TapeReader(path)
    (session,) = reader.sessions()
    assert reader.header is not None and (reader.header.major, reader.header.minor) == (1, 7)
    assert session.complete
    assert session.events[:-1] == (header, *known)
    assert session.events[-1].status is Status.COMPLETED  # type: ignore[union-attr]
    (note,) = reader.notes
    assert note.kind == "skipped"
    assert "unknown event kind 'telepathy'" in note.message
    assert "evaltape 1.9.0" in note.message
    # Appending to it with this version keeps the file readable.
    record(tmp_path / "minor.tape", _plain_plan())
    assert len(list(TapeReader(path).sessions())) == 2


def _plain_plan() -> SessionPlan:
    return SessionPlan(
        header=SessionStarted(session_id=new_session_id(), started_at=1.0),
        events=(HarnessEvent(at=0.5, name="x"),),
        status=Status.COMPLETED,
        reason="",
        end_at=1.0,
    )


@pytest.mark.slow
def test_git_diff_of_a_tape_shows_the_changed_events_as_json(tmp_path: Path) -> None:
    """The textconv recipe of docs/show.md, run for real in a scratch repository."""
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "evaltape").exists() or shutil.which("git") is None:
        pytest.skip("needs git and the evaltape script next to this Python")
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    git("init", "-q")
    (repo / ".gitattributes").write_text("*.tape diff=evaltape\n")
    git("config", "diff.evaltape.textconv", "evaltape show --json")
    tape = repo / "cassette.tape"
    first = _plain_plan()
    record(tape, first)
    git("add", ".")
    git("commit", "-q", "-m", "one session")
    second = attrs.evolve(
        _plain_plan(), events=(HarnessEvent(at=0.25, name="permission", fields=(("ok", True),)),)
    )
    record(tape, second)
    diff = git("diff", "cassette.tape")
    added = [line[1:] for line in diff.splitlines() if line.startswith("+{")]
    assert [json.loads(line) for line in added] == [
        {"session": second.header.session_id, **_json(e)} for e in second.expected()
    ]
    assert not [line for line in diff.splitlines() if line.startswith("-{")]
    assert "Binary files" not in diff


def _json(event: object) -> dict[str, object]:
    return json.loads(json.dumps(to_plain(event), default=lambda b: b.decode()))  # type: ignore[arg-type]
