"""evaltape.replay: everything that consumes a tape to drive an agent again."""

from evaltape.replay._agent_netns import AgentNetns, IsolationUnavailable, isolation_wanted
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
from evaltape.replay._miss_response import MissResponses
from evaltape.replay._modes import Action, RecordMode, parse_mode, resolve_mode
from evaltape.replay._process_wait import wait_exit
from evaltape.replay._program import ProgramResult, run_program
from evaltape.replay._proxy import TapeProxy
from evaltape.replay._proxy_errors import RunStopped
from evaltape.replay._proxy_limits import TOKEN_HEADER, ProxyLimits
from evaltape.replay._routes import Route, RoutedProxies, RouteError, agent_routes, parse_route
from evaltape.replay._sandbox import Sandbox, SandboxError, SandboxResult, run_sandboxed
from evaltape.replay._sandbox_limits import SandboxPolicy
from evaltape.replay._transport import ReplayTransport, Unmatched
from evaltape.replay._upstreams import Upstreams
from evaltape.replay._volatile import FirstRequests, ScrubProposal, propose_scrub_rules

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
    "Sandbox",
    "SandboxError",
    "SandboxPolicy",
    "SandboxResult",
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
    "run_sandboxed",
    "wait_exit",
]
