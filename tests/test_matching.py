"""Semantic request matching and record-mode resolution, through the public API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from builders import exchange

from evaltape.replay import Action, Diverged, NoRecording, RecordMode, UnknownMode, resolve_mode
from evaltape.replay._matcher import Matcher
from evaltape.replay._shared import first_difference, normalize

CHAT = "https://api.openai.com/v1/chat/completions"
MESSAGES = "https://api.anthropic.com/v1/messages"


def norm(url: str, body: Any, headers: tuple[tuple[str, str], ...] = ()) -> Any:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return normalize("POST", url, headers, raw)


def test_key_order_host_and_volatile_headers_do_not_matter() -> None:
    a = norm(
        CHAT,
        {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        (("x-stainless-retry-count", "0"), ("user-agent", "a"), ("authorization", "Bearer 1")),
    )
    b = norm(
        "http://127.0.0.1:9/v1/chat/completions",
        {"messages": [{"content": "hi", "role": "user"}], "model": "m"},
        (("x-stainless-retry-count", "2"), ("user-agent", "b"), ("idempotency-key", "k")),
    )
    assert a.key == b.key


def test_semantic_equivalences_per_api() -> None:
    plain = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    parts = {
        "model": "m",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "stream": False,
        "user": "run-1234",
        "temperature": None,
    }
    assert norm(CHAT, plain).key == norm(CHAT, parts).key
    anthropic_a = {"model": "c", "system": "be brief", "messages": [], "metadata": {"user_id": "x"}}
    anthropic_b = {"model": "c", "system": [{"type": "text", "text": "be brief"}], "messages": []}
    assert norm(MESSAGES, anthropic_a).key == norm(MESSAGES, anthropic_b).key
    assert norm(CHAT, {"temperature": 1.0}).key == norm(CHAT, {"temperature": 1}).key


def test_meaningful_changes_change_the_key() -> None:
    base = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    for changed in (
        {**base, "model": "n"},
        {**base, "stream": True},
        {**base, "messages": [{"role": "user", "content": "hi "}]},
        {**base, "tools": []},
    ):
        assert norm(CHAT, changed).key != norm(CHAT, base).key
    assert (
        norm(MESSAGES, {"x": 1}, (("anthropic-version", "2023-06-01"),)).key
        != norm(MESSAGES, {"x": 1}, (("anthropic-version", "2024-01-01"),)).key
    )
    assert norm("http://h/upload", b"\x00raw").key != norm("http://h/upload", b"\x00raw2").key


def test_first_difference_names_the_json_path_and_both_values() -> None:
    sent = norm(
        CHAT,
        {
            "model": "m",
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "new"}],
        },
    )
    rec = norm(
        CHAT,
        {
            "model": "m",
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "old"}],
        },
    )
    diff = first_difference(sent, rec)
    assert diff is not None
    assert (diff.path, diff.sent, diff.recorded) == ("messages[1].content", '"new"', '"old"')
    longer = norm(CHAT, {"messages": [1, 2, 3]})
    shorter = norm(CHAT, {"messages": [1, 2]})
    diff = first_difference(longer, shorter)
    assert diff is not None and (diff.path, diff.recorded) == ("messages[2]", "<absent>")
    odd = first_difference(norm(CHAT, {"a b": {"c": 1}}), norm(CHAT, {"a b": {"c": 2}}))
    assert odd is not None and odd.path == '["a b"].c'


def test_long_values_are_shortened_around_the_difference() -> None:
    prefix = "word " * 100
    diff = first_difference(norm(CHAT, {"p": prefix + "alpha"}), norm(CHAT, {"p": prefix + "beta"}))
    assert diff is not None
    assert diff.sent.startswith("…") and "alpha" in diff.sent and "beta" in diff.recorded
    assert len(diff.sent) < 100


def test_identical_requests_are_served_in_recorded_order() -> None:
    first = exchange(CHAT, {"messages": [], "n": 1})
    second = exchange(CHAT, {"messages": [], "n": 1})
    matcher = Matcher([first, second], session_id="s")
    body = json.dumps({"n": 1, "messages": []}).encode()
    assert matcher.take("POST", CHAT, (), body).ordinal == 1
    assert matcher.take("POST", CHAT, (), body).ordinal == 2


def test_diverged_picks_the_most_similar_recorded_request() -> None:
    recorded = [
        exchange(CHAT, {"model": "m", "messages": [{"role": "user", "content": "alpha"}]}),
        exchange(
            CHAT,
            {"model": "m", "tools": [1, 2, 3], "messages": [{"role": "user", "content": "beta"}]},
        ),
    ]
    matcher = Matcher(recorded, session_id="abc")
    sent = {"model": "m", "tools": [1, 2, 3], "messages": [{"role": "user", "content": "gamma"}]}
    with pytest.raises(Diverged) as caught:
        matcher.take("POST", CHAT, (), json.dumps(sent).encode())
    assert caught.value.nearest == 2
    assert caught.value.path == "messages[0].content"
    assert str(caught.value).startswith("session abc: request #1 of this replay")


def test_every_record_mode_resolves() -> None:
    assert resolve_mode(RecordMode.ONCE, recorded=False) is Action.RECORD
    assert resolve_mode("once", recorded=True) is Action.REPLAY
    assert resolve_mode("NEW-EPISODES", recorded=True) is Action.REPLAY_THEN_RECORD
    assert resolve_mode("new_episodes", recorded=False) is Action.RECORD
    assert resolve_mode("all", recorded=True) is Action.RECORD
    assert resolve_mode("none", recorded=True) is Action.REPLAY
    with pytest.raises(NoRecording, match="case-7"):
        resolve_mode(RecordMode.NONE, recorded=False, key="case-7")


def test_unknown_mode_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownMode) as caught:
        resolve_mode("sometimes", recorded=True)
    assert str(caught.value) == (
        "unknown record mode 'sometimes'; valid modes: none, once, new_episodes, all"
    )
