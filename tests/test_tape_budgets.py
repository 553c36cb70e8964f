"""Whole-tape work bounds of ``show``, ``lint`` and ``rescore``.

A tape of a few KB can hold many sessions whose request bodies are empty
deltas of one big body: each session stays under its own budget, yet the tape
as a whole decodes to gigabytes, which ``lint`` scans and ``show --json``
prints.  The commands count decoded bytes over the whole tape and refuse it
with one line and exit 2.  The tests lower ``MAX_TAPE_BYTES`` so the tapes stay
small; the counting is the same at the real limit.  Work is counted in bytes
(decoded, printed), never in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import packed_tape
from click.testing import CliRunner

from evaltape.recorder import (
    Chunk,
    Exchange,
    FileEntry,
    HarnessEvent,
    Mode,
    Request,
    Response,
    SessionEnded,
    SessionStarted,
    Status,
    TapeReader,
    WorkspaceSnapshot,
    fold,
    open_session,
)
from evaltape.recorder._shared import OverBudget, to_plain
from evaltape.recorder.tape._frames import file_header
from evaltape.scoring import load_suites, make_scorer, score_session
from evaltape.scoring.checks import _outcome
from evaltape.scoring.cli import lint as lint_module
from evaltape.scoring.cli import show as show_module
from evaltape.scoring.cli.main import cli
from evaltape.scoring.run.attempt import _workspace
from evaltape.scoring.run.executors._process_rescore import process_rescorer
from evaltape.scoring.run.rescore import _rescore
from evaltape.scoring.run.rescore._tapes import rescore_on

BODY = 256 * 1024
COPIES = 3
SESSIONS = 4
LIMIT = 2 * 1024 * 1024
"""The lowered whole-tape budget: two sessions' worth (each decodes to about 1 MiB)."""


def _exchange(body: bytes) -> Exchange:
    return Exchange(
        at=0.0,
        duration=0.0,
        request=Request(method="POST", url="https://api.openai.com/v1/x", headers=(), body=body),
        response=Response(status=200, headers=(), chunks=(Chunk(at=0.0, data=b"{}"),)),
    )


def _many_bombs(path: Path) -> None:
    """``SESSIONS`` sessions, each one real body and ``COPIES`` empty deltas rebuilding it."""
    parts = [file_header("test")]
    for n in range(SESSIONS):
        sid = f"{n + 1:016x}"
        start = SessionStarted(
            session_id=sid, started_at=0.0, case_id="c", model="m", mode=Mode.LIVE
        )
        delta = to_plain(_exchange(b""))
        delta["request"] = {**delta["request"], "base": [1, BODY, 0]}
        plains = [to_plain(start), to_plain(_exchange(b" " * BODY)), *[delta] * COPIES]
        plains.append(to_plain(SessionEnded(at=1.0, status=Status.COMPLETED)))
        one = path.with_suffix(f".{n}")
        packed_tape(one, sid, plains)
        parts.append(one.read_bytes()[len(parts[0]) :])
        one.unlink()
    path.write_bytes(b"".join(parts))


@pytest.fixture
def bomb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for module in (show_module, lint_module, _rescore):
        monkeypatch.setattr(module, "MAX_TAPE_BYTES", LIMIT)
    path = tmp_path / "bomb.tape"
    _many_bombs(path)
    assert path.stat().st_size < 16 * 1024
    # every session is within its own budget: read without a tape budget, all are there
    assert len(list(TapeReader(path).sessions())) == SESSIONS
    return path


def _refusal(path: Path) -> str:
    return f"evaltape: error: {path}: the tape decodes past the 2 MiB a command reads of one tape"


@pytest.mark.parametrize("args", [["show"], ["show", "--json"], ["show", "--full"], ["lint"]])
def test_a_tape_past_the_whole_tape_budget_is_one_line_and_exit_2(
    bomb: Path, args: list[str]
) -> None:
    done = CliRunner().invoke(cli, [*args, str(bomb)])
    assert done.exit_code == 2, done.output
    errors = [line for line in done.stderr.splitlines() if line.startswith("evaltape: error:")]
    assert len(errors) == 1
    assert errors[0].startswith(_refusal(bomb))
    assert "Traceback" not in done.output
    # refused part-way: the sessions past the budget were never decoded or printed
    assert len(done.stdout.encode()) < 64 * 1024


