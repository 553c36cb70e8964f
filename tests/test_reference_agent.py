"""The reference agent (evals.agent) driven by hand-written model responses.

Two real sources of responses: a scripted tape served by the replay
transport (the path CI takes), and a small HTTP server on 127.0.0.1 that is
as strict as llama.cpp's OpenAI-compatible server (500 on a null assistant
content or on a forced tool that is not offered), recorded through the
project's recording client.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from endless import Endless

from evaltape.recorder import (
    HarnessEvent,
    SessionStarted,
    TapeReader,
    fold,
    open_session,
    recording_client,
)
from evaltape.recorder.script import ScriptFlavor, load_script, write_script_tape
from evaltape.recorder.tape import SessionWriter
from evaltape.replay import ReplayTransport, replay_client
from evaltape.scoring import Task, answer_headlessly

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from evals.agent import (  # noqa: E402
    AgentConfig,
    ConfigError,
    ModelError,
    Strategy,
    config_from_env,
    run_agent,
)

FORCED = AgentConfig(strategy=Strategy.FORCED)
AUTO = AgentConfig(strategy=Strategy.AUTO)


class Log:
    """Collects what the agent logs through ``task.log``."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, name: str, /, **fields: Any) -> None:
        self.events.append((name, fields))

    def tools(self) -> list[tuple[str, str]]:
        return [(f["tool"], f["outcome"]) for n, f in self.events if n == "tool"]


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _choose(action: str) -> dict[str, Any]:
    return _call("next_action", action=action)


class Scripted:
    """A scripted tape replayed to the agent, keeping every request body it sent."""

    def __init__(self, tmp_path: Path, responses: list[dict[str, Any]], name: str = "s") -> None:
        script = tmp_path / f"{name}.json"
        script.write_text(json.dumps({"responses": responses}))
        tape = tmp_path / f"{name}.tape"
        write_script_tape(load_script(script), tape, flavor=ScriptFlavor.OPENAI_CHAT)
        (session,) = TapeReader(tape).sessions()
        self.transport = ReplayTransport(session)
        self.bodies: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.client = replay_client(
            self.transport, event_hooks={"request": [self._keep], "response": []}
        )

    def _keep(self, request: httpx.Request) -> None:
        self.bodies.append(json.loads(request.content))
        self.auth.append(request.headers.get("authorization"))


