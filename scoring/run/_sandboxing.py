"""The run's sandbox, decided before anything runs: confined, refused, or opted out.

A run that would execute what a tape or a model chose (verify commands, the
agent's bash tool) checks once that bubblewrap can start a command here.
When it cannot, the run is refused (``RunRefused``), unless the user opted
out (``--no-sandbox`` or ``sandbox = false``); the opt-out is said once, in
one line, with the reason.
"""

from __future__ import annotations

from .._config import Config
from ..sandbox import Sandbox
from ._host import Host, Reporter
from ._setup import RunRefused

UNCONFINED = "verify commands and the agent's bash tool run unconfined"
"""What the opt-out warning says happens."""


def sandbox_for(config: Config, host: Host, reporter: Reporter) -> Sandbox:
    """The sandbox for this run's commands; raises ``RunRefused`` when it is missing."""
    found = Sandbox.find(host.environ)
    if not config.sandbox:
        why = "bubblewrap (bwrap) is not on PATH" if found.bwrap is None else "opted out"
        reporter.warning(f"sandbox off ({why}; --no-sandbox / sandbox = false): {UNCONFINED}")
        return Sandbox.unconfined(host.environ)
    problem = found.problem()
    if problem is not None:
        raise RunRefused(
            f"no sandbox: {problem}; install bubblewrap, or pass --no-sandbox "
            "(config: sandbox = false) to run verify commands and tools unconfined"
        )
    return found
