"""Agent traffic recorded through the real OpenAI and Anthropic SDKs, for the benchmarks.

A coding agent (10 tool schemas, a 2 KB system prompt) works for N turns
against a scripted model server on 127.0.0.1.  The server answers with tool
calls (two or three in parallel on every fifth turn) after a few sentences of
prose, streamed as server-sent events of one token per chunk, about ``chunks``
(default 40) a turn, except every 4th turn, which the agent asks for without
streaming (``mixed``; ``streamed`` streams every turn).  Like a hosted
provider's, every response carries two dozen headers, most of them with values
of their own (request ids, rate-limit counters, a cookie, the date).  The agent
runs each tool on real text, slices of the running Python's standard library
of 0.5-4 KB, and sends the whole conversation back, as the APIs require.
Every exchange goes through ``recording_client`` (httpx2) into a tape, so the
tapes hold what a real SDK sent and received, headers and chunk times included.

This generator shares nothing with ``traffic.py``: its own server, tools,
prompt and random streams.  Output is a pure function of the seed, the API
and the standard library's files, except the recorded times and the SDKs'
own headers.

    python evals/perf/sdk_traffic.py --turns 25 --api openai out.tape
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import sysconfig
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from evaltape.recorder import Mode, SessionStarted, Source, open_session, recording_client
from evaltape.recorder.tape import SessionWriter

APIS = ("openai", "anthropic")
OPENAI_MODEL = "gpt-4.1-2025-04-14"
ANTHROPIC_MODEL = "claude-sonnet-4-5-20250929"
KEY = {"openai": "sk-bench-0000", "anthropic": "sk-ant-bench-0000"}
"""Placeholder keys: too short for a secret rule, and the auth headers are redacted anyway."""

_RULES = [
    "Read the files you change before changing them, and quote the exact lines you replace.",
    "Prefer search_code and outline over reading a whole file; read long files in slices.",
    "Keep the repository's style: its naming, its indentation, its docstring conventions.",
    "Run the tests that cover a change before you say the change is done.",
    "Never print or store credentials, tokens or keys, even when a file contains them.",
    "When a command fails, read its output, form one hypothesis and test it; do not retry blindly.",
    "Make one logical change at a time and show it with git_diff before moving on.",
    "Ask for nothing: you cannot reach the user until you hand in your final answer.",
    "Tool results may be truncated; ask for the next slice rather than guessing the rest.",
    "Explain in your final answer what you changed, why, and how you verified it.",
]
SYSTEM = (
    "You are a careful coding agent working in a checked-out Python repository. "
    "You act only through the tools you are given; each call returns its output as text.\n\n"
    + "\n".join(f"{n}. {rule}" for n, rule in enumerate(_RULES * 2, 1))
    + "\n\nThe repository's layout: packages under lib/, tests under tests/, docs under docs/. "
    "Work until the task is done or you are sure it cannot be done, then answer in prose."
)
assert 1800 <= len(SYSTEM) <= 2400, len(SYSTEM)


def _schema(tool: str, doc: str, **props: str) -> tuple[str, str, dict[str, Any]]:
    properties = {
        k: {"type": v.split(":")[0], "description": v.split(":", 1)[1]} for k, v in props.items()
    }
    return tool, doc, {"type": "object", "properties": properties, "required": list(props)[:1]}


TOOLS = (
    _schema(
        "open_file",
        "Show lines of a file.",
        path="string:file path",
        start="integer:first line",
        count="integer:lines",
    ),
    _schema(
        "search_code",
        "Regex search over the repository.",
        pattern="string:regex",
        glob="string:file glob",
    ),
    _schema("outline", "Classes and functions of a file.", path="string:file path"),
    _schema("list_tree", "Files below a folder.", folder="string:folder", depth="integer:levels"),
    _schema(
        "replace_lines",
        "Replace text in a file.",
        path="string:file path",
        old="string:exact text",
        new="string:replacement",
    ),
    _schema("create_file", "Write a new file.", path="string:file path", text="string:content"),
    _schema("run_pytest", "Run tests and show the summary.", target="string:test path or node id"),
    _schema(
        "shell", "Run a shell command.", command="string:command line", timeout="integer:seconds"
    ),
    _schema("git_diff", "Show the working tree's diff.", path="string:limit to path"),
    _schema("find_symbol", "Where a name is defined.", name="string:identifier"),
)
TOOL_NAMES = tuple(t[0] for t in TOOLS)


def openai_tools() -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": n, "description": d, "parameters": p}}
        for n, d, p in TOOLS
    ]


def anthropic_tools() -> list[dict[str, Any]]:
    return [{"name": n, "description": d, "input_schema": p} for n, d, p in TOOLS]


# -- the repository the tools read ------------------------------------------------


class Repo:
    """Real text for tool results: the standard library's Python files."""

    def __init__(self) -> None:
        root = Path(sysconfig.get_paths()["stdlib"])
        self.files = sorted(p for p in root.glob("*.py") if p.stat().st_size > 8000)[:80]
        self.root = root

    def result(self, rng: random.Random, name: str, args: dict[str, Any]) -> str:
        """A tool's output: 0.5-4 KB of a real file, framed as that tool shows it."""
        path = self.files[rng.randrange(len(self.files))]
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        size = rng.randint(512, 4096)
        start = rng.randrange(max(1, len(lines) - 200))
        out: list[str] = []
        total = 0
        rel = f"lib/{path.name}"
        for n in range(start, len(lines)):
            if name == "search_code":
                line = f"{rel}:{n + 1}: {lines[n]}"
            elif name == "outline":
                if not lines[n].lstrip().startswith(("def ", "class ", "async def ")):
                    continue
                line = f"{n + 1:>5}  {lines[n].strip()}"
            else:
                line = f"{n + 1:>6}\t{lines[n]}"
            out.append(line)
            total += len(line) + 1
            if total >= size:
                break
        head = f"$ {name} {json.dumps(args, ensure_ascii=False)}\n"
        return head + "\n".join(out)[:size]


