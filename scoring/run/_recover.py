"""``recover_run``: close the record of a run whose driver died, and keep what it recorded.

A driver killed mid-run (SIGKILL, out of memory, a lost machine) leaves its
record ``running`` for ever, no history line, the journals of the sessions in
flight and their workspaces.  Recovering such a run, once ``crash_reason``
says its driver is gone:

- turns each journal into a session on the run's tape, every event the
  journal holds and then an end ``interrupted`` whose reason says it was
  recovered after a crash (a journal whose session is already whole on the
  tape, or already in the record, is only deleted);
- adds each such attempt to the record with verdict ``interrupted`` (neither a
  pass nor a fail; ``evaltape rescore RUN`` scores what it did);
- removes the run's own workspace folder (``evaltape-run-<run id>``, named
  in the record), nothing else;
- finishes the record in state ``crashed`` and appends its history line.

Each step is safe to repeat: recovering again after a crash of the recovery
finds the sessions on the tape, not in the record, and goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs

from evaltape.recorder import (
    Event,
    RecordedSession,
    SessionEnded,
    SessionStarted,
    Status,
    TapeError,
    TapeReader,
    fold,
)
from evaltape.recorder._shared import journal_tape
from evaltape.recorder.tape import SessionBuffer, append_session

from ..results._health import crash_reason, pid_alive
from ..results._history import RunLog
from ..results._record_files import UnknownRun, read_record, resolve_run
from ..results._records import (
    AttemptResult,
    RunKind,
    RunRecord,
    RunState,
    Verdict,
)
from ._setup import RunRefused
from .attempt._workspace import WorkspaceError, remove_run_workspaces
from .rescore._rescore import RECOVERED, is_recovered


class RecoverRefused(RunRefused):
    """The run cannot be recovered: no such run, it finished, or its driver is alive."""


@attrs.frozen(kw_only=True)
class RecoverRequest:
    """Which run to recover, and how to tell whether its driver is gone."""

    results: Path
    """The results folder."""
    run: str = "latest"
    """``latest``, a run id, a unique prefix of one, or a record's path."""
    clock: Callable[[], float]
    """Unix time (to judge the heartbeat and to stamp the record)."""
    alive: Callable[[int], bool] = pid_alive
    """Whether a pid on this machine is a live process."""


@attrs.frozen(kw_only=True)
class RecoveredSession:
    """One attempt in flight when the driver died, as it is now on the run's tape."""

    attempt: AttemptResult
    """Its line in the record (verdict ``interrupted``)."""
    events: int
    """Events the session holds, its start and end included."""
    exchanges: int
    """Model calls it recorded (exchanges answered before the crash)."""
    journal: str
    """The journal it was recovered from (deleted once the record is closed)."""
    written: bool
    """True when this recovery appended the session to the tape; False when it was there."""


@attrs.frozen(kw_only=True)
class RecoverOutcome:
    """What ``recover_run`` did."""

    record: RunRecord
    """The closed record (state ``crashed``)."""
    record_path: Path
    """Where it was written."""
    why: str
    """Why the run counts as crashed (``crash_reason``)."""
    sessions: tuple[RecoveredSession, ...] = ()
    """The attempts that were in flight, recovered as interrupted."""
    workspaces: int = 0
    """Attempt workspaces removed with the run's workspace folder."""
    problems: tuple[str, ...] = ()
    """What could not be done (an unreadable journal is kept, a folder left alone), one line
    each."""


def _journals(results: Path, run_id: str) -> list[Path]:
    folder = results / "tapes" / run_id
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*.journal") if journal_tape(p) is not None)


def _tape_sessions(tape: Path) -> dict[str, RecordedSession]:
    if not tape.is_file():
        return {}
    try:
        return {s.session_id: s for s in TapeReader(tape, strict=False).sessions() if s.complete}
    except (TapeError, OSError):
        return {}


def _label(tape: Path, results: Path) -> str:
    try:
        return tape.relative_to(results).as_posix()
    except ValueError:
        return str(tape)


def _at(event: Event) -> float:
    at = getattr(event, "at", 0.0)
    return float(at) if isinstance(at, int | float) else 0.0


def _end_partial(session: RecordedSession, why: str) -> tuple[Event, ...]:
    """The session's events and an end ``interrupted`` at its last event's time."""
    events = [e for e in session.events if not isinstance(e, SessionEnded)]
    last = max((_at(e) for e in events[1:]), default=0.0)
    reason = f"{RECOVERED}: {why}; the session ends at its last event on disk"
    return (*events, SessionEnded(at=last, status=Status.INTERRUPTED, reason=reason))


def _append(tape: Path, events: tuple[Event, ...]) -> None:
    header = events[0]
    assert isinstance(header, SessionStarted)
    end = events[-1]
    assert isinstance(end, SessionEnded)
    buffer = SessionBuffer(header, clock=lambda: end.at)
    for event in events[1:-1]:
        buffer.append(event)
    buffer.end(end.status, end.reason)
    append_session(tape, buffer.data)


