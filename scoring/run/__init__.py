"""Running attempts: the agent, its task, the workspace, jobs and the pool, rescoring.

The values a run's outcome carries are public here (each finished ``Attempt``, the
gate's options and decisions, cassette updates, re-record plans, mutants, rescored
sessions), imported on first use; ``evaltape.scoring`` re-exports the run functions
with their requests and outcomes.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._cassettes import CassetteUpdate
    from ._finished import Attempt, PoolOutcome
    from ._gate_flow import GateOptions, ModelGate, SavedBaseline
    from ._jobs import Prefix, SourceLabel
    from ._rerecord_plan import Planned
    from ._stop import StopKind
    from .attempt._task import HarnessLog
    from .mutate._mutants import MutantResult, MutationOutcome
    from .mutate._operators import Mutation
    from .rescore._rescore import Flip, Rescored, Skipped, TapesRescored

__all__ = [
    "Attempt",
    "CassetteUpdate",
    "Flip",
    "GateOptions",
    "HarnessLog",
    "ModelGate",
    "MutantResult",
    "Mutation",
    "MutationOutcome",
    "Planned",
    "PoolOutcome",
    "Prefix",
    "Rescored",
    "SavedBaseline",
    "Skipped",
    "SourceLabel",
    "StopKind",
    "TapesRescored",
]

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        "Attempt": "._finished",
        "CassetteUpdate": "._cassettes",
        "Flip": ".rescore._rescore",
        "GateOptions": "._gate_flow",
        "HarnessLog": ".attempt._task",
        "ModelGate": "._gate_flow",
        "MutantResult": ".mutate._mutants",
        "Mutation": ".mutate._operators",
        "MutationOutcome": ".mutate._mutants",
        "Planned": "._rerecord_plan",
        "PoolOutcome": "._finished",
        "Prefix": "._jobs",
        "Rescored": ".rescore._rescore",
        "SavedBaseline": "._gate_flow",
        "Skipped": ".rescore._rescore",
        "SourceLabel": "._jobs",
        "StopKind": "._stop",
        "TapesRescored": ".rescore._rescore",
    },
)
