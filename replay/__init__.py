"""evaltape.replay: everything that consumes a tape to drive an agent again."""

from replay._clients import replay_client
from replay._errors import (
    Diverged,
    Exhausted,
    NoRecording,
    ReplayError,
    UnknownMode,
    UnusedRecordings,
)
from replay._match import Divergence, Normalized, first_difference, normalize
from replay._modes import Action, RecordMode, parse_mode, resolve_mode
from replay._program import ProgramResult, run_program
from replay._proxy import TapeProxy, Upstreams
from replay._transport import ReplayTransport

__all__ = [
    "Action",
    "Diverged",
    "Divergence",
    "Exhausted",
    "NoRecording",
    "Normalized",
    "ProgramResult",
    "RecordMode",
    "ReplayError",
    "ReplayTransport",
    "TapeProxy",
    "UnknownMode",
    "UnusedRecordings",
    "Upstreams",
    "first_difference",
    "normalize",
    "parse_mode",
    "replay_client",
    "resolve_mode",
    "run_program",
]
