"""Rescoring tape files, and the per-suite summary of a rescore.

Every complete live session of the tapes whose case exists today is scored
again (``_rescore.rescore_session``); its earlier verdict is looked up in the
run record the session names (its ``run_id`` metadata), if that record exists.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from evaltape.recorder import Mode, TapeError, TapeReader
from evaltape.recorder._shared import PackedSession

from ...cases._cases import Case
from ...checks._score import Scorer
from ...judge._judgement import DEFAULT_FLOORS, Floors
from ...results._record_files import read_record, record_path
from ...results._records import AttemptResult, RecordError, Verdict
from ._exec import InProcess, Landed, RescoreItem, RescorerFactory
from ._rescore import (
    Flip,
    Rescored,
    Skipped,
    TapeBudgets,
    TapesRescored,
    tape_label,
)
from ._whole import (
    TakesWholeTapes,
    TapeCases,
    TapeRead,
    WholeTape,
    land_tape,
    read_tape,
    run_id_of,
)

# -- rescoring tapes --------------------------------------------------------------


class _Originals:
    """The verdicts sessions got when they ran, from the run records they name."""

    def __init__(self, results: Path) -> None:
        self.results = results
        self._runs: dict[str, dict[str, AttemptResult]] = {}

    def find(self, run_id: object, session_id: str) -> AttemptResult | None:
        """The result of session ``session_id`` in the record of run ``run_id`` (from the
        session's metadata), if there is one."""
        if not isinstance(run_id, str) or not run_id or "/" in run_id or "\\" in run_id:
            return None
        if run_id not in self._runs:
            path = record_path(self.results, run_id)
            try:
                record = read_record(path) if path.is_file() else None
            except RecordError:
                record = None
            self._runs[run_id] = (
                {a.session_id: a for a in record.attempts if a.session_id} if record else {}
            )
        return self._runs[run_id].get(session_id)


def rescore_tapes(
    tapes: Sequence[Path],
    cases: Mapping[str, Case],
    scorer: Scorer,
    *,
    cassettes: Path,
    results: Path,
    selected: Callable[[str], bool] = lambda case_id: True,
    latest: bool = False,
    on_result: Callable[[Rescored], None] = lambda r: None,
    floors: Floors = DEFAULT_FLOORS,
) -> TapesRescored:
    """Rescore every complete live session of ``tapes`` whose case exists today.

    A session whose case no longer exists is skipped with a line; one whose
    case is not ``selected`` is left out silently; one with no end (its
    writer stopped or is still writing) is skipped with a line.  ``latest``
    keeps only the newest session per case, model and attempt (chosen from
    the session headers first).  Tapes are read one session at a time, so
    memory stays bounded however many sessions they hold.  Judged cases
    reuse recorded verdicts against ``floors`` (``rescore_session``).
    Sessions are scored here, one at a time (``run_rescore`` uses every core).
    """
    return rescore_on(
        None,
        tapes,
        cases,
        scorer,
        cassettes=cassettes,
        results=results,
        selected=selected,
        latest=latest,
        on_result=on_result,
        floors=floors,
    )


def rescore_on(
    rescorer: RescorerFactory | None,
    tapes: Sequence[Path],
    cases: Mapping[str, Case],
    scorer: Scorer,
    *,
    cassettes: Path,
    results: Path,
    selected: Callable[[str], bool] = lambda case_id: True,
    latest: bool = False,
    on_result: Callable[[Rescored], None] = lambda r: None,
    floors: Floors = DEFAULT_FLOORS,
) -> TapesRescored:
    """``rescore_tapes``, its sessions scored where ``rescorer`` says (None: here, one
    at a time; a process pool or Ray: whole tapes of up to its ``whole_limit`` sent as
    they are, the sessions of larger ones in batches, still compressed)."""
    notes: list[str] = []
    originals = _Originals(results)
    skipped: list[Skipped] = []
    done: list[Rescored] = []
    keep = _newest(tapes) if latest else None
    scoring = rescorer(scorer, floors) if rescorer is not None else InProcess(scorer, floors)
    whole = scoring if isinstance(scoring, TakesWholeTapes) else None
    chosen = TapeCases(
        cases=dict(cases), selected=frozenset(c.id for c in cases.values() if selected(c.id))
    )
    budgets = TapeBudgets()

    def landed(tape: Path, what: str, outcome: Landed, run_id: object = None) -> None:
        budgets.charge(tape, outcome.decoded)
        notes.extend(outcome.notes)
        if outcome.rescored is None:
            skipped.append(Skipped(line=f"{what} has no end ({outcome.problem}); skipped"))
        else:
            rescored = outcome.rescored
            if run_id is not None:
                rescored = rescored.against(originals.find(run_id, rescored.session_id))
            done.append(rescored)
            on_result(rescored)

    def skip(line: str) -> None:
        skipped.append(Skipped(line=line))

    def read(tape: Path, got: TapeRead) -> None:
        land_tape(got, notes, skip, functools.partial(landed, tape))

    try:
        for tape in tapes:
            label = tape_label(tape, cassettes=cassettes, results=results)
            wanted = None if keep is None else frozenset(keep.get(tape, ()))
            if whole is not None and (size := _whole_size(tape, whole.whole_limit)) is not None:
                unit = WholeTape(path=tape, label=label, wanted=wanted, size=size)
                whole.add_tape(unit, chosen, functools.partial(read, tape))
                continue

            def score(
                packed: PackedSession, case: Case, what: str, tape: Path = tape, label: str = label
            ) -> None:
                before = originals.find(run_id_of(packed), packed.header.session_id)
                item = RescoreItem(case=case, packed=packed, tape=label, before=before)
                scoring.add(item, functools.partial(landed, tape, what))

            read_tape(
                tape,
                cases,
                chosen.selected.__contains__,
                (lambda sid: True) if wanted is None else wanted.__contains__,
                notes,
                skip,
                score,
            )
        scoring.flush()
    finally:
        scoring.close()
    return TapesRescored(rescored=tuple(done), skipped=tuple(skipped), notes=tuple(notes))


def _whole_size(tape: Path, limit: int) -> int | None:
    """``tape``'s size if it is a file of at most ``limit`` bytes, to send whole; else None."""
    try:
        size = tape.stat().st_size if tape.is_file() else None
    except OSError:
        return None
    return size if size is not None and size <= limit else None


def _newest(tapes: Sequence[Path]) -> dict[Path, set[str]]:
    """Per tape, the ids of the newest live session per case, model and attempt."""
    newest: dict[tuple[str, str, int], tuple[float, Path, str]] = {}
    for tape in tapes:
        try:
            infos = TapeReader(tape, strict=False).scan() if tape.is_file() else []
        except (TapeError, OSError):
            continue  # reported when the tape is read
        for info in infos:
            h = info.header
            if h is None or h.mode is not Mode.LIVE:
                continue
            key = (h.case_id, h.model, h.attempt)
            if key not in newest or h.started_at >= newest[key][0]:
                newest[key] = (h.started_at, tape, info.session_id)
    keep: dict[Path, set[str]] = {}
    for _, tape, session_id in newest.values():
        keep.setdefault(tape, set()).add(session_id)
    return keep


# -- the summary ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class SuiteSummary:
    """One suite's line of the rescore summary."""

    suite: str
    """The suite."""
    cases: int
    """Distinct cases rescored."""
    attempts: int
    """Attempts rescored."""
    passed: int
    """Attempts that pass today."""
    passed_before: int | None
    """Of the attempts with a known earlier verdict, how many passed then; None if none known."""
    known_before: int
    """Attempts with a known earlier verdict."""
    pass_to_fail: int
    """Passed before, fail now."""
    fail_to_pass: int
    """Failed before, pass now."""
    skipped: int
    """Attempts of the suite that could not be rescored."""


def summarize(outcome: TapesRescored) -> tuple[SuiteSummary, ...]:
    """Per-suite totals, suites in first-seen order."""
    rows: dict[str, list[Rescored]] = {}
    skipped: dict[str, int] = {}
    for r in outcome.rescored:
        rows.setdefault(r.case.suite, []).append(r)
    for s in outcome.skipped:
        if s.attempt is not None:
            rows.setdefault(s.attempt.suite, [])
            skipped[s.attempt.suite] = skipped.get(s.attempt.suite, 0) + 1
    out = []
    for suite, items in rows.items():
        known = [r for r in items if r.flip is not None]
        out.append(
            SuiteSummary(
                suite=suite,
                cases=len({r.case.id for r in items}),
                attempts=len(items),
                passed=sum(r.verdict is Verdict.PASSED for r in items),
                passed_before=sum(r.before is Verdict.PASSED for r in known) if known else None,
                known_before=len(known),
                pass_to_fail=sum(r.flip is Flip.PASS_TO_FAIL for r in items),
                fail_to_pass=sum(r.flip is Flip.FAIL_TO_PASS for r in items),
                skipped=skipped.get(suite, 0),
            )
        )
    return tuple(out)


def flips(outcome: TapesRescored) -> tuple[Rescored, ...]:
    """Attempts whose verdict changed, pass->fail first, then fail->pass, then others."""
    order = (Flip.PASS_TO_FAIL, Flip.FAIL_TO_PASS, Flip.CHANGED)
    return tuple(r for kind in order for r in outcome.rescored if r.flip is kind)