def _attempt(events: tuple[Event, ...], label: str, reason: str) -> AttemptResult:
    session = fold(events)
    header = session.header
    suite = dict(header.metadata).get("suite", "")
    return AttemptResult(
        case_id=header.case_id,
        suite=str(suite),
        model=header.model,
        attempt=header.attempt,
        verdict=Verdict.INTERRUPTED,
        reason=reason,
        usage=session.usage,
        duration=session.duration,
        tape=label,
        session_id=session.session_id,
        mode=RunKind.REPLAY if header.replay_of else RunKind.LIVE,
        tainted=True,
    )


def _recover_journal(
    journal: Path, results: Path, why: str, known: set[str]
) -> RecoveredSession | str | None:
    """The attempt of one journal's session (None: already in the record), or a problem."""
    located = journal_tape(journal)
    assert located is not None
    tape, session_id = located
    if session_id in known:
        return None
    try:
        found = TapeReader(journal, strict=False).sessions()
    except (TapeError, OSError) as exc:
        return f"{journal}: cannot read the journal ({exc}); kept"
    mine = [s for s in found if s.session_id == session_id]
    if not mine:
        return f"{journal}: holds no event of session {session_id} (kept)"
    on_tape = _tape_sessions(tape).get(session_id)
    label = _label(tape, results)
    if on_tape is not None:
        events, written = on_tape.events, False
        end = events[-1]
        if isinstance(end, SessionEnded) and is_recovered(end):
            reason = f"interrupted: {end.reason}"
        else:
            reason = "interrupted: the driver died after writing this session, before the run "
            reason += "record took it; its verdict was never given (evaltape rescore scores it)"
    else:
        events, written = _end_partial(mine[0], why), True
        try:
            tape.parent.mkdir(parents=True, exist_ok=True)
            _append(tape, events)
        except (TapeError, OSError) as exc:
            return f"{tape}: cannot append the session of {journal.name} ({exc}); journal kept"
        end = events[-1]
        assert isinstance(end, SessionEnded)
        reason = f"interrupted: {end.reason}"
    session = fold(events)
    return RecoveredSession(
        attempt=_attempt(events, label, reason),
        events=len(events),
        exchanges=len(session.turns),
        journal=str(journal),
        written=written,
    )


def recover_run(request: RecoverRequest) -> RecoverOutcome:
    """Recover the crashed run ``request.run`` names (see the module docstring).

    Raises ``RecoverRefused`` for an unknown run, a run that finished, or one
    whose driver looks alive (its pid exists and its heartbeat is fresh), and
    ``RecordError`` for a damaged record.
    """
    try:
        path = resolve_run(request.results, request.run)
    except UnknownRun as exc:
        raise RecoverRefused(str(exc)) from exc
    record = read_record(path)
    if record.state is not RunState.RUNNING:
        raise RecoverRefused(
            f"run {record.run_id} ended ({record.state.value}); there is nothing to recover"
        )
    now = request.clock()
    why = crash_reason(record, now=now, alive=request.alive)
    if not why:
        beat = record.heartbeat_at if record.heartbeat_at is not None else record.updated_at
        ago = f", last heartbeat {now - beat:.0f} s ago" if beat is not None else ""
        raise RecoverRefused(
            f"run {record.run_id} is still running (driver pid {record.pid}{ago}); "
            "only a crashed run is recovered"
        )
    known = {a.session_id for a in record.attempts if a.session_id}
    recovered: list[RecoveredSession] = []
    problems: list[str] = []
    done: list[Path] = []
    for journal in _journals(request.results, record.run_id):
        got = _recover_journal(journal, request.results, why, known)
        if isinstance(got, str):
            problems.append(got)
            continue
        done.append(journal)
        if got is not None:
            recovered.append(got)
            known.add(got.attempt.session_id)
    removed = 0
    if record.workspaces:
        try:
            removed = remove_run_workspaces(Path(record.workspaces), record.run_id)
        except WorkspaceError as exc:
            problems.append(str(exc))
    log = RunLog(request.results, record, clock=request.clock)
    for item in recovered:
        log.add(item.attempt)
    never = record.total - record.completed - len(recovered)
    notes = [f"{RECOVERED}: {why}"]
    if recovered:
        notes.append(f"{len(recovered)} attempt(s) in flight recovered as interrupted")
    if never > 0:
        notes.append(f"{never} planned attempt(s) never started")
    final = log.finish(RunState.CRASHED, notes=notes)
    for journal in done:
        try:
            journal.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            problems.append(f"{journal}: cannot delete ({exc.strerror}); the session is safe")
    return RecoverOutcome(
        record=final,
        record_path=log.path,
        why=why,
        sessions=tuple(recovered),
        workspaces=removed,
        problems=tuple(problems),
    )
