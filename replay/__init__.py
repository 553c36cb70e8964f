"""evaltape.replay: everything that consumes a tape to drive an agent again."""

from ._clients import replay_client
from ._errors import Diverged, Exhausted, NoRecording, ReplayError, UnknownMode, UnusedRecordings
from ._match import Divergence, api_of
from ._modes import Action, RecordMode, parse_mode, resolve_mode
from ._transport import ReplayTransport
from .changes._model import ChangeKind, Classification, Finding
from .changes._request import classify
from .changes._volatile import ScrubProposal
from .proxy._errors import RunStopped
from .proxy._forward import Upstreams
from .proxy._limits import TOKEN_HEADER, ProxyLimits
from .proxy._program import PointsSDKs, ProgramResult, run_program
from .proxy._routes import Route, RoutedProxies, RouteError, agent_routes, parse_route
from .proxy._server import ProxyTransport, TapeProxy

__all__ = [
    "TOKEN_HEADER",
    "Action",
    "ChangeKind",
    "Classification",
    "Diverged",
    "Divergence",
    "Exhausted",
    "Finding",
    "NoRecording",
    "PointsSDKs",
    "ProgramResult",
    "ProxyLimits",
    "ProxyTransport",
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
    "UnusedRecordings",
    "Upstreams",
    "agent_routes",
    "api_of",
    "classify",
    "parse_mode",
    "parse_route",
    "replay_client",
    "resolve_mode",
    "run_program",
]
