"""One table says which model API a URL belongs to; recorder, matcher, proxy and runner agree.

The table (``recorder/apis/_registry.py``) lists one ``ApiSpec`` per API, built in that
API's module: how its requests are recognised, normalised and read as a conversation.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, get_args

import pytest
from builders import exchange

from evaltape.recorder import decode_call
from evaltape.recorder._shared import APIS, api_named, api_of_path, base_url_of, provider_of
from evaltape.recorder.apis import Api
from evaltape.recorder.apis._registry import DEFAULT_PROVIDER, api_by_shape
from evaltape.replay import Upstreams, api_of
from evaltape.replay._match import normalize_body

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


# -- the registry: one ApiSpec per API, asked by every part ---------------------------

CONVERSATIONS: dict[str, dict[str, Any]] = {
    "openai.chat": {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "list"}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
        ],
        "user": "run-7",
        "stream": False,
    },
    "openai.responses": {
        "model": "m",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "list"}]},
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
        ],
        "metadata": {"run": "7"},
    },
    "anthropic.messages": {
        "model": "m",
        "max_tokens": 256,
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "list"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "c1", "name": "ls", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "a.txt"}],
            },
        ],
        "metadata": {"user_id": "u-7"},
    },
}
"""The same four turns (system, user, a tool call, its result) in each API."""

SUFFIXES = {
    "openai.chat": "/chat/completions",
    "openai.responses": "/responses",
    "anthropic.messages": "/messages",
}


def test_every_api_has_one_row_and_the_names_match_the_decoders() -> None:
    assert sorted(api.name for api in APIS) == sorted(CONVERSATIONS)
    assert len({api.path_suffix for api in APIS}) == len(APIS)
    for api in APIS:
        assert api_named(api.name) is api
        assert api.name in get_args(Api)
    assert api_named("json") is None


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_each_api_is_found_by_its_path_and_gives_its_base_url(name: str) -> None:
    path = "/v1" + SUFFIXES[name]
    assert api_of_path(path) == api_of(path) == name
    assert base_url_of(f"https://gw.example/openai{path}") == "https://gw.example/openai/v1"


def test_a_completions_url_keeps_chat_in_its_base_url_path_only_when_it_is_chat() -> None:
    assert base_url_of("http://h/v1/chat/completions") == "http://h/v1"
    assert base_url_of("http://h/v1/completions") == "http://h/v1"
    assert base_url_of("http://h/v1/models") is None


def test_a_body_on_an_unnamed_path_is_claimed_by_its_shape_anthropic_first() -> None:
    chat = {"model": "m", "messages": []}
    assert api_by_shape(chat, ()) == "openai.chat"
    # Anthropic's marks win over Chat Completions' shape, which its bodies also have.
    assert api_by_shape(chat, (("anthropic-version", "2023-06-01"),)) == "anthropic.messages"
    assert api_by_shape({"anthropic_version": "vertex-2023-10-16", "messages": []}, ()) == (
        "anthropic.messages"
    )
    assert api_by_shape({"model": "m", "input": "hi"}, ()) is None


def test_a_request_no_api_claims_goes_to_the_default_provider() -> None:
    assert provider_of("/v1/embeddings", {}) == DEFAULT_PROVIDER == "openai"
    assert provider_of("/v1/complete", {}) == "anthropic"
    assert provider_of("/anything", {"anthropic-version": ""}) == "anthropic"


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_normalising_drops_what_each_api_lists_and_folds_one_text_part(name: str) -> None:
    spec = api_named(name)
    assert spec is not None
    body = CONVERSATIONS[name]
    normal = spec.normalise(body)
    assert not set(spec.dropped) & set(normal)
    assert "stream" not in normal
    assert normal == normalize_body(name, body)
    first_user = next(i for i in spec.conversation(normal) if i.role == "user")
    assert first_user.text == "list"


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_the_conversation_view_reads_the_turns_the_decoder_reads(name: str) -> None:
    spec = api_named(name)
    assert spec is not None
    body = spec.normalise(CONVERSATIONS[name])
    items = spec.conversation(body)
    url = "http://127.0.0.1:9/v1" + SUFFIXES[name]
    call = decode_call(exchange(url, CONVERSATIONS[name], {}))
    assert call is not None
    assert [i.role for i in items] == [m.role for m in call.input_messages]
    assert [i.text for i in items] == [m.text for m in call.input_messages]
    assert [c.name for i in items for c in i.calls] == ["ls"]
    assert [i.call_id for i in items if i.role == "tool"] == ["c1"]
    assert set(spec.conversation_keys) <= set(body)


def test_only_the_api_modules_spell_an_api_name() -> None:
    # The matcher, the change view, the proxy and scoring ask the registry; the scripted
    # provider (recorder/script) names the API each scripted reply is rendered for.
    names = set(CONVERSATIONS)
    root = Path(__file__).resolve().parent.parent
    found = []
    for package in ("recorder", "replay", "scoring"):
        for path in sorted((root / package).rglob("*.py")):
            where = path.relative_to(root).as_posix()
            if where.startswith(("recorder/apis/", "recorder/script/")):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and node.value in names:
                    found.append(f"{where}:{node.lineno}: {node.value}")
    assert not found, "\n".join(found)
