"""Running a case's custom scorers (``Case.scorers``) after the built-in checks.

Each named scorer becomes one check named by its ``module:function``: passed
when its ``Score`` passed, with the score's reason as the detail.  A scorer
that raises or returns something other than a ``Score`` fails its check with a
line saying so, so a broken scorer is never read as a pass.
"""

from __future__ import annotations

from evaltape.recorder import Session

from ..cases._cases import Case
from ._score import Check, Score


def custom_checks(case: Case, session: Session) -> tuple[Check, ...]:
    """The custom scorers in order; stops after the first that fails."""
    checks: list[Check] = []
    for named in case.scorers:
        try:
            score = named.function(case, session)
        except Exception as exc:  # a user's scorer: its failure is this check's result
            check = Check(
                name=named.spec,
                passed=False,
                detail=f"scorer {named.spec} raised {type(exc).__name__}: {exc}",
            )
        else:
            if isinstance(score, Score):
                check = Check(name=named.spec, passed=score.passed, detail=score.reason)
            else:
                check = Check(
                    name=named.spec,
                    passed=False,
                    detail=f"scorer {named.spec} returned {type(score).__name__}, not a Score",
                )
        checks.append(check)
        if not check.passed:
            break
    return tuple(checks)
