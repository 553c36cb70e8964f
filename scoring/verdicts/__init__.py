"""Decisions over results: the gate, comparisons, the replay decision, flips, quarantine, A/B,
coverage.

Flip causes (why a case's attempts disagree) and coverage values are public here; the gate and the
comparison are re-exported by ``evaltape.scoring``.
"""

from ._coverage import CaseCoverage, Coverage, SuiteCoverage, ToolCoverage, ToolState
from ._flips import (
    FlipCause,
    FlippedCase,
    FlipSummary,
    flip_cause,
    render_flips,
    summarize_flips,
)

__all__ = [
    "CaseCoverage",
    "Coverage",
    "FlipCause",
    "FlipSummary",
    "FlippedCase",
    "SuiteCoverage",
    "ToolCoverage",
    "ToolState",
    "flip_cause",
    "render_flips",
    "summarize_flips",
]
