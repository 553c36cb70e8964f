"""The report's content as values: decision, counts, rates, cases, moves, cost, changes.

Everything is derived from the run records by the library's own functions
(``stats`` for intervals, ``verdicts`` for the replay decision and the paired
comparison); the HTML renderer only lays these values out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import attrs

from ...results._records import AttemptResult, RunKind, RunRecord, Verdict
from ...stats import suite_interval, suite_rate, wilson
from ...verdicts._ab import single_model
from ...verdicts._compare import Comparison, compare
from ...verdicts._replaycheck import Change, replay_exit_code

_WORDS = {0: "OK", 1: "FAIL", 2: "FAIL", 3: "STALE"}


@attrs.frozen(kw_only=True)
class Decision:
    """The first thing the page says."""

    word: str
    """``OK``, ``FAIL``, ``STALE``, ``OPEN``, ``CLOSED``, ``PASSED`` ..."""
    line: str
    """One sentence saying why."""
    good: bool
    """Green (True) or red/amber (False)."""


@attrs.frozen(kw_only=True)
class RateRow:
    """One suite's pass rate with one model (on one side of a comparison)."""

    side: str
    """"" for a single run, else the side's label."""
    suite: str
    """The suite."""
    model: str
    """The model."""
    cases: int
    """Cases with at least one counted trial."""
    passed: int
    """Trials that passed."""
    total: int
    """Trials counted (skipped and tainted ones left out)."""
    rate: float
    """Mean of per-case pass rates (``stats.suite_rate``); NaN with no cases."""
    low: float
    """Clustered 95% interval (``stats.suite_interval``): lower bound."""
    high: float
    """Upper bound."""


@attrs.frozen(kw_only=True)
class CaseRow:
    """One case with one model: its attempts and their verdicts."""

    side: str
    """"" for a single run, else the side's label."""
    suite: str
    """The case's suite."""
    case_id: str
    """The case."""
    model: str
    """The model."""
    verdicts: tuple[Verdict, ...]
    """Each attempt's verdict, in attempt order."""
    passed: int
    """Counted trials that passed."""
    total: int
    """Counted trials."""
    low: float
    """Wilson 95% interval of ``passed / total``: lower bound (0 with no trials)."""
    high: float
    """Upper bound (1 with no trials)."""
    tokens: int
    """Tokens of the attempts."""
    cost: float | None
    """USD of the attempts where known; None when none is known."""
    changes: tuple[str, ...]
    """Replay decisions of the attempts (empty for live and rescore)."""
    reason: str
    """The first attempt's reason for not passing, if any."""
    traces: tuple[str, ...]
    """Anchors of the attempts' traces on the page."""

    @property
    def mark(self) -> str:
        """``PASS`` (every trial), ``SPLIT`` (attempts disagree), ``FAIL`` or ``SKIP``."""
        if not self.total:
            return "SKIP"
        if self.passed == self.total:
            return "PASS"
        return "SPLIT" if self.passed else "FAIL"


@attrs.frozen(kw_only=True)
class ChangeRow:
    """A replayed attempt whose decision is not ``unchanged``, with its diff."""

    where: str
    """``suite/case model attempt N``."""
    change: str
    """The decision."""
    detail: str
    """What the harness changed (or why it failed), one line."""
    diff: tuple[str, ...]
    """Recorded-vs-now lines (``-`` recorded, ``+`` now)."""
    trace: str
    """Anchor of the attempt's trace."""


def trace_anchor(side: int, index: int) -> str:
    """The page anchor of attempt ``index`` of side ``side`` (0 current, 1 base)."""
    return f"t{side}-{index}"


def _counted(a: AttemptResult) -> bool:
    return a.verdict.judged and not a.tainted


