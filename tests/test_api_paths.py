"""One table says which model API a URL belongs to; recorder, matcher, proxy and runner agree."""

from __future__ import annotations

import pytest
from builders import exchange

from evaltape.recorder import decode_call
from evaltape.replay import Upstreams, api_of

CHAT_BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
CHAT_REPLY = {
    "id": "c1",
    "object": "chat.completion",
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}}],
}


@pytest.mark.parametrize(
    ("path", "api"),
    [
        ("/v1/chat/completions", "openai.chat"),
        ("/openai/deployments/d/chat/completions/", "openai.chat"),
        ("/v1/responses", "openai.responses"),
        ("/v1/messages", "anthropic.messages"),
        ("/v1/threads/thread_1/messages", "json"),
        ("/v1/embeddings", "json"),
    ],
)
def test_the_matcher_and_the_recorder_name_the_same_api(path: str, api: str) -> None:
    assert api_of(path) == api
    if api != "json":
        recorded = exchange(f"http://127.0.0.1:9{path}", CHAT_BODY, CHAT_REPLY)
        call = decode_call(recorded)
        assert call is not None and call.api == api


def test_a_thread_messages_list_is_not_decoded_as_anthropic() -> None:
    recorded = exchange(
        "http://127.0.0.1:9/v1/threads/thread_1/messages",
        {"role": "user", "content": "hi"},
        {"object": "list", "data": []},
    )
    assert decode_call(recorded) is None


def test_the_proxy_sends_anthropic_paths_and_headers_to_anthropic() -> None:
    up = Upstreams(openai="http://127.0.0.1:1", anthropic="http://127.0.0.1:2")
    assert up.base_for("/v1/messages", {}) == "http://127.0.0.1:2"
    assert up.base_for("/v1/complete", {}) == "http://127.0.0.1:2"
    assert up.base_for("/v1/chat/completions", {"anthropic-version": "2023-06-01"}) == (
        "http://127.0.0.1:2"
    )
    assert up.base_for("/v1/chat/completions", {}) == "http://127.0.0.1:1"
