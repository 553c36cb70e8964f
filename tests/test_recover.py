"""A crashed run: told apart from a live one (pid, heartbeat, an injected clock), closed by
``recover_run`` and ``evaltape recover`` with its journals turned into sessions, and its
record kept current as each attempt finishes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest
from builders import chat_exchange
from click.testing import CliRunner, Result

from evaltape.recorder import Event, SessionEnded, SessionStarted, Status, TapeReader
from evaltape.recorder.tape import Journal, SessionBuffer, append_session, journal_path
from evaltape.scoring import (
    AttemptResult,
    RecoverOutcome,
    RecoverRefused,
    RecoverRequest,
    RunKind,
    RunLog,
    RunRecord,
    RunState,
    Verdict,
    read_history,
    read_record,
    recover_run,
)
from evaltape.scoring.cli.main import cli
from evaltape.scoring.results._record_files import write_record

RUN = "20261203T070000.000Z-abc123"
SESSION = "00000000000000c1"
STARTED = 1_000.0
STALE = 30.0
"""Seconds without a heartbeat after which a run counts as crashed (six beats of 5 s)."""


def _gone(pid: int) -> bool:
    return False


def _alive(pid: int) -> bool:
    return True


def _record(tmp_path: Path, **fields: object) -> RunRecord:
    record = RunRecord(
        run_id=RUN,
        kind=RunKind.LIVE,
        state=RunState.RUNNING,
        started_at=STARTED,
        models=("fake-1",),
        suites=("basic",),
        total=3,
        heartbeat_at=STARTED,
        workspaces=str(tmp_path / "tmp" / f"evaltape-run-{RUN}"),
    )
    return attrs.evolve(record, **fields)  # type: ignore[misc]


def _attempt(case: str, n: int) -> AttemptResult:
    return AttemptResult(
        case_id=case, suite="basic", model="fake-1", attempt=n, verdict=Verdict.PASSED
    )


def _start(results: Path, record: RunRecord, finished: int = 1) -> RunLog:
    """The record as a driver writes it, with ``finished`` attempts done."""
    log = RunLog(results, record, clock=lambda: STARTED)
    log.start()
    for n in range(finished):
        log.add(_attempt("quick", n))
    return log


def _in_flight(results: Path, turns: int) -> tuple[Path, SessionBuffer, tuple[Event, ...]]:
    """A session of the run still being recorded: its journal holds ``turns`` exchanges."""
    tape = results / "tapes" / RUN / "basic" / "long.tape"
    header = SessionStarted(
        session_id=SESSION,
        started_at=STARTED,
        case_id="long",
        attempt=0,
        model="fake-1",
        metadata=(("suite", "basic"), ("run_id", RUN)),
    )
    buffer = SessionBuffer(
        header, clock=lambda: 9.0, sink=Journal(journal_path(tape, SESSION), SESSION)
    )
    events: list[Event] = [header]
    messages: list[dict[str, object]] = []
    for t in range(turns):
        messages.append({"role": "user", "content": f"turn {t}"})
        exchange = chat_exchange(float(t), list(messages), {"content": f"answer {t}"})
        buffer.append(exchange)
        events.append(exchange)
    return tape, buffer, tuple(events)


def _workspaces(tmp_path: Path) -> Path:
    folder = tmp_path / "tmp" / f"evaltape-run-{RUN}"
    (folder / "evaltape-a1b2c3").mkdir(parents=True)
    (folder / "evaltape-a1b2c3" / "notes.txt").write_text("left behind")
    (tmp_path / "tmp" / "evaltape-someone-else").mkdir()
    return folder


def _recover(results: Path, *, now: float, alive: Callable[[int], bool] = _gone) -> RecoverOutcome:
    return recover_run(RecoverRequest(results=results, run=RUN, clock=lambda: now, alive=alive))


def _cli(results: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--results", str(results)])


def test_a_journal_becomes_an_interrupted_session_and_the_record_is_closed(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    _start(results, _record(tmp_path))
    tape, _buffer, events = _in_flight(results, turns=3)
    workspaces = _workspaces(tmp_path)

    outcome = _recover(results, now=STARTED + 1)

    assert "pid" in outcome.why and outcome.workspaces == 1 and outcome.problems == ()
    (session,) = TapeReader(tape).sessions()
    end = session.events[-1]
    assert session.events[:-1] == events  # every journalled event, in order
    assert isinstance(end, SessionEnded) and end.status is Status.INTERRUPTED
    assert end.reason.startswith("recovered after a crash: its driver")
    assert end.at == 2.0  # the last exchange's time, not the recovery's
    assert not journal_path(tape, SESSION).exists()
    assert not workspaces.exists() and (tmp_path / "tmp" / "evaltape-someone-else").is_dir()

    record = read_record(outcome.record_path)
    assert record.state is RunState.CRASHED and record.finished_at == STARTED + 1
    quick, long = record.attempts
    assert quick.verdict is Verdict.PASSED
    assert (long.case_id, long.suite, long.attempt, long.verdict, long.tainted) == (
        "long", "basic", 0, Verdict.INTERRUPTED, True,
    )  # fmt: skip
    assert long.tape == f"tapes/{RUN}/basic/long.tape" and long.session_id == SESSION
    assert "1 planned attempt(s) never started" in record.notes
    (entry,) = read_history(results)
    assert entry.state is RunState.CRASHED
    assert [(m.passed, m.total) for m in entry.models] == [(1, 1)]  # interrupted: not counted


def test_a_live_driver_is_refused_until_its_heartbeat_is_stale(tmp_path: Path) -> None:
    results = tmp_path / "results"
    _start(results, _record(tmp_path))
    _in_flight(results, turns=1)
    with pytest.raises(RecoverRefused, match=r"is still running .* last heartbeat 29 s ago"):
        _recover(results, now=STARTED + STALE - 1, alive=_alive)
    assert read_record(results / "runs" / f"{RUN}.json").state is RunState.RUNNING
    outcome = _recover(results, now=STARTED + STALE + 1, alive=_alive)
    assert outcome.why.startswith("no heartbeat for 31 s")
    assert outcome.record.state is RunState.CRASHED and len(outcome.sessions) == 1


def test_a_record_from_before_heartbeats_is_never_crashed_by_its_age(tmp_path: Path) -> None:
    results = tmp_path / "results"
    _start(results, _record(tmp_path, heartbeat_at=None))
    with pytest.raises(RecoverRefused, match="still running"):
        _recover(results, now=STARTED + 86_400, alive=_alive)


def test_a_finished_run_and_an_unknown_run_are_refused(tmp_path: Path) -> None:
    results = tmp_path / "results"
    _start(results, _record(tmp_path)).finish(RunState.COMPLETED)
    with pytest.raises(RecoverRefused, match=r"ended \(completed\); there is nothing to recover"):
        _recover(results, now=STARTED + 100)
    with pytest.raises(RecoverRefused, match="no run"):
        recover_run(RecoverRequest(results=results, run="1999", clock=lambda: STARTED))


def test_a_session_already_whole_on_its_tape_is_not_written_twice(tmp_path: Path) -> None:
    results = tmp_path / "results"
    _start(results, _record(tmp_path))
    tape, buffer, _events = _in_flight(results, turns=2)
    buffer.end()
    append_session(tape, buffer.data)  # then the driver died before recording it

    outcome = _recover(results, now=STARTED + 1)

    (session,) = TapeReader(tape).sessions()
    end = session.events[-1]
    assert isinstance(end, SessionEnded) and end.status is Status.COMPLETED
    (recovered,) = outcome.sessions
    assert not recovered.written and recovered.exchanges == 2
    assert recovered.attempt.verdict is Verdict.INTERRUPTED
    assert "before the run record took it" in recovered.attempt.reason
    assert not journal_path(tape, SESSION).exists()


def test_a_workspace_folder_not_named_for_the_run_is_left_alone(tmp_path: Path) -> None:
    results = tmp_path / "results"
    precious = tmp_path / "precious"
    (precious / "evaltape-a1b2c3").mkdir(parents=True)
    _start(results, _record(tmp_path, workspaces=str(precious)))

    done = _cli(results, "recover", RUN)

    assert done.exit_code == 1, done.output
    assert f"{precious}: not the workspace folder of run {RUN}; left alone" in done.stderr
    assert (precious / "evaltape-a1b2c3").is_dir()
    assert read_record(results / "runs" / f"{RUN}.json").state is RunState.CRASHED


def _dead_pid() -> int:
    """The pid of a process this test started and reaped: no process has it now."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_status_shows_a_run_whose_driver_is_gone_as_crashed_and_offers_recover(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    log = _start(results, _record(tmp_path))
    record = read_record(log.path)
    assert record.pid is not None and record.host
    dead = _dead_pid()
    write_record(results, attrs.evolve(record, pid=dead))

    shown = _cli(results, "status", "--json")
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout)
    assert data["state"] == "crashed" and data["crashed"] == f"its driver (pid {dead}) is gone"
    assert data["recover"] == f"evaltape recover {RUN}" and data["pid"] == dead
    text = _cli(results, "status").stdout
    assert f"recover   evaltape recover {RUN}" in text
    assert "state     crashed (the record says running, but its driver" in text
    export = _cli(results, "export", RUN)
    assert export.exit_code == 2
    assert f"crashed (its driver (pid {dead}) is gone); close it first with `evaltape recover" in (
        export.stderr
    )

    write_record(results, attrs.evolve(record, heartbeat_at=time.time()))  # this process
    live = json.loads(_cli(results, "status", "--json").stdout)
    assert live["crashed"] == "" and live["recover"] == ""


def test_the_record_on_disk_holds_each_attempt_as_soon_as_it_is_added(tmp_path: Path) -> None:
    results = tmp_path / "results"
    log = _start(results, _record(tmp_path), finished=0)
    for n in range(3):
        log.add(_attempt("quick", n))  # the clock never moves: no interval can hold it back
        assert read_record(log.path).completed == n + 1


def test_the_heartbeat_rewrites_the_record_with_the_clock_s_time(tmp_path: Path) -> None:
    results = tmp_path / "results"
    now = [STARTED]
    beaten = threading.Event()

    def clock() -> float:
        if now[0] > STARTED + 1:  # asked by the second beat: the first one is on disk
            beaten.set()
        now[0] += 1.0
        return now[0]

    log = RunLog(results, _record(tmp_path, heartbeat_at=None), clock=clock, heartbeat=0.01)
    first = log.start()
    assert first.heartbeat_at == STARTED + 1
    assert beaten.wait(30), "no heartbeat"
    beat = read_record(log.path).heartbeat_at
    assert beat is not None and beat > STARTED + 1
    assert log.finish(RunState.COMPLETED).state is RunState.COMPLETED
