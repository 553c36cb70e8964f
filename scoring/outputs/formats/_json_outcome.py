"""``--json FILE``: an entry point's outcome value as JSON, one function per outcome type.

Every document starts with the fields of ``RunResults`` (``results_json``):
the command, its exit code, the decision, the counts and one entry per case
and model.  Each outcome type adds its own fields; the run record itself is
embedded as stored (docs/results.md).  Floats that are not numbers (NaN:
too few cases for a statistic) become ``null``.  docs/json.md lists every
field.
"""

from __future__ import annotations

import math
from pathlib import Path

from ...results._record_json import record_to_json
from ...run._ab import ABOutcome
from ...run._finished import Attempt
from ...run._live import LiveOutcome
from ...run._replay import ReplayOutcome
from ...run._rescore import RescoreOutcome
from ...verdicts._compare import Comparison, PairedTest, RunSide
from ...verdicts._replaycheck import HarnessChange
from ._results import CaseResult, RunResults

SCHEMA = "evaltape.outcome/1"
"""The ``schema`` of every document; a new major number means a field changed meaning."""

Json = dict[str, object]


def _num(x: float | None) -> float | None:
    return None if x is None or math.isnan(x) else x


def _path(p: Path | None) -> str | None:
    return None if p is None else str(p)


def _case(c: CaseResult) -> Json:
    return {
        "suite": c.suite,
        "case": c.case_id,
        "model": c.model,
        "kind": c.kind.value,
        "reason": c.reason,
        "excluded": c.excluded,
        "seconds": c.seconds,
        "trace": c.trace,
        "attempts": [
            {"attempt": a.attempt, "kind": a.kind.value, "detail": a.detail} for a in c.attempts
        ],
    }


def results_json(results: RunResults) -> Json:
    """The fields every outcome document starts with."""
    return {
        "schema": SCHEMA,
        "command": results.command,
        "run_id": results.run_id,
        "exit_code": results.exit_code,
        "decision": results.decision,
        "counts": {k.value: n for k, n in results.counts.items()},
        "cases": [_case(c) for c in results.cases],
        "untested": list(results.untested),
    }


def _harness(h: HarnessChange) -> Json:
    return {
        "change": h.change.value,
        "what": h.what,
        "label": h.label,
        "summary": h.summary,
        "path": h.path,
        "diff": list(h.diff),
    }


def _change(r: Attempt) -> Json:
    d = r.decision
    assert d is not None
    h = d.harness
    return {
        "suite": r.case.suite,
        "case": r.case.id,
        "model": r.model,
        "attempt": r.attempt,
        "change": d.change.value,
        "rescored": {"passed": d.rescored.passed, "reason": d.rescored.reason},
        "replayed": (
            None
            if d.replayed is None
            else {"passed": d.replayed.passed, "reason": d.replayed.reason}
        ),
        "harness": None if h is None else _harness(h),
        "all_changes": [_harness(c) for c in d.changes],
        "assumed": d.assumed.value if d.assumed is not None else None,
    }


def replay_json(outcome: ReplayOutcome, results: RunResults) -> Json:
    """``evaltape replay --json``: a ``ReplayOutcome``."""
    return {
        **results_json(results),
        "ran": outcome.ran,
        "record_path": _path(outcome.record_path),
        "judge_status": outcome.judge_status.value,
        "changes": [_change(r) for r in outcome.pool.results if r.decision is not None],
        "replayed": sum(1 for r in outcome.pool.results if r.decision is not None),
        "errors": len(outcome.errors),
        "record": record_to_json(outcome.record) if outcome.record is not None else None,
    }


