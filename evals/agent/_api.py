"""One Chat Completions call over the client the agent was given.

``POST {base_url}/chat/completions`` with a JSON body, no SDK.  The reply is
turned into a small value (text and tool calls); anything that is not a
usable reply becomes a ``ModelError`` naming the status and the server's
message.  Rate limits and overload (429, 503, 529) are retried twice,
waiting as ``retry-after`` says (capped); other errors are not retried, since
an invalid request fails the same way every time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import httpx

RETRY_STATUSES = frozenset({429, 503, 529})
"""Statuses worth asking again."""
RETRIES = 2
"""Extra attempts after a retryable status."""
MAX_WAIT = 30.0
"""Longest wait between attempts, seconds."""


class ModelError(RuntimeError):
    """The model API failed or answered something that is not a chat completion."""


@attrs.frozen(kw_only=True)
class Call:
    """A tool call the model asked for."""

    id: str
    """Call id, echoed in the tool result message."""
    name: str
    """Tool (function) name."""
    arguments: str
    """Arguments as the JSON text the model sent."""


@attrs.frozen(kw_only=True)
class Reply:
    """The assistant message of one completion."""

    text: str
    """Assistant text ("" when there is none)."""
    calls: tuple[Call, ...]
    """Tool calls, in order."""


def _wait(response: httpx.Response, attempt: int) -> float:
    raw = response.headers.get("retry-after", "")
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 2.0**attempt
    return min(max(seconds, 0.0), MAX_WAIT)


def _error_line(response: httpx.Response) -> str:
    text = response.text.strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text[:200] or "(empty body)"
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return str(err["message"])[:200]
    if isinstance(body, dict) and isinstance(body.get("detail"), str):
        return str(body["detail"])[:200]
    return text[:200]


def _parse(body: Any) -> Reply:
    try:
        message = body["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        raise ModelError("the response has no choices[0].message") from None
    text = message.get("content") or ""
    calls: list[Call] = []
    for index, raw in enumerate(message.get("tool_calls") or ()):
        function = raw.get("function") or {}
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {})
        calls.append(
            Call(
                id=str(raw.get("id") or f"call_{index}"),
                name=str(function.get("name") or ""),
                arguments=arguments,
            )
        )
    return Reply(text=text if isinstance(text, str) else "", calls=tuple(calls))


def complete(
    client: httpx.Client,
    base_url: str,
    body: Mapping[str, Any],
    *,
    api_key: str = "",
    sleep: Callable[[float], None],
) -> Reply:
    """Send one request; the parsed reply, or ModelError."""
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    for attempt in range(RETRIES + 1):
        try:
            response = client.post(url, json=dict(body), headers=headers)
        except httpx.HTTPError as exc:
            raise ModelError(f"POST {url} failed: {type(exc).__name__}: {exc}") from exc
        if response.status_code in RETRY_STATUSES and attempt < RETRIES:
            sleep(_wait(response, attempt))
            continue
        if response.status_code != 200:
            raise ModelError(f"POST {url}: HTTP {response.status_code}: {_error_line(response)}")
        try:
            parsed = response.json()
        except ValueError as exc:
            raise ModelError(f"POST {url}: the response is not JSON: {exc}") from exc
        return _parse(parsed)
    raise AssertionError("unreachable")  # pragma: no cover
