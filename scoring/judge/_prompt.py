"""What the judge is shown, and how its answer is read.

The judge sees three things: the case's prompt, every tool the agent actually
called (name, arguments, what it returned), taken from the recorded trace as
ground truth, and the agent's final reply.  It must answer with one JSON
object ``{"score": <0-5>, "rationale": "..."}``.  Anything else -- prose, a
score outside 0-5, a score that is not a number -- is rejected: the trial is
unscored, never clamped.  A judge answering "8" did not understand the task,
and clamping it to 5 would record its confusion as a perfect mark.

The text built here is also what identifies a verdict on a tape: the digest
of the prompt version, the rubric text and the judge input (``judge_digest``)
travels with the judge's request, so a replay or rescore reuses a recorded
verdict only for the very same rubric and transcript.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence

import attrs

from evaltape.recorder import Session, ToolCallRecord

from ..cases._cases import Case
from ..checks._trajectory import control_tools

PROMPT_VERSION = "evaltape-judge/1"
"""Changes whenever the instructions below change, so old verdicts stop matching."""

SCORE_MIN = 0.0
"""Lowest score a judge may give."""
SCORE_MAX = 5.0
"""Highest score a judge may give."""

_ARGS_SHOWN = 500
"""Characters of a tool call's arguments shown to the judge."""
_RESULT_SHOWN = 2000
"""Characters of a tool result shown to the judge."""

INSTRUCTIONS = """\
You grade one reply of an AI agent against a rubric.

You are shown the user's request, then every tool the agent actually called,
with its arguments and what it returned, taken from the recorded trace. Treat
that list as the truth about what the agent did and what the files contain,
whatever the reply claims. Then you are shown the agent's final reply.

Grade the final reply with the rubric below, on a scale from 0 to 5.
Answer with exactly one JSON object and nothing else, in this form:
{"score": <a number from 0 to 5>, "rationale": "<one or two sentences on why>"}

Rubric:
"""


def judge_input(case: Case, session: Session) -> str:
    """The user message the judge grades: request, tools that fired, final reply.

    Calls to the harness's own control tools (see ``control_tools``) are left
    out, as every trajectory rule leaves them out.
    """
    hidden = control_tools(session)
    records = [r for r in session.tool_calls if r.call.name not in hidden]
    reply = session.reply.strip()
    return (
        "## The user's request\n\n"
        f"{case.prompt.strip()}\n\n"
        "## Tools the agent called (from the recorded trace)\n\n"
        f"{_tools(records)}\n\n"
        "## The agent's final reply\n\n"
        f"{reply if reply else '(empty: the agent gave no final reply)'}\n"
    )


def _tools(records: Sequence[ToolCallRecord]) -> str:
    if not records:
        return "None: the agent called no tool."
    lines = []
    for number, record in enumerate(records, start=1):
        args = _cut(record.call.arguments.strip() or "{}", _ARGS_SHOWN)
        lines.append(f"{number}. {record.call.name} {args} (turn {record.turn + 1})")
        if record.result is None:
            lines.append("   returned: (no result was sent back)")
        else:
            lines.append(
                "   returned: " + _cut(record.result, _RESULT_SHOWN).replace("\n", "\n   ")
            )
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def judge_messages(rubric_text: str, judge_input_text: str) -> list[dict[str, str]]:
    """The chat messages sent to the judge: instructions + rubric, then the input."""
    return [
        {"role": "system", "content": INSTRUCTIONS + rubric_text.strip() + "\n"},
        {"role": "user", "content": judge_input_text},
    ]


def judge_digest(rubric_text: str, judge_input_text: str) -> str:
    """SHA-256 hex of prompt version, rubric text and judge input: a verdict's identity."""
    h = hashlib.sha256()
    for part in (PROMPT_VERSION, rubric_text, judge_input_text):
        data = part.encode("utf-8")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


@attrs.frozen(kw_only=True)
class ParsedVerdict:
    """The judge's answer, read strictly."""

    score: float | None
    """The score, or None when the answer was rejected."""
    rationale: str = ""
    """The judge's reason, as it gave it."""
    problem: str = ""
    """Why the answer was rejected; "" when it was accepted."""


_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(?P<body>.*)\n```\Z", re.DOTALL | re.IGNORECASE)


def parse_verdict(text: str) -> ParsedVerdict:
    """Read ``{"score": n, "rationale": "..."}``; reject anything else, never clamp.

    One JSON object, optionally wrapped in a single ```json fence; ``score``
    a number (not a boolean) from 0 to 5; ``rationale``, if present, a
    string.  Other keys are ignored.
    """
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced is not None:
        body = fenced.group("body").strip()
    try:
        data = json.loads(body)
    except ValueError:
        return _rejected(f"the answer is not a JSON object: {_show(text)}")
    if not isinstance(data, dict):
        return _rejected(f"the answer is not a JSON object: {_show(text)}")
    score = data.get("score")
    if isinstance(score, bool) or not isinstance(score, int | float):
        return _rejected(f'the answer has no numeric "score": {_show(text)}')
    if not math.isfinite(score) or not SCORE_MIN <= score <= SCORE_MAX:
        return _rejected(f"score {score:g} is outside 0-5 (rejected, not clamped)")
    rationale = data.get("rationale", "")
    if not isinstance(rationale, str):
        return _rejected('"rationale" is not a string')
    return ParsedVerdict(score=float(score), rationale=" ".join(rationale.split()))


def _rejected(problem: str) -> ParsedVerdict:
    return ParsedVerdict(score=None, problem=problem)


def _show(text: str) -> str:
    return json.dumps(_cut(" ".join(text.split()), 80), ensure_ascii=False)


CONSTRAINTS = ("none", "json", "schema")
"""How the judge's answer is constrained at the provider (``judge_constrain``):

- ``none``: the prompt alone asks for the JSON verdict;
- ``json``: OpenAI JSON mode, ``response_format: {"type": "json_object"}``;
- ``schema``: a JSON object whose ``score`` is one of 0..5 and whose ``rationale`` is a
  string, in the ``{"type": "json_object", "schema": ...}`` form that llama.cpp's
  OpenAI-compatible server turns into a grammar, so even a small local judge answers
  with a verdict the parser reads (whether the score is any good is another matter).
"""

VERDICT_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "score": {"enum": [0, 1, 2, 3, 4, 5]},
        "rationale": {"type": "string"},
    },
    "required": ["score", "rationale"],
}
"""The verdict's shape, as a JSON schema."""


def response_format(constrain: str) -> dict[str, object] | None:
    """The request's ``response_format`` for a ``CONSTRAINTS`` value (None for ``none``)."""
    if constrain == "json":
        return {"type": "json_object"}
    if constrain == "schema":
        return {"type": "json_object", "schema": VERDICT_SCHEMA}
    return None