# -- the scripted model ------------------------------------------------------------


_WORDS = re.compile(r"\s*\S+")


def tokens(text: str) -> list[str]:
    """Rough tokens: words with their leading spaces, long words cut in 4."""
    out: list[str] = []
    for w in _WORDS.findall(text):
        out.extend(w[i : i + 4] for i in range(0, len(w), 4))
    return out


def pieces(text: str, rng: random.Random, most: int = 1) -> list[str]:
    """``text`` cut into chunks of 1 to ``most`` tokens."""
    toks = tokens(text)
    out: list[str] = []
    i = 0
    while i < len(toks):
        k = rng.randint(1, most)
        out.append("".join(toks[i : i + k]))
        i += k
    return out


_PROSE = " ".join(_RULES).split()


def plan(
    seed: int, turn: int, repo: Repo, chunks: int = 40
) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """What the model says on ``turn``: some prose and its tool calls, about ``chunks``
    tokens in all (each streamed as a chunk of its own)."""
    rng = random.Random(seed * 100_003 + turn)
    calls = []
    for _ in range(rng.choice((2, 3)) if turn % 5 == 4 else 1):
        name = TOOL_NAMES[rng.randrange(len(TOOL_NAMES))] if turn else "open_file"
        path = f"lib/{repo.files[rng.randrange(len(repo.files))].name}"
        args: dict[str, Any] = {
            "open_file": {"path": path, "start": rng.randint(1, 900), "count": 120},
            "search_code": {
                "pattern": rf"def \w*{rng.choice(('parse', 'read', 'close', 'get'))}",
                "glob": "lib/*.py",
            },
            "outline": {"path": path},
            "list_tree": {"folder": "lib", "depth": 2},
            "replace_lines": {
                "path": path,
                "old": "    return None\n",
                "new": "    return default\n",
            },
            "create_file": {
                "path": f"tests/test_{turn}.py",
                "text": "def test_it():\n    assert True\n",
            },
            "run_pytest": {"target": f"tests/test_{rng.choice(('io', 'parse', 'api'))}.py -x"},
            "shell": {"command": f"python -m compileall -q {path}", "timeout": 60},
            "git_diff": {"path": path},
            "find_symbol": {"name": rng.choice(("Reader", "parse_header", "close", "_decode"))},
        }[name]
        calls.append((name, args))
    where = calls[0][1].get("path", "the code")
    say = f"Step {turn + 1}: I will look at {where} next to check the behaviour."
    have = len(tokens(say)) + sum(len(tokens(json.dumps(a))) for _, a in calls) + 4
    start = rng.randrange(len(_PROSE))
    extra: list[str] = []
    while have < chunks:
        word = _PROSE[(start + len(extra)) % len(_PROSE)]
        extra.append(word)
        have += len(tokens(" " + word))
    return " ".join([say, *extra]), calls


