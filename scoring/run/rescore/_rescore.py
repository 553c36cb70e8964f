"""Rescoring: today's cases and scorer applied to recorded sessions; nothing runs.

A rescore reads tapes, folds each session and scores it.  No agent runs, no
model is called and no socket is opened, so it costs nothing and can be run
whenever an expectation, a scorer or a rubric changes.  Outcome checks run
against the recorded workspace snapshot (``score_session`` restores it).
A judged case reuses the judge verdict recorded on its tape for the same
rubric text and transcript (``rejudge_offline``); with no such verdict its
check is "not re-judged".  A rescore never calls a judge: it writes no tape,
so a new verdict would have nowhere to be recorded.

Sessions come from a run record (the sessions its attempts point to) or from
tape files (every live session in them, matched to today's cases by case id).
Each rescored attempt is compared with the verdict the session got when it was
recorded: pass->fail and fail->pass are the flips a changed case or scorer
causes.  When rescoring tapes, that original verdict is looked up in the run
record the session names (its ``run_id`` metadata), if that record exists.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from pathlib import Path

import attrs

from evaltape.recorder import (
    RecordedSession,
    Session,
    SessionEnded,
    Status,
    TapeError,
    TapeReader,
    Usage,
)
from evaltape.recorder._shared import (
    MAX_TAPE_BYTES,
    OverBudget,
    PackedSession,
    TapeBudget,
    packed_sessions,
    unpack_session,
)
from evaltape.recorder.tape import Note

from ...cases._cases import Case
from ...checks._score import Score, Scorer
from ...judge._judgement import DEFAULT_FLOORS, Floors, Judgement, JudgeState
from ...judge._reuse import rejudge_offline
from ...results._records import (
    AttemptResult,
    RunKind,
    Verdict,
)
from ..attempt._judge_step import score_attempt

RECOVERED = "recovered after a crash"
"""How the reason of a session that ``evaltape recover`` ended begins."""


def is_recovered(end: SessionEnded) -> bool:
    """The session was cut short by a crash and recovered from its journal."""
    return end.status is Status.INTERRUPTED and end.reason.startswith(RECOVERED)


BROKEN = frozenset({Status.TIMEOUT, Status.INFRA_ERROR, Status.INTERRUPTED})
"""Session endings whose evidence is unreliable: the attempt gets verdict ``error``."""


class Flip(enum.Enum):
    """How a rescored verdict compares with the verdict the attempt had before."""

    UNCHANGED = "unchanged"
    """Same verdict as before."""
    PASS_TO_FAIL = "pass->fail"
    """Passed before, fails now."""
    FAIL_TO_PASS = "fail->pass"
    """Failed before, passes now."""
    CHANGED = "changed"
    """Some other change, e.g. error before (a stale replay) and a verdict now."""


def flip(before: Verdict | None, now: Verdict) -> Flip | None:
    """The change from ``before`` to ``now``; None when there is no earlier verdict."""
    if before is None or not before.judged:
        return None
    if before is now:
        return Flip.UNCHANGED
    if before is Verdict.PASSED and now is Verdict.FAILED:
        return Flip.PASS_TO_FAIL
    if before is Verdict.FAILED and now is Verdict.PASSED:
        return Flip.FAIL_TO_PASS
    return Flip.CHANGED


@attrs.frozen(kw_only=True)
class Rescored:
    """One recorded attempt scored again."""

    case: Case
    """Today's definition of the case."""
    model: str
    """The model the session recorded."""
    attempt: int
    """Zero-based attempt index the session recorded."""
    tape: str
    """The tape, as a run record names it (relative to cassettes or results)."""
    session_id: str
    """The session within ``tape``."""
    verdict: Verdict
    """Passed, failed, or error (the session ended timed out, cancelled, or on infrastructure)."""
    reason: str
    """Why it did not pass; "" when it passed."""
    score: Score
    """What today's scorer said (the ``completed`` check for a session that did not end well)."""
    usage: Usage
    """Tokens of the recorded model calls."""
    duration: float
    """Seconds the recorded session took."""
    before: Verdict | None = None
    """The verdict the attempt had when it ran; None when unknown."""
    before_reason: str = ""
    """That verdict's reason."""
    judgement: Judgement | None = None
    """A judged case that passed every other check: the reused verdict, or why there is none."""
    incomplete: bool = False
    """The session was cut short by a crash of its run's driver and recovered from its
    journal (``evaltape recover``): scored as far as it got, verdict error."""

    @property
    def tainted(self) -> bool:
        """The session's evidence is unreliable (verdict error)."""
        return self.verdict is Verdict.ERROR

    def against(self, before: AttemptResult | None) -> Rescored:
        """This attempt with ``before``, its result when it ran (None: not known), beside it."""
        if before is None:
            return self
        return attrs.evolve(self, before=before.verdict, before_reason=before.reason)

    @property
    def flip(self) -> Flip | None:
        """The change against ``before``; None when there is no earlier verdict."""
        return flip(self.before, self.verdict)

    def attempt_result(self) -> AttemptResult:
        """The attempt as a rescore run record stores it."""
        return AttemptResult(
            case_id=self.case.id,
            suite=self.case.suite,
            model=self.model,
            attempt=self.attempt,
            verdict=self.verdict,
            reason=self.reason,
            usage=self.usage,
            duration=self.duration,
            tape=self.tape,
            session_id=self.session_id,
            mode=RunKind.RESCORE,
            tainted=self.tainted,
            quarantined=self.case.quarantined,
            known_gap=self.case.known_gap is not None,
            rescored=self.verdict,
        )


