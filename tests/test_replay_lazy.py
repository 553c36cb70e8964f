"""Replay set-up is lazy: recorded requests are normalized only once a request misses.

A replay whose every request is byte-identical to a recorded one (the usual
case) is served by exact digest and never parses a recorded body; the first
request with no byte-identical recording left normalizes the recordings not
served yet, and matching goes on semantically as before.  Counted, not timed.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from builders import CHAT_URL, exchange

from evaltape.recorder import Exchange
from evaltape.replay import ReplayTransport, _matcher


@pytest.fixture
def normalized(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Ordinals of the recorded exchanges normalized so far."""
    seen: list[int] = []
    real = _matcher.normalize_exchange

    def counting(exchange: Exchange, ignore: frozenset[str] = frozenset()) -> Any:
        seen.append(exchange.request.body.count(b"turn"))
        return real(exchange, ignore)

    monkeypatch.setattr(_matcher, "normalize_exchange", counting)
    return seen


HTTPX = ("accept", "accept-encoding", "connection", "user-agent", "host", "content-length")
"""What httpx adds to a request and the recordings here lack."""


def _body(turn: int, *, reorder: bool = False) -> dict[str, Any]:
    messages = [{"role": "user", "content": "turn"} for _ in range(turn)]
    return (
        {"model": "m", "messages": messages}
        if not reorder
        else {"messages": messages, "model": "m"}
    )


def _recorded(turns: int) -> list[Exchange]:
    return [
        exchange(CHAT_URL, _body(t), {"choices": [{"message": {"content": f"r{t}"}}]})
        for t in range(1, turns + 1)
    ]


def _send(client: httpx.Client, body: dict[str, Any]) -> str:
    reply = client.post(CHAT_URL, content=json.dumps(body).encode()).json()
    return str(reply["choices"][0]["message"]["content"])


def test_a_byte_identical_replay_normalizes_nothing(normalized: list[int]) -> None:
    transport = ReplayTransport(_recorded(5), ignore_headers=HTTPX)
    with httpx.Client(transport=transport) as client:
        assert [_send(client, _body(t)) for t in range(1, 6)] == ["r1", "r2", "r3", "r4", "r5"]
    transport.finish()
    assert normalized == []


def test_the_first_miss_normalizes_and_matching_goes_on_semantically(normalized: list[int]) -> None:
    transport = ReplayTransport(_recorded(4), ignore_headers=HTTPX)
    with httpx.Client(transport=transport) as client:
        assert _send(client, _body(1)) == "r1"
        assert normalized == []
        # Same meaning, other bytes (key order): matched after normalizing.
        assert _send(client, _body(2, reorder=True)) == "r2"
        assert sorted(normalized) == [1, 2, 3, 4]
        assert _send(client, _body(3)) == "r3"  # by digest, then the normalized queue
        assert _send(client, _body(4, reorder=True)) == "r4"
    transport.finish()
    assert len(normalized) == 4  # each recording normalized once
    assert not transport.tainted


def test_identical_recordings_are_served_in_recorded_order_before_and_after_a_miss() -> None:
    same = [
        exchange(CHAT_URL, _body(1), {"choices": [{"message": {"content": f"x{n}"}}]})
        for n in range(3)
    ]
    transport = ReplayTransport(same, ignore_headers=HTTPX)
    with httpx.Client(transport=transport) as client:
        assert _send(client, _body(1)) == "x0"
        assert _send(client, _body(1, reorder=True)) == "x1"
        assert _send(client, _body(1)) == "x2"
    transport.finish()


def test_unused_recordings_are_still_reported(normalized: list[int]) -> None:
    transport = ReplayTransport(_recorded(3), ignore_headers=HTTPX)
    with httpx.Client(transport=transport) as client:
        _send(client, _body(1))
    with pytest.raises(Exception, match="2 recorded call"):
        transport.finish()
