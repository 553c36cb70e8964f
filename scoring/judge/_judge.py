"""Judged scoring: an independent model grades the reply of a judged case.

A judge is any OpenAI-compatible provider and model (``judge_base_url``,
``judge_model``), called through evaltape's own httpx client and recorded on
the attempt's tape like any model call.  Its request carries
``x-evaltape-role: judge``, so the Session fold keeps it out of the agent's
turns, tool calls and usage, and replay never serves it to the agent.  Two
``judge`` harness events bracket it (asked / verdict) for a reader of the tape.

Rules, in the order they bite:

- refused before any token is spent: a judge model that is a model under test
  (ids compared by ``normalize_model_id``), and a judge on the agent's
  provider (same base URL host) with no explicit judge model;
- an attempt that failed a deterministic check is not judged;
- the judge scores 0-5 and must answer strict JSON; anything else leaves the
  trial unscored (``JudgeState.UNSCORED``), never clamped, and an unscored
  trial is left out of the mean, never counted as zero;
- a trial scoring below the trial floor fails; a case passes when the mean of
  its scored trials reaches the mean floor and no trial is below the trial
  floor (``judge_floors``);
- replay and rescore never call the judge by default: a verdict recorded for
  the same rubric and transcript (``recorded_judgement``) is reused, else the
  check is "not re-judged" and counts as neither pass nor fail.  Only a
  replay with ``JobEnv.allow_live_judge`` asks the judge then, recording the
  call on the replay's tape; a rescore writes no tape and never asks.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx

from evaltape.recorder import (
    ROLE_HEADER,
    Exchange,
    HarnessEvent,
    Session,
    Usage,
    decode_call,
    recording_client,
)

from .._network import RetryingTransport, network_transport
from ..cases._cases import Case
from ._judgement import (
    DIGEST_HEADER,
    JUDGE_EVENT,
    JUDGE_ROLE,
    JudgeError,
    Judgement,
    JudgeRequest,
    JudgeState,
)
from ._prompt import (
    judge_input,
    judge_messages,
    parse_verdict,
    response_format,
)

JUDGE_KEY_ENV = ("EVALTAPE_JUDGE_API_KEY", "OPENAI_API_KEY")
"""Environment variables read for the judge's API key, first set wins."""


def normalize_model_id(model: str) -> str:
    """A model id reduced to what names the model, for the judge-collision check.

    Lower-cased; a provider prefix dropped (``openai/gpt-4o`` -> ``gpt-4o``,
    the last ``/`` segment is kept); a snapshot suffix dropped: ``@...``
    (``claude-3-5-sonnet@20240620``), ``-2024-08-06``, ``-20240806``,
    ``-0613`` and ``-latest``.  It cannot see through a gateway route that
    renames a model: the report names who graded instead.
    """
    text = model.strip().lower().rsplit("/", 1)[-1].split("@", 1)[0]
    while True:
        shorter = _SNAPSHOT.sub("", text)
        if shorter == text or not shorter:
            return text
        text = shorter


_SNAPSHOT = re.compile(
    r"(?:-\d{4}-\d{2}-\d{2}|-(?:19|20)\d{6}|-(?:0[1-9]|1[0-2])(?:[0-2]\d|3[01])|-latest)\Z"
)
"""A dated snapshot or alias suffix: -2024-08-06, -20240806, -0613 (MMDD), -latest."""


def url_host(url: str) -> str:
    """The lower-cased host name of a base URL ("" if it has none)."""
    return (urlsplit(url).hostname or "").lower()


