"""Each entry point's outcome as ``RunResults``: one function per outcome type.

Replay attempts take their kind from the replay decision (unchanged and
improvement pass; regression, changed, stale and untested each are their own
kind); live and rescore attempts from their verdict (a rescore's pass->fail
is a regression); a comparison and an A/B have one entry per case, a
regression when it got worse.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence

from ...results._records import AttemptResult, Verdict
from ...run._ab import ABOutcome
from ...run._finished import Attempt
from ...run._live import LiveOutcome
from ...run._replay import ReplayOutcome
from ...run._rescore import RescoreOutcome
from ...verdicts._ab import CaseVerdict
from ...verdicts._compare import Comparison, MoveKind
from ...verdicts._gate import GateState
from ...verdicts._replaycheck import Change
from ..console._replay_report import Row, decision_line
from ._results import AttemptLine, CaseResult, Kind, RunResults

REPLAY_KINDS = {
    Change.UNCHANGED: Kind.PASSED,
    Change.IMPROVEMENT: Kind.IMPROVEMENT,
    Change.REGRESSION: Kind.REGRESSION,
    Change.CHANGED: Kind.CHANGED,
    Change.STALE: Kind.STALE,
    Change.UNTESTED: Kind.UNTESTED,
}
"""A replay decision's kind."""

VERDICT_KINDS = {
    Verdict.PASSED: Kind.PASSED,
    Verdict.FAILED: Kind.FAILED,
    Verdict.ERROR: Kind.ERROR,
    Verdict.SKIPPED: Kind.UNTESTED,
    Verdict.INTERRUPTED: Kind.UNTESTED,
}
"""A live or rescored verdict's kind."""


def trace_command(run: str, case_id: str, model: str) -> str:
    """The exact ``evaltape trace`` command that shows a case's attempts in ``run``."""
    parts = ["evaltape", "trace", run, "--cases", case_id]
    if model:
        parts += ["-m", model]
    return shlex.join(parts)


def _excluded(quarantined: bool, known_gap: bool) -> str:
    return "quarantined" if quarantined else "known gap" if known_gap else ""


def _group(
    lines: Iterable[tuple[tuple[str, str, str], AttemptLine, float, str]], run: str
) -> tuple[CaseResult, ...]:
    """Attempts grouped by (suite, case, model), sorted, attempts in index order."""
    found: dict[tuple[str, str, str], list[tuple[AttemptLine, float, str]]] = {}
    for key, line, seconds, excluded in lines:
        found.setdefault(key, []).append((line, seconds, excluded))
    out = []
    for (suite, case_id, model), items in sorted(found.items()):
        items.sort(key=lambda item: item[0].attempt)
        out.append(
            CaseResult(
                suite=suite,
                case_id=case_id,
                model=model,
                attempts=tuple(i[0] for i in items),
                seconds=sum(i[1] for i in items),
                excluded=next((i[2] for i in items if i[2]), ""),
                trace=trace_command(run, case_id, model) if run else "",
            )
        )
    return tuple(out)


def _replay_line(r: Attempt) -> AttemptLine:
    d = r.decision
    assert d is not None
    if d.change is Change.REGRESSION:
        detail = f"recorded: pass; replayed: {d.replayed.reason if d.replayed else ''}"
    elif d.change is Change.IMPROVEMENT:
        detail = f"recorded: {d.rescored.reason}; replayed: pass"
    elif d.change is Change.UNCHANGED:
        word = "pass" if d.rescored.passed else "FAIL"
        detail = f"unchanged, {word} as recorded and as replayed"
    elif d.harness is not None:
        detail = d.harness.summary
    else:
        detail = d.detail
    return AttemptLine(attempt=r.attempt, kind=REPLAY_KINDS[d.change], detail=detail)


