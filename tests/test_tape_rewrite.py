"""rewrite_tape replaces sessions of a tape atomically; a kill mid-rewrite keeps the old tape."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evaltape.recorder import HarnessEvent, SessionStarted, TapeError, TapeReader, open_session
from evaltape.recorder._shared import rewrite_tape
from evaltape.recorder.tape import new_session_id


def _write(path: Path, case: str, n: int) -> str:
    sid = new_session_id()
    header = SessionStarted(session_id=sid, started_at=1.0, case_id=case, model="m")
    with open_session(path, header) as tape:
        for i in range(n):
            tape.append(HarnessEvent(at=float(i), name=f"{case}-{i}"))
    return sid


def _summary(path: Path) -> list[tuple[str, str, int, bool]]:
    return [
        (s.session_id, s.header.case_id, len(s.events), s.complete)
        for s in TapeReader(path).sessions()
    ]


def test_rewrite_drops_and_adds_sessions_byte_for_byte(tmp_path: Path) -> None:
    tape, other = tmp_path / "a.tape", tmp_path / "b.tape"
    keep, old = _write(tape, "keep", 3), _write(tape, "old", 2)
    new, unrelated = _write(other, "new", 4), _write(other, "unrelated", 1)
    before = {s.session_id: s.events for s in TapeReader(tape).sessions()}
    added = {s.session_id: s.events for s in TapeReader(other).sessions()}

    rewrite_tape(tape, drop={old}, source=other, add={new})

    sessions = list(TapeReader(tape).sessions())
    assert [s.session_id for s in sessions] == [keep, new]
    assert sessions[0].events == before[keep] and sessions[1].events == added[new]
    assert unrelated not in {s.session_id for s in sessions}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tape", "b.tape"]  # no temp left


def test_adding_a_session_already_there_replaces_it_and_a_missing_tape_is_created(
    tmp_path: Path,
) -> None:
    source, fresh = tmp_path / "s.tape", tmp_path / "sub.tape"
    sid = _write(source, "c", 2)
    rewrite_tape(fresh, source=source, add={sid})
    rewrite_tape(fresh, source=source, add={sid})
    assert _summary(fresh) == [(sid, "c", 4, True)]


def test_a_session_missing_from_the_source_is_refused_and_the_tape_unchanged(
    tmp_path: Path,
) -> None:
    tape, source = tmp_path / "a.tape", tmp_path / "s.tape"
    _write(tape, "keep", 1)
    _write(source, "x", 1)
    data = tape.read_bytes()
    with pytest.raises(TapeError, match="no session 0000000000000000"):
        rewrite_tape(tape, source=source, add={"0000000000000000"})
    assert tape.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tape", "s.tape"]


CHILD = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from evaltape.recorder._shared import rewrite_tape

    tape, source, drop, add, marker = sys.argv[1:]

    def written(tmp: Path) -> None:
        Path(marker + ".part").write_text(str(tmp))
        os.replace(marker + ".part", marker)  # the parent never sees a half-written marker
        while True:
            time.sleep(60)

    rewrite_tape(tape, drop={drop}, source=source, add={add}, on_written=written)
    """
)


@pytest.mark.slow
def test_sigkill_during_the_rewrite_leaves_the_old_tape_readable_and_complete(
    tmp_path: Path,
) -> None:
    tape, source, marker = tmp_path / "a.tape", tmp_path / "s.tape", tmp_path / "written"
    keep, old = _write(tape, "keep", 3), _write(tape, "old", 2)
    new = _write(source, "new", 5)
    data, before = tape.read_bytes(), _summary(tape)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tape), str(source), old, new, str(marker)]
    )
    try:
        # The child writes the marker once the temporary file is complete and fsynced.
        while not marker.exists():
            assert child.poll() is None, "the rewrite ended before writing its temporary file"
            os.sched_yield()
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL
    tmp = Path(marker.read_text())
    assert tmp.parent == tmp_path and tmp.name.startswith("a.tape.tmp-")
    assert tmp.exists()  # the new tape was written, never moved over the old one
    assert tape.read_bytes() == data
    assert _summary(tape) == before == [(keep, "keep", 5, True), (old, "old", 4, True)]
    assert [s.session_id for s in TapeReader(tmp).sessions()] == [keep, new]
