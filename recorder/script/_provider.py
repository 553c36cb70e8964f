"""Scripted provider: a short hand-written list of responses becomes a tape.

A script names the replies a model should give (text, tool calls, HTTP
errors, usage).  This module holds the script as values and reads and
validates script files; ``_script_tape.py`` renders each reply as the
exchange a real API of the chosen flavour would have produced (the same JSON
bodies, or the same server-sent events when streamed, ``_script_openai.py``
and ``_script_anthropic.py``), so a harness replayed against the tape parses
them with its real SDK.

A script has no recorded requests.  Each scripted exchange therefore carries
a stand-in request (just the model and the stream flag) with the header
``x-evaltape-script: any``: the replay side serves it to the next request
with the same method and URL path, in tape order, without comparing bodies
or headers.
"""

from __future__ import annotations

import enum
import json
import os
import re
from collections.abc import Mapping
from typing import Any

import attrs

from .._errors import TapeError
from .._events import Headers

SCRIPT_MATCH_HEADER = "x-evaltape-script"
"""Request header that marks a scripted exchange."""
SCRIPT_MATCH_ANY = "any"
"""Its value: serve to the next request with the same method and URL path."""

FIRST_BYTE = 0.05
"""Default seconds from request to the first response byte."""
CHUNK_GAP = 0.01
"""Seconds between two streamed events."""


class ScriptError(TapeError):
    """A script is malformed; the message names the file and the field."""


class ScriptFlavor(enum.Enum):
    """Which model API a script's exchanges imitate."""

    OPENAI_CHAT = "openai.chat"
    """OpenAI Chat Completions, ``POST /v1/chat/completions``."""
    OPENAI_RESPONSES = "openai.responses"
    """OpenAI Responses, ``POST /v1/responses``."""
    ANTHROPIC_MESSAGES = "anthropic.messages"
    """Anthropic Messages, ``POST /v1/messages``."""

    @classmethod
    def resolve(cls, name: str) -> ScriptFlavor:
        """The flavour named ``name``; ScriptError listing the choices otherwise."""
        for flavor in cls:
            if flavor.value == name:
                return flavor
        choices = ", ".join(f.value for f in cls)
        raise ScriptError(f"unknown flavor {name!r} (choose one of {choices})")


DEFAULT_URLS: Mapping[ScriptFlavor, str] = {
    ScriptFlavor.OPENAI_CHAT: "https://api.openai.com/v1/chat/completions",
    ScriptFlavor.OPENAI_RESPONSES: "https://api.openai.com/v1/responses",
    ScriptFlavor.ANTHROPIC_MESSAGES: "https://api.anthropic.com/v1/messages",
}


# -- the script, as values -------------------------------------------------------


@attrs.frozen(kw_only=True)
class ScriptedCall:
    """A tool call the model makes."""

    name: str
    """Tool (function) name."""
    arguments: str
    """Arguments as a JSON text (an object)."""
    id: str = ""
    """Call id; generated when empty."""


@attrs.frozen(kw_only=True)
class ScriptedUsage:
    """Token counts reported with a reply."""

    input_tokens: int
    """Prompt tokens."""
    output_tokens: int
    """Completion tokens."""


@attrs.frozen(kw_only=True)
class Reply:
    """A successful model response."""

    text: str = ""
    """Assistant text (may be empty when there are tool calls)."""
    tool_calls: tuple[ScriptedCall, ...] = ()
    """Tool calls, in order."""
    usage: ScriptedUsage | None = None
    """Token counts; estimated when None."""
    finish: str = ""
    """"stop", "length" or "tool_calls"; derived when empty."""
    latency: float = FIRST_BYTE
    """Seconds to the first byte."""


