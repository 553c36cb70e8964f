"""``evaltape live`` prints what a run cost: per model, per case, by bucket, per judge.

The command runs in this process (click's runner) against a chat server on 127.0.0.1 whose
usage figures depend on the model asked for; expected dollars are computed
here from those figures and the override file's prices.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from evaltape.scoring import read_record, resolve_run
from evaltape.scoring.cli.main import cli
from evaltape.scoring.cost._pricing import PRICES_AS_OF, format_cost

AGENTS = Path(__file__).parent / "agents"

# Per million tokens, chosen so that each mistake gives a different figure.
AGENT_PRICE = {"input": 3.0, "output": 15.0, "cache_read": 0.3}
JUDGE_PRICE = {"input": 1.0, "output": 4.0}
USAGE: dict[str, dict[str, Any]] = {
    "agent-x": {
        "prompt_tokens": 10_000,
        "completion_tokens": 1_000,
        "prompt_tokens_details": {"cached_tokens": 4_000},
        "completion_tokens_details": {"reasoning_tokens": 200},
    },
    "routed-1": {"prompt_tokens": 500, "completion_tokens": 50, "cost": 0.0125},
    "mystery-1": {"prompt_tokens": 700, "completion_tokens": 70},
    "judge-y": {"prompt_tokens": 100, "completion_tokens": 20},
}
AGENT_CALL = (6_000 * 3.0 + 4_000 * 0.3 + 1_000 * 15.0) / 1e6
"""One agent-x call: 6,000 uncached + 4,000 cached input tokens, 1,000 output tokens."""
JUDGE_CALL = (100 * 1.0 + 20 * 4.0) / 1e6


class ModelServer:
    """OpenAI-compatible chat completions; usage by model; the judge model answers a verdict."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def reply(self, body: dict[str, Any]) -> bytes:
        self.requests.append(body)
        model = str(body.get("model", ""))
        prompt = str([m for m in body["messages"] if m["role"] == "user"][-1]["content"])
        content = "echo: " + prompt
        if model == "judge-y":
            content = json.dumps({"score": 5, "rationale": "echoed"})
        return json.dumps(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": USAGE.get(model, {"prompt_tokens": 1, "completion_tokens": 1}),
            }
        ).encode()

    def __enter__(self) -> ModelServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                data = owner.reply(json.loads(raw))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        serve = self._server.serve_forever
        threading.Thread(target=serve, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


@pytest.fixture
def api() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


def _project(root: Path, api: ModelServer, *, judge: bool = True) -> Path:
    (root / "evals" / "rubrics").mkdir(parents=True)
    (root / "evals" / "rubrics" / "echo.md").write_text(
        "# Rubric: echo\n\nGive 5 to a reply that echoes the request, 0 otherwise.\n"
    )
    cases = [
        {"id": "alpha", "prompt": "say alpha", "rubric": "echo"},
        {"id": "beta", "prompt": "say beta"},
    ]
    lines = [
        json.dumps(
            c
            | {
                "failureCategory": "cost",
                "whyModelBacked": "prices a run against a fake model",
                "expectMaxTurns": 3,
            }
        )
        for c in cases
    ]
    (root / "evals" / "basic.jsonl").write_text("\n".join(lines) + "\n")
    settings = {"suites": "evals", "agent": "chat_agent:run", "base_url": api.url}
    if judge:
        settings["judge_model"] = "judge-y"
    config = "\n".join(f"{k} = {json.dumps(v)}" for k, v in settings.items())
    (root / "evaltape.toml").write_text(config + "\n")
    (root / "prices.json").write_text(json.dumps({"agent-x": AGENT_PRICE, "judge-y": JUDGE_PRICE}))
    return root


@pytest.fixture
def inside(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """This process set up as ``evaltape`` would be: a key, no override file or variable."""
    for name in [n for n in os.environ if n.startswith(("OPENAI_", "ANTHROPIC_", "EVALTAPE_"))]:
        monkeypatch.delenv(name)
    monkeypatch.delenv("CHAT_AGENT_VARIANT", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghijklmnop")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no user override file leaks in
    monkeypatch.syspath_prepend(str(AGENTS))
    return monkeypatch


def _evaltape(monkeypatch: pytest.MonkeyPatch, project: Path, *args: str) -> Result:
    """The CLI in this process (the same code path, without another interpreter start)."""
    monkeypatch.chdir(project)
    return CliRunner().invoke(cli, list(args))


def _money(usd: float) -> str:
    return format_cost(usd)


def test_a_single_model_run_prints_cost_per_model_per_case_by_bucket_and_for_the_judge(
    tmp_path: Path, api: ModelServer, inside: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, api)
    done = _evaltape(
        inside,
        project,
        "live",
        "--update-cassettes",
        "-m",
        "agent-x",
        "--source",
        "simulated",
        "--pricing",
        "prices.json",
    )
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    run_cost = 2 * AGENT_CALL
    assert (
        f"  cost: {_money(run_cost)} estimated · 22,000 tokens · prices as of {PRICES_AS_OF}"
        in lines
    )
    for case_id in ("alpha", "beta"):
        pattern = (
            rf"  PASS {case_id} \(1/1 passed, [\d.]+m?s, 11,000 tokens, "
            rf"{re.escape(_money(AGENT_CALL))} estimated\)"
        )
        assert any(re.fullmatch(pattern, line) for line in lines), lines
    block = lines[lines.index("Usage:") : lines.index("Usage:") + 9]
    assert block == [
        "Usage:",
        "  Total tokens: 22,000",
        f"    Prompt: 20,000 ({_money(2 * (6_000 * 3.0 + 4_000 * 0.3) / 1e6)})",
        f"    Completion: 2,000 ({_money(2 * 1_000 * 15.0 / 1e6)})",
        f"    Cache read: 8,000 ({_money(8_000 * 0.3 / 1e6)})",
        f"    Cache write: 0 ({_money(0.0)})",
        f"    Uncached: 12,000 ({_money(12_000 * 3.0 / 1e6)})",
        f"    Reasoning: 400 ({_money(400 * 15.0 / 1e6)})",
        f"  Total cost: {_money(run_cost)} estimated · prices as of {PRICES_AS_OF}",
    ]
    # the judge graded alpha only; its cost has a line of its own and is not in the agent's
    assert (
        f"grading cost: {_money(JUDGE_CALL)} estimated · 120 tokens · "
        f"prices as of {PRICES_AS_OF}, not counted above"
    ) in lines
    record = read_record(resolve_run(project / ".evaltape" / "results"))
    by_case = {a.case_id: a for a in record.attempts}
    assert by_case["alpha"].cost == pytest.approx(AGENT_CALL)
    assert by_case["alpha"].judge_cost == pytest.approx(JUDGE_CALL)
    assert by_case["beta"].judge_cost is None


@pytest.mark.slow
def test_compare_prints_one_row_per_model_and_never_prices_an_unknown_model_at_zero(
    tmp_path: Path, api: ModelServer, inside: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, api, judge=False)
    done = _evaltape(
        inside,
        project,
        "live",
        "--update-cassettes",
        "--compare",
        "agent-x,routed-1,mystery-1",
        "--source",
        "simulated",
        "--pricing",
        "prices.json",
    )
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    table = lines[lines.index("Compare:") + 1 : lines.index("Compare:") + 6]
    assert re.split(r"\s{2,}", table[0].strip()) == [
        "model",
        "passed",
        "duration",
        "tokens",
        "cost",
    ]
    rows = {re.split(r"\s{2,}", row.strip())[0]: re.split(r"\s{2,}", row.strip()) for row in table}
    assert rows["agent-x"][1] == "2/2" and rows["agent-x"][3] == "22,000"
    assert rows["agent-x"][4] == f"{_money(2 * AGENT_CALL)} estimated"
    assert rows["routed-1"][1:4:2] == ["2/2", "1,100"]
    assert rows["routed-1"][4] == f"{_money(2 * 0.0125)} reported"
    assert rows["mystery-1"][4] == "n/a (no price for mystery-1)"
    assert re.fullmatch(r"[\d.]+m?s", rows["mystery-1"][2])
    assert table[4] == f"  prices as of {PRICES_AS_OF} (an estimate for comparison, not a bill)"
    assert "Usage:" not in lines  # the per-case breakdown is for single-model runs
    mystery = [line for line in lines if "mystery-1" in line]
    assert mystery and not any("$0.00" in line for line in mystery)


@pytest.mark.slow
def test_the_override_file_comes_from_the_environment_when_no_flag_names_one(
    tmp_path: Path, api: ModelServer, inside: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, api, judge=False)
    plain = _evaltape(
        inside, project, "live", "--update-cassettes", "-m", "agent-x", "--source", "simulated"
    )
    assert plain.exit_code == 0, plain.output
    assert "  cost: n/a (no price for agent-x) · 22,000 tokens" in plain.stdout
    inside.setenv("EVALTAPE_PRICING", str(project / "prices.json"))
    priced = _evaltape(
        inside, project, "live", "--update-cassettes", "-m", "agent-x", "--source", "simulated"
    )
    assert priced.exit_code == 0, priced.output
    assert f"  cost: {_money(2 * AGENT_CALL)} estimated · 22,000 tokens" in priced.stdout


def test_a_bad_override_is_refused_in_one_line_before_any_model_call(
    tmp_path: Path, api: ModelServer, inside: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, api)
    (project / "prices.json").write_text(json.dumps({"agent-x": {"input": -1, "output": 2}}))
    done = _evaltape(
        inside,
        project,
        "live",
        "--update-cassettes",
        "-m",
        "agent-x",
        "--source",
        "simulated",
        "--pricing",
        "prices.json",
    )
    assert done.exit_code == 2
    assert done.stderr.strip().splitlines()[-1] == (
        'evaltape: error: prices.json: "agent-x": field "input": expected a number >= 0'
    )
    assert done.exception is None or isinstance(done.exception, SystemExit)
    assert api.requests == []


def test_replay_shows_what_the_recorded_calls_cost_and_spends_nothing(
    tmp_path: Path, api: ModelServer, inside: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, api, judge=False)
    live = _evaltape(
        inside, project, "live", "--update-cassettes", "-m", "agent-x", "--source", "simulated"
    )
    assert live.exit_code == 0, live.output
    asked = len(api.requests)
    replayed = _evaltape(inside, project, "replay", "--pricing", "prices.json")
    assert replayed.exit_code == 0, replayed.output
    assert len(api.requests) == asked
    lines = replayed.stdout.splitlines()
    assert "$0.00 spent; 22,000 tokens of recorded model calls replayed" in lines
    assert (
        f"what they cost when recorded: {_money(2 * AGENT_CALL)} recorded · 22,000 tokens · "
        f"prices as of {PRICES_AS_OF}"
    ) in lines