def _task(
    workspace: Path,
    client: httpx.Client,
    *,
    prompt: str = "Read notes.txt and tell me the code word.",
    mode: str | None = None,
    log: Log | None = None,
) -> Task:
    return Task(
        case_id="case",
        attempt=0,
        prompt=prompt,
        workspace=workspace,
        model="scripted-model",
        base_url="http://127.0.0.1:9/v1",
        client=client,
        agent_mode=mode,
        log=log or Log(),
        ask=lambda q: answer_headlessly(q, workspace),
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("The code word is PELICAN.\n")
    (ws / "src").mkdir()
    (ws / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    return ws


def _tool_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


# -- forced strategy -----------------------------------------------------------------


def test_forced_mode_picks_then_forces_the_real_tool(tmp_path: Path, workspace: Path) -> None:
    api = Scripted(
        tmp_path,
        [
            _choose("read"),
            _call("read", path="notes.txt"),
            _choose("answer"),
            {"text": "The code word is PELICAN."},
        ],
    )
    reply = run_agent(_task(workspace, api.client), FORCED)
    api.transport.finish()

    assert reply == "The code word is PELICAN."
    choices = [b["tool_choice"] for b in api.bodies]
    assert choices == [
        {"type": "function", "function": {"name": "next_action"}},
        {"type": "function", "function": {"name": "read"}},
        {"type": "function", "function": {"name": "next_action"}},
        "none",
    ]
    offered = {t["function"]["name"] for t in api.bodies[0]["tools"]}
    assert offered == {"read", "write", "edit", "grep", "glob", "ls", "bash", "next_action"}
    enum = next(
        t["function"]["parameters"]["properties"]["action"]["enum"]
        for t in api.bodies[0]["tools"]
        if t["function"]["name"] == "next_action"
    )
    assert set(enum) == offered - {"next_action"} | {"answer"}
    # the control call never enters the conversation; the real call does, with content ""
    assistant = [m for m in api.bodies[2]["messages"] if m["role"] == "assistant"]
    assert len(assistant) == 1
    assert assistant[0]["content"] == ""
    assert [c["function"]["name"] for c in assistant[0]["tool_calls"]] == ["read"]
    assert _tool_messages(api.bodies[2]) == ["The code word is PELICAN.\n"]


def test_forced_mode_turn_limit_counts_actions(tmp_path: Path, workspace: Path) -> None:
    api = Scripted(tmp_path, [_choose("ls"), _call("ls"), _choose("ls"), _call("ls")])
    log = Log()
    reply = run_agent(_task(workspace, api.client, log=log), AgentConfig(max_turns=2))
    api.transport.finish()
    assert reply is None
    assert len(api.bodies) == 4
    assert ("stopped", {"reason": "turn-limit", "turns": 2}) in log.events


def test_an_invalid_choice_ends_with_an_answer(tmp_path: Path, workspace: Path) -> None:
    api = Scripted(tmp_path, [_choose("teleport"), {"text": "I cannot."}])
    assert run_agent(_task(workspace, api.client), FORCED) == "I cannot."
    assert api.bodies[1]["tool_choice"] == "none"


# -- tools, through the auto strategy ------------------------------------------------


def test_paths_outside_the_workspace_are_refused_and_reported(
    tmp_path: Path, workspace: Path
) -> None:
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    (workspace / "link.txt").symlink_to(tmp_path / "secret.txt")
    api = Scripted(
        tmp_path,
        [
            _call("read", path="../secret.txt"),
            _call("read", path=str(tmp_path / "secret.txt")),
            _call("read", path="link.txt"),
            _call("write", path="../x", content="escaped"),
            _call("grep", pattern="SECRET", path=".."),
            _call("glob", pattern="../*.txt"),
            {"text": "done"},
        ],
    )
    log = Log()
    run_agent(_task(workspace, api.client, log=log), AUTO)
    results = _tool_messages(api.bodies[-1])
    assert len(results) == 6
    assert all(r.startswith("refused: ") for r in results), results
    assert all("TOP SECRET" not in r for r in results)
    assert not (tmp_path / "x").exists()
    assert {outcome for _, outcome in log.tools()} == {"refused"}


def test_edit_replaces_exactly_one_occurrence(tmp_path: Path, workspace: Path) -> None:
    api = Scripted(
        tmp_path,
        [
            _call("edit", path="src/calc.py", old="a - b", new="a + b"),
            _call("edit", path="src/calc.py", old="missing", new="x"),
            _call("write", path="src/new/mod.py", content="X = 1\n"),
            {"text": "fixed"},
        ],
    )
    log = Log()
    assert run_agent(_task(workspace, api.client, mode="edit", log=log), AUTO) == "fixed"
    assert (workspace / "src" / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert (workspace / "src" / "new" / "mod.py").read_text() == "X = 1\n"
    results = _tool_messages(api.bodies[-1])
    assert results[0] == "edited src/calc.py"
    assert results[1].startswith("error: the old text does not occur in src/calc.py")
    assert log.tools() == [("edit", "ok"), ("edit", "error"), ("write", "ok")]


@pytest.mark.parametrize("mode", ["plan", "read-only"])
def test_non_mutating_modes_refuse_writes(tmp_path: Path, workspace: Path, mode: str) -> None:
    api = Scripted(
        tmp_path,
        [
            _call("write", path="notes.txt", content="overwritten"),
            _call("edit", path="src/calc.py", old="a - b", new="a + b"),
            _call("bash", command="echo hacked > notes.txt"),
            _call("read", path="notes.txt"),
            {"text": "ok"},
        ],
    )
    log = Log()
    run_agent(_task(workspace, api.client, mode=mode, log=log), AUTO)
    assert (workspace / "notes.txt").read_text() == "The code word is PELICAN.\n"
    assert "a - b" in (workspace / "src" / "calc.py").read_text()
    results = _tool_messages(api.bodies[-1])
    assert [r.partition(":")[0] for r in results[:3]] == ["refused"] * 3
    assert results[3] == "The code word is PELICAN.\n"
    assert f"{mode} mode" in results[0]
    assert log.tools()[-1] == ("read", "ok")


def test_search_and_listing_tools(tmp_path: Path, workspace: Path) -> None:
    api = Scripted(
        tmp_path,
        [
            _call("grep", pattern=r"return a \S b"),
            _call("glob", pattern="**/*.py"),
            _call("ls"),
            _call("ls", path="src"),
            _call("grep", pattern="("),
            _call("glob", pattern="a**b"),
            {"text": "done"},
        ],
    )
    run_agent(_task(workspace, api.client), AUTO)
    grep, glob, ls_root, ls_src, bad, bad_glob = _tool_messages(api.bodies[-1])
    assert grep == "src/calc.py:2:     return a - b"
    assert glob == "src/calc.py"
    assert ls_root == "notes.txt\nsrc/"
    assert ls_src == "calc.py"
    assert bad.startswith("error: invalid regular expression")
    assert bad_glob.startswith("error: ")


@pytest.mark.slow
def test_bash_runs_in_the_workspace_and_times_out(
    tmp_path: Path, workspace: Path, endless: Endless
) -> None:
    api = Scripted(
        tmp_path,
        [
            _call("bash", command="pwd; cat notes.txt; exit 3"),
            _call("bash", command=f"echo started; {endless.command}"),
            {"text": "done"},
        ],
    )
    log = Log()
    config = AgentConfig(strategy=Strategy.AUTO, bash_timeout=0.5)
    run_agent(_task(workspace, api.client, mode="build", log=log), config)  # or waits forever
    assert endless.survivors() == []
    first, second = _tool_messages(api.bodies[-1])
    # the workspace's absolute path differs on every run, so it is shown as "."
    assert first == "exit code 3\n.\nThe code word is PELICAN.\n"
    assert second.startswith("error: command timed out after 0.5s and was killed")
    assert "started" in second
    assert log.tools() == [("bash", "ok"), ("bash", "error")]


def test_long_outputs_are_cut(tmp_path: Path, workspace: Path) -> None:
    (workspace / "big.txt").write_text("x" * 500)
    api = Scripted(tmp_path, [_call("read", path="big.txt"), {"text": "done"}])
    run_agent(_task(workspace, api.client), AgentConfig(strategy=Strategy.AUTO, output_limit=100))
    (result,) = _tool_messages(api.bodies[-1])
    assert result == "x" * 100 + "\n[... 400 more characters cut]"


def test_every_tool_call_is_logged_with_name_duration_and_outcome(
    tmp_path: Path, workspace: Path
) -> None:
    api = Scripted(
        tmp_path, [_call("read", path="nope.txt"), _call("unknown_tool"), {"text": "done"}]
    )
    log = Log()
    run_agent(_task(workspace, api.client, log=log), AUTO)
    tools = [f for n, f in log.events if n == "tool"]
    assert [(f["tool"], f["outcome"]) for f in tools] == [
        ("read", "error"),
        ("unknown_tool", "error"),
    ]
    assert all(isinstance(f["ms"], float) and f["ms"] >= 0 for f in tools)
    assert log.events[0][0] == "agent"
    assert log.events[0][1]["strategy"] == "auto"


def test_auto_turn_limit_stops_the_loop(tmp_path: Path, workspace: Path) -> None:
    api = Scripted(tmp_path, [_call("ls")] * 3)
    reply = run_agent(
        _task(workspace, api.client), AgentConfig(strategy=Strategy.AUTO, max_turns=3)
    )
    api.transport.finish()
    assert reply is None
    assert len(api.bodies) == 3


def test_a_model_error_raises_and_rate_limits_are_retried(tmp_path: Path, workspace: Path) -> None:
    api = Scripted(
        tmp_path,
        [
            {"error": {"status": 429, "message": "slow down", "retry_after": 2}},
            {"text": "hello"},
        ],
    )
    waits: list[float] = []
    assert run_agent(_task(workspace, api.client), AUTO, sleep=waits.append) == "hello"
    assert len(waits) == 1

    failing = Scripted(
        tmp_path, [{"error": {"status": 500, "message": "bad request shape"}}], name="failing"
    )
    with pytest.raises(ModelError, match="HTTP 500: bad request shape"):
        run_agent(_task(workspace, failing.client), AUTO, sleep=waits.append)


# -- against a server as strict as llama.cpp's, recorded -----------------------------


class StrictServer:
    """Serves scripted chat completions on 127.0.0.1, one request at a time.

    Like llama.cpp's server it answers 500 to an assistant message whose
    content is null and to a forced tool that is not among ``tools``.
    """

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.bodies: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                server.bodies.append(body)
                status, payload = server.answer(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        for m in body["messages"]:
            if m.get("content") is None:
                return 500, {"error": {"message": "content must be a string"}}
        choice = body.get("tool_choice")
        names = [t["function"]["name"] for t in body.get("tools", [])]
        if isinstance(choice, dict) and choice["function"]["name"] not in names:
            return 500, {"error": {"message": "Tool choice not found in tools."}}
        reply = self.replies.pop(0)
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("text")}
        if "call" in reply:
            name, args = reply["call"]
            message["tool_calls"] = [
                {
                    "id": f"call_{len(self.bodies)}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            ]
        return 200, {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def __enter__(self) -> StrictServer:
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def strict_server() -> Iterator[StrictServer]:
    replies = [
        {"call": ("next_action", {"action": "grep"})},
        {"call": ("grep", {"pattern": "code word"})},
        {"call": ("next_action", {"action": "read"})},
        {"call": ("read", {"path": "notes.txt"})},
        {"call": ("next_action", {"action": "answer"})},
        {"text": "PELICAN"},
    ]
    with StrictServer(replies) as server:
        yield server


def test_recorded_traffic_shows_the_real_tool_calls(
    tmp_path: Path, workspace: Path, strict_server: StrictServer
) -> None:
    tape = tmp_path / "live.tape"
    header = SessionStarted(session_id="0123456789abcdef", started_at=0.0, case_id="case")
    with open_session(tape, header) as writer, recording_client(writer) as client:
        task = Task(
            case_id="case",
            attempt=0,
            prompt="Find the code word.",
            workspace=workspace,
            model="smollm2-135m",
            base_url=strict_server.url,
            client=client,
            log=writer_log(writer),
            ask=lambda q: answer_headlessly(q, workspace),
        )
        assert run_agent(task, FORCED) == "PELICAN"
    (recorded,) = TapeReader(tape).sessions()
    session = fold(recorded.events)
    real = [r for r in session.tool_calls if r.call.name != "next_action"]
    assert [(r.call.name, json.loads(r.call.arguments)) for r in real] == [
        ("grep", {"pattern": "code word"}),
        ("read", {"path": "notes.txt"}),
    ]
    assert real[0].result == "notes.txt:1: The code word is PELICAN."
    assert real[1].result == "The code word is PELICAN.\n"
    assert session.reply == "PELICAN"
    assert len(session.turns) == 6
    for body in strict_server.bodies:
        for message in body["messages"]:
            if message["role"] == "assistant":
                assert message["content"] == ""


def writer_log(writer: SessionWriter) -> Callable[..., None]:
    """task.log writing harness events to the tape, as a runner would."""

    def log(name: str, /, **fields: Any) -> None:
        writer.append(HarnessEvent(at=0.0, name=name, fields=tuple(fields.items())))

    return log


# -- configuration -------------------------------------------------------------------


def test_configuration_comes_from_the_environment() -> None:
    default = config_from_env({})
    assert default.strategy is Strategy.FORCED
    assert default.max_turns == 8
    assert default.max_tokens == 1024
    config = config_from_env(
        {
            "EVALTAPE_AGENT_STRATEGY": "AUTO",
            "EVALTAPE_AGENT_MAX_TURNS": "3",
            "EVALTAPE_AGENT_MAX_TOKENS": "0",
            "OPENAI_API_KEY": "k",
        }
    )
    assert (config.strategy, config.max_turns, config.max_tokens) == (Strategy.AUTO, 3, None)
    assert config.key_for("https://api.openai.com/v1") == "k"
    both = {"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a"}
    assert config_from_env(both).key_for("https://api.anthropic.com/v1/") == "a"
    assert config_from_env(both | {"EVALTAPE_AGENT_API_KEY": "e"}).key_for("http://x/v1") == "e"
    with pytest.raises(ConfigError, match="EVALTAPE_AGENT_STRATEGY: unknown strategy 'smart'"):
        config_from_env({"EVALTAPE_AGENT_STRATEGY": "smart"})
    with pytest.raises(ConfigError, match="EVALTAPE_AGENT_MAX_TURNS: must be at least 1"):
        config_from_env({"EVALTAPE_AGENT_MAX_TURNS": "0"})


def test_the_key_is_sent_as_a_bearer_token(tmp_path: Path, workspace: Path) -> None:
    api = Scripted(tmp_path, [{"text": "hi"}, {"text": "hi"}])
    run_agent(_task(workspace, api.client), AgentConfig(strategy=Strategy.AUTO, api_key="k1"))
    run_agent(_task(workspace, api.client), AUTO)
    assert api.auth == ["Bearer k1", None]


def test_the_runner_can_load_it_by_name(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    monkeypatch.delenv("EVALTAPE_AGENT_STRATEGY", raising=False)

    module, _, name = "evals.agent:run".partition(":")
    run = getattr(importlib.import_module(module), name)
    api = Scripted(tmp_path, [_choose("answer"), {"text": "418 means I'm a teapot."}])
    assert run(_task(workspace, api.client, prompt="What does HTTP 418 mean?")) == (
        "418 means I'm a teapot."
    )
