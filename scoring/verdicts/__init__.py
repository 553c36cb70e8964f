"""Decisions over results: the gate, comparisons, the replay decision, flips, quarantine, A/B,
coverage.

The values these decisions produce are public here (the gate, the comparison, the replay
decision and its changes, A/B verdicts, entry checks, flip causes, coverage);
``evaltape.scoring`` re-exports the common ones.
"""

from ._ab import CaseAB, CaseVerdict, Variant
from ._compare import (
    CaseMove,
    Comparison,
    Method,
    MoveKind,
    PairedTest,
    RunSide,
    compare,
)
from ._coverage import CaseCoverage, Coverage, SuiteCoverage, ToolCoverage, ToolState
from ._entry_check import EntryResult, EntryVerdict
from ._flips import (
    FlipCause,
    FlippedCase,
    FlipSummary,
    flip_cause,
    render_flips,
    summarize_flips,
)
from ._gate import GateDecision, GateState, decide_gate
from ._outcomes import CaseOutcome
from ._replaycheck import Change, HarnessChange, ReplayDecision

__all__ = [
    "CaseAB",
    "CaseCoverage",
    "CaseMove",
    "CaseOutcome",
    "CaseVerdict",
    "Change",
    "Comparison",
    "Coverage",
    "EntryResult",
    "EntryVerdict",
    "FlipCause",
    "FlipSummary",
    "FlippedCase",
    "GateDecision",
    "GateState",
    "HarnessChange",
    "Method",
    "MoveKind",
    "PairedTest",
    "ReplayDecision",
    "RunSide",
    "SuiteCoverage",
    "ToolCoverage",
    "ToolState",
    "Variant",
    "compare",
    "decide_gate",
    "flip_cause",
    "render_flips",
    "summarize_flips",
]
