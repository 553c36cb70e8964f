"""Scripted tapes decode as the real APIs' responses, through the real SDKs."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import anthropic
import openai
import pydantic
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response as OpenAIResponse
from openai.types.responses import ResponseStreamEvent

from evaltape.recorder import Exchange, Mode, Source, TapeReader
from evaltape.recorder.script import (
    SCRIPT_MATCH_ANY,
    SCRIPT_MATCH_HEADER,
    ScriptError,
    ScriptFlavor,
    load_script,
    parse_script,
    script_exchanges,
    write_script_tape,
)

SCRIPT = {
    "model": "scripted-1",
    "case": "fix-bug",
    "responses": [
        {"text": "I will read the file first."},
        {
            "text": "Reading.",
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "src/app.py"}},
                {"name": "grep", "arguments": {"pattern": "def main", "path": "."}},
            ],
            "usage": {"input_tokens": 120, "output_tokens": 31},
        },
        {"error": {"status": 429, "message": "Rate limit reached", "retry_after": 3}},
        {"error": {"status": 500, "message": "internal failure"}},
        {
            "text": "Fixed: main() now returns 0.",
            "usage": {"input_tokens": 200, "output_tokens": 9},
        },
    ],
}


def _exchanges(flavor: ScriptFlavor, stream: bool) -> tuple[Exchange, ...]:
    return script_exchanges(parse_script(SCRIPT, "s.json"), flavor=flavor, stream=stream)


def _sse_data(exchange: Exchange) -> list[bytes]:
    assert exchange.response is not None
    out = []
    for chunk in exchange.response.chunks:
        assert chunk.data.endswith(b"\n\n")
        for line in chunk.data.splitlines():
            if line.startswith(b"data: "):
                out.append(line[len(b"data: ") :])
    return out


# -- a server on 127.0.0.1 that plays a tape's exchanges in order ---------------


class _Player:
    def __init__(self, exchanges: tuple[Exchange, ...]) -> None:
        self.exchanges = list(exchanges)
        self.paths: list[str] = []


Serve = Callable[[tuple[Exchange, ...]], tuple[str, _Player]]
"""Start a server playing these exchanges; returns its base URL and the player."""


@pytest.fixture
def serve() -> Iterator[Serve]:
    servers: list[ThreadingHTTPServer] = []

    def start(exchanges: tuple[Exchange, ...]) -> tuple[str, _Player]:
        player = _Player(exchanges)

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                exchange = player.exchanges.pop(0)
                assert (SCRIPT_MATCH_HEADER, SCRIPT_MATCH_ANY) in exchange.request.headers
                player.paths.append(self.path)
                assert self.path == urlsplit(exchange.request.url).path
                response = exchange.response
                assert response is not None
                self.send_response(response.status)
                for name, value in response.headers:
                    self.send_header(name, value)
                self.send_header("connection", "close")
                self.end_headers()
                for chunk in response.chunks:
                    self.wfile.write(chunk.data)
                    self.wfile.flush()

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}", player

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


# -- OpenAI Chat Completions ------------------------------------------------------


def test_chat_bodies_validate_as_chat_completions() -> None:
    first, tools, rate, _, _ = _exchanges(ScriptFlavor.OPENAI_CHAT, stream=False)
    assert first.response is not None and tools.response is not None
    done = ChatCompletion.model_validate_json(first.response.body)
    assert done.choices[0].message.content == "I will read the file first."
    assert done.choices[0].finish_reason == "stop"
    called = ChatCompletion.model_validate_json(tools.response.body)
    calls = called.choices[0].message.tool_calls
    assert calls is not None
    assert [c.function.name for c in calls] == ["read_file", "grep"]  # type: ignore[union-attr]
    assert json.loads(calls[0].function.arguments) == {"path": "src/app.py"}  # type: ignore[union-attr]
    assert called.choices[0].finish_reason == "tool_calls"
    assert called.usage is not None and called.usage.total_tokens == 151
    assert rate.response is not None and rate.response.status == 429
    assert ("retry-after", "3") in rate.response.headers
    assert json.loads(rate.response.body)["error"]["code"] == "rate_limit_exceeded"


def test_chat_stream_events_validate_as_chunks() -> None:
    exchanges = _exchanges(ScriptFlavor.OPENAI_CHAT, stream=True)
    data = _sse_data(exchanges[1])
    assert data[-1] == b"[DONE]"
    chunks = [ChatCompletionChunk.model_validate_json(d) for d in data[:-1]]
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == 120
    args = "".join(
        tc.function.arguments or ""
        for c in chunks
        for choice in c.choices
        for tc in choice.delta.tool_calls or ()
        if tc.index == 1 and tc.function is not None
    )
    assert json.loads(args) == {"pattern": "def main", "path": "."}
    assert exchanges[1].response is not None and exchanges[1].response.streamed


@pytest.mark.slow
def test_openai_sdk_reads_a_streamed_chat_tape(serve: Serve) -> None:
    url, player = serve(_exchanges(ScriptFlavor.OPENAI_CHAT, stream=True))
    client = openai.OpenAI(api_key="test", base_url=url + "/v1", max_retries=0)
    messages = [{"role": "user", "content": "fix it"}]
    text = "".join(
        c.choices[0].delta.content or ""
        for c in client.chat.completions.create(model="m", messages=messages, stream=True)  # type: ignore[arg-type]
        if c.choices
    )
    assert text == "I will read the file first."
    with client.chat.completions.stream(model="m", messages=messages) as s:  # type: ignore[arg-type]
        final = s.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [  # type: ignore[union-attr]
        ("read_file", {"path": "src/app.py"}),
        ("grep", {"pattern": "def main", "path": "."}),
    ]
    with pytest.raises(openai.RateLimitError) as rate:
        client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    assert rate.value.response.headers["retry-after"] == "3"
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    assert player.paths == ["/v1/chat/completions"] * 4


# -- OpenAI Responses ---------------------------------------------------------------


def test_responses_bodies_and_events_validate() -> None:
    plain = _exchanges(ScriptFlavor.OPENAI_RESPONSES, stream=False)
    assert plain[1].response is not None
    response = OpenAIResponse.model_validate_json(plain[1].response.body)
    assert response.output_text == "Reading."
    calls = [item for item in response.output if item.type == "function_call"]
    assert [c.name for c in calls] == ["read_file", "grep"]
    events = pydantic.TypeAdapter(ResponseStreamEvent)
    streamed = _exchanges(ScriptFlavor.OPENAI_RESPONSES, stream=True)
    parsed = [events.validate_json(d) for d in _sse_data(streamed[1])]
    assert [e.sequence_number for e in parsed] == list(range(len(parsed)))
    assert parsed[-1].type == "response.completed"


@pytest.mark.slow
def test_openai_sdk_reads_a_streamed_responses_tape(serve: Serve) -> None:
    url, _ = serve(_exchanges(ScriptFlavor.OPENAI_RESPONSES, stream=True))
    client = openai.OpenAI(api_key="test", base_url=url + "/v1", max_retries=0)
    with client.responses.stream(model="m", input="fix it") as s:
        first = s.get_final_response()
    assert first.output_text == "I will read the file first."
    with client.responses.stream(model="m", input="go on") as s:
        second = s.get_final_response()
    calls = [item for item in second.output if item.type == "function_call"]
    assert [json.loads(c.arguments) for c in calls] == [
        {"path": "src/app.py"},
        {"pattern": "def main", "path": "."},
    ]
    assert second.usage is not None and second.usage.input_tokens == 120
    with pytest.raises(openai.RateLimitError):
        client.responses.create(model="m", input="again")


# -- Anthropic Messages --------------------------------------------------------------


def test_anthropic_bodies_and_events_validate() -> None:
    plain = _exchanges(ScriptFlavor.ANTHROPIC_MESSAGES, stream=False)
    assert plain[1].response is not None and plain[2].response is not None
    message = Message.model_validate_json(plain[1].response.body)
    assert message.stop_reason == "tool_use"
    assert [b.type for b in message.content] == ["text", "tool_use", "tool_use"]
    assert json.loads(plain[2].response.body)["error"]["type"] == "rate_limit_error"
    events = pydantic.TypeAdapter(RawMessageStreamEvent)
    streamed = _exchanges(ScriptFlavor.ANTHROPIC_MESSAGES, stream=True)
    assert streamed[0].response is not None
    names = [c.data.split(b"\n", 1)[0] for c in streamed[0].response.chunks]
    parsed = [events.validate_json(d) for d in _sse_data(streamed[0]) if b'"ping"' not in d]
    assert names[0] == b"event: message_start" and names[-1] == b"event: message_stop"
    assert parsed[-2].type == "message_delta"


@pytest.mark.slow
def test_anthropic_sdk_reads_a_streamed_messages_tape(serve: Serve) -> None:
    url, _ = serve(_exchanges(ScriptFlavor.ANTHROPIC_MESSAGES, stream=True))
    client = anthropic.Anthropic(api_key="test", base_url=url, max_retries=0)
    ask = [{"role": "user", "content": "fix it"}]
    with client.messages.stream(model="m", max_tokens=100, messages=ask) as s:  # type: ignore[arg-type]
        first = s.get_final_message()
    assert first.content[0].type == "text" and first.content[0].text == (
        "I will read the file first."
    )
    with client.messages.stream(model="m", max_tokens=100, messages=ask) as s:  # type: ignore[arg-type]
        second = s.get_final_message()
    tools = [b for b in second.content if b.type == "tool_use"]
    assert [(t.name, t.input) for t in tools] == [
        ("read_file", {"path": "src/app.py"}),
        ("grep", {"pattern": "def main", "path": "."}),
    ]
    assert second.usage.output_tokens == 31
    with pytest.raises(anthropic.RateLimitError):
        client.messages.create(model="m", max_tokens=100, messages=ask)  # type: ignore[arg-type]
    with pytest.raises(anthropic.InternalServerError):
        client.messages.create(model="m", max_tokens=100, messages=ask)  # type: ignore[arg-type]


# -- the tape and the CLI ---------------------------------------------------------


@pytest.mark.slow
def test_cli_writes_a_script_session(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps(SCRIPT))
    out = tmp_path / "out.tape"
    cmd = [sys.executable, "-m", "evaltape.scoring.cli", "script", str(script), "-o", str(out)]
    run = subprocess.run(
        [*cmd, "--flavor", "anthropic.messages", "--stream", "--case", "other"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    (session,) = TapeReader(out).sessions()
    header = session.header
    assert (header.mode, header.source) == (Mode.SCRIPT, Source.SCRIPT)
    assert header.source_detail == str(script)
    assert header.case_id == "other"
    exchanges = [e for e in session.events if isinstance(e, Exchange)]
    assert len(exchanges) == len(SCRIPT["responses"])  # type: ignore[arg-type]
    assert all(e.request.url == "https://api.anthropic.com/v1/messages" for e in exchanges)
    again = subprocess.run([*cmd, "--flavor", "anthropic.messages", "--stream", "--case", "other"])
    assert again.returncode == 0
    assert [s.events for s in TapeReader(out).sessions()] == [session.events]


def test_yaml_script_loads_like_json(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(SCRIPT, sort_keys=False))
    assert load_script(path).responses == parse_script(SCRIPT, "x").responses


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (
            {"responses": [{"text": "a"}, {"tool_calls": [{"arguments": {}}]}]},
            "responses[1].tool_calls[0].name: a tool call needs a name",
        ),
        (
            {"responses": [{"tool_calls": [{"name": "f", "arguments": "[1"}]}]},
            "responses[0].tool_calls[0].arguments: not valid JSON",
        ),
        ({"responses": [{"error": {"status": 200}}]}, "responses[0].error.status: expected"),
        ({"responses": [{"txt": "a"}]}, "responses[0].txt: unknown key"),
        ({"responses": []}, "responses: expected a non-empty list"),
        ({"flavor": "gemini", "responses": [{"text": "a"}]}, "flavor: unknown flavor 'gemini'"),
    ],
)
def test_bad_scripts_name_the_field(tmp_path: Path, script: object, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(script))
    with pytest.raises(ScriptError) as err:
        load_script(path)
    assert str(err.value).startswith(f"{path}: {message}")


@pytest.mark.slow
def test_cli_reports_a_bad_script_in_one_line_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"responses": [{"tool_calls": [{"name": 3}]}]}))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaltape.scoring.cli",
            "script",
            str(path),
            "-o",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2
    assert run.stderr == (
        f"evaltape: error: {path}: responses[0].tool_calls[0].name: expected a string, got int\n"
    )
    assert not (tmp_path / "o").exists()


def test_json_syntax_error_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"responses": [\n  {"text": "a",}\n]}')
    with pytest.raises(ScriptError, match=r"bad\.json: line 2 column"):
        load_script(path)


def test_write_script_tape_is_deterministic(tmp_path: Path) -> None:
    script = parse_script(SCRIPT, "s.json")
    a = write_script_tape(script, tmp_path / "a.tape", flavor=ScriptFlavor.OPENAI_CHAT, stream=True)
    b = write_script_tape(script, tmp_path / "b.tape", flavor=ScriptFlavor.OPENAI_CHAT, stream=True)
    assert a == b
    assert (tmp_path / "a.tape").read_bytes() == (tmp_path / "b.tape").read_bytes()
