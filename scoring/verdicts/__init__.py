"""Decisions over results: the gate, comparisons, the replay decision, flips, quarantine, A/B.

Flip causes (why a case's attempts disagree) are public here; the gate and the
comparison are re-exported by ``evaltape.scoring``.
"""

from ._flips import (
    FlipCause,
    FlippedCase,
    FlipSummary,
    flip_cause,
    render_flips,
    summarize_flips,
)

__all__ = [
    "FlipCause",
    "FlipSummary",
    "FlippedCase",
    "flip_cause",
    "render_flips",
    "summarize_flips",
]
