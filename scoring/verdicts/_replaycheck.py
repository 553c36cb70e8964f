"""The replay decision: did today's harness change a recorded attempt's outcome?

A replay feeds the agent the model outputs a live attempt recorded, so any
change of verdict is caused by the harness, never by sampling; no statistics
are needed.  Two verdicts under today's scorer and case are compared:

- **rescored**: the recorded session itself, scored now;
- **replayed**: the session today's harness produced from the recorded outputs.

| rescored | replayed | decision |
|---|---|---|
| pass | pass | unchanged |
| fail | fail | unchanged |
| pass | fail | REGRESSION |
| fail | pass | improvement |
| any | the tape could not answer a request | STALE recording |

This module also finds what to replay: the recorded live sessions of tapes,
matched to today's cases by case id.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs

from evaltape.recorder import (
    Mode,
    Note,
    RecordedSession,
    SessionEnded,
    Status,
    TapeError,
    TapeReader,
)
from evaltape.scoring.cases._cases import Case, Suite
from evaltape.scoring.checks._score import Score

TAPE_SUFFIX = ".tape"
"""File extension of tapes."""

UNREPLAYABLE = frozenset({Status.TIMEOUT, Status.INTERRUPTED})
"""Live endings whose recording stops mid-attempt: nothing to replay against."""


class Change(enum.Enum):
    """What a replay says about the harness, for one recorded attempt."""

    UNCHANGED = "unchanged"
    """The replayed verdict equals the rescored one."""
    REGRESSION = "regression"
    """Passed as recorded, fails as replayed: the harness broke it."""
    IMPROVEMENT = "improvement"
    """Failed as recorded, passes as replayed."""
    STALE = "stale"
    """The harness sent a request the tape cannot answer; re-record it live."""


@attrs.frozen(kw_only=True)
class ReplayDecision:
    """The decision for one recorded attempt."""

    change: Change
    """Unchanged, regression, improvement or stale."""
    rescored: Score
    """The recorded session scored today."""
    replayed: Score | None
    """The replayed session scored today; None when the replay could not run."""
    detail: str = ""
    """For a stale recording: the replay error (first differing JSON path)."""


def decide(rescored: Score, replayed: Score | None, stale: str = "") -> ReplayDecision:
    """Apply the decision table; a non-empty ``stale`` message wins over both verdicts."""
    if stale or replayed is None:
        return ReplayDecision(
            change=Change.STALE,
            rescored=rescored,
            replayed=replayed,
            detail=stale or "the replay produced no session",
        )
    if rescored.passed == replayed.passed:
        change = Change.UNCHANGED
    elif rescored.passed:
        change = Change.REGRESSION
    else:
        change = Change.IMPROVEMENT
    return ReplayDecision(change=change, rescored=rescored, replayed=replayed)


EXIT_OK = 0
"""Every replayed verdict equals its rescored one (improvements allowed)."""
EXIT_REGRESSION = 1
"""At least one recorded pass fails when replayed."""
EXIT_STALE = 3
"""No regression, but at least one recording is stale for this harness."""


def replay_exit_code(changes: Iterable[Change]) -> int:
    """1 if any regression, else 3 if any stale recording, else 0."""
    seen = set(changes)
    if Change.REGRESSION in seen:
        return EXIT_REGRESSION
    if Change.STALE in seen:
        return EXIT_STALE
    return EXIT_OK


@attrs.frozen(kw_only=True)
class SuiteBoard:
    """One suite's line of the replay scoreboard."""

    suite: str
    """The suite."""
    cases: int
    """Distinct cases replayed."""
    attempts: int
    """Recorded attempts replayed."""
    rescored_passed: int
    """Recorded sessions that pass today."""
    replayed_passed: int
    """Replayed sessions that pass today."""
    regressions: int
    """Pass -> fail."""
    improvements: int
    """Fail -> pass."""
    stale: int
    """Recordings the harness no longer matches."""


