"""The adapters as they were before the fast fold: the reference of test_fold_reference.py.

Semantic adapters: what a recorded HTTP exchange means as a model call.

``decode_call`` picks the API from the URL path (falling back on the body's
shape for proxies with other paths), decodes the raw wire bytes, and hands
them to that API's adapter.  ``CallDecoder`` does the same for a session's
exchanges in order, parsing and normalizing each repeated conversation
message once (``_reuse.py``).  Only these modules read API JSON; none imports
an HTTP library, so they work on any tape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import attrs

from _fold_reference import _anthropic, _openai_chat, _openai_responses
from _fold_reference._reuse import BodyParser, Memo
from _fold_reference._sse import (
    SseStream,
    decode_content,
    error_text,
    header,
    load_json,
    obj,
    parse_sse,
)
from evaltape.recorder._events import Exchange
from evaltape.recorder.apis._model import Api, Message, ModelCall, ToolCall, Usage


@attrs.frozen(kw_only=True)
class _Adapter:
    conversation: str
    read_request: Callable[[dict[str, Any], Memo[Any]], ModelCall]
    read_response: Callable[[ModelCall, Any], ModelCall]
    read_stream: Callable[[ModelCall, SseStream], ModelCall]


_ADAPTERS: dict[str, _Adapter] = {
    module.API: _Adapter(
        conversation=module.CONVERSATION,
        read_request=module.read_request,
        read_response=module.read_response,
        read_stream=module.read_stream,
    )
    for module in (_openai_chat, _openai_responses, _anthropic)
}


def _api_by_path(path: str) -> str | None:
    if path.endswith("/chat/completions"):
        return _openai_chat.API
    if path.endswith("/responses"):
        return _openai_responses.API
    if path.endswith("/messages") and "/threads/" not in path:
        return _anthropic.API
    return None


def _api_by_shape(body: dict[str, Any], anthropic_header: bool) -> str | None:
    """For proxies and cloud endpoints with their own paths (Vertex ``:rawPredict``...)."""
    if not isinstance(body.get("messages"), list):
        return None
    if anthropic_header or "anthropic_version" in body:
        return _anthropic.API
    return _openai_chat.API if isinstance(body.get("model"), str) else None


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
        self._memos: dict[str, Memo[Any]] = {}

    def decode(self, exchange: Exchange) -> ModelCall | None:
        """The model call ``exchange`` made, or None; see ``decode_call``."""
        request = exchange.request
        if request.method != "POST":
            return None
        api = _api_by_path(urlsplit(request.url).path.rstrip("/"))
        raw = decode_content(request.body, request.headers)
        if raw.problem:
            body, problem = None, raw.problem
        elif api is None:
            body, problem = load_json(raw.data, "request body")
        else:
            parser = self._parsers.get(api)
            if parser is None:
                parser = self._parsers[api] = BodyParser(_ADAPTERS[api].conversation)
            body, problem = parser.load(raw.data, "request body")
        if api is None:
            if not isinstance(body, dict):
                return None
            api = _api_by_shape(body, bool(header(request.headers, "anthropic-version")))
            if api is None:
                return None
        adapter = _ADAPTERS[api]
        if not isinstance(body, dict):
            problem = problem or "request body is not a JSON object"
        streamed = isinstance(body, dict) and body.get("stream") is True
        memo = self._memos.get(api)
        if memo is None:
            memo = self._memos[api] = Memo()
        call = _read_response(adapter.read_request(obj(body), memo), exchange, adapter, streamed)
        if exchange.error is not None:
            failure = f"{exchange.error.type}: {exchange.error.message}"
            return attrs.evolve(call, error=f"transport failed: {failure}")
        return attrs.evolve(call, error=call.error or problem)


def _read_response(
    call: ModelCall, exchange: Exchange, adapter: _Adapter, asked: bool
) -> ModelCall:
    response = exchange.response
    if response is None:
        return attrs.evolve(call, streamed=asked)
    kind = header(response.headers, "content-type").lower()
    decoded = decode_content(response.body, response.headers)
    data = decoded.data
    streamed = "text/event-stream" in kind or (
        not kind and (asked or data.lstrip().startswith((b"data:", b"event:")))
    )
    call = attrs.evolve(call, status=response.status, streamed=streamed)
    if response.status >= 400:
        return attrs.evolve(call, error=error_text(response.status, data))
    if streamed:
        call = adapter.read_stream(call, parse_sse(data))
    else:
        value, problem = load_json(data, "response body")
        call = attrs.evolve(call, error=problem) if problem else adapter.read_response(call, value)
    if decoded.problem:
        call = attrs.evolve(call, error=decoded.problem)
    return call


__all__ = ["Api", "CallDecoder", "Message", "ModelCall", "ToolCall", "Usage", "decode_call"]
