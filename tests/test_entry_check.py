"""``evaltape live --entry-check`` as a user runs it: a real subprocess, a chat server on
127.0.0.1 whose answers to one case alternate, real tapes, records and history."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents.chat_server import ChatServer
from click.testing import CliRunner

from evaltape.scoring import AttemptResult, RunKind, Verdict, read_record, resolve_run
from evaltape.scoring.cli.main import cli
from evaltape.scoring.verdicts._entry_check import EntryVerdict, entry_exit_code, entry_results

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).parent.parent


class CoinServer(ChatServer):
    """Answers a ``[coin]`` prompt with a ``lookup`` tool call on its 1st, 3rd, ... request
    and with plain text on the others; everything else as ``ChatServer``."""

    def __init__(self) -> None:
        super().__init__()
        self.coin = 0

    def _answer(self, raw: bytes) -> tuple[int, bytes, dict[str, str], float]:
        body = json.loads(raw)
        if "[coin]" not in json.dumps(body.get("messages", [])):
            return super()._answer(raw)
        with self._lock:
            self.requests.append(body)
            self.coin += 1
            heads = self.coin % 2 == 1
        message: dict[str, object] = {"role": "assistant", "content": "no tool needed"}
        if heads:
            call = {"name": "lookup", "arguments": '{"q": "coin"}'}
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"call_{self.coin}", "type": "function", "function": call}],
            }
        reply = {
            "id": "chatcmpl-" + hashlib.sha256(raw).hexdigest()[:12],
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if heads else "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        return 200, json.dumps(reply).encode(), {}, 0.0


def case(case_id: str, prompt: str, **extra: object) -> dict[str, object]:
    return {
        "id": case_id,
        "prompt": prompt,
        "failureCategory": "entry",
        "whyModelBacked": "exercises the entry check against a fake model",
        "expectMaxTurns": 3,
        **extra,
    }


def write_suite(project: Path, cases: list[dict[str, object]]) -> None:
    (project / "evals").mkdir(parents=True, exist_ok=True)
    (project / "evals" / "basic.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))


def evaltape(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(AGENTS), str(REPO)])
    env["OPENAI_API_KEY"] = "sk-test-0123456789abcdefghijklmnop"
    env.pop("CHAT_AGENT_VARIANT", None)
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def server() -> Iterator[CoinServer]:
    with CoinServer() as s:
        yield s


CASES = [
    case("coin", "[coin] look it up if you like", expectTool="lookup"),
    case("solid", "say hello"),
    case("doomed", "say goodbye", expectTool="lookup"),
]


@pytest.mark.slow
def test_new_cases_run_three_times_and_a_split_is_a_bad_case(
    tmp_path: Path, server: CoinServer
) -> None:
    project = tmp_path
    write_suite(project, CASES)
    (project / "evaltape.toml").write_text(
        f'agent = "chat_agent:run"\nbase_url = "{server.url}"\nconcurrency = 2\n'
    )
    first = evaltape(project, "live", "-m", "fake-1", "--source", "simulated", "--entry-check")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "Traceback" not in first.stderr
    assert len(server.requests) == 9  # three cases, exactly three attempts each
    assert {line for line in first.stderr.splitlines() if line.startswith("entry check:")} == {
        f"entry check: basic/{c['id']} (new)" for c in CASES
    }
    out = first.stdout.splitlines()
    assert (
        "bad case: basic/coin [fake-1] 2/3 — make it near-deterministic before it joins the gate"
        in out
    )
    assert "ready: basic/solid [fake-1] 3/3" in out
    assert "failing: basic/doomed [fake-1] 0/3 — a real finding or a broken case" in out
    assert "entry check: 1 ready, 1 bad case, 1 failing, 0 not checked" in out
    assert out[-1] == "judge_status: not needed"  # still last: a gate reads it
    assert "repeats: 3 case(s): 1 all passed, 1 all failed, 1 flipped" in out
    assert (
        "flipped basic/coin [fake-1]: 2/3 passed, 2 distinct trajectories, cause model "
        "(the model's outputs differ)" in out
    )
    results = project / ".evaltape" / "results"
    record = read_record(resolve_run(results))
    assert (record.kind, record.purpose, record.trials, record.total) == (
        RunKind.LIVE,
        "entry_check",
        3,
        9,
    )
    assert all(a.outputs_digest and a.effects_digest for a in record.attempts)
    solid = {a.outputs_digest for a in record.attempts if a.case_id == "solid"}
    assert len(solid) == 1  # the same answer three times: one trajectory, ids and timings aside

    status = CliRunner().invoke(cli, ["status", "--results", str(results)])
    assert status.exit_code == 0, status.output
    assert "repeats: 3 case(s): 1 all passed, 1 all failed, 1 flipped" in status.stdout
    as_json = json.loads(
        CliRunner().invoke(cli, ["status", "--json", "--results", str(results)]).stdout
    )
    assert as_json["repeat"]["causes"]["model"] == 1
    assert as_json["repeat"]["flipped_cases"][0]["case"] == "coin"

    again = evaltape(project, "live", "-m", "fake-1", "--entry-check")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.strip() == "entry check: no new or edited case; nothing was run"
    assert len(server.requests) == 9  # no model call
    assert len(list((results / "runs").glob("*.json"))) == 1  # and no run

    edited = [
        case("solid", "say hello", expectMaxTurns=4) if c["id"] == "solid" else c for c in CASES
    ]
    write_suite(project, edited)
    third = evaltape(project, "live", "-m", "fake-1", "--entry-check")
    assert third.returncode == 0, third.stdout + third.stderr
    assert [line for line in third.stderr.splitlines() if line.startswith("entry check:")] == [
        "entry check: basic/solid (edited)"
    ]
    assert "ready: basic/solid [fake-1] 3/3" in third.stdout
    assert len(server.requests) == 12


def test_entry_check_refuses_to_gate(
    tmp_path: Path, server: CoinServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_suite(tmp_path, CASES)
    (tmp_path / "evaltape.toml").write_text(
        f'agent = "chat_agent:run"\nbase_url = "{server.url}"\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(AGENTS))
    done = CliRunner().invoke(cli, ["live", "-m", "fake-1", "--entry-check", "--gate"])
    assert done.exit_code == 2
    assert done.stderr.strip().startswith("evaltape: error: --entry-check runs new and edited")
    assert server.requests == []
    assert not (tmp_path / ".evaltape").exists()


def _attempt(case_id: str, verdict: Verdict, *, tainted: bool = False) -> AttemptResult:
    return AttemptResult(
        case_id=case_id, suite="basic", model="m", attempt=0, verdict=verdict, tainted=tainted
    )


@pytest.mark.parametrize(
    ("verdicts", "expected", "code"),
    [
        ([Verdict.PASSED] * 3, EntryVerdict.READY, 0),
        ([Verdict.FAILED] * 3, EntryVerdict.FAILING, 0),
        ([Verdict.PASSED, Verdict.FAILED, Verdict.PASSED], EntryVerdict.BAD, 1),
        ([Verdict.PASSED, Verdict.FAILED, Verdict.ERROR], EntryVerdict.BAD, 1),
        ([Verdict.PASSED, Verdict.PASSED, Verdict.ERROR], EntryVerdict.NOT_CHECKED, 1),
        ([Verdict.ERROR] * 3, EntryVerdict.NOT_CHECKED, 1),
    ],
)
def test_each_verdict_and_its_exit_status(
    verdicts: list[Verdict], expected: EntryVerdict, code: int
) -> None:
    attempts = [_attempt("c", v, tainted=v is Verdict.ERROR) for v in verdicts]
    (result,) = entry_results(attempts)
    assert result.verdict is expected
    assert result.judged == sum(v is not Verdict.ERROR for v in verdicts)
    assert entry_exit_code([result]) == code
