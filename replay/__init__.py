"""evaltape.replay: everything that consumes a tape to drive an agent again."""

from evaltape.replay._classify import classify
from evaltape.replay._classify_model import ChangeKind, Classification, Finding
from evaltape.replay._clients import replay_client
from evaltape.replay._errors import (
    Diverged,
    Exhausted,
    NoRecording,
    ReplayError,
    UnknownMode,
    UnusedRecordings,
)
from evaltape.replay._match import Divergence, Normalized, api_of, first_difference, normalize
from evaltape.replay._modes import Action, RecordMode, parse_mode, resolve_mode
from evaltape.replay._process_wait import wait_exit
from evaltape.replay._program import ProgramResult, run_program
from evaltape.replay._proxy import TapeProxy
from evaltape.replay._transport import ReplayTransport, Unmatched
from evaltape.replay._upstreams import Upstreams

__all__ = [
    "Action",
    "ChangeKind",
    "Classification",
    "Diverged",
    "Divergence",
    "Exhausted",
    "Finding",
    "NoRecording",
    "Normalized",
    "ProgramResult",
    "RecordMode",
    "ReplayError",
    "ReplayTransport",
    "TapeProxy",
    "UnknownMode",
    "Unmatched",
    "UnusedRecordings",
    "Upstreams",
    "api_of",
    "classify",
    "first_difference",
    "normalize",
    "parse_mode",
    "replay_client",
    "resolve_mode",
    "run_program",
    "wait_exit",
]
