"""The whole report as one value, built from the runs and their traces."""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs

from ...results._records import AttemptResult, RunRecord
from ...verdicts._compare import Comparison
from ...verdicts._coverage import Coverage
from ._data import (
    CaseRow,
    ChangeRow,
    Decision,
    RateRow,
    case_rows,
    change_rows,
    comparison_of,
    counts,
    decision,
    rate_rows,
    trace_anchor,
)
from ._runs import Runs

TraceLines = Callable[[AttemptResult], list[str]]
"""One attempt's trace block, as ``evaltape trace`` prints it (``run.rescore._trace``)."""


@attrs.frozen(kw_only=True)
class Trace:
    """One attempt's trace, turn by turn."""

    anchor: str
    """Its anchor on the page."""
    title: str
    """``suite/case · model · attempt N · verdict``."""
    verdict: str
    """The recorded verdict."""
    lines: tuple[str, ...]
    """The lines ``evaltape trace`` prints for it."""


@attrs.frozen(kw_only=True)
class Move:
    """A common case whose pass rate moved between the two sides."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case."""
    kind: str
    """``regressed``, ``improved``, ``worse`` or ``better``."""
    before: tuple[int, int]
    """(passed, counted) on the baseline side."""
    now: tuple[int, int]
    """(passed, counted) on the current side."""
    p_adjusted: float
    """Benjamini-Hochberg adjusted Fisher p-value."""


@attrs.frozen(kw_only=True)
class Report:
    """Everything the page shows, in reading order."""

    title: str
    """``evaltape report: replay run <id>``."""
    meta: tuple[str, ...]
    """Kind, state, commit, models, trials."""
    decision: Decision
    """The decision, first."""
    counts: tuple[tuple[str, int], ...]
    """Attempts and each verdict/decision that occurs (current side)."""
    labels: tuple[str, str]
    """Baseline and current side names ("" for a single run)."""
    rates: tuple[RateRow, ...]
    """Per side, suite and model."""
    cases: tuple[CaseRow, ...]
    """Per side, case and model."""
    moves: tuple[Move, ...]
    """Cases that moved (comparisons only)."""
    tokens: tuple[tuple[str, int, float | None], ...]
    """Per side label: tokens and USD (None when unknown)."""
    changes: tuple[ChangeRow, ...]
    """Replay changes with their diffs."""
    traces: tuple[Trace, ...]
    """Every attempt's trace."""
    notes: tuple[str, ...]
    """The run record's notes."""
    coverage: Coverage | None = None
    """A replay run's coverage: what its recorded attempts can catch, per suite and tool."""


def _traces(record: RunRecord, side: int, trace: TraceLines) -> list[Trace]:
    out = []
    for i, a in enumerate(record.attempts):
        out.append(
            Trace(
                anchor=trace_anchor(side, i),
                title=f"{a.suite}/{a.case_id} · {a.model} · attempt {a.attempt + 1}",
                verdict=a.verdict.value,
                lines=tuple(trace(a)),
            )
        )
    return out


def _moves(comparison: Comparison | None) -> tuple[Move, ...]:
    if comparison is None:
        return ()
    return tuple(
        Move(
            suite=m.current.suite,
            case_id=m.current.case_id,
            kind=m.kind.value,
            before=(m.baseline.passed, m.baseline.total),
            now=(m.current.passed, m.current.total),
            p_adjusted=m.p_adjusted,
        )
        for m in comparison.moves
    )


def _money(record: RunRecord) -> tuple[int, float | None]:
    known = [a.cost for a in record.attempts if a.cost is not None]
    return sum(a.usage.total_tokens for a in record.attempts), (sum(known) if known else None)


def build_report(runs: Runs, trace: TraceLines) -> Report:
    """The report of ``runs``; ``trace`` renders each attempt's trace block."""
    current, base = runs.current, runs.base
    base_label, current_label = runs.labels
    comparison = comparison_of(base, current)
    cases = case_rows(current.attempts, current_label, 0)
    if base is not None:
        cases = case_rows(base.attempts, base_label, 1) + cases
    kind = "A/B" if runs.ab else current.kind.value
    meta = [
        f"{kind} run {current.run_id} · {current.state.value}",
        f"commit {current.commit or 'unknown'} · evaltape {current.version}",
        f"models {', '.join(current.models) or 'none'} · "
        f"up to {max((len(c.verdicts) for c in cases), default=0)} attempt(s) per case and model",
    ]
    if base is not None and not runs.ab:
        meta.append(f"compared against {base.kind.value} run {base.run_id}")
    tokens = [(current_label or "run", *_money(current))]
    if base is not None:
        tokens.insert(0, (base_label, *_money(base)))
    traces = _traces(current, 0, trace)
    if base is not None:
        traces += _traces(base, 1, trace)
    return Report(
        title=f"evaltape report: {kind} run {current.run_id}",
        meta=tuple(meta),
        decision=decision(current, comparison, runs.ab),
        counts=counts(current),
        labels=runs.labels,
        rates=rate_rows(cases),
        cases=cases,
        moves=_moves(comparison),
        tokens=tuple(tokens),
        changes=change_rows(current),
        traces=tuple(traces),
        notes=current.notes,
    )


def rate_text(rate: float) -> str:
    """``83%``; an em dash for NaN."""
    return "—" if math.isnan(rate) else f"{rate * 100:.0f}%"
