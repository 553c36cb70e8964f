"""What the runner hands a Python agent for one attempt, and how it answers questions.

An agent is any callable ``module:function`` taking a ``Task`` and returning
its final reply (or None).  It talks to the model through clients bound to
this attempt's transport (live they record, in replay they serve the tape):
``task.openai()`` / ``task.anthropic()`` give ready SDK clients, sync or
``async_=True``; ``task.http_client()`` an httpx2 (or httpx) client for
anything else; ``task.client`` is a sync httpx client.  The agent needs no
other knowledge of evaltape (docs/agents.md).
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

import attrs
import httpx

from evaltape.recorder import Scalar

from ...sandbox import Sandbox

if TYPE_CHECKING:
    import anthropic
    import openai

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
"""Where ``task.anthropic()`` clients go live unless ``--upstream anthropic=URL`` says."""


class QuestionKind(enum.Enum):
    """What an agent may ask the user during a headless run."""

    CLARIFY = "clarify"
    """A clarifying question; the runner always declines it."""
    PERMISSION = "permission"
    """Permission to act on a path; granted only inside the workspace."""


@attrs.frozen(kw_only=True)
class Question:
    """A question an agent would put to a person."""

    kind: QuestionKind
    """Clarifying question or permission prompt."""
    text: str
    """The question as the agent would show it."""
    path: str = ""
    """For permission prompts: the file or folder the action touches."""


@attrs.frozen(kw_only=True)
class Answer:
    """The runner's answer, given without a person."""

    granted: bool
    """True if the agent may go ahead."""
    text: str
    """What the runner says back (to feed to the model if the agent wishes)."""


DECLINED = (
    "No one is available to answer questions during this run; proceed with your best judgement."
)
"""What a clarifying question gets back."""


def answer_headlessly(question: Question, workspace: Path) -> Answer:
    """Decline clarifying questions; grant permission only for paths inside ``workspace``."""
    if question.kind is QuestionKind.CLARIFY:
        return Answer(granted=False, text=DECLINED)
    root = os.path.realpath(workspace)
    target = os.path.realpath(os.path.join(root, question.path))
    inside = target == root or target.startswith(root + os.sep)
    if inside:
        return Answer(granted=True, text=f"granted: {question.path}")
    return Answer(granted=False, text=f"denied: {question.path} is outside the workspace")


def _process_environ() -> Mapping[str, str]:
    """A read-only copy of the process environment (a Task built outside the runner)."""
    return MappingProxyType(dict(os.environ))


class HarnessLog(Protocol):
    """``task.log("tool", tool="read", ms=3)`` records a harness event on the tape."""

    def __call__(self, name: str, /, **fields: Scalar) -> None: ...


@attrs.frozen(kw_only=True)
class Task:
    """One attempt of one case, as an agent sees it."""

    case_id: str
    """The case being attempted."""
    attempt: int
    """Zero-based attempt index."""
    prompt: str
    """The user message to act on."""
    workspace: Path
    """A fresh folder holding the case's files; the agent works here."""
    model: str
    """The model to call."""
    base_url: str
    """OpenAI-compatible base URL, e.g. ``http://127.0.0.1:8080/v1``."""
    client: httpx.Client
    """HTTP client bound to this attempt's transport (records live, replays from tape)."""
    agent_mode: str | None = None
    """The case's permission mode (docs/cases.md), None for the agent's default."""
    seed: int | None = None
    """Sampling seed to pass to the model, if the run has one."""
    environ: Mapping[str, str] = attrs.field(factory=_process_environ, repr=False)
    """Read-only settings for this attempt: the process environment captured when the run
    started plus the attempt's overrides (an A/B variant's ``env:K=V``).  Read settings
    from here, not from ``os.environ``: two variants share one process."""
    log: HarnessLog
    """Record a harness event (tool timing, permission answers) on the tape."""
    ask: Callable[[Question], Answer]
    """Ask the user; the runner answers headlessly (see ``answer_headlessly``)."""
    sandbox: Sandbox = attrs.field(factory=Sandbox.find, repr=False)
    """Where to run a command the model chose (``task.sandbox.run(argv, workspace=...)``):
    confined unless the run was told ``--no-sandbox`` (docs/security.md)."""
    anthropic_base_url: str = ANTHROPIC_BASE_URL
    """Anthropic's base URL, as ``task.anthropic()`` clients use it."""
    clients: Any = attrs.field(default=None, repr=False)
    """What builds the clients below (the runner's ``TaskClients``); None outside a run."""

    def _factory(self) -> Any:
        if self.clients is None:
            raise RuntimeError("this Task was not made by the evaltape runner: it has no clients")
        return self.clients

    def http_client(
        self, *, flavor: Literal["httpx", "httpx2"] = "httpx2", async_: bool = False
    ) -> Any:
        """An ``httpx2.Client`` (``AsyncClient`` with ``async_=True``; ``flavor="httpx"`` for
        httpx) bound to this attempt: for SDKs and frameworks that take an HTTP client."""
        return self._factory().http(flavor=flavor, async_=async_)

    def api_key(self, provider: Literal["openai", "anthropic"] = "openai") -> str:
        """The key the SDK clients use: ``<PROVIDER>_API_KEY`` live, a placeholder in replay
        (for frameworks that build their own SDK client from ``http_client()``)."""
        return str(self._factory().key(provider))

    @overload
    def openai(self, *, async_: Literal[False] = False, **options: Any) -> openai.OpenAI: ...
    @overload
    def openai(self, *, async_: Literal[True], **options: Any) -> openai.AsyncOpenAI: ...
    def openai(self, *, async_: bool = False, **options: Any) -> Any:
        """A ready ``openai.OpenAI`` (``AsyncOpenAI``) for ``base_url``; ``options`` (e.g.
        ``max_retries``) go to its constructor.  Live its key is ``OPENAI_API_KEY``."""
        options.setdefault("base_url", self.base_url)
        return self._factory().sdk("openai", async_=async_, **options)

    @overload
    def anthropic(
        self, *, async_: Literal[False] = False, **options: Any
    ) -> anthropic.Anthropic: ...
    @overload
    def anthropic(self, *, async_: Literal[True], **options: Any) -> anthropic.AsyncAnthropic: ...
    def anthropic(self, *, async_: bool = False, **options: Any) -> Any:
        """A ready ``anthropic.Anthropic`` (``AsyncAnthropic``) for ``anthropic_base_url``.
        Live its key is ``ANTHROPIC_API_KEY``."""
        options.setdefault("base_url", self.anthropic_base_url)
        return self._factory().sdk("anthropic", async_=async_, **options)


Agent = Callable[[Task], "str | None"]
"""An agent: takes a Task, returns its final reply (or None)."""