def from_replay(outcome: ReplayOutcome) -> RunResults:
    """A replay: one entry per recorded case and model, its attempts' replay decisions."""
    done = [r for r in outcome.pool.results if r.decision is not None]
    rows = [
        Row(
            suite=r.case.suite,
            case_id=r.case.id,
            model=r.model,
            attempt=r.attempt,
            decision=r.decision,
        )
        for r in done
        if r.decision is not None
    ]
    cases = _group(
        (((r.case.suite, r.case.id, r.model), _replay_line(r), r.duration, "") for r in done),
        outcome.run_id,
    )
    if outcome.ran:
        decision = decision_line(rows, untested=len(outcome.untested), errors=len(outcome.errors))
    else:
        decision = "FAIL: nothing was tested"
    return RunResults(
        command="replay",
        run_id=outcome.run_id,
        decision=decision,
        exit_code=outcome.exit_code,
        cases=cases,
        untested=outcome.untested,
    )


def _attempt_line(a: AttemptResult) -> AttemptLine:
    kind = Kind.ERROR if a.tainted and a.verdict is not Verdict.PASSED else VERDICT_KINDS[a.verdict]
    return AttemptLine(attempt=a.attempt, kind=kind, detail=a.reason)


def _of_attempts(attempts: Sequence[AttemptResult], run: str) -> tuple[CaseResult, ...]:
    return _group(
        (
            (
                (a.suite, a.case_id, a.model),
                _attempt_line(a),
                a.duration,
                _excluded(a.quarantined, a.known_gap),
            )
            for a in attempts
        ),
        run,
    )


def _tally(attempts: Sequence[AttemptResult]) -> str:
    planned = [a for a in attempts if not a.confirmation]
    passed = sum(1 for a in planned if a.verdict is Verdict.PASSED)
    errors = sum(1 for a in planned if a.verdict is Verdict.ERROR or a.tainted)
    extra = f", {errors} could not be judged" if errors else ""
    again = [a for a in attempts if a.confirmation]
    if again:
        ok = sum(1 for a in again if a.verdict is Verdict.PASSED)
        extra += f"; confirmation re-runs {ok}/{len(again)} passed"
    return f"{passed}/{len(planned)} attempts passed{extra}"


def from_live(outcome: LiveOutcome, exit_code: int) -> RunResults:
    """A live run: each attempt's verdict; the decision is the gate's when one ran."""
    attempts = outcome.record.attempts if outcome.record is not None else ()
    words = {
        GateState.OPEN: "OPEN",
        GateState.RUN_ZERO: "OPEN (run zero)",
        GateState.NO_BASELINE: "NOT GATED (no baseline)",
    }
    gates = [
        f"gate [{g.model}]: {words.get(g.decision.state, 'CLOSED')}"
        + (f" ({'; '.join(g.decision.reasons)})" if g.decision.reasons else "")
        for g in outcome.gates
    ]
    return RunResults(
        command="live",
        run_id=outcome.run_id,
        decision="; ".join([_tally(attempts), *gates]),
        exit_code=exit_code,
        cases=_of_attempts(attempts, outcome.run_id),
    )


def from_rescore(done: RescoreOutcome) -> RunResults:
    """A rescore: today's verdicts; a recorded pass that fails now is a regression."""
    lines = []
    for r in done.rescore.rescored:
        kind = VERDICT_KINDS[r.verdict]
        if r.before is Verdict.PASSED and r.verdict is Verdict.FAILED:
            kind = Kind.REGRESSION
        elif r.before is Verdict.FAILED and r.verdict is Verdict.PASSED:
            kind = Kind.IMPROVEMENT
        before = f"recorded: {r.before.value}; " if r.before is not None else ""
        detail = f"{before}now: {r.reason or r.verdict.value}"
        excluded = _excluded(r.case.quarantined, r.case.known_gap is not None)
        line = AttemptLine(attempt=r.attempt, kind=kind, detail=detail)
        lines.append(((r.case.suite, r.case.id, r.model), line, r.duration, excluded))
    record = done.record
    results = _group(lines, record.run_id)
    flips = sum(1 for c in results if c.kind in (Kind.REGRESSION, Kind.IMPROVEMENT))
    decision = f"{_tally(record.attempts)}; {flips} case(s) changed verdict since recorded"
    return RunResults(
        command="rescore",
        run_id=record.run_id,
        decision=decision,
        exit_code=0,
        cases=results,
        untested=tuple(s.line for s in done.rescore.skipped),
    )


