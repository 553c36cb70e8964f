"""Run records, the history index and baselines.

The record values and the history are public here; ``evaltape.scoring`` re-exports
the common ones.
"""

from ._gate_inputs import Exemption, GateInputs
from ._history import HistoryEntry, RunLog, read_history
from ._records import (
    AttemptResult,
    Inconsistency,
    ModelTally,
    RecordError,
    RunKind,
    RunRecord,
    RunState,
    Verdict,
)

__all__ = [
    "AttemptResult",
    "Exemption",
    "GateInputs",
    "HistoryEntry",
    "Inconsistency",
    "ModelTally",
    "RecordError",
    "RunKind",
    "RunLog",
    "RunRecord",
    "RunState",
    "Verdict",
    "read_history",
]
