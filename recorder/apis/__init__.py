"""Semantic adapters: what a recorded HTTP exchange means as a model call.

``decode_call`` picks the API from the URL path (falling back on the body's
shape for proxies with other paths), decodes the raw wire bytes, and hands
them to that API's adapter.  ``CallDecoder`` does the same for a session's
exchanges in order, parsing and normalizing each repeated conversation
message once (``_reuse.py``).  Only these modules read API JSON; none imports
an HTTP library, so they work on any tape.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeAlias
from urllib.parse import urlsplit

import attrs
import msgspec

from .._events import Assembled, Exchange, Request, body_source
from ..tape._delta import DeltaBody
from . import _anthropic, _openai_chat, _openai_responses
from ._assembled import ASSEMBLY, assembled_of, call_of
from ._bodies import (
    SseStream,
    error_text,
    load_json,
    obj,
    parse_sse,
)
from ._encoding import content, encoded, header
from ._model import (
    Api,
    Asked,
    Calling,
    CallStart,
    Message,
    ModelCall,
    RequestSide,
    ToolCall,
    Usage,
    blank,
    with_error,
)
from ._registry import api_by_shape, api_of_path
from .reuse._session import BodyParser, Memo

_Request: TypeAlias = tuple[
    Callable[[dict[str, Any], Memo[Any]], ModelCall], "dict[str, Any] | Request", Memo[Any], str
]
"""A call's request reader, body (or the request, if its body is parsed only when
needed), the session's memo for its API, and the API."""

_FOLLOWED: dict[str, Any] = {}
"""Stands for a request body ``CallDecoder._checks`` found to be a JSON object."""


def _no_fast_path(call: Calling, body: bytes) -> None:
    return None


@attrs.frozen(kw_only=True)
class _Adapter:
    api: Api
    conversation: str
    read_request: Callable[[dict[str, Any], Memo[Any]], ModelCall]
    read_response: Callable[[Calling, Any], ModelCall]
    read_stream: Callable[[Calling, SseStream], ModelCall]
    read_stream_bytes: Callable[[Calling, bytes], ModelCall | None]


_ADAPTERS: dict[str, _Adapter] = {
    module.API: _Adapter(
        api=module.API,
        conversation=module.CONVERSATION,
        read_request=module.read_request,
        read_response=module.read_response,
        read_stream=module.read_stream,
        read_stream_bytes=getattr(module, "read_stream_bytes", _no_fast_path),
    )
    for module in (_openai_chat, _openai_responses, _anthropic)
}


def assemble(exchange: Exchange) -> Assembled | None:
    """The message of a streamed model API response as the fold reads it, to be stored
    with it (``Response.assembled``); None for anything else (no response, a transport
    failure, an HTTP error, not a stream, a URL that names no API)."""
    response = exchange.response
    if response is None or exchange.error is not None or response.status >= 400:
        return None
    request = exchange.request
    api = api_of_path(urlsplit(request.url).path) if request.method == "POST" else None
    kind = header(response.headers, "content-type").lower()
    if api is None or "text/event-stream" not in kind:
        return None
    adapter = _ADAPTERS[api]
    call = _read_response(blank(adapter.api), exchange, kind, adapter, True, stored=False)
    return assembled_of(call)


def decode_call(exchange: Exchange) -> ModelCall | None:
    """The model call an exchange made, or None if it is not model API traffic.

    Never raises on bad data: an unreadable body, an HTTP error, a stream
    that broke or a transport failure give a call with ``error`` set and
    whatever could be read before the failure.
    """
    return CallDecoder().decode(exchange)