def scoreboard(rows: Iterable[tuple[str, str, ReplayDecision]]) -> tuple[SuiteBoard, ...]:
    """Per-suite totals of ``(suite, case id, decision)`` rows, suites in first-seen order."""
    grouped: dict[str, list[tuple[str, ReplayDecision]]] = {}
    for suite, case_id, decision in rows:
        grouped.setdefault(suite, []).append((case_id, decision))
    boards = []
    for suite, items in grouped.items():
        decisions = [d for _, d in items]
        boards.append(
            SuiteBoard(
                suite=suite,
                cases=len({c for c, _ in items}),
                attempts=len(items),
                rescored_passed=sum(d.rescored.passed for d in decisions),
                replayed_passed=sum(bool(d.replayed and d.replayed.passed) for d in decisions),
                regressions=sum(d.change is Change.REGRESSION for d in decisions),
                improvements=sum(d.change is Change.IMPROVEMENT for d in decisions),
                stale=sum(d.change is Change.STALE for d in decisions),
            )
        )
    return tuple(boards)


# -- what to replay -----------------------------------------------------------


@attrs.frozen(kw_only=True)
class Recorded:
    """A recorded live session matched to today's case."""

    case: Case
    """Today's definition of the case."""
    session: RecordedSession
    """The recorded session."""
    tape: Path
    """The tape it came from."""


@attrs.frozen(kw_only=True)
class Found:
    """What a set of tapes holds for the selected cases."""

    recorded: tuple[Recorded, ...]
    """Sessions to replay, in tape order."""
    orphans: tuple[str, ...]
    """One line per recorded session whose case no longer exists (skipped)."""
    notes: tuple[str, ...]
    """Tapes or sessions that could not be read (damaged, incomplete), one line each."""


def find_tapes(folder: Path) -> tuple[Path, ...]:
    """Every ``*.tape`` under ``folder``, sorted; none if the folder is missing."""
    if not folder.is_dir():
        return ()
    found: list[Path] = []
    for root, _dirs, files in os.walk(folder):
        found.extend(Path(root) / f for f in files if f.endswith(TAPE_SUFFIX))
    return tuple(sorted(found))


def find_recorded(
    tapes: Sequence[Path],
    suites: Sequence[Suite],
    *,
    latest: bool = False,
    all_cases: Mapping[str, Case] | None = None,
) -> Found:
    """The complete live sessions of ``tapes`` whose case is among ``suites``.

    A session whose case id is in ``all_cases`` (every loaded case) but not in
    ``suites`` (the selection) is silently left out; one whose case exists
    nowhere is an orphan.  ``latest`` keeps the newest session per case,
    model and attempt.
    """
    selected = {c.id: c for s in suites for c in s.cases}
    known = dict(all_cases) if all_cases is not None else selected
    recorded: list[Recorded] = []
    orphans: list[str] = []
    notes: list[str] = []
    for tape in tapes:

        def note(n: Note) -> None:
            if n.kind != "incomplete":  # reported below, with the case id
                notes.append(n.message)

        try:
            sessions = list(TapeReader(tape, strict=False, on_note=note).sessions())
        except (TapeError, OSError) as exc:
            notes.append(f"{tape}: {exc}")
            continue
        for session in sessions:
            header = session.header
            if header.mode is not Mode.LIVE:
                continue
            if not session.complete:
                notes.append(
                    f"{tape}: session {session.session_id} ({header.case_id}) has no end; skipped"
                )
                continue
            end = session.events[-1]
            if isinstance(end, SessionEnded) and end.status in UNREPLAYABLE:
                notes.append(
                    f"{tape}: session {session.session_id} ({header.case_id}) ended "
                    f"{end.status.value} live; its recording is incomplete, skipped"
                )
                continue
            if header.case_id not in known:
                orphans.append(
                    f"{tape}: session {session.session_id}: case "
                    f'"{header.case_id}" no longer exists; skipped'
                )
                continue
            case = selected.get(header.case_id)
            if case is not None:
                recorded.append(Recorded(case=case, session=session, tape=tape))
    if latest:
        newest: dict[tuple[str, str, int], Recorded] = {}
        for r in recorded:
            h = r.session.header
            key = (h.case_id, h.model, h.attempt)
            if key not in newest or h.started_at >= newest[key].session.header.started_at:
                newest[key] = r
        keep = {id(r) for r in newest.values()}
        recorded = [r for r in recorded if id(r) in keep]
    return Found(recorded=tuple(recorded), orphans=tuple(orphans), notes=tuple(notes))