@attrs.frozen(kw_only=True)
class Judge:
    """A configured judge: provider, model, key.  ``grade`` asks it about one trial."""

    model: str
    """The judge model."""
    base_url: str
    """OpenAI-compatible base URL (``.../v1``); ``/chat/completions`` is appended."""
    api_key: str = attrs.field(default="", repr=False)
    """Bearer key; "" sends none.  Redacted on the tape like any key."""
    timeout: float = 120.0
    """Seconds the judge call may take."""
    retries: int = 2
    """Retries of a 429, 5xx or connection failure."""
    network: Any = attrs.field(factory=network_transport, repr=False, eq=False)
    """The network transport (shared, never closed here)."""
    constrain: str = "none"
    """How the answer is constrained at the provider: one of ``CONSTRAINTS``."""

    @property
    def host(self) -> str:
        """Host of the judge's base URL."""
        return url_host(self.base_url)

    @property
    def who(self) -> str:
        """``model @ host``: who grades."""
        return f"{self.model} @ {self.host}"

    def grade(
        self, request: JudgeRequest, events: Any, *, stop: threading.Event | None = None
    ) -> Judgement:
        """Ask the judge about one trial, recording the exchange into ``events``.

        ``events`` is the session's writer (``append(event)``, ``now()``).
        Never raises for the provider's faults: a failed call or a bad answer
        gives an UNSCORED judgement that says why.
        """
        events.append(self._event(request, (("phase", "asked"),), events.now()))
        capture = _Capture(events)
        real = RetryingTransport(self.network, retries=self.retries, close_real=False, stop=stop)
        headers = {
            "content-type": "application/json",
            ROLE_HEADER: JUDGE_ROLE,
            DIGEST_HEADER: request.digest,
        }
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        body: dict[str, object] = {
            "model": self.model,
            "messages": judge_messages(request.rubric_text, request.judge_input),
        }
        shape = response_format(self.constrain)
        if shape is not None:
            body["response_format"] = shape
        problem = ""
        try:
            with recording_client(capture, real=real, timeout=self.timeout) as client:
                client.post(
                    self.base_url.rstrip("/") + "/chat/completions",
                    content=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                    headers=headers,
                )
        except httpx.HTTPError as exc:
            problem = f"judge call failed: {type(exc).__name__}: {exc}"
        if capture.exchanges:
            judgement = judgement_from_exchange(capture.exchanges[-1], request.rubric)
        else:
            judgement = Judgement(
                state=JudgeState.UNSCORED,
                rubric=request.rubric,
                problem=problem or "the judge call recorded no exchange",
                model=self.model,
                host=self.host,
                digest=request.digest,
            )
        events.append(self._event(request, _verdict_fields(judgement), events.now()))
        return judgement

    def _event(
        self, request: JudgeRequest, extra: tuple[tuple[str, Any], ...], at: float
    ) -> HarnessEvent:
        fields = (
            *extra,
            ("rubric", request.rubric),
            ("model", self.model),
            ("host", self.host),
            ("digest", request.digest),
        )
        return HarnessEvent(at=at, name=JUDGE_EVENT, fields=fields)


def _verdict_fields(judgement: Judgement) -> tuple[tuple[str, Any], ...]:
    fields: tuple[tuple[str, Any], ...] = (
        ("phase", "reused" if judgement.recorded else "verdict"),
        ("state", judgement.state.value),
        ("score", judgement.score),
    )
    if judgement.problem:
        fields += (("problem", judgement.problem),)
    return fields


def reused_event(judgement: Judgement, at: float) -> HarnessEvent:
    """The harness event a replay writes when it reuses a recorded verdict."""
    fields = (
        *_verdict_fields(judgement),
        ("rubric", judgement.rubric),
        ("model", judgement.model),
        ("host", judgement.host),
        ("digest", judgement.digest),
    )
    return HarnessEvent(at=at, name=JUDGE_EVENT, fields=fields)


class _Capture:
    """Forwards events to the session's writer and keeps the exchanges seen."""

    def __init__(self, events: Any) -> None:
        self.events = events
        self.exchanges: list[Exchange] = []

    def now(self) -> float:
        now: float = self.events.now()
        return now

    def append(self, event: Exchange) -> None:
        self.events.append(event)
        self.exchanges.append(event)


