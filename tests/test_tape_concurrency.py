"""Several processes (and threads) recording into one tape at the same time.

Each writer holds an exclusive flock for the single O_APPEND write of a frame,
so frames of different writers interleave but never mix; a writer killed at
any moment loses at most its unfinished session.
"""

from __future__ import annotations

import itertools
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evaltape.recorder import (
    Chunk,
    Event,
    Exchange,
    HarnessEvent,
    Request,
    Response,
    SessionEnded,
    SessionStarted,
    Status,
    TapeReader,
    open_session,
)

ROOT = Path(__file__).resolve().parents[1]

# A writer process: waits for the go file, then records `sessions` sessions of
# the same case, each `turns` exchanges, all built by `planned` below.
WRITER = """
import os, sys, time
sys.path[:0] = [{tests!r}, {root!r}]
from test_tape_concurrency import planned
from evaltape.recorder import open_session
path, go = sys.argv[1], sys.argv[5]
proc, sessions, turns = (int(a) for a in sys.argv[2:5])
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.001)
for i in range(sessions):
    header, events, end = planned(proc, i, turns)
    with open_session(path, header, clock=lambda: end.at) as tape:
        for event in events:
            tape.append(event)
            if i == sessions - 1 and proc < 0:
                print("appended", flush=True)
                time.sleep(0.005)
"""


def planned(proc: int, i: int, turns: int) -> tuple[SessionStarted, list[Event], SessionEnded]:
    """The deterministic session ``i`` of writer ``proc``: same case, growing chat."""
    header = SessionStarted(
        session_id=f"{proc & 0xFFFFFFFF:08x}{i:08x}",
        started_at=1_700_000_000.0 + i,
        case_id="same-case",
        attempt=i,
        model="m",
        metadata=(("writer", proc),),
    )
    events: list[Event] = []
    history = b""
    for t in range(turns):
        history += b'{"role":"user","content":"proc %d session %d turn %d"},' % (proc, i, t)
        body = b'{"model":"m","messages":[' + history + b'],"tools":[]}' + b" " * 100
        reply = tuple(Chunk(at=k * 0.01, data=b"data: %d\n\n" % k) for k in range(t + 2))
        events.append(
            Exchange(
                at=float(t),
                duration=0.1,
                request=Request(method="POST", url="http://127.0.0.1:1/v1/chat", body=body),
                response=Response(status=200, chunks=reply, streamed=True),
            )
        )
        events.append(HarnessEvent(at=t + 0.5, name="tool", fields=(("turn", t),)))
    return header, events, SessionEnded(at=float(turns), status=Status.COMPLETED)


def _start(path: Path, proc: int, sessions: int, turns: int, go: Path) -> subprocess.Popen[str]:
    code = WRITER.format(tests=str(ROOT / "tests"), root=str(ROOT))
    args = [str(path), str(proc), str(sessions), str(turns), str(go)]
    child = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "ready\n"
    return child


def _expected(proc: int, i: int, turns: int) -> tuple[Event, ...]:
    header, events, end = planned(proc, i, turns)
    return (header, *events, end)


@pytest.mark.slow
def test_processes_recording_into_one_file_at_once_all_read_back_exactly(tmp_path: Path) -> None:
    path = tmp_path / "shared.tape"
    go = tmp_path / "go"
    procs, sessions, turns = 3, 15, 6
    children = [_start(path, p, sessions, turns, go) for p in range(procs)]
    go.touch()
    for child in children:
        assert child.wait(timeout=120) == 0
    reader = TapeReader(path)
    got = {s.session_id: s for s in reader.sessions()}
    assert reader.notes == []
    assert len(got) == procs * sessions
    for p in range(procs):
        for i in range(sessions):
            session = got[f"{p:08x}{i:08x}"]
            assert session.complete
            assert session.events == _expected(p, i, turns)
    # The writers really ran at the same time: their frames interleave.
    listed = sorted(TapeReader(path).scan(), key=lambda info: info.offset)
    writers = [int(info.session_id[:8], 16) for info in listed]
    switches = sum(a != b for a, b in itertools.pairwise(writers))
    assert switches >= procs - 1
    assert sum(info.size for info in listed) + listed[0].offset == path.stat().st_size


@pytest.mark.slow
def test_a_writer_killed_mid_session_loses_only_that_session(tmp_path: Path) -> None:
    path = tmp_path / "killed.tape"
    go = tmp_path / "go"
    go.touch()
    turns = 60  # far more than it gets through before the kill
    child = _start(path, -1, 3, turns, go)
    assert child.stdout is not None
    for _ in range(5):
        assert child.stdout.readline() == "appended\n"
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    reader = TapeReader(path)
    got = {s.session_id: s for s in reader.sessions()}
    assert [n.kind for n in reader.notes if n.kind != "truncated"] == ["incomplete"]
    killed = got.pop(f"{-1 & 0xFFFFFFFF:08x}{2:08x}")
    assert not killed.complete
    assert "no end event" in killed.problem
    expected = _expected(-1, 2, turns)
    assert 6 <= len(killed.events) < len(expected)
    assert killed.events == expected[: len(killed.events)]
    for i in range(2):
        assert got.pop(f"{-1 & 0xFFFFFFFF:08x}{i:08x}").events == _expected(-1, i, turns)
    assert got == {}

    # A later writer appends to the same file; everything stays readable.
    header, events, end = planned(7, 0, 3)
    with open_session(path, header, clock=lambda: end.at) as tape:
        for event in events:
            tape.append(event)
    again = {s.session_id: s for s in TapeReader(path).sessions()}
    assert again[f"{7:08x}{0:08x}"].events == _expected(7, 0, 3)
    assert again[killed.session_id].events == killed.events
    assert len(again) == 4


def test_threads_sharing_one_file_each_with_their_own_sessions(tmp_path: Path) -> None:
    path = tmp_path / "threads.tape"
    errors: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(5):
                header, events, end = planned(100 + t, i, 4)
                with open_session(path, header, clock=lambda end=end: end.at) as tape:
                    for event in events:
                        tape.append(event)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    got = {s.session_id: s.events for s in TapeReader(path).sessions()}
    assert got == {
        f"{100 + t:08x}{i:08x}": _expected(100 + t, i, 4) for t in range(4) for i in range(5)
    }


def test_a_reader_sees_a_file_being_written_as_complete_sessions_plus_unfinished_ones(
    tmp_path: Path,
) -> None:
    path = tmp_path / "live.tape"
    header, events, end = planned(9, 0, 3)
    tape = open_session(path, header, clock=lambda: end.at)
    tape.append(events[0])
    reader = TapeReader(path)
    (session,) = reader.sessions()
    assert session.events == (header, events[0]) and not session.complete
    assert [n.kind for n in reader.notes] == ["incomplete"]
    for event in events[1:]:
        tape.append(event)
    tape.end()
    (session,) = TapeReader(path).sessions()
    assert session.complete and session.events == _expected(9, 0, 3)