@attrs.frozen(kw_only=True)
class Skipped:
    """A recorded attempt that could not be rescored."""

    line: str
    """One line saying which session and why."""
    attempt: AttemptResult | None = None
    """Rescoring a run: the run's attempt, as the rescore record keeps it (verdict skipped)."""


@attrs.frozen(kw_only=True)
class TapesRescored:
    """What a rescore found."""

    rescored: tuple[Rescored, ...]
    """Every attempt scored again, in tape order (run order for a run)."""
    skipped: tuple[Skipped, ...]
    """Sessions and attempts left out, one line each (missing tape or session, case gone)."""
    notes: tuple[str, ...] = ()
    """Tapes that could not be fully read (truncated, corrupt), one line each."""


def rescore_session(
    case: Case,
    session: Session,
    scorer: Scorer,
    *,
    tape: str,
    before: AttemptResult | None = None,
    floors: Floors = DEFAULT_FLOORS,
) -> Rescored:
    """Score one folded session with today's ``case`` and ``scorer``.

    As in a run, a session that ended timed out, cancelled or on an
    infrastructure failure gets verdict error; otherwise the attempt passes
    only if the session completed and the scorer passes it (``score_attempt``).
    A judged case then gets the verdict recorded for today's rubric and the
    recorded transcript (``rejudge_offline``, judged against ``floors``); a
    recorded verdict that gave no score makes the attempt an error, as it
    did live.  Raises ``JudgeError`` if the case's rubric cannot be read.
    """
    score = score_attempt(scorer, case, session)
    score, judgement = rejudge_offline(score, case, session, floors=floors)
    end = session.end
    if end is not None and end.status in BROKEN:
        verdict = Verdict.ERROR
        reason = f"{end.status.value}: {end.reason}" if end.reason else end.status.value
    elif judgement is not None and judgement.state is JudgeState.UNSCORED:
        verdict = Verdict.ERROR
        reason = f"the judge gave no score: {judgement.problem}"
    else:
        verdict = Verdict.PASSED if score.passed else Verdict.FAILED
        reason = "" if score.passed else score.reason
    return Rescored(
        case=case,
        model=session.header.model,
        attempt=session.header.attempt,
        tape=tape,
        session_id=session.session_id,
        verdict=verdict,
        reason=reason,
        score=score,
        usage=session.usage,
        duration=session.duration,
        judgement=judgement,
        incomplete=end is not None and is_recovered(end),
    ).against(before)


# -- where tapes are ----------------------------------------------------------


