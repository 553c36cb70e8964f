"""Judged scoring with an independent judge: a real OpenAI-compatible judge server on
127.0.0.1 that answers scripted verdicts, real tapes, real replays, and the CLI."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

from evaltape.recorder import ROLE_HEADER, Mode, TapeReader, fold
from evaltape.scoring import (
    Attempt,
    Case,
    ConfigError,
    Floors,
    JudgeError,
    Suite,
    Verdict,
    judge_floors,
    load_config,
    load_suites,
    read_record,
    rejudge_offline,
    score_session,
)
from evaltape.scoring.judge._floors import judge_status
from evaltape.scoring.judge._judge import Judge, resolve_judge
from evaltape.scoring.judge._judgement import JUDGE_ROLE, JudgeState, JudgeStatus, judge_exchanges
from evaltape.scoring.judge._prompt import VERDICT_SCHEMA, parse_verdict
from evaltape.scoring.outputs.export._span_scores import attempt_scores
from evaltape.scoring.run._jobs import JobEnv, LiveWire
from evaltape.scoring.run._plan import plan_live, plan_replay
from evaltape.scoring.run._setup import RunRefused, judge_for
from evaltape.scoring.run._stop import Stop
from evaltape.scoring.run.attempt._agents import load_agent, parse_agent
from evaltape.scoring.run.executors._pool import run_pool
from evaltape.scoring.verdicts._replaycheck import Change

AGENTS_DIR = Path(__file__).parent / "agents"
REPO_DIR = Path(__file__).parent.parent

JUDGE_KEY = "sk-judge-0123456789abcdefghijklmnop"
RUBRIC = "# Rubric: test\n\nGive 5 to a reply that echoes the request, 0 to anything else.\n"
AGENT_USAGE = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
JUDGE_USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


# -- a tiny OpenAI-compatible provider on 127.0.0.1 --------------------------------


class Provider:
    """Answers chat completions with whatever ``answer(body)`` returns as the content
    (a dict is a tool call to that function name); keeps every request with its headers."""

    def __init__(self, answer: Callable[[dict[str, Any]], Any], usage: dict[str, int]) -> None:
        self.answer = answer
        self.usage = usage
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _reply(self, headers: dict[str, str], body: dict[str, Any]) -> bytes:
        with self._lock:
            self.requests.append((headers, body))
        content = self.answer(body)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if isinstance(content, dict):
            call = {"id": "call_1", "type": "function", "function": content}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": body.get("model", ""),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": self.usage,
        }
        return json.dumps(reply).encode()

    def __enter__(self) -> Provider:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                data = owner._reply(headers, json.loads(raw))
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


def _last_user(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    return str(users[-1]["content"])


def agent_answer(body: dict[str, Any]) -> Any:
    """The model under test: ``[tool=NAME]`` in the prompt calls NAME, else it echoes."""
    prompt = _last_user(body)
    tool = re.search(r"\[tool=(\w+)\]", prompt)
    if tool is not None:
        return {"name": tool.group(1), "arguments": '{"path": "x.txt"}'}
    return "echo: " + prompt


def judge_answer(body: dict[str, Any]) -> Any:
    """The judge: ``[judge=N]`` in the judged prompt scores N; ``[judge=prose]`` rambles."""
    found = re.search(r"\[judge=([^\]]+)\]", _last_user(body))
    verdict = found.group(1) if found else "5"
    if verdict == "prose":
        return "This reply seems quite good to me, maybe a four."
    if verdict == "fenced":
        return '```json\n{"score": 3, "rationale": "fenced but fine"}\n```'
    return json.dumps({"score": float(verdict), "rationale": f"scored {verdict} on purpose"})


@pytest.fixture
def agent_api() -> Iterator[Provider]:
    with Provider(agent_answer, AGENT_USAGE) as provider:
        yield provider


@pytest.fixture
def judge_api() -> Iterator[Provider]:
    with Provider(judge_answer, JUDGE_USAGE) as provider:
        yield provider


# -- suites and environments ---------------------------------------------------------


def judged_suite(root: Path, prompts: dict[str, str], **extra: object) -> tuple[Suite, ...]:
    (root / "rubrics").mkdir(parents=True, exist_ok=True)
    (root / "rubrics" / "test.md").write_text(RUBRIC)
    lines = []
    for case_id, prompt in prompts.items():
        case = {
            "id": case_id,
            "prompt": prompt,
            "failureCategory": "answer-quality",
            "whyModelBacked": "judge test",
            "rubric": "test",
            "expectMaxTurns": 3,
            "forbidTools": ["write"],
        }
        lines.append(json.dumps(case | extra))
    (root / "judged.jsonl").write_text("\n".join(lines) + "\n")
    return load_suites([root / "judged.jsonl"], rubrics_dir=root / "rubrics")


def env_for(agent_api: Provider, judge: Judge | None, **overrides: object) -> JobEnv:
    spec = parse_agent("chat_agent:run")
    options: dict[str, object] = {
        "spec": spec,
        "agent": load_agent(spec, AGENTS_DIR),
        "scorer": score_session,
        "stop": Stop(),
        "base_url": agent_api.url,
        "hang_limit": 10.0,
        "wall_clock": time.time,
        "environ": {},
        "live": LiveWire(network=httpx.HTTPTransport(), retries=0),
        "judge": judge,
    }
    return JobEnv(**(options | overrides))


def judge_at(judge_api: Provider) -> Judge:
    return Judge(model="judge-1", base_url=judge_api.url, api_key=JUDGE_KEY, retries=0)


def run_live(
    root: Path, suites: tuple[Suite, ...], env: JobEnv, trials: int = 1
) -> dict[tuple[str, int], Attempt]:
    jobs = plan_live(suites, ["agent-1"], trials, root / "results", "run-live")
    outcome = run_pool(jobs, env, concurrency=2)
    return {(r.case.id, r.attempt): r for r in outcome.results}


def judge_requests(judge_api: Provider) -> list[dict[str, Any]]:
    return [body for _, body in judge_api.requests]


# -- refusals: before any token is spent ------------------------------------------------


@pytest.mark.parametrize(
    ("under_test", "judge_model"),
    [
        ("gpt-4o", "gpt-4o"),
        ("gpt-4o", "GPT-4o"),
        ("gpt-4o", "openai/gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o", "openai/gpt-4o-20240806"),
        ("claude-3-5-sonnet@20240620", "anthropic/claude-3-5-sonnet-latest"),
        ("gpt-4-0613", "gpt-4"),
    ],
)
def test_a_judge_that_is_the_model_under_test_is_refused(under_test: str, judge_model: str) -> None:
    with pytest.raises(JudgeError, match="is the model under test"):
        resolve_judge(
            judge_model=judge_model,
            judge_base_url="https://judge.example/v1",
            models_under_test=["other-model", under_test],
            base_url="https://api.example/v1",
            environ={},
        )


def test_a_judge_on_the_same_provider_without_a_judge_model_is_refused() -> None:
    with pytest.raises(
        JudgeError, match=r"provider under test \(api\.example\) with no judge_model"
    ):
        resolve_judge(
            judge_model=None,
            judge_base_url="https://API.example/v2",
            models_under_test=["gpt-4o"],
            base_url="https://api.example/v1",
            environ={},
        )


def test_a_distinct_judge_is_accepted_with_its_own_key_and_the_agents_url_by_default() -> None:
    judge = resolve_judge(
        judge_model="gpt-4o-mini",
        judge_base_url=None,
        models_under_test=["gpt-4o"],
        base_url="https://api.example/v1",
        environ={"OPENAI_API_KEY": "agent-key", "EVALTAPE_JUDGE_API_KEY": "judge-key"},
    )
    assert judge is not None
    assert (judge.model, judge.base_url, judge.api_key) == (
        "gpt-4o-mini",
        "https://api.example/v1",
        "judge-key",
    )
    assert "judge-key" not in repr(judge)
    nothing = resolve_judge(
        judge_model=None,
        judge_base_url=None,
        models_under_test=["gpt-4o"],
        base_url="https://api.example/v1",
        environ={},
    )
    assert nothing is None


def test_the_floors_are_settings_from_0_to_5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    defaults = load_config(tmp_path)
    assert (defaults.judge_mean_floor, defaults.judge_trial_floor) == (3.5, 2.0)
    (tmp_path / "evaltape.toml").write_text("judge_mean_floor = 4\njudge_trial_floor = 0\n")
    config = load_config(tmp_path)
    assert (config.judge_mean_floor, config.judge_trial_floor) == (4.0, 0.0)
    (tmp_path / "evaltape.toml").write_text('judge_mean_floor = 7\njudge_trial_floor = "2"\n')
    with pytest.raises(ConfigError) as refused:
        load_config(tmp_path)
    assert refused.value.problems == (
        'evaltape.toml: setting "judge_mean_floor": must be a score from 0 to 5, got 7',
        'evaltape.toml: setting "judge_trial_floor": expected a score from 0 to 5, got string',
    )


# -- the verdict is read strictly ---------------------------------------------------------


def test_the_verdict_must_be_strict_json_with_a_score_from_0_to_5() -> None:
    ok = parse_verdict('{"score": 4, "rationale": "accurate\\nand short"}')
    assert (ok.score, ok.rationale, ok.problem) == (4.0, "accurate and short", "")
    assert parse_verdict('```json\n{"score": 0, "rationale": "empty"}\n```').score == 0.0
    assert parse_verdict('{"score": 2.5}').score == 2.5
    for bad, problem in [
        ('{"score": 8, "rationale": "great"}', "score 8 is outside 0-5 (rejected, not clamped)"),
        ('{"score": -1}', "score -1 is outside 0-5"),
        ('{"score": true}', 'no numeric "score"'),
        ('{"score": "4"}', 'no numeric "score"'),
        ("Score: 4", "not a JSON object"),
        ('Sure! {"score": 4}', "not a JSON object"),
        ("[4]", "not a JSON object"),
        ('{"score": 4, "rationale": 7}', '"rationale" is not a string'),
    ]:
        verdict = parse_verdict(bad)
        assert verdict.score is None and problem in verdict.problem, bad


# -- live: graded, recorded, kept apart from the agent -----------------------------------------


def test_a_live_judged_attempt_is_graded_and_the_judge_call_recorded_apart_from_the_agent(
    tmp_path: Path, agent_api: Provider, judge_api: Provider
) -> None:
    suites = judged_suite(tmp_path, {"good": "[judge=4] explain gate.py"})
    results = run_live(tmp_path, suites, env_for(agent_api, judge_at(judge_api)))
    result = results[("good", 0)]
    assert result.verdict is Verdict.PASSED
    assert result.judgement is not None and result.judgement.state is JudgeState.SCORED
    assert result.judgement.score == 4.0 and result.judgement.model == "judge-1"
    check = result.score.checks[-1]
    assert (check.name, check.passed) == ("judge", True)
    assert check.detail == "4/5 by judge-1: scored 4 on purpose"
    assert result.score.reason.endswith("; judge 4/5")

    # the judge was told the prompt, the reply and the tools that fired
    (asked,) = judge_requests(judge_api)
    assert asked["model"] == "judge-1"
    assert RUBRIC.strip() in asked["messages"][0]["content"]
    user = asked["messages"][1]["content"]
    assert "[judge=4] explain gate.py" in user
    assert "echo: [judge=4] explain gate.py" in user
    assert "None: the agent called no tool." in user
    headers, _ = judge_api.requests[0]
    assert headers[ROLE_HEADER] == JUDGE_ROLE

    # on the tape: one agent turn, the judge's exchange kept apart, the key redacted
    tape = tmp_path / "results" / "tapes" / "run-live" / "judged" / "good.tape"
    assert JUDGE_KEY.encode() not in tape.read_bytes()
    (recorded,) = TapeReader(tape).sessions()
    session = fold(recorded.events)
    assert len(session.turns) == 1 and len(judge_exchanges(session)) == 1
    assert session.reply == "echo: [judge=4] explain gate.py"
    assert (session.usage.input_tokens, session.usage.output_tokens) == (7, 3)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (7, 3)
    assert (result.judge_usage.input_tokens, result.judge_usage.output_tokens) == (100, 20)
    judge_events = [dict(e.fields) for e in session.harness if e.name == "judge"]
    assert [e["phase"] for e in judge_events] == ["asked", "verdict"]
    assert judge_events[1]["score"] == 4.0 and judge_events[1]["model"] == "judge-1"
    assert judge_events[1]["rubric"] == "test"


def test_the_judge_is_told_which_tools_actually_fired(
    tmp_path: Path, agent_api: Provider, judge_api: Provider
) -> None:
    suites = judged_suite(tmp_path, {"reads": "[tool=read] [judge=3] what is in x.txt?"})
    result = run_live(tmp_path, suites, env_for(agent_api, judge_at(judge_api)))[("reads", 0)]
    assert result.judgement is not None and result.judgement.score == 3.0
    (asked,) = judge_requests(judge_api)
    user = asked["messages"][1]["content"]
    assert '1. read {"path": "x.txt"} (turn 1)\n   returned: (no result was sent back)' in user
    assert "(empty: the agent gave no final reply)" in user


@pytest.mark.slow
def test_an_out_of_range_or_unparseable_verdict_leaves_the_trial_unscored_and_out_of_the_mean(
    tmp_path: Path, agent_api: Provider, judge_api: Provider
) -> None:
    prompts = {
        "eight": "[judge=8] explain",
        "prose": "[judge=prose] explain",
        "four": "[judge=4] explain",
        "fenced": "[judge=fenced] explain",
    }
    suites = judged_suite(tmp_path, prompts)
    results = run_live(tmp_path, suites, env_for(agent_api, judge_at(judge_api)))
    for case_id in ("eight", "prose"):
        result = results[(case_id, 0)]
        assert result.verdict is Verdict.ERROR and result.tainted, case_id
        assert result.judgement is not None and result.judgement.state is JudgeState.UNSCORED
        assert result.judgement.score is None
    assert "score 8 is outside 0-5 (rejected, not clamped)" in results[("eight", 0)].reason
    assert "not a JSON object" in results[("prose", 0)].reason
    assert results[("fenced", 0)].judgement is not None
    assert results[("fenced", 0)].judgement.score == 3.0
    scores = [r.judgement.score for r in results.values() if r.judgement is not None]
    assert sorted(s for s in scores if s is not None) == [3.0, 4.0]
    floors = judge_floors(scores)  # 3 and 4 count; the two unscored trials are not zeros
    assert floors.passed
    assert floors.detail == "mean 3.50 >= 3.5, lowest 3 >= 2 (2 scored trials, 2 unscored left out)"
    assert judge_status(r.judgement for r in results.values()) is JudgeStatus.UNSCORED


def test_an_unreachable_judge_leaves_trials_unscored_without_failing_the_agents_checks(
    tmp_path: Path, agent_api: Provider
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gone = Judge(model="retired-1", base_url=f"http://127.0.0.1:{port}/v1", retries=0)
    suites = judged_suite(tmp_path, {"good": "[judge=4] explain"})
    result = run_live(tmp_path, suites, env_for(agent_api, gone))[("good", 0)]
    assert result.verdict is Verdict.ERROR and result.tainted
    assert result.reason.startswith("the judge gave no score: judge call failed: ConnectError")
    (recorded,) = TapeReader(
        tmp_path / "results" / "tapes" / "run-live" / "judged" / "good.tape"
    ).sessions()
    session = fold(recorded.events)
    assert session.errors == () and len(session.turns) == 1
    assert len(judge_exchanges(session)) == 1 and judge_exchanges(session)[0].error is not None
    assert judge_status([result.judgement]) is JudgeStatus.UNSCORED
    assert not JudgeStatus.UNSCORED.gate_open


def test_a_trial_that_failed_a_forbidden_tool_check_is_not_judged(
    tmp_path: Path, agent_api: Provider, judge_api: Provider
) -> None:
    suites = judged_suite(tmp_path, {"writes": "[tool=write] [judge=5] tidy up"})
    results = run_live(tmp_path, suites, env_for(agent_api, judge_at(judge_api)))
    result = results[("writes", 0)]
    assert result.verdict is Verdict.FAILED
    assert result.reason == "forbidden tool write fired (turn 1)"
    assert result.judgement is None and "judge" not in [c.name for c in result.score.checks]
    assert judge_api.requests == []
    assert judge_status([result.judgement]) is JudgeStatus.NOT_NEEDED


@pytest.mark.slow
def test_a_trial_below_the_trial_floor_fails_and_floors_decide_the_case(
    tmp_path: Path, agent_api: Provider, judge_api: Provider
) -> None:
    suites = judged_suite(tmp_path, {"weak": "[judge=1] explain", "fine": "[judge=3] explain"})
    env = env_for(agent_api, judge_at(judge_api), floors=Floors(mean=3.5, trial=2.0))
    results = run_live(tmp_path, suites, env)
    weak = results[("weak", 0)]
    assert weak.verdict is Verdict.FAILED
    assert weak.reason == (
        "judge scored 1/5 by judge-1, below the trial floor 2: scored 1 on purpose"
    )
    assert results[("fine", 0)].verdict is Verdict.PASSED  # a trial at 3 passes; the mean decides

    assert judge_floors([4.0, 5.0, None]).passed
    low_mean = judge_floors([3.0, 3.0, 4.0])
    assert not low_mean.passed and low_mean.detail == "mean 3.33 < mean floor 3.5 (3 scored trials)"
    one_bad = judge_floors([5.0, 5.0, 1.0])
    assert not one_bad.passed and one_bad.detail.startswith("a trial scored 1 < trial floor 2")
    assert not judge_floors([None, None]).passed
    assert judge_floors([3.0, 3.0], Floors(mean=3.0, trial=3.0)).passed


def test_without_a_judge_judged_cases_keep_deterministic_scoring(
    tmp_path: Path, agent_api: Provider
) -> None:
    suites = judged_suite(tmp_path, {"plain": "[judge=1] explain"})
    results = run_live(tmp_path, suites, env_for(agent_api, None))
    result = results[("plain", 0)]
    assert result.verdict is Verdict.PASSED
    assert result.score.checks[-1].detail == "not run: judge not configured"
    assert not result.score.checks[-1].ran  # no evidence either way, whatever passed says
    exported = attempt_scores(result.record, result.score, result.judgement, content=False)
    assert "check.judge" not in [s.name for s in exported]  # never sent as a 1
    assert all(c.ran for c in result.score.checks[:-1])
    assert {f"check.{c.name}" for c in result.score.checks[:-1]} <= {s.name for s in exported}
    assert result.score.reason.endswith("; judge not configured")
    assert judge_status([result.judgement]) is JudgeStatus.NOT_CONFIGURED
    assert not JudgeStatus.NOT_CONFIGURED.gate_open and JudgeStatus.GRADED.gate_open


# -- replay and rescore reuse recorded verdicts ---------------------------------------------


def _no_sockets(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    opened: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        opened.append(address)
        raise OSError("a replay must not open a socket")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    return opened


def _replay(root: Path, suites: tuple[Suite, ...], env: JobEnv) -> dict[str, Attempt]:
    cases = {c.id: c for s in suites for c in s.cases}
    recorded = []
    for tape in sorted((root / "results").rglob("*.tape")):
        for session in TapeReader(tape).sessions():
            if session.header.mode is Mode.LIVE:
                recorded.append((cases[session.header.case_id], session))
    jobs = plan_replay(recorded, root / "results", "run-replay")
    outcome = run_pool(jobs, env, concurrency=1)
    return {r.case.id: r for r in outcome.results}


@pytest.mark.slow
def test_a_recorded_verdict_is_reused_in_replay_without_opening_a_socket(
    tmp_path: Path, agent_api: Provider, judge_api: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    suites = judged_suite(tmp_path, {"good": "[judge=4] explain"})
    live = run_live(tmp_path, suites, env_for(agent_api, judge_at(judge_api)))
    assert live[("good", 0)].judgement is not None
    asked = len(judge_api.requests)

    opened = _no_sockets(monkeypatch)
    replayed = _replay(tmp_path, suites, env_for(agent_api, judge_at(judge_api)))["good"]
    assert opened == [] and len(judge_api.requests) == asked
    assert replayed.verdict is Verdict.PASSED and not replayed.tainted
    assert replayed.decision is not None and replayed.decision.change is Change.UNCHANGED
    assert replayed.judgement is not None and replayed.judgement.recorded
    assert replayed.judgement.score == 4.0
    assert replayed.score.checks[-1].detail == "4/5 by judge-1: scored 4 on purpose"
    assert (replayed.judge_usage.input_tokens, replayed.usage.input_tokens) == (0, 7)
    rescored = replayed.decision.rescored
    assert rescored.checks[-1].detail == "4/5 by judge-1: scored 4 on purpose"


@pytest.mark.slow
def test_a_changed_rubric_is_not_re_judged_and_counts_as_neither_pass_nor_fail(
    tmp_path: Path, agent_api: Provider, judge_api: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    suites = judged_suite(tmp_path, {"low": "[judge=1] explain"})
    live = run_live(tmp_path, suites, env_for(agent_api, judge_at(judge_api)))
    assert live[("low", 0)].verdict is Verdict.FAILED  # 1/5 is below the trial floor
    (tmp_path / "rubrics" / "test.md").write_text(RUBRIC + "\nAlso reward brevity.\n")
    # A case carries its rubric's text as it was when the suites were loaded: load them
    # again, as the next command does.
    suites = load_suites([tmp_path / "judged.jsonl"], rubrics_dir=tmp_path / "rubrics")
    asked = len(judge_api.requests)

    opened = _no_sockets(monkeypatch)
    replayed = _replay(tmp_path, suites, env_for(agent_api, judge_at(judge_api)))["low"]
    assert opened == [] and len(judge_api.requests) == asked
    assert replayed.judgement is not None
    assert replayed.judgement.state is JudgeState.NOT_REJUDGED
    check = replayed.score.checks[-1]
    assert (check.name, check.passed) == ("judge", True)
    assert check.detail == (
        "not re-judged (rubric or transcript changed; run with --allow-live-judge)"
    )
    assert judge_status([replayed.judgement]) is JudgeStatus.NOT_REJUDGED

    # rescore: the same, from the tape alone
    (recorded,) = TapeReader(
        tmp_path / "results" / "tapes" / "run-live" / "judged" / "low.tape"
    ).sessions()
    session = fold(recorded.events)
    case: Case = suites[0].cases[0]
    score, judgement = rejudge_offline(score_session(case, session), case, session)
    assert judgement is not None and judgement.state is JudgeState.NOT_REJUDGED
    assert score.passed and score.reason.endswith("; judge not re-judged")
    (tmp_path / "rubrics" / "test.md").write_text(RUBRIC)
    suites = load_suites([tmp_path / "judged.jsonl"], rubrics_dir=tmp_path / "rubrics")
    case = suites[0].cases[0]  # the rubric as recorded again: the recorded verdict is reused
    score, judgement = rejudge_offline(score_session(case, session), case, session)
    assert judgement is not None and judgement.recorded and judgement.score == 1.0
    assert not score.passed


# -- the live command ------------------------------------------------------------------------


def _project(root: Path, agent_api: Provider, judge_api: Provider, **settings: object) -> Path:
    judged_suite(root / "evals", {"good": "[judge=4] explain", "odd": "[judge=8] explain"})
    config = {
        "suites": "evals",
        "agent": "chat_agent:run",
        "base_url": agent_api.url,
        "judge_base_url": judge_api.url,
        "judge_model": "judge-1",
    } | settings
    lines = [f"{k} = {json.dumps(v)}" for k, v in config.items() if v is not None]
    (root / "evaltape.toml").write_text("\n".join(lines) + "\n")
    return root


def _evaltape(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVALTAPE_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(AGENTS_DIR), str(REPO_DIR)])
    env["OPENAI_API_KEY"] = "sk-agent-0123456789abcdefghijklmnop"
    env["EVALTAPE_JUDGE_API_KEY"] = JUDGE_KEY
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
def test_live_reports_grading_on_its_own_line_and_records_who_graded(
    tmp_path: Path, agent_api: Provider, judge_api: Provider
) -> None:
    project = _project(tmp_path, agent_api, judge_api)
    done = _evaltape(
        project,
        "live",
        "--update-cassettes",
        "-m",
        "agent-1",
        "--trials",
        "2",
        "--source",
        "simulated",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "agent-1: 2/4 passed, 2 could not be judged · 40 tokens (28 in, 12 out)" in lines
    assert "4 attempts · 40 tokens (28 in, 12 out)" in lines
    host = "127.0.0.1"
    assert (
        f"grading by judge-1 @ {host}: 2 scored, 2 unscored · "
        "480 tokens (400 in, 80 out), not counted above"
    ) in lines
    assert "judged good [agent-1]: PASS mean 4.00 >= 3.5, lowest 4 >= 2 (2 scored trials)" in lines
    assert "judged odd [agent-1]: FAIL no trial was scored (2 unscored)" in lines
    assert lines[-1] == "judge_status: unscored"
    assert f"judge: judge-1 @ {host}" in done.stderr
    (record_file,) = (project / ".evaltape" / "results" / "runs").glob("*.json")
    record = read_record(record_file)
    assert f"judge: judge-1 @ {host}" in record.notes
    assert "judge_status: unscored" in record.notes


@pytest.mark.slow
@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"judge_model": "openai/Agent-1-2025-01-31"},
            'judge model "openai/Agent-1-2025-01-31" is',
        ),
        ({"judge_model": None, "judge_base_url": "AGENT"}, "on the provider under test"),
    ],
)
def test_live_refuses_a_colliding_judge_before_any_model_call(
    tmp_path: Path,
    agent_api: Provider,
    judge_api: Provider,
    settings: dict[str, object],
    message: str,
) -> None:
    if settings.get("judge_base_url") == "AGENT":
        settings = settings | {"judge_base_url": agent_api.url.replace("/v1", "/judge/v1")}
    project = _project(tmp_path, agent_api, judge_api, **settings)
    done = _evaltape(
        project, "live", "--update-cassettes", "-m", "agent-1", "--source", "simulated"
    )
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("evaltape: error: judge refused: ") and message in line
    assert agent_api.requests == [] and judge_api.requests == []
    assert not (project / ".evaltape").exists() and not (project / "cassettes").exists()


@pytest.mark.parametrize(
    ("constrain", "shape"),
    [
        ("none", None),
        ("json", {"type": "json_object"}),
        ("schema", {"type": "json_object", "schema": VERDICT_SCHEMA}),
    ],
)
def test_the_judge_answer_can_be_constrained_at_the_provider(
    tmp_path: Path,
    agent_api: Provider,
    judge_api: Provider,
    constrain: str,
    shape: dict[str, object] | None,
) -> None:
    suites = judged_suite(tmp_path, {"good": "[judge=4] explain gate.py"})
    judge = attrs.evolve(judge_at(judge_api), constrain=constrain)
    result = run_live(tmp_path, suites, env_for(agent_api, judge))[("good", 0)]
    assert result.judgement is not None and result.judgement.score == 4.0
    (asked,) = judge_requests(judge_api)
    assert asked.get("response_format") == shape


def test_an_unknown_judge_constraint_is_refused_before_any_call(tmp_path: Path) -> None:
    config = load_config(tmp_path, {"judge_model": "judge-1", "judge_constrain": "grammar"})
    with pytest.raises(RunRefused, match='judge_constrain: "grammar" is not one of none, json'):
        judge_for(config, {}, ["agent-1"])
