"""The agent under test: what the ``agent`` setting names, and one attempt of it.

Two kinds of agent:

- a **Python agent**, ``module:function`` (``my_harness.evals:run``): imported
  with the current folder on ``sys.path`` and called with a ``Task`` whose
  ``client`` is bound to the attempt's transport;
- a **command agent**, ``cmd:<template>`` (``cmd:python agent.py {prompt}``),
  or any spec that is not ``module:function``: run in the attempt's folder with
  ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` pointing at one ``TapeProxy`` per
  provider (``_command_agent.run_command``).
  ``{prompt}``, ``{model}``, ``{case_id}``, ``{attempt}``, ``{workspace}`` and
  ``{seed}`` in the template are filled in; the same values are in the
  environment as ``EVALTAPE_PROMPT``, ``EVALTAPE_MODEL`` and so on.

Both kinds reach the model through the same transport stack, built by the
runner: live, a ``RecordingTransport`` over a ``RetryingTransport`` over the
network; in replay, a ``RecordingTransport`` over a ``ReplayTransport``.
"""

from __future__ import annotations

import enum
import importlib
import os
import re
import shlex
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs
import httpx

from evaltape.recorder import HarnessEvent, Scalar, recording_client
from evaltape.replay import Route

from ..._errors import ScoringError
from ...cases._cases import Case
from ...sandbox import Sandbox
from ._task import (
    ANTHROPIC_BASE_URL,
    Agent,
    Answer,
    Question,
    Task,
    answer_headlessly,
)
from ._task_clients import TaskClients

COMMAND_PREFIX = "cmd:"
"""Marks an agent spec as a command template."""

_PYTHON_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


class AgentError(ScoringError):
    """The agent setting is missing, malformed, or names nothing importable."""


class AgentKind(enum.Enum):
    """How the agent under test is run."""

    PYTHON = "python"
    """A ``module:function`` called in this process with a ``Task``."""
    COMMAND = "command"
    """A program started per attempt, talking to a local proxy."""


@attrs.frozen(kw_only=True)
class AgentSpec:
    """The parsed ``agent`` setting."""

    kind: AgentKind
    """Python callable or command."""
    target: str
    """``module:function``, or the command template (without ``cmd:``)."""

    @property
    def label(self) -> str:
        """How the agent is named in messages."""
        return self.target if self.kind is AgentKind.PYTHON else COMMAND_PREFIX + self.target


def parse_agent(spec: str | None) -> AgentSpec:
    """Parse the ``agent`` setting: ``cmd:...`` or non-``module:function`` text is a command."""
    if spec is None or not spec.strip():
        raise AgentError(
            'no agent configured: set "agent" in evaltape.toml or pass --agent '
            '("module:function" or "cmd:<command template>")'
        )
    spec = spec.strip()
    if spec.startswith(COMMAND_PREFIX):
        template = spec[len(COMMAND_PREFIX) :].strip()
        if not template:
            raise AgentError('--agent "cmd:" needs a command after the colon')
        return AgentSpec(kind=AgentKind.COMMAND, target=template)
    if _PYTHON_SPEC.fullmatch(spec):
        return AgentSpec(kind=AgentKind.PYTHON, target=spec)
    return AgentSpec(kind=AgentKind.COMMAND, target=spec)


OUR_PACKAGES = ("scoring", "recorder", "replay")
"""evaltape's packages, installed under ``evaltape.`` (never at the top level)."""


def _import_hint(exc: Exception) -> str:
    """The import to write when an agent imports one of our packages by its folder name
    (``from scoring import Task``, as in a checkout of the repository)."""
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if not missing or missing.partition(".")[0] not in OUR_PACKAGES:
        return ""
    example = "from evaltape.scoring import Task" if missing == "scoring" else ""
    said = f" (e.g. `{example}`)" if example else ""
    return f"; evaltape's packages are imported as evaltape.{missing}{said}"


def load_agent(spec: AgentSpec, cwd: Path) -> Agent | None:
    """Import a Python agent (``cwd`` first on ``sys.path``); None for a command agent."""
    if spec.kind is AgentKind.COMMAND:
        try:
            shlex.split(spec.target)
        except ValueError as exc:
            raise AgentError(f"agent command {spec.target!r}: {exc}") from exc
        return None
    module_name, _, attr = spec.target.partition(":")
    folder = str(cwd)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise AgentError(
            f'agent "{spec.target}": cannot import {module_name}: {type(exc).__name__}: {exc}'
            f"{_import_hint(exc)}"
        ) from exc
    func = getattr(module, attr, None)
    if not callable(func):
        raise AgentError(f'agent "{spec.target}": {module_name} has no function {attr}')
    agent: Agent = func
    return agent