def tape_label(tape: Path, *, cassettes: Path, results: Path) -> str:
    """How a run record names ``tape``: relative to cassettes, else results, else absolute."""
    resolved = tape.resolve()
    for base in (cassettes, results):
        try:
            return resolved.relative_to(base.resolve()).as_posix()
        except ValueError:
            continue
    return str(resolved)


def locate_tape(label: str, mode: RunKind, *, cassettes: Path, results: Path) -> Path:
    """The file a run record's tape ``label`` names.

    Live sessions are under the cassettes folder, replayed ones under the
    results folder; a rescore record names either, and an absolute label is
    used as it is.  When no candidate exists, the first one is returned.
    """
    bases = (results, cassettes) if mode is RunKind.REPLAY else (cassettes, results)
    candidates = [base / label for base in bases]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return candidates[0]


class TapeCache:
    """Reads each tape once and keeps its sessions by id (for a handful of attempts)."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self._read: dict[Path, dict[str, RecordedSession] | str] = {}

    def sessions(self, tape: Path) -> dict[str, RecordedSession] | str:
        """The tape's sessions by id, or why it cannot be read."""
        key = tape.resolve()
        if key not in self._read:
            found: dict[str, RecordedSession] = {}
            problem = stream_sessions(tape, found.__setitem__, self.notes)
            self._read[key] = problem or found
        return self._read[key]


def stream_sessions(
    tape: Path,
    each: Callable[[str, RecordedSession], None],
    notes: list[str],
    wanted: Callable[[str], bool] = lambda session_id: True,
) -> str:
    """Hand each ``wanted`` session of ``tape`` to ``each`` as it is read, holding one at a time.

    Damage (truncation, corruption) is added to ``notes``; returns why the tape
    cannot be read at all, or "".  A tape that decodes past ``MAX_TAPE_BYTES``
    raises ``OverBudget``: the command refuses it rather than score part of it.
    """
    budget = TapeBudget(MAX_TAPE_BYTES)

    def decoded(packed: PackedSession) -> None:
        try:
            recorded = unpack_session(packed, on_note=_noting(notes), budget=budget)
        except OverBudget as exc:
            raise OverBudget(f"{tape}: {exc}") from None
        if recorded.events:
            each(recorded.session_id, recorded)

    return stream_packed(tape, decoded, notes, wanted)


def _noting(notes: list[str]) -> Callable[[Note], None]:
    def note(n: Note) -> None:
        if n.kind != "incomplete":  # reported with the session it concerns
            notes.append(n.message)

    return note


class TapeBudgets:
    """Per tape, what its sessions decoded to where they were scored, against
    ``MAX_TAPE_BYTES``: a rescore refuses a tape past it, as reading it here would."""

    def __init__(self) -> None:
        self._budgets: dict[Path, TapeBudget] = {}

    def charge(self, tape: Path, decoded: int) -> None:
        """Count ``decoded`` bytes of one of ``tape``'s sessions; ``OverBudget`` past it."""
        budget = self._budgets.setdefault(tape, TapeBudget(MAX_TAPE_BYTES))
        try:
            budget.take(decoded, "session")
        except OverBudget as exc:
            raise OverBudget(f"{tape}: {exc}") from None


def stream_packed(
    tape: Path,
    each: Callable[[PackedSession], None],
    notes: list[str],
    wanted: Callable[[str], bool] = lambda session_id: True,
    data: bytes | None = None,
) -> str:
    """``stream_sessions`` without decoding: hand each ``wanted`` session of ``tape`` to
    ``each`` still compressed (whoever scores it decodes it); "" or why the tape cannot be
    read.  What the sessions decode to is counted where they are decoded (``TapeBudgets``).
    ``data``: the tape's bytes, read instead of the file (a tape sent from elsewhere)."""
    if data is None and not tape.is_file():
        return f"{tape}: no such tape"
    try:
        reader = TapeReader(
            tape, strict=False, on_note=_noting(notes), tape_limit=MAX_TAPE_BYTES, data=data
        )
        for packed in packed_sessions(reader):
            if wanted(packed.session_id):
                each(packed)
    except OverBudget:
        raise
    except (TapeError, OSError) as exc:
        return f"{tape}: {exc}"
    return ""


# -- rescoring a run ------------------------------------------------------------
