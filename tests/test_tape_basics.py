"""A session written with open_session reads back event for event."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from builders import exchange

from evaltape.recorder import SessionStarted, Status, TapeReader, open_session
from evaltape.recorder.tape import new_session_id


def test_written_session_reads_back_identically(tmp_path: Path) -> None:
    path = tmp_path / "a.tape"
    header = SessionStarted(session_id=new_session_id(), started_at=1.5, case_id="c", model="m")
    written = []
    ticks = iter([9.0])
    with open_session(path, header, clock=lambda: next(ticks)) as tape:
        history = b""
        for i in range(10):
            history += b'{"role":"user","content":"turn %d"},' % i
            event = exchange(
                "http://127.0.0.1/v1/chat/completions",
                b'{"messages":[' + history + b'],"tools":[]}',
                b"data: {}\n\n",
                at=float(i),
                duration=0.5,
                chunk_at=0.1,
                streamed=True,
            )
            tape.append(event)
            written.append(event)
    (session,) = TapeReader(path).sessions()
    assert session.complete
    assert session.events[0] == header
    assert list(session.events[1:-1]) == written
    assert session.events[-1].status is Status.COMPLETED  # type: ignore[union-attr]
    assert session.events[-1].at == 9.0  # type: ignore[union-attr]


@pytest.mark.slow
def test_show_lists_the_demo_tape(tmp_path: Path) -> None:
    path = tmp_path / "demo.tape"
    root = Path(__file__).resolve().parents[1]
    subprocess.run(
        [sys.executable, str(root / "evals" / "make_demo_tape.py"), str(path)], check=True
    )
    out = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "show", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "case demo/read-file" in out
    assert "hand-written script" in out
    assert "end    completed" in out


@pytest.mark.slow
def test_show_refuses_what_is_not_a_readable_file_in_one_line(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.tape"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    for path, said in ((fifo, "not a regular file"), (Path("/proc/self/mem"), "cannot read")):
        done = subprocess.run(
            [sys.executable, "-m", "evaltape.scoring.cli", "show", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode != 0
        (line,) = done.stderr.splitlines()
        assert line.startswith(f"evaltape: error: {path}: {said}")
        assert "Traceback" not in done.stderr