class CallDecoder:
    """``decode_call`` for the exchanges of one session, given in order.

    Gives the same calls as ``decode_call`` on each exchange, but parses and
    normalizes a conversation message only where it first appears, so decoding
    a session costs time linear in its turns rather than quadratic.  Keeps the
    session's decoded messages and its last request body of each API.
    """

    def __init__(self) -> None:
        self._parsers: dict[str, BodyParser] = {}
        self._fill_parsers: dict[str, BodyParser] = {}  # for the bodies ``_checks`` did not parse
        self._memos: dict[str, Memo[Any]] = {}
        self._apis: dict[str, str | None] = {}
        self._requests: list[_Request | None] = []  # what each call's request side needs
        self._filled: list[tuple[str, tuple[Message, ...], tuple[str, ...]]] = []
        self._lock = threading.Lock()

    def decode(self, exchange: Exchange) -> ModelCall | None:
        """The model call ``exchange`` made, or None; see ``decode_call``."""
        request = exchange.request
        if request.method != "POST":
            return None
        url = request.url
        if url not in self._apis:
            self._apis = {url: api_of_path(urlsplit(url).path)}  # URLs recur in a row
        api = self._apis[url]
        source = body_source(request)
        # What a later delta names as its base: the delta the body is stored as, else
        # its bytes.
        token = source if isinstance(source, DeltaBody) else request.body
        body: Any
        response = exchange.response
        kind = "" if response is None else header(response.headers, "content-type").lower()
        if api is not None and kind and self._checks(api, request, token):
            body, problem = _FOLLOWED, ""  # a dict: parsed when its request side is read
        else:
            body, problem = self._load(api, request, token)
        if api is None:
            if not isinstance(body, dict):
                return None
            api = api_by_shape(body, request.headers)
            if api is None:
                return None
        adapter = _ADAPTERS[api]
        if not isinstance(body, dict):
            problem = problem or "request body is not a JSON object"
        streamed = isinstance(body, dict) and body.get("stream") is True  # (not read if followed)
        memo = self._memos.get(api)
        if memo is None:
            memo = self._memos[api] = Memo()
        # The request side (the conversation normalized, the tools offered) is found
        # when first asked for: scoring a trajectory or an answer never asks.
        pending = request if body is _FOLLOWED else obj(body)
        self._requests.append((adapter.read_request, pending, memo, adapter.api))
        asked = RequestSide(functools.partial(self._side, len(self._requests) - 1))
        start = CallStart(api=adapter.api, asked=asked)
        call = _read_response(start, exchange, kind, adapter, streamed)
        if exchange.error is not None:
            failure = f"{exchange.error.type}: {exchange.error.message}"
            error = f"transport failed: {failure}"
        else:
            error = call.error or problem
        return call if error == call.error else with_error(call, error)

    def _parser(self, api: str) -> BodyParser:
        parser = self._parsers.get(api)
        if parser is None:
            parser = self._parsers[api] = BodyParser(_ADAPTERS[api].conversation)
        return parser

    def _checks(self, api: str, request: Request, token: bytes | DeltaBody) -> bool:
        """True if the request body (``token``: its bytes, or the delta that builds it)
        is one ``json.loads`` reads as an object, decided from what changed since an
        earlier body (``Chains.follows``, without building it, else
        ``Chains.checks``): then it is parsed only when its request side is read.
        Its ``stream`` flag is not known then, so the caller asks only when the
        response says whether it streamed (a Content-Type)."""
        if encoded(request.headers):
            return False
        chains = self._parser(api).chains
        if not isinstance(token, DeltaBody):
            return chains.checks(token, request.body)
        base = token.base  # (None once built)
        if base is not None and chains.follows(token, base):
            return True
        return chains.checks(token, request.body, base)

    def _load(self, api: str | None, request: Request, token: bytes | DeltaBody) -> tuple[Any, str]:
        """The request body parsed (``load_json``'s value and problem); ``token`` is
        what a later delta names it as."""
        data, problem = content(request.body, request.headers)
        if problem:
            return None, problem
        if api is None:
            return load_json(data, "request body")
        return self._parser(api).load(data, "request body", token)

    def _side(self, index: int) -> Asked:
        """The request side of this decoder's ``index``-th call, with every earlier
        call's request read first, in order, as the memo needs."""
        with self._lock:
            while len(self._filled) <= index:
                pending = self._requests[len(self._filled)]
                assert pending is not None  # (cleared only once read)
                read, body, memo, api = pending
                if isinstance(body, Request):  # followed (valid, not encoded): parsed now
                    parser = self._fill_parsers.get(api)
                    if parser is None:
                        parser = self._fill_parsers[api] = BodyParser(_ADAPTERS[api].conversation)
                    body = obj(parser.load(body.body, "request body")[0])
                request = read(body, memo)
                self._filled.append(
                    (request.model_requested, request.input_messages, request.tools_offered)
                )
                self._requests[len(self._filled) - 1] = None  # the body is not needed again
            return self._filled[index]


def _read_response(
    start: CallStart,
    exchange: Exchange,
    kind: str,
    adapter: _Adapter,
    asked: bool,
    *,
    stored: bool = True,
) -> ModelCall:
    """The call ``start`` starts, with what the response says, its status and whether it
    streamed; ``kind`` is its Content-Type, lower case ("" if none), ``asked`` whether the
    request asked for a stream.  ``stored``: a stream's message assembled when it was
    recorded, by today's adapters, is taken as it is."""
    response = exchange.response
    if response is None:
        return with_error(msgspec.structs.replace(start, streamed=asked), "")
    status = response.status
    assembled = response.assembled
    if (
        stored
        and assembled is not None
        and assembled.version == ASSEMBLY
        and status < 400
        and "text/event-stream" in kind
    ):
        return call_of(assembled, msgspec.structs.replace(start, status=status, streamed=True))
    data, undecoded = content(response.body, response.headers)
    streamed = "text/event-stream" in kind or (
        not kind and (asked or data.lstrip().startswith((b"data:", b"event:")))
    )
    known = msgspec.structs.replace(start, status=status, streamed=streamed)
    if status >= 400:
        return with_error(known, error_text(status, data))
    call: ModelCall
    if streamed:
        quick = adapter.read_stream_bytes(known, data)
        call = quick if quick is not None else adapter.read_stream(known, parse_sse(data))
    else:
        value, problem = load_json(data, "response body")
        call = with_error(known, problem) if problem else adapter.read_response(known, value)
    return with_error(call, undecoded) if undecoded else call


__all__ = [
    "ASSEMBLY",
    "Api",
    "CallDecoder",
    "Message",
    "ModelCall",
    "RequestSide",
    "ToolCall",
    "Usage",
    "assemble",
    "decode_call",
]
