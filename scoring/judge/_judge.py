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

import enum
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
    JUDGE_ROLE,
    ROLE_HEADER,
    Exchange,
    HarnessEvent,
    Session,
    Usage,
    decode_call,
    recording_client,
)
from evaltape.scoring._errors import ScoringError
from evaltape.scoring.cases._cases import Case
from evaltape.scoring.checks._score import Check, Score
from evaltape.scoring.judge._prompt import (
    judge_digest,
    judge_input,
    judge_messages,
    parse_verdict,
)
from evaltape.scoring.run._agents import RetryingTransport, network_transport

DIGEST_HEADER = "x-evaltape-judge-digest"
"""Request header holding ``judge_digest(rubric, input)``: which verdict this is."""

JUDGE_EVENT = "judge"
"""Name of the harness events that bracket a judge call on the tape."""

JUDGE_KEY_ENV = ("EVALTAPE_JUDGE_API_KEY", "OPENAI_API_KEY")
"""Environment variables read for the judge's API key, first set wins."""

DEFAULT_MEAN_FLOOR = 3.5
"""A judged case needs at least this mean score over its scored trials."""
DEFAULT_TRIAL_FLOOR = 2.0
"""A judged trial scoring below this fails (and fails its case)."""

NOT_CONFIGURED = "not run: judge not configured"
"""Detail of the judge check when no judge is configured."""
NOT_REJUDGED = "not re-judged (rubric or transcript changed; run with --allow-live-judge)"
"""Detail of the judge check when the tape holds verdicts, but none for this input."""
NOT_RECORDED = "not re-judged (no judge verdict recorded; run with --allow-live-judge)"
"""Detail of the judge check when the tape holds no verdict for the rubric at all."""

_RATIONALE_SHOWN = 160
"""Characters of the judge's rationale quoted in a check's detail."""


class JudgeError(ScoringError):
    """The judge was refused or a rubric could not be read (before any model call)."""


class JudgeState(enum.Enum):
    """What became of one trial's grading."""

    SCORED = "scored"
    """The judge gave a valid 0-5 score."""
    UNSCORED = "unscored"
    """The judge was asked but gave no valid score (bad answer, failed call)."""
    NOT_CONFIGURED = "not configured"
    """No judge is configured; the deterministic checks decided alone."""
    NOT_REJUDGED = "not re-judged"
    """Replay or rescore found no recorded verdict for this rubric and transcript."""


class JudgeStatus(enum.Enum):
    """The judge's state over a whole run, for the summary and a gate.

    A gate stays open only on GRADED or NOT_NEEDED: a run whose judge was
    missing, failed or was not re-run graded nothing it can vouch for.
    """

    NOT_NEEDED = "not needed"
    """No trial reached the judge (no judged case, or all failed deterministically)."""
    GRADED = "graded"
    """Every trial that reached the judge got a valid score."""
    NOT_CONFIGURED = "not configured"
    """Judged trials ran with no judge configured."""
    UNSCORED = "unscored"
    """The judge was asked but at least one trial got no valid score."""
    NOT_REJUDGED = "not re-judged"
    """Replay/rescore: at least one trial had no recorded verdict to reuse."""

    @property
    def gate_open(self) -> bool:
        """Whether a gated run may pass with this judge status."""
        return self in (JudgeStatus.GRADED, JudgeStatus.NOT_NEEDED)


@attrs.frozen(kw_only=True)
class Floors:
    """The pass thresholds of judged cases (scores are 0-5)."""

    mean: float = DEFAULT_MEAN_FLOOR
    """Lowest mean over a case's scored trials that passes."""
    trial: float = DEFAULT_TRIAL_FLOOR
    """Lowest score of one trial that passes."""


DEFAULT_FLOORS = Floors()
"""Mean 3.5, trial 2.0: uncalibrated starting points; treat a first judged run as data."""


@attrs.frozen(kw_only=True)
class JudgeRequest:
    """What one trial asks the judge: a rubric and the judge input built from the trace."""

    rubric: str
    """The rubric's name."""
    rubric_text: str
    """The rubric's markdown."""
    judge_input: str
    """Request, tools that fired and final reply (``scoring._judge_prompt.judge_input``)."""

    @property
    def digest(self) -> str:
        """The verdict's identity: hash of prompt version, rubric text and input."""
        return judge_digest(self.rubric_text, self.judge_input)