# -- one attempt -------------------------------------------------------------


@attrs.frozen(kw_only=True)
class AttemptSetup:
    """Everything one run of the agent needs."""

    case: Case
    """The case attempted."""
    model: str
    """The model under test."""
    attempt: int
    """Zero-based attempt index."""
    workspace: Path
    """The attempt's folder."""
    base_url: str
    """OpenAI-compatible base URL the Python agent is told about."""
    upstream: str
    """OpenAI-compatible base URL the command agent's proxy forwards to (live; in replay
    only its path matters)."""
    routes: tuple[Route, ...] = ()
    """Other providers' base URLs (Anthropic's, the user's ``--upstream NAME=URL``)."""
    seed: int | None
    """Sampling seed, if any."""
    limit: float
    """Seconds the attempt may take (client and program timeouts)."""
    inner: Any
    """The transport under the recording one: retrying network, or replay."""
    events: Any
    """Where events go: ``append(event)`` and ``now()``."""
    replaying: bool
    """True in replay (the command agent gets placeholder API keys)."""
    environ: Mapping[str, str] = attrs.field(factory=lambda: dict(os.environ), repr=False)
    """The agent's environment: the run's captured environment plus the job's overrides."""
    sandbox: Sandbox = attrs.field(factory=Sandbox.find, repr=False)
    """Where the agent runs commands the model chose (``Task.sandbox``)."""
    redactor: Any = None
    """What the recording transport writes through (a ``Scrubber``); None: default redaction."""


@attrs.frozen(kw_only=True)
class AgentOutcome:
    """How the agent stopped."""

    error: str = ""
    """Empty if it finished normally, else one line (exception or exit code)."""
    exception: BaseException | None = None
    """What the Python agent raised, if it raised."""
    reply: str = ""
    """The final reply the agent returned (Python) or its stdout tail (command)."""


def _log_to(events: Any) -> Callable[..., None]:
    def log(name: str, /, **fields: Scalar) -> None:
        events.append(HarnessEvent(at=events.now(), name=name, fields=tuple(fields.items())))

    return log


def _ask_for(events: Any, workspace: Path) -> Callable[[Question], Answer]:
    def ask(question: Question) -> Answer:
        answer = answer_headlessly(question, workspace)
        events.append(
            HarnessEvent(
                at=events.now(),
                name="question",
                fields=(
                    ("kind", question.kind.value),
                    ("path", question.path),
                    ("granted", answer.granted),
                ),
            )
        )
        return answer

    return ask


def run_python(agent: Agent, setup: AttemptSetup) -> AgentOutcome:
    """Call a Python agent with a Task bound to ``setup``'s transports; blocks."""
    timeout = httpx.Timeout(setup.limit, connect=min(setup.limit, 10.0))
    client = recording_client(
        setup.events, real=setup.inner, timeout=timeout, redactor=setup.redactor
    )
    clients = TaskClients(
        events=setup.events,
        inner=setup.inner,
        redactor=setup.redactor,
        timeout=setup.limit,
        replaying=setup.replaying,
        environ=setup.environ,
    )
    anthropic = {r.name: r.upstream for r in setup.routes}.get("anthropic")
    task = Task(
        case_id=setup.case.id,
        attempt=setup.attempt,
        prompt=setup.case.prompt,
        workspace=setup.workspace,
        model=setup.model,
        base_url=setup.base_url,
        client=client,
        agent_mode=setup.case.agent_mode.value if setup.case.agent_mode else None,
        seed=setup.seed,
        environ=MappingProxyType(dict(setup.environ)),
        log=_log_to(setup.events),
        ask=_ask_for(setup.events, setup.workspace),
        sandbox=setup.sandbox,
        anthropic_base_url=anthropic or ANTHROPIC_BASE_URL,
        clients=clients,
    )
    try:
        with client:
            reply = agent(task)
    except Exception as exc:
        return AgentOutcome(error=f"{type(exc).__name__}: {exc}", exception=exc)
    finally:
        clients.close()
    return AgentOutcome(reply=reply or "")


def command_argv(template: str, setup: AttemptSetup) -> tuple[list[str], dict[str, str]]:
    """The command's argv (placeholders filled) and the ``EVALTAPE_*`` variables."""
    values = {
        "prompt": setup.case.prompt,
        "model": setup.model,
        "case_id": setup.case.id,
        "attempt": str(setup.attempt),
        "workspace": str(setup.workspace),
        "seed": "" if setup.seed is None else str(setup.seed),
    }
    argv = []
    for part in shlex.split(template):
        for name, value in values.items():
            part = part.replace("{" + name + "}", value)
        argv.append(part)
    env = {f"EVALTAPE_{name.upper()}": value for name, value in values.items()}
    return argv, env