def case_rows(attempts: Sequence[AttemptResult], side: str, side_no: int) -> tuple[CaseRow, ...]:
    """Per (suite, case, model) in first-seen order; attempts keep their record index."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for i, a in enumerate(attempts):
        groups.setdefault((a.suite, a.case_id, a.model), []).append(i)
    rows = []
    for (suite, case_id, model), indexes in groups.items():
        items = sorted(indexes, key=lambda i: attempts[i].attempt)
        mine = [attempts[i] for i in items]
        counted = [a for a in mine if _counted(a)]
        passed = sum(a.verdict is Verdict.PASSED for a in counted)
        low, high = wilson(passed, len(counted)) if counted else (0.0, 1.0)
        costs = [a.cost for a in mine if a.cost is not None]
        rows.append(
            CaseRow(
                side=side,
                suite=suite,
                case_id=case_id,
                model=model,
                verdicts=tuple(a.verdict for a in mine),
                passed=passed,
                total=len(counted),
                low=low,
                high=high,
                tokens=sum(a.usage.total_tokens for a in mine),
                cost=sum(costs) if costs else None,
                changes=tuple(a.change for a in mine if a.change),
                reason=next((a.reason for a in mine if a.reason), ""),
                traces=tuple(trace_anchor(side_no, i) for i in items),
            )
        )
    return tuple(rows)


def rate_rows(cases: Iterable[CaseRow]) -> tuple[RateRow, ...]:
    """Per (side, suite, model): the clustered pass rate over its cases with trials."""
    groups: dict[tuple[str, str, str], list[CaseRow]] = {}
    for c in cases:
        groups.setdefault((c.side, c.suite, c.model), []).append(c)
    sides = list(dict.fromkeys(side for side, _, _ in groups))
    rows = []
    for (side, suite, model), items in sorted(
        groups.items(), key=lambda kv: (sides.index(kv[0][0]), kv[0][1], kv[0][2])
    ):
        per_case = [(c.passed, c.total) for c in items if c.total]
        rate = suite_rate(per_case) if per_case else math.nan
        low, high = suite_interval(per_case) if per_case else (0.0, 1.0)
        rows.append(
            RateRow(
                side=side,
                suite=suite,
                model=model,
                cases=len(per_case),
                passed=sum(p for p, _ in per_case),
                total=sum(t for _, t in per_case),
                rate=rate,
                low=low,
                high=high,
            )
        )
    return tuple(rows)


def change_rows(record: RunRecord) -> tuple[ChangeRow, ...]:
    """The replayed attempts that did not come out ``unchanged``, in record order."""
    return tuple(
        ChangeRow(
            where=f"{a.suite}/{a.case_id} {a.model} attempt {a.attempt + 1}",
            change=a.change,
            detail=a.change_detail or a.reason,
            diff=a.change_diff,
            trace=trace_anchor(0, i),
        )
        for i, a in enumerate(record.attempts)
        if a.change and a.change != Change.UNCHANGED.value
    )


def counts(record: RunRecord) -> tuple[tuple[str, int], ...]:
    """Attempts, then each verdict and (for a replay) each decision that occurs."""
    out = [("attempts", len(record.attempts))]
    out += [(v.value, record.count(v)) for v in Verdict if record.count(v)]
    changes = [a.change for a in record.attempts if a.change]
    out += [(c.value, changes.count(c.value)) for c in Change if changes.count(c.value)]
    return tuple(out)


def decision(record: RunRecord, comparison: Comparison | None, ab: bool) -> Decision:
    """What the run decided: the replay's exit decision, the gate's, or the plain tally."""
    known = {c.value for c in Change}
    changes = [Change(a.change) for a in record.attempts if a.change in known]
    if record.kind is RunKind.REPLAY and changes:
        code = replay_exit_code(changes)
        named = {c: changes.count(c) for c in Change if changes.count(c)}
        detail = ", ".join(f"{n} {c.value}" for c, n in named.items())
        return Decision(word=_WORDS[code], line=f"replay: {detail}", good=code == 0)
    if comparison is not None:
        regressions = len(comparison.regressions)
        worse = comparison.significant
        what = "A/B" if ab else "comparison"
        line = (
            f"{what}: {comparison.test.cases} paired cases, "
            f"{comparison.test.effect_points:+.1f} points, one-sided p = "
            f"{comparison.test.p_worse:.3g}; {regressions} case(s) regressed"
        )
        return Decision(word="WORSE" if worse else "NOT WORSE", line=line, good=not worse)
    if record.gate:
        closed = record.gate == "closed"
        line = f"gate {record.gate}" + (f" against {record.baseline}" if record.baseline else "")
        return Decision(word=record.gate.upper(), line=line, good=not closed)
    judged = [a for a in record.attempts if _counted(a)]
    passed = sum(a.verdict is Verdict.PASSED for a in judged)
    return Decision(
        word="PASSED" if judged and passed == len(judged) else "NOT ALL PASSED",
        line=f"{passed} of {len(judged)} counted attempts passed",
        good=bool(judged) and passed == len(judged),
    )


def comparison_of(base: RunRecord | None, current: RunRecord) -> Comparison | None:
    """The paired comparison of the two sides, or None without a base (or nothing shared)."""
    if base is None:
        return None
    try:
        return compare(single_model(base.attempts), single_model(current.attempts))
    except ValueError:
        return None
