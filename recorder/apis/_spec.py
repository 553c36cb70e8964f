"""What a model API is beyond decoding its exchanges: the record each API module fills in.

Each API module (``_openai_chat.py``, ``_openai_responses.py``, ``_anthropic.py``)
holds, beside its decoders, how a request of its API is recognised, normalised for
matching and split into a conversation, and gathers them in one ``ApiSpec``;
``_registry.py`` lists the three.  The recorder, the replay matcher, the change
view and the proxy all ask that list, so a new API is one module and one row.
This module holds the record and the pieces the API modules share: the
conversation ``Item`` and the helpers that fold and read request bodies.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

import attrs

from .._events import Headers
from ._model import ToolCall

DEFAULT_FALSE: Final = ("stream",)
"""Fields whose ``false`` equals their absence in every supported API."""
OPENAI_DROPPED: Final = {
    "user": "end-user id for abuse monitoring; often a per-run id",
    "safety_identifier": "end-user id for abuse monitoring",
    "prompt_cache_key": "cache routing hint; does not change the answer",
    "metadata": "free-form tags for dashboards; often carries run ids",
}
"""Top-level body fields OpenAI's Chat Completions and Responses APIs both take and matching
ignores, with the reason."""
_TEXT_PARTS: Final = ("text", "input_text", "output_text")
_INDEX: Final = re.compile(r"^\w+\[(\d+)\]")


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys: equal values give equal texts."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@attrs.frozen(kw_only=True)
class Item:
    """One conversation item of a request, as the change view compares them."""

    path: str
    """Its JSON path in the body (``messages[3]``, ``messages[2].content[0]``, ``system``)."""
    role: str
    """system, developer, user, assistant, tool (any tool result), or the item's type."""
    text: str = ""
    """Its text parts, joined by newlines."""
    calls: tuple[ToolCall, ...] = ()
    """Tool calls it carries (arguments as canonical JSON)."""
    call_id: str = ""
    """For a tool result: the id of the call it answers."""
    answers: ToolCall | None = None
    """For a tool result: the call it answers, when the same body holds it."""
    raw: Any = None
    """Its JSON, for exact comparison."""
    observation: bool = False
    """A user message sent after the model's first turn: the harness's reply to the
    model (a tool's output in a text/ReAct agent), not prompt text."""
    after: str = ""
    """For an observation: the last line of the model's turn it answers (shortened)."""

    @property
    def slot(self) -> tuple[str, ...]:
        """What makes two items the same turn, changeable text aside (for alignment)."""
        if self.role in ("system", "developer"):
            return ("system",)
        if self.role == "user":
            return ("user",)
        if self.role == "assistant":
            return ("assistant", *(f"{c.name} {c.arguments}" for c in self.calls))
        if self.role == "tool":
            if self.answers is not None:
                return ("tool", self.answers.name, self.answers.arguments)
            return ("tool", "#" + self.call_id)
        return ("other", self.role, canonical_json(self.raw))

    @property
    def full(self) -> tuple[str, ...]:
        """``slot`` plus the exact JSON: equal means identical items."""
        return (*self.slot, canonical_json(self.raw))

    @property
    def label(self) -> str:
        """How a report names it: ``tool result for call_1 (read)``, ``message 3 (user)``."""
        if self.role == "tool":
            name = self.answers.name if self.answers is not None else "?"
            return f"tool result for {self.call_id or '?'} ({name})"
        found = _INDEX.match(self.path)
        number = int(found.group(1)) + 1 if found else 1
        return f"message {number} ({self.role})"


def _never(*_: Any) -> bool:
    return False


@attrs.frozen(kw_only=True)
class ApiSpec:
    """One model API: how a request of it is recognised, matched and read as a conversation."""

    name: str
    """The API's name as calls and the matcher give it (``openai.chat``)."""
    path_suffix: str
    """What a URL path of the API ends with, trailing ``/`` aside (``/chat/completions``)."""
    provider: str
    """Whose upstream the proxy sends its requests to (``openai``, ``anthropic``)."""
    conversation_keys: tuple[str, ...]
    """Top-level request fields that hold the conversation, in order."""
    dropped: Mapping[str, str]
    """Top-level request fields matching ignores, each with the reason."""
    fold: Callable[[dict[str, Any]], dict[str, Any]]
    """The API's own step of normalising: a body (defaults and dropped fields already
    gone) with the spellings that mean the same made one (a one-part content list)."""
    conversation: Callable[[dict[str, Any]], list[Item]]
    """A normalised request body's conversation items, in request order."""
    claims_body: Callable[[dict[str, Any], Headers], bool] = _never
    """Whether a request on a path no API names is this API's, by its body's shape and
    headers (proxies and cloud endpoints with their own paths)."""
    claims_request: Callable[[str, Mapping[str, str]], bool] = _never
    """Whether a request (path; headers lower-cased) goes to this API's provider
    whatever its path says."""

    def normalise(self, body: dict[str, Any]) -> dict[str, Any]:
        """The semantic form of a parsed request body, as matching compares it."""
        out = self.fold(without_defaults(body, self.dropped))
        return {k: v for k, v in out.items() if v is not None}


def without_defaults(body: dict[str, Any], dropped: Collection[str] = ()) -> dict[str, Any]:
    """``body`` without null fields, ``DEFAULT_FALSE`` ones that are false, and ``dropped``."""
    return {
        k: v
        for k, v in body.items()
        if v is not None and k not in dropped and not (k in DEFAULT_FALSE and v is False)
    }


# -- pieces the API modules share ------------------------------------------------------


def fold_text(content: Any, part_type: str) -> Any:
    """A content list holding one plain text part means the same as its string."""
    if (
        isinstance(content, list)
        and len(content) == 1
        and isinstance(content[0], dict)
        and set(content[0]) == {"type", "text"}
        and content[0]["type"] == part_type
        and isinstance(content[0]["text"], str)
    ):
        return content[0]["text"]
    return content


def fold_messages(messages: Any, key: str, part_type: str) -> Any:
    """Each message's ``key`` folded by ``fold_text``; anything but a list as it is."""
    if not isinstance(messages, list):
        return messages
    out = []
    for message in messages:
        if isinstance(message, dict) and key in message:
            message = {**message, key: fold_text(message[key], part_type)}
        out.append(message)
    return out


def text_of(content: Any) -> str:
    """A content string, or the text parts of a content list joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"]
            for p in content
            if isinstance(p, dict)
            and p.get("type") in _TEXT_PARTS
            and isinstance(p.get("text"), str)
        )
    return ""


def arguments(value: Any) -> str:
    """Tool call arguments (a JSON text or an object) as canonical JSON; bad JSON as it is."""
    if isinstance(value, str):
        try:
            return canonical_json(json.loads(value))
        except (ValueError, RecursionError):
            return value
    return canonical_json(value if value is not None else {})


def call_item(call_id: Any, name: Any, args: Any) -> ToolCall:
    """A tool call as a conversation item carries it (arguments canonical)."""
    return ToolCall(id=str(call_id or ""), name=str(name or ""), arguments=arguments(args))