def live_json(outcome: LiveOutcome, results: RunResults) -> Json:
    """``evaltape live --json``: a ``LiveOutcome``."""
    return {
        **results_json(results),
        "ran": outcome.ran,
        "record_path": _path(outcome.record_path),
        "tapes": _path(outcome.tapes),
        "cassettes": [str(p) for p in outcome.cassettes],
        "unrecorded": [
            {
                "case": u.case_id,
                "model": u.model,
                "attempt": u.attempt,
                "cassette": str(u.cassette),
                "kept": u.kept,
                "why": u.why,
            }
            for u in outcome.unrecorded
        ],
        "models": list(outcome.models),
        "trials": outcome.trials,
        "judge_status": outcome.judge_status.value,
        "gates": [
            {
                "model": g.model,
                "state": g.decision.state.value,
                "against": g.against,
                "reasons": list(g.decision.reasons),
                "notes": list(g.decision.notes),
            }
            for g in outcome.gates
        ],
        "entry": None
        if outcome.entry is None
        else [
            {
                "suite": e.suite,
                "case": e.case_id,
                "model": e.model,
                "passed": e.passed,
                "judged": e.judged,
                "total": e.total,
                "verdict": e.verdict.value,
            }
            for e in outcome.entry
        ],
        "record": record_to_json(outcome.record) if outcome.record is not None else None,
    }


def rescore_json(outcome: RescoreOutcome, results: RunResults) -> Json:
    """``evaltape rescore --json``: a ``RescoreOutcome``."""
    return {
        **results_json(results),
        "record_path": str(outcome.record_path),
        "judge_status": outcome.judge_status.value,
        "notes": list(outcome.rescore.notes),
        "record": record_to_json(outcome.record),
    }


def _side(s: RunSide) -> Json:
    return {
        "model": s.model,
        "cases": s.cases,
        "passed": s.passed,
        "total": s.total,
        "rate": _num(s.rate),
        "clustered_se": _num(s.clustered_se),
        "interval": [_num(s.interval[0]), _num(s.interval[1])],
        "k": s.k,
        "pass_at_k": _num(s.pass_at_k),
        "pass_hat_k": _num(s.pass_hat_k),
    }


def _test(t: PairedTest) -> Json:
    return {
        "method": t.method.value,
        "cases": t.cases,
        "moved": t.moved,
        "p_worse": _num(t.p_worse),
        "p_two_sided": _num(t.p_two_sided),
        "effect_points": _num(t.effect_points),
        "ci_low": _num(t.ci_low),
        "ci_high": _num(t.ci_high),
        "confidence": t.confidence,
    }


def comparison_json(c: Comparison) -> Json:
    """A ``Comparison``: both sides, the paired test and the cases that moved."""
    return {
        "alpha": c.alpha,
        "significant": c.significant,
        "baseline": _side(c.baseline),
        "current": _side(c.current),
        "test": _test(c.test),
        "cohens_h": _num(c.cohens_h),
        "effect": c.effect,
        "moves": [
            {
                "suite": m.current.suite,
                "case": m.current.case_id,
                "kind": m.kind.value,
                "baseline": {"passed": m.baseline.passed, "total": m.baseline.total},
                "current": {"passed": m.current.passed, "total": m.current.total},
                "p_value": _num(m.p_value),
                "p_adjusted": _num(m.p_adjusted),
            }
            for m in c.moves
        ],
        "excluded": [list(k) for k in c.excluded],
        "only_baseline": [list(k) for k in c.only_baseline],
        "only_current": [list(k) for k in c.only_current],
        "unusable": [list(k) for k in c.unusable],
    }


def compare_json(
    c: Comparison, results: RunResults, *, baseline_label: str, current_label: str
) -> Json:
    """``evaltape compare --json``: a ``Comparison`` and the two sides' labels."""
    return {
        **results_json(results),
        "baseline_label": baseline_label,
        "current_label": current_label,
        "comparison": comparison_json(c),
    }


def ab_json(outcome: ABOutcome, results: RunResults) -> Json:
    """``evaltape ab --json``: an ``ABOutcome``."""
    return {
        **results_json(results),
        "folder": str(outcome.folder),
        "trials": outcome.trials,
        "judge_status": outcome.judge_status.value,
        "verdicts": [
            {
                "suite": c.suite,
                "case": c.case_id,
                "verdict": c.verdict.value,
                "baseline_passed": c.baseline_passed,
                "baseline_total": c.baseline_total,
                "candidate_passed": c.candidate_passed,
                "candidate_total": c.candidate_total,
                "p_value": _num(c.p_value),
                "quarantined": c.quarantined,
                "known_gap": c.known_gap,
            }
            for c in outcome.cases
        ],
        "comparison": comparison_json(outcome.comparison),
    }
