"""Thread supervision of one attempt: the agent runs in a daemon thread, the runner watches.

The hang limit and the run-wide stop signal are checked every ``POLL``
seconds; what the agent's failure was (a timeout, the provider's or the
wire's fault, the agent's own) decides how the session ends.

After a signal stops a live run (``StopKind.INTERRUPT``) the attempt waits
for its agent, up to the hang limit: every new model call is refused below the
recording transport, so the agent soon stops, and the calls it had in flight
finish and are recorded, as are the refused ones.  The session then ends
``interrupted``.  Refused credentials and the overall time limit stop at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import httpx

from evaltape.recorder import Event, Exchange, FactKind, RunnerFact, Status
from evaltape.replay import ReplayTransport

from .._jobs import JobEnv
from .._stop import StopKind
from ._agents import (
    AgentKind,
    AgentOutcome,
    AttemptSetup,
    run_python,
)
from ._command_agent import run_command
from ._tee import Tee

POLL = 0.05
"""Seconds between checks of an attempt's time limit and the stop signal."""


def _is_timeout(exc: BaseException | None) -> bool:
    while exc is not None:
        if isinstance(exc, httpx.TimeoutException):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _infra_failure(events: Sequence[Event]) -> str:
    """The last model call's failure if it was the provider's (5xx) or the wire's."""
    exchanges = [e for e in events if isinstance(e, Exchange)]
    if not exchanges:
        return ""
    last = exchanges[-1]
    if last.error is not None:
        return f"{last.error.type}: {last.error.message}"
    if last.response is not None and last.response.status >= 500:
        return f"provider HTTP {last.response.status} after retries"
    return ""


def drive(
    env: JobEnv, setup: AttemptSetup, tee: Tee, replayer: ReplayTransport | None
) -> tuple[Status, str]:
    """Run the agent in a daemon thread; watch the hang limit and the stop signal."""
    box: list[AgentOutcome] = []
    late: list[bool] = []  # the agent ended after the stop came

    def target() -> None:
        try:
            if env.spec.kind is AgentKind.PYTHON:
                assert env.agent is not None
                box.append(run_python(env.agent, setup))
            else:
                box.append(run_command(env.spec.target, setup))
        except BaseException as exc:  # the agent must not take the runner down
            box.append(AgentOutcome(error=f"{type(exc).__name__}: {exc}", exception=exc))
        finally:
            late.append(env.stop.is_set())

    thread = threading.Thread(target=target, name=f"evaltape-agent-{setup.case.id}", daemon=True)
    started = time.monotonic()
    thread.start()
    # Live, a signal waits for the agent (its calls in flight are paid for); a replay costs
    # nothing and stops at once, as do refused credentials and the time limit.
    waits = replayer is None
    while thread.is_alive():
        if env.stop.is_set() and not (waits and env.stop.kind is StopKind.INTERRUPT):
            break
        left = env.hang_limit - (time.monotonic() - started)
        if left <= 0:
            break
        thread.join(min(POLL, left))
    cut_short = waits and env.stop.kind is StopKind.INTERRUPT and any(late)
    if cut_short or thread.is_alive() or not box:
        if env.stop.is_set():
            message = f"cancelled: {env.stop.reason}"
            tee.append(RunnerFact(at=tee.now(), fact=FactKind.INTERRUPT, message=message))
            return Status.INTERRUPTED, message
        message = f"the attempt passed the hang limit of {env.hang_limit:g} s"
        tee.append(RunnerFact(at=tee.now(), fact=FactKind.TIMEOUT, message=message))
        return Status.TIMEOUT, message
    outcome = box[0]
    # Live or served from a tape: the same broken answer is the provider's fault.
    fault = provider_fault(tee)
    if not outcome.error and not fault:
        return Status.COMPLETED, ""
    if env.stop.is_set() and env.stop.kind is not StopKind.LIMIT:
        message = f"cancelled: {env.stop.reason}"
        tee.append(RunnerFact(at=tee.now(), fact=FactKind.INTERRUPT, message=message))
        return Status.INTERRUPTED, message
    if _is_timeout(outcome.exception) or outcome.error.startswith("the agent ran past"):
        message = f"a model call passed the hang limit of {env.hang_limit:g} s ({outcome.error})"
        tee.append(RunnerFact(at=tee.now(), fact=FactKind.TIMEOUT, message=message))
        return Status.TIMEOUT, message
    if replayer is not None and replayer.misses:
        return Status.FAILED, outcome.error
    infra = fault or (_infra_failure(tee.events) if replayer is None else "")
    if infra or isinstance(outcome.exception, httpx.TransportError):
        agent = outcome.error or "completed"
        message = f"{infra or outcome.error} (agent: {agent})"
        tee.append(RunnerFact(at=tee.now(), fact=FactKind.INFRA_ERROR, message=message))
        return Status.INFRA_ERROR, message
    return Status.FAILED, f"the agent failed: {outcome.error}"


def provider_fault(tee: Tee) -> str:
    """Why the last model call's 2xx answer was unusable, or "" when it was usable."""
    found = tee.last_exchange()
    if found is None:
        return ""
    last, call = found
    if last.response is None or last.error is not None:
        return ""
    if not 200 <= last.response.status < 300:
        return ""
    if call is None or not call.error or "request body" in call.error:
        return ""
    return f"the provider answered HTTP {last.response.status} with an unusable body: {call.error}"