def volatile_headers(anthropic: bool, seed: int, turn: int) -> list[tuple[str, str]]:
    """Two dozen response headers as a hosted provider sends them (with the server's
    own ``server`` and ``date``), most with a value of their own on every request."""
    rng = random.Random(seed * 31 + turn * 7 + anthropic)
    hexa = "0123456789abcdef"

    def token(n: int, alphabet: str = hexa) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
    used = 900 * (turn + 1)
    common = [
        ("cf-ray", f"{token(16)}-{rng.choice(('LHR', 'FRA', 'SJC', 'IAD'))}"),
        (
            "set-cookie",
            f"__cf_bm={token(43, b64)}-{1_760_000_000 + turn}-1.0.1.1-"
            f"{token(40, b64)}; path=/; expires=Thu, 03-Dec-26 14:30:00 GMT; "
            "domain=.api.example.com; HttpOnly; Secure; SameSite=None",
        ),
        ("x-envoy-upstream-service-time", str(rng.randint(80, 2400))),
        ("server", "cloudflare"),
        ("cf-cache-status", "DYNAMIC"),
        ("strict-transport-security", "max-age=31536000; includeSubDomains; preload"),
        ("x-content-type-options", "nosniff"),
        ("alt-svc", 'h3=":443"; ma=86400'),
    ]
    if anthropic:
        return [
            *common,
            ("request-id", f"req_011C{token(20, b64)}"),
            ("anthropic-organization-id", "4f1c2d3e-0000-4000-8000-00000000bench"),
            ("anthropic-ratelimit-requests-limit", "4000"),
            ("anthropic-ratelimit-requests-remaining", str(3999 - turn)),
            ("anthropic-ratelimit-requests-reset", f"2026-12-03T14:{turn % 60:02d}:0{seed % 10}Z"),
            ("anthropic-ratelimit-input-tokens-limit", "2000000"),
            ("anthropic-ratelimit-input-tokens-remaining", str(2_000_000 - used)),
            ("anthropic-ratelimit-input-tokens-reset", f"2026-12-03T14:{turn % 60:02d}:01Z"),
            ("anthropic-ratelimit-output-tokens-limit", "400000"),
            ("anthropic-ratelimit-output-tokens-remaining", str(400_000 - 60 * turn)),
            ("anthropic-ratelimit-output-tokens-reset", f"2026-12-03T14:{turn % 60:02d}:02Z"),
            ("anthropic-ratelimit-tokens-limit", "2400000"),
            ("anthropic-ratelimit-tokens-remaining", str(2_400_000 - used - 60 * turn)),
            ("anthropic-ratelimit-tokens-reset", f"2026-12-03T14:{turn % 60:02d}:01Z"),
            ("via", "1.1 google"),
        ]
    return [
        *common,
        ("x-request-id", f"req_{token(32)}"),
        ("openai-organization", "user-bench0000"),
        ("openai-processing-ms", str(rng.randint(60, 2300))),
        ("openai-project", "proj_bench0000"),
        ("openai-version", "2020-10-01"),
        ("x-ratelimit-limit-requests", "10000"),
        ("x-ratelimit-limit-tokens", "30000000"),
        ("x-ratelimit-remaining-requests", str(9999 - turn)),
        ("x-ratelimit-remaining-tokens", str(30_000_000 - used)),
        ("x-ratelimit-reset-requests", f"{rng.randint(6, 9)}ms"),
        ("x-ratelimit-reset-tokens", f"{rng.randint(1, 9)}ms"),
        ("access-control-expose-headers", "X-Request-ID"),
        ("openai-model", OPENAI_MODEL),
    ]


def _call_id(seed: int, turn: int, n: int, api: str) -> str:
    rng = random.Random(f"{seed}/{turn}/{n}")
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    tail = "".join(rng.choice(alphabet) for _ in range(24))
    return f"call_{tail}" if api == "openai" else f"toolu_{tail}"