@pytest.mark.parametrize("where", ["here", "processes"])
def test_rescore_refuses_a_tape_past_the_whole_tape_budget(
    bomb: Path, tmp_path: Path, where: str
) -> None:
    suites = tmp_path / "evals"
    suites.mkdir()
    case = {"id": "c", "prompt": "p", "failureCategory": "f", "whyModelBacked": "w"}
    (suites / "s.jsonl").write_text(json.dumps({**case, "expectMaxTurns": 5}) + "\n")
    cases = {c.id: c for s in load_suites([suites], rubrics_dir=tmp_path) for c in s.cases}
    # in processes, the sessions decode there and the counts come back to the reader
    pool = process_rescorer(processes=2, batch=1) if where == "processes" else None
    with pytest.raises(OverBudget, match="the tape decodes past the 2 MiB") as caught:
        rescore_on(pool, [bomb], cases, make_scorer(), cassettes=tmp_path, results=tmp_path)
    assert str(caught.value).startswith(f"{bomb}: ")


def _long_tape(path: Path, size: int) -> None:
    start = SessionStarted(session_id="00000000000000c1", started_at=0.0, case_id="c", model="m")
    with open_session(path, start) as writer:
        writer.append(_exchange(b"a" * size))
        writer.append(HarnessEvent(at=0.1, name="note", fields=(("text", "b" * size),)))
        writer.end(Status.COMPLETED)


def test_show_cuts_long_bodies_and_fields_unless_full(tmp_path: Path) -> None:
    path = tmp_path / "long.tape"
    size = 200_000
    _long_tape(path, size)
    cut = show_module.CUT
    runner = CliRunner()
    for args in (["--json"], []):
        done = runner.invoke(cli, ["show", *args, str(path)])
        assert done.exit_code == 0, done.output
        assert len(done.stdout.encode()) < 4 * (cut + 1024)
    human = runner.invoke(cli, ["show", str(path)]).stdout
    assert "b" * 100 + "… " in human and " more characters (sha256 " in human
    brief = runner.invoke(cli, ["show", "--json", str(path)]).stdout.splitlines()
    body = json.loads(brief[1])["request"]["body"]
    assert body.startswith("a" * cut + f"… {size - cut} more bytes (sha256 ")
    full = runner.invoke(cli, ["show", "--json", "--full", str(path)])
    assert full.exit_code == 0
    assert json.loads(full.stdout.splitlines()[1])["request"]["body"] == "a" * size
    assert "more bytes" not in full.stdout


def test_a_snapshot_past_the_file_budget_fails_its_check_in_one_line(tmp_path: Path) -> None:
    count = _outcome.MAX_SNAPSHOT_FILES + 1
    files = tuple(FileEntry(path=f"f{n}", data=b"") for n in range(count))
    header = SessionStarted(session_id="ef" * 8, started_at=0.0, case_id="c", model="m")
    session = fold(
        [
            header,
            WorkspaceSnapshot(at=1.0, files=files),
            SessionEnded(at=1.5, status=Status.COMPLETED),
        ]
    )
    suite = tmp_path / "s.jsonl"
    case = {"id": "c", "prompt": "p", "failureCategory": "f", "whyModelBacked": "w"}
    suite.write_text(json.dumps({**case, "files": {"f0": ""}, "verify": ["true"]}) + "\n")
    ((loaded,),) = (s.cases for s in load_suites([suite], rubrics_dir=tmp_path))
    score = score_session(loaded, session)
    assert not score.passed
    assert score.reason == (
        f"the workspace snapshot holds {count} files, over the "
        f"{_outcome.MAX_SNAPSHOT_FILES} a check restores; not restored"
    )


def test_a_recording_keeps_at_most_the_file_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_workspace, "MAX_SNAPSHOT_FILES", 3)
    for n in range(5):
        (tmp_path / f"f{n}").write_text("x")
    snapshot = _workspace.snapshot_workspace(tmp_path, at=0.0)
    assert [f.path for f in snapshot.files] == ["f0", "f1", "f2"]
    assert snapshot.omitted == ("f3", "f4")