def judgement_from_exchange(
    exchange: Exchange, rubric: str, *, recorded: bool = False
) -> Judgement:
    """The verdict a recorded judge exchange holds: its response read by ``parse_verdict``.

    The same function reads a live answer and a recorded one, so a replay
    reuses exactly the verdict the live run got.
    """
    call = decode_call(exchange)
    digest = next((v for k, v in exchange.request.headers if k == DIGEST_HEADER), "")
    model = call.model_requested if call is not None else ""
    base = Judgement(
        state=JudgeState.UNSCORED,
        rubric=rubric,
        model=model,
        host=url_host(exchange.request.url),
        digest=digest,
        usage=call.usage if call is not None else Usage(),
        recorded=recorded,
    )
    if exchange.error is not None:
        problem = f"judge call failed: {exchange.error.type}: {exchange.error.message}"
        return attrs.evolve(base, problem=problem)
    if call is None:
        return attrs.evolve(base, problem="the judge's answer is not a chat completion")
    if call.error:
        return attrs.evolve(base, problem=f"judge call failed: {call.error}")
    parsed = parse_verdict(call.output_text)
    if parsed.score is None:
        return attrs.evolve(base, problem=parsed.problem, rationale=parsed.rationale)
    return attrs.evolve(
        base, state=JudgeState.SCORED, score=parsed.score, rationale=parsed.rationale
    )


# -- choosing a judge -----------------------------------------------------------


def resolve_judge(
    *,
    judge_model: str | None,
    judge_base_url: str | None,
    models_under_test: Iterable[str],
    base_url: str,
    environ: Mapping[str, str],
    network: Any = None,
) -> Judge | None:
    """The configured judge, None when none is configured; ``JudgeError`` when refused.

    Refused, before any model call: a judge model that normalizes to a model
    under test (``normalize_model_id``); a judge on the agent's provider
    (same base URL host) with no explicit ``judge_model``; a ``judge_base_url``
    without a ``judge_model``; a base URL that is not http(s).  The judge's
    base URL defaults to the agent's; its key is ``EVALTAPE_JUDGE_API_KEY``,
    else ``OPENAI_API_KEY``.
    """
    if not judge_model and not judge_base_url:
        return None
    url = judge_base_url or base_url
    if urlsplit(url).scheme not in ("http", "https") or not url_host(url):
        raise JudgeError(f"judge_base_url {url!r} is not an http(s) URL")
    if not judge_model:
        if url_host(url) == url_host(base_url):
            raise JudgeError(
                f"the judge would run on the provider under test ({url_host(url)}) with no "
                "judge_model: set judge_model to a model that is not under test"
            )
        raise JudgeError("judge_base_url is set but judge_model is not: name the judge model")
    wanted = normalize_model_id(judge_model)
    for model in models_under_test:
        if normalize_model_id(model) == wanted:
            raise JudgeError(
                f'judge model "{judge_model}" is the model under test "{model}" (both name '
                f'"{wanted}"): a model grading its own replies moves with every change; '
                "set judge_model to a different model"
            )
    key = next((environ[name] for name in JUDGE_KEY_ENV if environ.get(name)), "")
    if network is None:
        return Judge(model=judge_model, base_url=url, api_key=key)
    return Judge(model=judge_model, base_url=url, api_key=key, network=network)


def read_rubric(case: Case) -> str:
    """The markdown of a judged case's rubric (read when the case was loaded, else now);
    ``JudgeError`` if it cannot be read."""
    if case.rubric is None or case.rubric_path is None:
        raise JudgeError(f"case {case.id} has no rubric")
    if case.rubric_text is not None:
        return case.rubric_text
    try:
        return Path(case.rubric_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise JudgeError(f"{case.rubric_path}: cannot read rubric: {exc}") from exc


def judge_request(case: Case, session: Session, rubric_text: str) -> JudgeRequest:
    """What the judge is asked about ``session``, an attempt at the judged ``case``."""
    if case.rubric is None:
        raise JudgeError(f"case {case.id} has no rubric")
    return JudgeRequest(
        rubric=case.rubric, rubric_text=rubric_text, judge_input=judge_input(case, session)
    )