@attrs.frozen(kw_only=True)
class ErrorReply:
    """An HTTP error response."""

    status: int
    """Status code, 400-599."""
    message: str = ""
    """Error message put in the flavour's error body."""
    type: str = ""
    """Error type in the body; derived from the status when empty."""
    body: bytes | None = None
    """Exact body to send instead of the flavour's error body."""
    headers: Headers = ()
    """Extra response headers, e.g. ("retry-after", "2")."""
    latency: float = FIRST_BYTE
    """Seconds to the response."""


Step = Reply | ErrorReply


@attrs.frozen(kw_only=True)
class Script:
    """A parsed script."""

    source: str
    """The file it came from (or a label)."""
    responses: tuple[Step, ...]
    """The responses, served in order."""
    flavor: ScriptFlavor | None = None
    """Flavour named in the script, if any."""
    stream: bool | None = None
    """Streaming named in the script, if any."""
    model: str = "scripted-model"
    """Model name reported in the responses and the session header."""
    case_id: str = ""
    """Case id named in the script, if any."""
    base_url: str = ""
    """Base URL (scheme and host) replacing the flavour's default."""


# -- parsing ----------------------------------------------------------------------


class _Where:
    """Builds ``file: responses[3].tool_calls[0]: message`` errors."""

    def __init__(self, source: str, path: str = "") -> None:
        self.source = source
        self.path = path

    def at(self, part: str | int) -> _Where:
        if isinstance(part, int):
            return _Where(self.source, f"{self.path}[{part}]")
        return _Where(self.source, f"{self.path}.{part}" if self.path else part)

    def error(self, message: str) -> ScriptError:
        where = f"{self.path}: " if self.path else ""
        return ScriptError(f"{self.source}: {where}{message}")


