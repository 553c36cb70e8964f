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
| any | a tool result or the conversation changed | CHANGED (harness) |
| any | only harness text changed (prompt, tools, parameters) | STALE recording |
| any | the replay produced no session | UNTESTED |

This module also finds what to replay: the recorded live sessions of tapes,
matched to today's cases by case id.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs

from evaltape.recorder import Mode, RecordedSession, SessionEnded, Status, TapeError, TapeReader
from evaltape.recorder._shared import PackedSession, packed_sessions, unpack_session
from evaltape.recorder.tape import Note

from ..cases._cases import Case, Suite
from ..checks._score import Score

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
    CHANGED = "changed"
    """The harness now does something else: a tool returned other data for the same
    call, or the conversation was rebuilt differently.  Fails CI; never re-record it,
    which would record the change as the truth."""
    STALE = "stale"
    """Only harness text changed (prompts, tool definitions, request parameters): the
    model saw other words, and only a live run can say what it would do."""
    UNTESTED = "untested"
    """The replay could not test the attempt (it produced no session); never a pass."""


@attrs.frozen(kw_only=True)
class HarnessChange:
    """Why a replayed request no longer matches the tape, classified by what changed."""

    change: Change
    """``CHANGED`` (tool result, conversation) or ``STALE`` (harness text only)."""
    what: str
    """What changed: ``tool result``, ``conversation``, ``system prompt``, ``user prompt``,
    ``tool definitions``, ``parameters`` or ``request``."""
    label: str
    """The kind of edit, for grouping: ``tool result changed: read``, ``system prompt changed``."""
    summary: str
    """One line for this attempt, e.g. ``tool result changed: read {"path": "a.txt"}``."""
    edit_key: str
    """Equal for the same edit in different attempts; groups distinct edits."""
    diff: tuple[str, ...] = ()
    """A short recorded-vs-now diff (``-`` recorded, ``+`` now)."""
    path: str = ""
    """The first differing JSON path of the request body, when known."""
    detail: str = ""
    """The replay error as raised (first differing JSON path, nearest recorded request)."""


@attrs.frozen(kw_only=True)
class ReplayDecision:
    """The decision for one recorded attempt."""

    change: Change
    """Unchanged, regression, improvement, changed, stale or untested."""
    rescored: Score
    """The recorded session scored today."""
    replayed: Score | None
    """The replayed session scored today; None when the replay could not run."""
    detail: str = ""
    """For a miss: the harness change's summary; for an untested attempt: why."""
    harness: HarnessChange | None = None
    """What the harness changed, the most serious change found (``changes[0]``)."""
    changes: tuple[HarnessChange, ...] = ()
    """Every distinct change found in the session, the most serious first: a replay
    classifies the whole attempt, so a prompt edit never hides a changed tool."""
    assumed: Change | None = None
    """With ``--assume-same-model``: the outcome (unchanged, regression, improvement)
    had the model answered the changed requests as recorded.  An assumption, not a fact."""


def _compare(rescored: Score, replayed: Score) -> Change:
    if rescored.passed == replayed.passed:
        return Change.UNCHANGED
    return Change.REGRESSION if rescored.passed else Change.IMPROVEMENT


def decide(
    rescored: Score,
    replayed: Score | None,
    stale: str = "",
    *,
    harness: HarnessChange | None = None,
    changes: Sequence[HarnessChange] = (),
    assumed: bool = False,
    untested: str = "",
) -> ReplayDecision:
    """Apply the decision table.

    Harness changes (every change found in the session, most serious first;
    ``harness`` alone for one) win over both verdicts: one that changed what
    the harness does (``CHANGED``) wins over stale text.  With ``assumed`` the
    replay went on with the recorded responses and ``replayed`` is what the
    attempt would score, kept as ``assumed``.  ``stale`` is an unclassified
    miss (treated as stale); ``untested`` (or no replayed score) says the
    attempt was not tested.
    """
    found = list(changes) or ([harness] if harness is not None else [])
    if not found and stale:
        found = [
            HarnessChange(
                change=Change.STALE,
                what="request",
                label="request changed",
                summary=stale,
                edit_key=stale,
            )
        ]
    if found:
        found.sort(key=lambda h: h.change is not Change.CHANGED)
        first = found[0]
        would = _compare(rescored, replayed) if assumed and replayed is not None else None
        more = len(found) - 1
        return ReplayDecision(
            change=first.change,
            rescored=rescored,
            replayed=replayed,
            detail=first.summary + (f" (+{more} more)" if more else ""),
            harness=first,
            changes=tuple(found),
            assumed=would,
        )
    if untested or replayed is None:
        return ReplayDecision(
            change=Change.UNTESTED,
            rescored=rescored,
            replayed=replayed,
            detail=untested or "the replay produced no session",
        )
    return ReplayDecision(change=_compare(rescored, replayed), rescored=rescored, replayed=replayed)


