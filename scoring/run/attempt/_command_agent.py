"""Running a command agent: one proxy endpoint per provider, and no network in replay.

The program gets ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL`` and a
``<NAME>_BASE_URL`` per ``--upstream NAME=URL``, each a ``TapeProxy`` that
forwards only to its own provider (``replay.RoutedProxies``).  In replay it
runs in a network namespace where only those endpoints exist
(``replay.AgentNetns``); where none can be made the attempt fails with one
line saying so, unless ``EVALTAPE_AGENT_NETWORK=open`` is set.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from evaltape.recorder import RecordingTransport
from evaltape.replay import (
    AgentNetns,
    IsolationUnavailable,
    Route,
    RoutedProxies,
    agent_routes,
    isolation_wanted,
    run_program,
)

from ._agents import AgentOutcome, AttemptSetup, command_argv


def routes_of(setup: AttemptSetup) -> tuple[Route, ...]:
    """OpenAI's route at ``setup.upstream``, then Anthropic's and the user's."""
    return agent_routes(openai=setup.upstream, extra=setup.routes)


def run_command(
    template: str, setup: AttemptSetup, environ: Mapping[str, str] | None = None
) -> AgentOutcome:
    """Run a command agent in the workspace through proxies over ``setup``'s transports."""
    transport = RecordingTransport(setup.events, setup.inner, redactor=setup.redactor)
    routes = routes_of(setup)
    argv, extra = command_argv(template, setup)
    env = dict(setup.environ if environ is None else environ) | extra
    with contextlib.ExitStack() as stack:
        netns: AgentNetns | None = None
        if setup.replaying and isolation_wanted(env):
            try:
                netns = stack.enter_context(AgentNetns.open(len(routes)))
            except IsolationUnavailable as exc:
                return AgentOutcome(
                    error=f"{exc} (set EVALTAPE_AGENT_NETWORK=open to replay without it)"
                )
        proxies = RoutedProxies(
            transport,
            routes,
            environ=env,
            replaying=setup.replaying,
            timeout=setup.limit,
            listen=netns.sockets if netns is not None else (),
        )
        with proxies:
            result = run_program(
                netns.command(argv) if netns is not None else argv,
                cwd=setup.workspace,
                proxy=proxies,
                timeout=setup.limit + 1.0,
                env=env,
            )
    stdout = result.stdout.strip()
    if proxies.refused:
        return AgentOutcome(error=proxies.refused[0], reply=stdout)
    if result.timed_out:
        return AgentOutcome(error=f"the agent ran past {setup.limit:g} s", reply=stdout)
    if result.exit_code != 0:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        tail = f": {lines[-1].strip()}" if lines else ""
        return AgentOutcome(error=f"the agent exited with code {result.exit_code}{tail}")
    return AgentOutcome(reply=stdout)
