"""Each case's outcome in one run: the per-trial verdicts a comparison pairs."""

from __future__ import annotations

import math
from collections.abc import Iterable

import attrs

from ..results._records import AttemptResult, Verdict

CaseKey = tuple[str, str]
"""(suite, case id)."""


@attrs.frozen(kw_only=True)
class CaseOutcome:
    """One case's trials with one model in one run, SKIPPED and tainted attempts left out."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case's id."""
    model: str
    """The model under test."""
    passed: int
    """Trials that passed."""
    total: int
    """Trials that count (passed, failed or errored, and not tainted)."""
    quarantined: bool = False
    """Reported, kept out of the test and the gate."""
    known_gap: bool = False
    """Expected to fail today: reported, kept out of the test and the gate."""

    @property
    def rate(self) -> float:
        """Share of trials that passed; NaN with no trials."""
        return self.passed / self.total if self.total else math.nan

    @property
    def green(self) -> bool:
        """Every trial passed (and there was at least one)."""
        return self.passed == self.total > 0

    @property
    def consistent(self) -> bool:
        """All trials agreed: all passed or none did."""
        return self.passed in (0, self.total)

    @property
    def excluded(self) -> bool:
        """Quarantined or a known gap: never part of the test."""
        return self.quarantined or self.known_gap


def case_outcomes(attempts: Iterable[AttemptResult]) -> dict[CaseKey, CaseOutcome]:
    """One outcome per (suite, case id); the attempts must all be of one model.

    SKIPPED and tainted attempts are left out of the counts (a case whose
    every attempt was left out has ``total == 0``).  A case is quarantined or
    a known gap when any of its attempts says so.  Raises ``ValueError`` when
    the attempts name more than one model.
    """
    counts: dict[CaseKey, list[int]] = {}
    flags: dict[CaseKey, tuple[bool, bool]] = {}
    models: set[str] = set()
    for a in attempts:
        models.add(a.model)
        key = (a.suite, a.case_id)
        row = counts.setdefault(key, [0, 0])
        q, g = flags.get(key, (False, False))
        flags[key] = (q or a.quarantined, g or a.known_gap)
        if not a.verdict.judged or a.tainted:
            continue
        row[0] += a.verdict is Verdict.PASSED
        row[1] += 1
    if len(models) > 1:
        raise ValueError(f"attempts of more than one model: {', '.join(sorted(models))}")
    model = next(iter(models), "")
    return {
        key: CaseOutcome(
            suite=key[0],
            case_id=key[1],
            model=model,
            passed=p,
            total=t,
            quarantined=flags[key][0],
            known_gap=flags[key][1],
        )
        for key, (p, t) in sorted(counts.items())
    }