EXIT_OK = 0
"""Every replayed verdict equals its rescored one (improvements allowed)."""
EXIT_REGRESSION = 1
"""A recorded pass fails when replayed, or the harness changed a tool result or the
conversation."""
EXIT_NOT_TESTED = 2
"""Bad input, or something could not be tested (no session, unreadable tape, no recording)."""
EXIT_STALE = 3
"""Nothing else, but only harness text changed for at least one recording."""


def replay_exit_code(changes: Iterable[Change]) -> int:
    """1 on a regression or harness change, else 2 if untested, else 3 if stale, else 0."""
    seen = set(changes)
    if seen & {Change.REGRESSION, Change.CHANGED}:
        return EXIT_REGRESSION
    if Change.UNTESTED in seen:
        return EXIT_NOT_TESTED
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
    """Replayed sessions that pass today (none whose harness changed or went stale)."""
    regressions: int
    """Pass -> fail."""
    improvements: int
    """Fail -> pass."""
    changed: int
    """Attempts where the harness now does something else (tool result, conversation)."""
    stale: int
    """Recordings whose harness text changed."""
    untested: int = 0
    """Attempts the replay could not test."""


def _replayed_pass(d: ReplayDecision) -> bool:
    """A replayed pass counts only where every request matched the tape: past a changed
    request the harness was served answers the model never gave to it."""
    if d.harness is not None or d.replayed is None:
        return False
    return d.replayed.passed


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
                replayed_passed=sum(_replayed_pass(d) for d in decisions),
                regressions=sum(d.change is Change.REGRESSION for d in decisions),
                improvements=sum(d.change is Change.IMPROVEMENT for d in decisions),
                changed=sum(d.change is Change.CHANGED for d in decisions),
                stale=sum(d.change is Change.STALE for d in decisions),
                untested=sum(d.change is Change.UNTESTED for d in decisions),
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
    packed: PackedSession | None = attrs.field(default=None, eq=False, repr=False)
    """The same session still compressed, as the tape stores it: what travels to another
    process (a Ray worker) that replays it."""


@attrs.frozen(kw_only=True)
class Found:
    """What a set of tapes holds for the selected cases."""

    recorded: tuple[Recorded, ...]
    """Sessions to replay, in tape order."""
    orphans: tuple[str, ...]
    """One line per recorded session whose case no longer exists (skipped)."""
    notes: tuple[str, ...]
    """Sessions that are fine but not replayable (ended by a timeout or Ctrl-C live)."""
    unreadable: tuple[str, ...] = ()
    """Tapes or sessions that could not be read (corrupt, cut short, no end): one line
    each.  Something recorded could not be tested, so the replay cannot pass."""
    unrecorded: tuple[str, ...] = ()
    """Selected case ids of which the tapes hold no session at all, in suite order (a case
    whose only sessions are unreplayable is in ``notes``; an unreadable one, in
    ``unreadable``)."""
    not_live: tuple[str, ...] = ()
    """One line per session that is not a live recording (a script's, a replay's)."""


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
    unreadable: list[str] = []
    not_live: list[str] = []
    seen: set[str] = set()
    damaged: set[str] = set()
    for tape in tapes:

        def note(n: Note) -> None:
            if n.kind in ("truncated", "corrupt"):
                unreadable.append(n.message)
            elif n.kind != "incomplete":  # reported below, with the case id
                notes.append(n.message)

        try:
            reader = TapeReader(tape, strict=False, on_note=note)
            packs = list(packed_sessions(reader))
        except (TapeError, OSError) as exc:
            text = str(exc)
            unreadable.append(text if str(tape) in text else f"{tape}: {text}")
            damaged.add(tape.stem)  # cassettes are <suite>/<case id>.tape
            continue
        for packed in packs:
            session = unpack_session(packed, on_note=note)
            if not session.events:  # its start did not decode after all (a note says so)
                continue
            header = session.header
            seen.add(header.case_id)
            if header.mode is not Mode.LIVE:
                not_live.append(
                    f"{tape}: session {session.session_id} is a {header.mode.value} session, "
                    "not a live recording; only live sessions are replayed"
                )
                continue
            if not session.complete:
                unreadable.append(
                    f"{tape}: session {session.session_id} ({header.case_id}) has no end "
                    "(its writer stopped mid-session); it cannot be replayed"
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
                recorded.append(Recorded(case=case, session=session, tape=tape, packed=packed))
    if latest:
        newest: dict[tuple[str, str, int], Recorded] = {}
        for r in recorded:
            h = r.session.header
            key = (h.case_id, h.model, h.attempt)
            if key not in newest or h.started_at >= newest[key].session.header.started_at:
                newest[key] = r
        keep = {id(r) for r in newest.values()}
        recorded = [r for r in recorded if id(r) in keep]
    return Found(
        recorded=tuple(recorded),
        orphans=tuple(orphans),
        notes=tuple(notes),
        unreadable=tuple(unreadable),
        unrecorded=tuple(
            c.id for s in suites for c in s.cases if c.id not in seen and c.id not in damaged
        ),
        not_live=tuple(not_live),
    )
