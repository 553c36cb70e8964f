"""evaltape.replay: everything that consumes a tape to drive an agent again."""

from ._clients import replay_client
from ._errors import (
    Diverged,
    Exhausted,
    NoRecording,
    ReplayError,
    UnknownMode,
    UnusedRecordings,
)
from ._match import Divergence, Normalized, api_of, first_difference, normalize
from ._miss_response import MissResponses
from ._modes import Action, RecordMode, parse_mode, resolve_mode
from ._process_wait import wait_exit
from ._transport import ReplayTransport, Unmatched
from .classify._model import ChangeKind, Classification, Finding
from .classify._request import classify
from .classify._volatile import FirstRequests, ScrubProposal, propose_scrub_rules
from .proxy._errors import RunStopped
from .proxy._forward import Upstreams
from .proxy._limits import TOKEN_HEADER, ProxyLimits
from .proxy._netns import AgentNetns, IsolationUnavailable, isolation_wanted
from .proxy._program import ProgramResult, run_program
from .proxy._routes import Route, RoutedProxies, RouteError, agent_routes, parse_route
from .proxy._server import TapeProxy

__all__ = [
    "TOKEN_HEADER",
    "Action",
    "AgentNetns",
    "ChangeKind",
    "Classification",
    "Diverged",
    "Divergence",
    "Exhausted",
    "Finding",
    "FirstRequests",
    "IsolationUnavailable",
    "MissResponses",
    "NoRecording",
    "Normalized",
    "ProgramResult",
    "ProxyLimits",
    "RecordMode",
    "ReplayError",
    "ReplayTransport",
    "Route",
    "RouteError",
    "RoutedProxies",
    "RunStopped",
    "ScrubProposal",
    "TapeProxy",
    "UnknownMode",
    "Unmatched",
    "UnusedRecordings",
    "Upstreams",
    "agent_routes",
    "api_of",
    "classify",
    "first_difference",
    "isolation_wanted",
    "normalize",
    "parse_mode",
    "parse_route",
    "propose_scrub_rules",
    "replay_client",
    "resolve_mode",
    "run_program",
    "wait_exit",
]