def _openai_events(
    seed: int, turn: int, say: str, calls: list[tuple[str, dict[str, Any]]]
) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed * 7 + turn)
    base = {
        "id": f"chatcmpl-{seed:04d}{turn:05d}",
        "object": "chat.completion.chunk",
        "created": 1_760_000_000 + turn,
        "model": OPENAI_MODEL,
        "system_fingerprint": "fp_bench",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **base,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    for piece in pieces(say, rng):
        yield chunk({"content": piece})
    for n, (name, args) in enumerate(calls):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": n,
                        "id": _call_id(seed, turn, n, "openai"),
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
        )
        for piece in pieces(json.dumps(args), rng):
            yield chunk({"tool_calls": [{"index": n, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls")
    yield {
        **base,
        "choices": [],
        "usage": {
            "prompt_tokens": 900 * (turn + 1),
            "completion_tokens": 60,
            "total_tokens": 900 * (turn + 1) + 60,
        },
    }


def _openai_json(
    seed: int, turn: int, say: str, calls: list[tuple[str, dict[str, Any]]]
) -> dict[str, Any]:
    tool_calls = [
        {
            "id": _call_id(seed, turn, n, "openai"),
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for n, (name, args) in enumerate(calls)
    ]
    return {
        "id": f"chatcmpl-{seed:04d}{turn:05d}",
        "object": "chat.completion",
        "created": 1_760_000_000 + turn,
        "model": OPENAI_MODEL,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": say,
                    "refusal": None,
                    "tool_calls": tool_calls,
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {
            "prompt_tokens": 900 * (turn + 1),
            "completion_tokens": 60,
            "total_tokens": 900 * (turn + 1) + 60,
        },
        "system_fingerprint": "fp_bench",
    }


def _anthropic_events(
    seed: int, turn: int, say: str, calls: list[tuple[str, dict[str, Any]]]
) -> Iterator[tuple[str, dict[str, Any]]]:
    rng = random.Random(seed * 7 + turn)
    message = {
        "id": f"msg_{seed:04d}{turn:05d}",
        "type": "message",
        "role": "assistant",
        "model": ANTHROPIC_MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 900 * (turn + 1), "output_tokens": 1},
    }
    yield "message_start", {"type": "message_start", "message": message}
    yield (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    )
    for piece in pieces(say, rng):
        yield (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": piece},
            },
        )
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    for n, (name, args) in enumerate(calls, 1):
        block = {
            "type": "tool_use",
            "id": _call_id(seed, turn, n - 1, "anthropic"),
            "name": name,
            "input": {},
        }
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": n, "content_block": block},
        )
        for piece in pieces(json.dumps(args), rng):
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": n,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                },
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": n}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 60},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _anthropic_json(
    seed: int, turn: int, say: str, calls: list[tuple[str, dict[str, Any]]]
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": say}]
    content += [
        {
            "type": "tool_use",
            "id": _call_id(seed, turn, n, "anthropic"),
            "name": name,
            "input": args,
        }
        for n, (name, args) in enumerate(calls)
    ]
    return {
        "id": f"msg_{seed:04d}{turn:05d}",
        "type": "message",
        "role": "assistant",
        "model": ANTHROPIC_MODEL,
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 900 * (turn + 1), "output_tokens": 60},
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else delayed ACKs add ~40 ms to every response
    server: ModelServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        anthropic = self.path.endswith("/messages")
        seed = int(body["metadata"]["user_id"]) if anthropic else int(body["user"])
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        say, calls = plan(seed, turn, self.server.repo, self.server.chunks)
        extra = volatile_headers(anthropic, seed, turn)
        if not body.get("stream"):
            data = json.dumps(
                _anthropic_json(seed, turn, say, calls)
                if anthropic
                else _openai_json(seed, turn, say, calls)
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in extra:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("cache-control", "no-cache")
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if anthropic:
            events = [
                f"event: {e}\ndata: {json.dumps(d)}\n\n"
                for e, d in _anthropic_events(seed, turn, say, calls)
            ]
        else:
            events = [f"data: {json.dumps(d)}\n\n" for d in _openai_events(seed, turn, say, calls)]
            events.append("data: [DONE]\n\n")
        for event in events:
            raw = event.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(raw), raw))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


class ModelServer(ThreadingHTTPServer):
    """The scripted model on 127.0.0.1 (an ephemeral port), answering both APIs with
    about ``chunks`` tokens a turn."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client closing its keep-alive connection is not news

    def __init__(self, chunks: int = 40) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.repo = Repo()
        self.chunks = chunks
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


# -- the agent ---------------------------------------------------------------------


def streamed_turn(turn: int, traffic: str) -> bool:
    """Whether the agent streams ``turn`` ("mixed": every 4th turn is not streamed)."""
    return traffic == "streamed" or turn % 4 != 3


def _run_openai(client: Any, seed: int, turns: int, traffic: str, repo: Repo) -> None:
    import openai

    api = openai.OpenAI(
        base_url=f"{client.base_url}/v1", api_key=KEY["openai"], http_client=client, max_retries=0
    )
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"Task {seed}: the parser drops the last header line; find and fix it.",
        },
    ]
    tools = openai_tools()
    for turn in range(turns):
        common = {
            "model": OPENAI_MODEL,
            "messages": messages,
            "tools": tools,
            "user": str(seed),
            "temperature": 0.2,
        }
        if streamed_turn(turn, traffic):
            text: list[str] = []
            calls: dict[int, dict[str, Any]] = {}
            for chunk in api.chat.completions.create(
                **common, stream=True, stream_options={"include_usage": True}
            ):
                for choice in chunk.choices:
                    text.append(choice.delta.content or "")
                    for tc in choice.delta.tool_calls or []:
                        slot = calls.setdefault(
                            tc.index,
                            {
                                "id": tc.id,
                                "type": "function",
                                "function": {"name": "", "arguments": ""},
                            },
                        )
                        slot["function"]["name"] += tc.function.name or ""
                        slot["function"]["arguments"] += tc.function.arguments or ""
            message: dict[str, Any] = {
                "role": "assistant",
                "content": "".join(text),
                "tool_calls": [calls[k] for k in sorted(calls)],
            }
        else:
            reply = api.chat.completions.create(**common).choices[0].message
            message = {
                "role": "assistant",
                "content": reply.content,
                "tool_calls": [tc.model_dump() for tc in reply.tool_calls or []],
            }
        messages.append(message)
        for tc in message["tool_calls"]:
            out = repo.result(rng, tc["function"]["name"], json.loads(tc["function"]["arguments"]))
            messages.append({"role": "tool", "tool_call_id": tc["id"], "content": out})


def _run_anthropic(client: Any, seed: int, turns: int, traffic: str, repo: Repo) -> None:
    import anthropic

    api = anthropic.Anthropic(
        base_url=str(client.base_url), api_key=KEY["anthropic"], http_client=client, max_retries=0
    )
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": f"Task {seed}: the parser drops the last header line; find and fix it.",
        }
    ]
    tools = anthropic_tools()
    for turn in range(turns):
        common = {
            "model": ANTHROPIC_MODEL,
            "max_tokens": 4096,
            "system": SYSTEM,
            "messages": messages,
            "tools": tools,
            "metadata": {"user_id": str(seed)},
        }
        if streamed_turn(turn, traffic):
            blocks: dict[int, dict[str, Any]] = {}
            partial: dict[int, str] = {}
            for event in api.messages.create(**common, stream=True):
                if event.type == "content_block_start":
                    blocks[event.index] = event.content_block.model_dump(exclude_none=True)
                elif event.type == "content_block_delta":
                    if event.delta.type == "text_delta":
                        blocks[event.index]["text"] += event.delta.text
                    else:
                        partial[event.index] = (
                            partial.get(event.index, "") + event.delta.partial_json
                        )
            for index, raw in partial.items():
                blocks[index]["input"] = json.loads(raw)
            content = [blocks[k] for k in sorted(blocks)]
        else:
            content = [
                b.model_dump(exclude_none=True) for b in api.messages.create(**common).content
            ]
        messages.append({"role": "assistant", "content": content})
        results = [
            {
                "type": "tool_result",
                "tool_use_id": b["id"],
                "content": repo.result(rng, b["name"], b["input"]),
            }
            for b in content
            if b["type"] == "tool_use"
        ]
        messages.append({"role": "user", "content": results})


def header(api: str, seed: int, turns: int, traffic: str, session_id: str) -> SessionStarted:
    return SessionStarted(
        session_id=session_id,
        case_id=f"{api}-{traffic}-{turns}",
        attempt=seed,
        model=OPENAI_MODEL if api == "openai" else ANTHROPIC_MODEL,
        mode=Mode.LIVE,
        source=Source.REAL_API,
        harness_version="sdk-agent 1",
        started_at=1_760_000_000.0 + seed,
    )


def record(
    server: ModelServer, writer: SessionWriter, api: str, seed: int, turns: int, traffic: str
) -> None:
    """One agent session of ``turns`` turns through the real SDK, recorded into ``writer``."""
    with recording_client(writer, flavor="httpx2", base_url=server.url) as client:
        run = _run_openai if api == "openai" else _run_anthropic
        run(client, seed, turns, traffic, server.repo)


def record_session(
    server: ModelServer, path: Path, api: str, seed: int, turns: int, traffic: str, session_id: str
) -> None:
    """``record`` into a new session of the tape at ``path``."""
    with open_session(path, header(api, seed, turns, traffic, session_id)) as writer:
        record(server, writer, api, seed, turns, traffic)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tape", type=Path)
    p.add_argument("--turns", type=int, default=25)
    p.add_argument("--api", choices=APIS, default="openai")
    p.add_argument("--traffic", choices=("mixed", "streamed"), default="mixed")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chunks", type=int, default=40, help="tokens (stream chunks) a turn")
    args = p.parse_args(argv)
    with ModelServer(args.chunks) as server:
        record_session(
            server, args.tape, args.api, args.seed, args.turns, args.traffic, f"{args.seed:016x}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
