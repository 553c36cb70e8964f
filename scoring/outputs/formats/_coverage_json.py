"""``evaltape coverage --json``: the coverage outcome as one JSON document (docs/json.md)."""

from __future__ import annotations

from typing import Any

from ..._config import display_path
from ...run._coverage import CoverageOutcome
from ...run.mutate._mutants import MutationOutcome
from ...verdicts._coverage import SuiteCoverage

COVERAGE_SCHEMA = "evaltape.coverage/1"
"""The ``schema`` field of the document: bumped when a field changes meaning."""


def _suite(s: SuiteCoverage) -> dict[str, Any]:
    return {
        "suite": s.suite,
        "attempts": s.attempts,
        "passing": s.passing,
        "verdict": s.verdict,
        "tools": [
            {
                "tool": t.tool,
                "state": t.state.value,
                "calls": t.calls,
                "passing": t.passing,
                "unchecked": t.unchecked,
                "failing": t.failing,
                "unseen": t.unseen,
                "results_unseen": t.results_unseen,
                "cases": list(t.cases),
                "line": t.line,
            }
            for t in s.tools
        ],
        "cases": [
            {
                "case": c.case_id,
                "attempts": c.attempts,
                "passing": c.passing,
                "outcome_checked": c.outcome_checked,
                "tools": dict(c.tools),
            }
            for c in s.cases
        ],
    }


def _mutants(m: MutationOutcome) -> dict[str, Any]:
    return {
        "agent": m.agent,
        "planted": len(m.results),
        "caught": m.caught,
        "score": round(m.score, 4),
        "mutations": [
            {
                "operator": r.mutation.operator,
                "tool": r.mutation.tool,
                "path": r.mutation.path,
                "line": r.mutation.line,
                "label": r.mutation.label,
                "caught": r.caught,
                "by": list(r.by),
                "replayed": r.replayed,
                "note": r.note,
            }
            for r in m.results
        ],
    }


def coverage_json(outcome: CoverageOutcome) -> dict[str, Any]:
    """The document ``--json`` prints."""
    return {
        "schema": COVERAGE_SCHEMA,
        "command": "coverage",
        "tapes": [display_path(t) for t in outcome.tapes],
        "attempts": outcome.coverage.attempts,
        "skipped": list(outcome.skipped),
        "suites": [_suite(s) for s in outcome.coverage.suites],
        "mutations": None if outcome.mutants is None else _mutants(outcome.mutants),
    }