@attrs.frozen(kw_only=True)
class Judgement:
    """One trial's grading."""

    state: JudgeState
    """Scored, unscored, not configured, or not re-judged."""
    rubric: str
    """The rubric's name."""
    score: float | None = None
    """0-5 when scored, else None."""
    rationale: str = ""
    """The judge's reason, when it gave one."""
    problem: str = ""
    """Why the trial is not scored; "" when it is."""
    model: str = ""
    """The judge model that graded (as requested)."""
    host: str = ""
    """Host of the judge's base URL: who graded."""
    digest: str = ""
    """``JudgeRequest.digest`` of the graded input."""
    usage: Usage = attrs.field(factory=Usage)
    """Tokens the judge call spent (zero for a reused verdict)."""
    recorded: bool = False
    """True when the verdict was reused from a tape, not asked for now."""


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
        body = {
            "model": self.model,
            "messages": judge_messages(request.rubric_text, request.judge_input),
        }
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
    """The markdown of a judged case's rubric; ``JudgeError`` if it cannot be read."""
    if case.rubric is None or case.rubric_path is None:
        raise JudgeError(f"case {case.id} has no rubric")
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


# -- verdicts recorded on tapes -------------------------------------------------


def recorded_judgement(session: Session, rubric_text: str, judge_input: str) -> Judgement | None:
    """A verdict recorded in ``session`` for exactly this rubric text and judge input.

    Looks at the session's judge exchanges (latest first) for one whose
    digest matches; None if there is none.  Opens no socket.
    """
    digest = judge_digest(rubric_text, judge_input)
    for exchange in reversed(session.judge_exchanges):
        if any(k == DIGEST_HEADER and v == digest for k, v in exchange.request.headers):
            return judgement_from_exchange(exchange, _rubric_of(session, digest), recorded=True)
    return None


def _rubric_of(session: Session, digest: str) -> str:
    for event in session.harness:
        fields = dict(event.fields)
        if event.name == JUDGE_EVENT and fields.get("digest") == digest:
            rubric = fields.get("rubric")
            if isinstance(rubric, str):
                return rubric
    return ""


def reuse_judgement(request: JudgeRequest, tape: Session) -> Judgement:
    """The verdict recorded in ``tape`` for ``request``, or a NOT_REJUDGED judgement."""
    found = recorded_judgement(tape, request.rubric_text, request.judge_input)
    if found is not None:
        return attrs.evolve(found, rubric=request.rubric)
    asked = any(
        event.name == JUDGE_EVENT and dict(event.fields).get("rubric") == request.rubric
        for event in tape.harness
    )
    return Judgement(
        state=JudgeState.NOT_REJUDGED,
        rubric=request.rubric,
        problem=NOT_REJUDGED if asked else NOT_RECORDED,
        digest=request.digest,
    )


def rejudge_offline(
    score: Score,
    case: Case,
    session: Session,
    *,
    floors: Floors = DEFAULT_FLOORS,
    tape: Session | None = None,
) -> tuple[Score, Judgement | None]:
    """Rescore's judge step: reuse a recorded verdict, never call a judge.

    ``score`` is the deterministic score of ``session``; ``tape`` is the
    session holding the verdicts (default: ``session`` itself).  Returns the
    score with its judge check and the judgement (None when the case is not
    judged or the attempt already failed).  Raises ``JudgeError`` if the
    rubric cannot be read.
    """
    if case.rubric is None or not score.passed:
        return score, None
    request = judge_request(case, session, read_rubric(case))
    judgement = reuse_judgement(request, tape if tape is not None else session)
    return with_judgement(score, judgement, floors), judgement


def judge_usage(session: Session) -> Usage:
    """Tokens of the session's judge calls: grading cost, never the agent's."""
    total = Usage()
    for exchange in session.judge_exchanges:
        call = decode_call(exchange)
        total += call.usage if call is not None else Usage.unknown()
    return total


# -- checks, floors and status ----------------------------------------------------


def judge_check(judgement: Judgement, floors: Floors = DEFAULT_FLOORS) -> Check:
    """The per-attempt ``judge`` check.

    A scored trial passes when its score reaches the trial floor; its detail
    is ``4/5 by MODEL: rationale``.  An unscored, not configured or not
    re-judged trial gets a check that did not run (``ran=False``, which
    does not fail the attempt and is not a pass): the runner reports a live
    unscored trial as an error, and ``judge_status`` tells a gate.
    """
    state = judgement.state
    if state is JudgeState.NOT_CONFIGURED:
        return Check(name="judge", passed=True, detail=NOT_CONFIGURED, ran=False)
    if state is JudgeState.NOT_REJUDGED:
        return Check(name="judge", passed=True, detail=judgement.problem or NOT_REJUDGED, ran=False)
    if state is JudgeState.UNSCORED or judgement.score is None:
        return Check(name="judge", passed=True, detail=f"unscored: {judgement.problem}", ran=False)
    shown = f"{judgement.score:g}/5"
    by = f" by {judgement.model}" if judgement.model else ""
    why = _cut(judgement.rationale) if judgement.rationale else "(no rationale)"
    if judgement.score < floors.trial:
        detail = f"judge scored {shown}{by}, below the trial floor {floors.trial:g}: {why}"
        return Check(name="judge", passed=False, detail=detail)
    return Check(name="judge", passed=True, detail=f"{shown}{by}: {why}")


