"""Eval cases: the suite files, their validation, and drafting new cases from sessions.

The nouns of a case are public here; ``evaltape.scoring`` re-exports the common ones.
"""

from ._answer import AnswerExpectation
from ._cases import (
    AgentMode,
    Case,
    CaseError,
    CaseKind,
    KnownGap,
    Problem,
    SelectionError,
    Suite,
    select,
)
from ._custom import NamedScorer
from ._load import load_suites

__all__ = [
    "AgentMode",
    "AnswerExpectation",
    "Case",
    "CaseError",
    "CaseKind",
    "KnownGap",
    "NamedScorer",
    "Problem",
    "SelectionError",
    "Suite",
    "load_suites",
    "select",
]