def _obj(value: object, where: _Where, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.error(f"expected an object, got {type(value).__name__}")
    for key in value:
        if key not in allowed:
            raise where.at(str(key)).error(f"unknown key (expected one of {', '.join(allowed)})")
    return value


def _str(obj: dict[str, Any], key: str, where: _Where, default: str = "") -> str:
    value = obj.get(key, default)
    if not isinstance(value, str):
        raise where.at(key).error(f"expected a string, got {type(value).__name__}")
    return value


def _int(obj: dict[str, Any], key: str, where: _Where, lo: int, hi: int) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise where.at(key).error(f"expected an integer from {lo} to {hi}, got {value!r}")
    return value


def _seconds(obj: dict[str, Any], key: str, where: _Where) -> float:
    value = obj.get(key, FIRST_BYTE)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise where.at(key).error(f"expected seconds >= 0, got {value!r}")
    return float(value)


def _tool_call(value: object, where: _Where) -> ScriptedCall:
    obj = _obj(value, where, ("name", "arguments", "id"))
    name = _str(obj, "name", where)
    if not name:
        raise where.at("name").error("a tool call needs a name")
    args = obj.get("arguments", {})
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError as exc:
            raise where.at("arguments").error(f"not valid JSON: {exc}") from exc
        if not isinstance(parsed, dict):
            raise where.at("arguments").error("must be a JSON object")
        text = args
    elif isinstance(args, dict):
        text = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
    else:
        raise where.at("arguments").error(f"expected an object, got {type(args).__name__}")
    return ScriptedCall(name=name, arguments=text, id=_str(obj, "id", where))


def _usage(value: object, where: _Where) -> ScriptedUsage:
    obj = _obj(value, where, ("input_tokens", "output_tokens"))
    return ScriptedUsage(
        input_tokens=_int(obj, "input_tokens", where, 0, 10**9),
        output_tokens=_int(obj, "output_tokens", where, 0, 10**9),
    )


def _error(value: object, where: _Where) -> ErrorReply:
    obj = _obj(value, where, ("status", "message", "type", "body", "headers", "retry_after"))
    status = _int(obj, "status", where, 400, 599)
    body: bytes | None = None
    if "body" in obj:
        raw = obj["body"]
        body = (
            raw.encode()
            if isinstance(raw, str)
            else json.dumps(raw, separators=(",", ":")).encode()
        )
    headers: list[tuple[str, str]] = []
    extra = obj.get("headers", {})
    if not isinstance(extra, dict):
        raise where.at("headers").error("expected an object of header names to strings")
    for name, val in extra.items():
        if not isinstance(val, str | int | float) or isinstance(val, bool):
            raise where.at("headers").at(str(name)).error("expected a string")
        headers.append((str(name).lower(), str(val)))
    if "retry_after" in obj:
        headers.append(("retry-after", str(_int(obj, "retry_after", where, 0, 86400))))
    return ErrorReply(
        status=status,
        message=_str(obj, "message", where, f"scripted error {status}"),
        type=_str(obj, "type", where),
        body=body,
        headers=tuple(headers),
    )


_STEP_KEYS = ("text", "tool_calls", "usage", "finish", "latency", "error")


def _step(value: object, where: _Where) -> Step:
    obj = _obj(value, where, _STEP_KEYS)
    if "error" in obj:
        others = sorted(set(obj) - {"error", "latency"})
        if others:
            raise where.error(f"an error response cannot also have {', '.join(others)}")
        err = _error(obj["error"], where.at("error"))
        return attrs.evolve(err, latency=_seconds(obj, "latency", where))
    calls = obj.get("tool_calls", [])
    if not isinstance(calls, list):
        raise where.at("tool_calls").error("expected a list")
    tool_calls = tuple(_tool_call(c, where.at("tool_calls").at(i)) for i, c in enumerate(calls))
    text = _str(obj, "text", where)
    if not text and not tool_calls:
        raise where.error("a response needs text, tool_calls or error")
    finish = _str(obj, "finish", where)
    if finish not in ("", "stop", "length", "tool_calls"):
        raise where.at("finish").error("expected stop, length or tool_calls")
    return Reply(
        text=text,
        tool_calls=tool_calls,
        usage=_usage(obj["usage"], where.at("usage")) if "usage" in obj else None,
        finish=finish,
        latency=_seconds(obj, "latency", where),
    )


def parse_script(data: object, source: str) -> Script:
    """Validate a decoded script (JSON or YAML value) into a Script."""
    top = _Where(source)
    keys = ("flavor", "stream", "model", "case", "base_url", "responses")
    obj = _obj(data, top, keys)
    responses = obj.get("responses")
    if not isinstance(responses, list) or not responses:
        raise top.at("responses").error("expected a non-empty list of responses")
    flavor = None
    if "flavor" in obj:
        name = _str(obj, "flavor", top)
        try:
            flavor = ScriptFlavor.resolve(name)
        except ScriptError as exc:
            raise top.at("flavor").error(str(exc)) from exc
    stream = obj.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise top.at("stream").error("expected true or false")
    base_url = _str(obj, "base_url", top).rstrip("/")
    if base_url and not re.match(r"https?://[^/\s]+$", base_url):
        raise top.at("base_url").error("expected scheme and host, e.g. http://127.0.0.1:8080")
    return Script(
        source=source,
        responses=tuple(_step(r, top.at("responses").at(i)) for i, r in enumerate(responses)),
        flavor=flavor,
        stream=stream,
        model=_str(obj, "model", top, "scripted-model") or "scripted-model",
        case_id=_str(obj, "case", top),
        base_url=base_url,
    )


def load_script(path: str | os.PathLike[str]) -> Script:
    """Read and validate a script file: JSON, or YAML (``.yaml``/``.yml``) with PyYAML."""
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ScriptError(f"{source}: cannot read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ScriptError(f"{source}: byte {exc.start}: not UTF-8 text") from exc
    if source.endswith((".yaml", ".yml")):
        return parse_script(_load_yaml(text, source), source)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScriptError(f"{source}: line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    return parse_script(data, source)


def _load_yaml(text: str, source: str) -> object:
    try:
        import yaml
    except ImportError as exc:
        raise ScriptError(f"{source}: YAML scripts need PyYAML (pip install pyyaml)") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScriptError(f"{source}: {where}{problem}") from exc