def with_judgement(score: Score, judgement: Judgement, floors: Floors = DEFAULT_FLOORS) -> Score:
    """``score`` with its ``judge`` check replaced by the one ``judgement`` gives."""
    if not score.passed:
        return score
    checks = tuple(c for c in score.checks if c.name != "judge")
    check = judge_check(judgement, floors)
    if not check.passed:
        return Score(passed=False, reason=check.detail, checks=(*checks, check))
    if judgement.state is JudgeState.SCORED and judgement.score is not None:
        label = f"judge {judgement.score:g}/5"
    else:
        label = f"judge {judgement.state.value}"
    reason = f"passed {len(checks)} checks; {label}"
    return Score(passed=True, reason=reason, checks=(*checks, check))


def judge_floors(scores: Iterable[float | None], floors: Floors = DEFAULT_FLOORS) -> Check:
    """A judged case's verdict over its trials' judge scores (None = unscored).

    Unscored trials are left out of the mean, never counted as zero.  Fails
    when no trial was scored, when a trial is below ``floors.trial``, or when
    the mean is below ``floors.mean``.
    """
    given = list(scores)
    scored = [s for s in given if s is not None]
    unscored = len(given) - len(scored)
    left_out = f", {unscored} unscored left out" if unscored else ""
    if not scored:
        detail = f"no trial was scored ({unscored} unscored)"
        return Check(name="judgeFloors", passed=False, detail=detail)
    mean = sum(scored) / len(scored)
    lowest = min(scored)
    counted = f"{len(scored)} scored trial{'s' if len(scored) != 1 else ''}{left_out}"
    if lowest < floors.trial:
        detail = f"a trial scored {lowest:g} < trial floor {floors.trial:g} ({counted})"
        return Check(name="judgeFloors", passed=False, detail=detail)
    if mean < floors.mean:
        detail = f"mean {mean:.2f} < mean floor {floors.mean:g} ({counted})"
        return Check(name="judgeFloors", passed=False, detail=detail)
    detail = (
        f"mean {mean:.2f} >= {floors.mean:g}, lowest {lowest:g} >= {floors.trial:g} ({counted})"
    )
    return Check(name="judgeFloors", passed=True, detail=detail)


def case_floors(
    trials: Iterable[tuple[str, str, Judgement | None]], floors: Floors = DEFAULT_FLOORS
) -> tuple[tuple[str, str, Check], ...]:
    """Each judged case and model's ``judge_floors`` check, in first-seen order.

    ``trials`` are (case id, model, judgement) per attempt.  Only scored and
    unscored trials take part: one that was not judged, not configured or
    not re-judged decides nothing, and a case with no such trial is left out
    (``judge_status`` reports those).
    """
    groups: dict[tuple[str, str], list[float | None]] = {}
    for case_id, model, judgement in trials:
        if judgement is not None and judgement.state in (JudgeState.SCORED, JudgeState.UNSCORED):
            groups.setdefault((case_id, model), []).append(judgement.score)
    return tuple(
        (case_id, model, judge_floors(scores, floors))
        for (case_id, model), scores in groups.items()
    )


def judge_status(judgements: Iterable[Judgement | None]) -> JudgeStatus:
    """The run's judge status from every attempt's judgement (None = not judged)."""
    states = {j.state for j in judgements if j is not None}
    if not states:
        return JudgeStatus.NOT_NEEDED
    if JudgeState.NOT_CONFIGURED in states:
        return JudgeStatus.NOT_CONFIGURED
    if JudgeState.UNSCORED in states:
        return JudgeStatus.UNSCORED
    if JudgeState.NOT_REJUDGED in states:
        return JudgeStatus.NOT_REJUDGED
    return JudgeStatus.GRADED


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _RATIONALE_SHOWN else text[: _RATIONALE_SHOWN - 1] + "…"