MOVE_KINDS = {
    MoveKind.REGRESSED: Kind.REGRESSION,
    MoveKind.WORSE: Kind.FAILED,
    MoveKind.IMPROVED: Kind.IMPROVEMENT,
    MoveKind.BETTER: Kind.IMPROVEMENT,
}
"""A moved case's kind in a comparison."""


def from_comparison(result: Comparison, *, current_run: str = "") -> RunResults:
    """A comparison: one entry per common case; a case that got worse fails."""
    moves = {m.key: m for m in result.moves}
    cases = []
    for base, now in result.pairs:
        key = (now.suite, now.case_id)
        move = moves.get(key)
        kind = MOVE_KINDS[move.kind] if move is not None else Kind.PASSED
        detail = f"baseline {base.passed}/{base.total}, now {now.passed}/{now.total}"
        if move is not None:
            detail = f"{move.kind.value}: {detail} (p={move.p_value:.3g})"
        cases.append(
            CaseResult(
                suite=now.suite,
                case_id=now.case_id,
                model=now.model,
                attempts=(AttemptLine(attempt=0, kind=kind, detail=detail),),
                excluded=_excluded(
                    base.quarantined or now.quarantined, base.known_gap or now.known_gap
                ),
                trace=trace_command(current_run, now.case_id, now.model) if current_run else "",
            )
        )
    test = result.test
    word = "significantly worse" if result.significant else "not significantly worse"
    decision = (
        f"current {word} (one-sided p={test.p_worse:.3g}, alpha {result.alpha}); "
        f"{len(result.regressions)} regressed, {len(result.improvements)} improved"
    )
    return RunResults(
        command="compare",
        run_id=current_run,
        decision=decision,
        exit_code=0,
        cases=tuple(sorted(cases, key=lambda c: (c.suite, c.case_id, c.model))),
    )


AB_KINDS = {
    CaseVerdict.IMPROVED: Kind.IMPROVEMENT,
    CaseVerdict.REGRESSED: Kind.REGRESSION,
    CaseVerdict.UNCHANGED_PASS: Kind.PASSED,
    CaseVerdict.UNCHANGED_FAIL: Kind.FAILED,
    CaseVerdict.INCONCLUSIVE: Kind.PASSED,
}
"""An A/B case verdict's kind: only a significant regression or a case failing on both
sides is a failure; an inconclusive case is reported in its detail."""


def from_ab(outcome: ABOutcome, model: str, exit_code: int = 0) -> RunResults:
    """An A/B: one entry per case, candidate against baseline."""
    cases = tuple(
        CaseResult(
            suite=c.suite,
            case_id=c.case_id,
            model=model,
            attempts=(
                AttemptLine(
                    attempt=0,
                    kind=AB_KINDS[c.verdict],
                    detail=f"{c.verdict.value}: baseline {c.baseline_passed}/"
                    f"{c.baseline_total}, candidate {c.candidate_passed}/{c.candidate_total}"
                    + (f" (p={c.p_value:.3g})" if c.p_value is not None else ""),
                ),
            ),
            excluded=_excluded(c.quarantined, c.known_gap),
        )
        for c in outcome.cases
    )
    counts = {v: sum(1 for c in outcome.cases if c.verdict is v) for v in CaseVerdict}
    decision = ", ".join(f"{n} {v.value}" for v, n in counts.items() if n) or "no cases"
    return RunResults(
        command="ab",
        run_id=outcome.run_id,
        decision=f"A/B: {decision}",
        exit_code=exit_code,
        cases=tuple(sorted(cases, key=lambda c: (c.suite, c.case_id))),
    )
