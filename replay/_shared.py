"""What scoring uses of replay beyond its public API: the agent's network namespace,
in-process miss answers, request normalising, volatile-text proposals and waiting for a
child process. Not for users: names here may change in any release."""

from ._match import Normalized, first_difference, normalize
from ._miss_response import MissResponses
from ._process_wait import wait_exit
from ._transport import Unmatched
from .changes._volatile import FirstRequests, ScrubProposal, propose_scrub_rules
from .proxy._netns import AgentNetns, IsolationUnavailable, isolation_wanted

__all__ = [
    "AgentNetns",
    "FirstRequests",
    "IsolationUnavailable",
    "MissResponses",
    "Normalized",
    "ScrubProposal",
    "Unmatched",
    "first_difference",
    "isolation_wanted",
    "normalize",
    "propose_scrub_rules",
    "wait_exit",
]
