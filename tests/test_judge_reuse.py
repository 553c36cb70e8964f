"""Judged cases behave the same in every command: ``evaltape live`` records a verdict from a
judge server on 127.0.0.1, then ``evaltape rescore`` and ``evaltape replay`` reuse it with the
servers stopped, say "not re-judged" once the rubric changes, and print ``judge_status``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from agents.chat_server import ChatServer

from evaltape.recorder import ROLE_HEADER, Mode, TapeReader, fold
from evaltape.scoring import RunKind, RunRecord, Verdict, read_record
from evaltape.scoring.judge._judgement import JUDGE_ROLE, judge_exchanges

pytestmark = pytest.mark.slow

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).parent.parent

RUBRIC = "# Rubric: demo\n\nScore 5 for a reply that echoes the request, 0 for no answer.\n"
RATIONALE = "it echoes the request faithfully"
NOT_REJUDGED = "not re-judged (rubric or transcript changed; run with --allow-live-judge)"

NO_SOCKETS = '''\
"""Loaded first by the interpreter: any attempt to connect a socket fails loudly."""
import socket

def _refuse(*args, **kwargs):
    with open(__import__("os").environ["NO_SOCKET_LOG"], "a") as log:
        log.write(f"connect {args[1:]!r}\\n")
    raise OSError("sockets are forbidden in this process")

socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
'''


SCORED = json.dumps({"score": 4, "rationale": RATIONALE})
"""The judge's answer: 4/5 in strict JSON."""


class JudgeServer:
    """An OpenAI-compatible judge on 127.0.0.1 that answers every request with ``verdict``
    (default: 4/5 in strict JSON) and keeps the headers of every request it answers."""

    def __init__(self, verdict: str = SCORED) -> None:
        self.verdict = verdict
        self.requests: list[dict[str, str]] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> JudgeServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                owner.requests.append({k.lower(): v for k, v in self.headers.items()})
                data = json.dumps(
                    {
                        "id": "chatcmpl-judge",
                        "object": "chat.completion",
                        "model": body.get("model", ""),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": owner.verdict},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": 90,
                            "completion_tokens": 10,
                            "total_tokens": 100,
                        },
                    }
                ).encode()
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


def evaltape(
    project: Path, *args: str, no_sockets: bool = False
) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run the CLI in ``project``; with ``no_sockets`` every connect is refused and logged.

    Returns the result and the logged connect attempts ("" when none was made)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "EVALTAPE_"))
    }
    paths = [str(AGENTS), str(REPO)]
    log = project / "connects.log"
    log.write_text("")
    if no_sockets:
        guard = project / "guard"
        guard.mkdir(exist_ok=True)
        (guard / "sitecustomize.py").write_text(NO_SOCKETS)
        paths.insert(0, str(guard))
        env["NO_SOCKET_LOG"] = str(log)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["OPENAI_API_KEY"] = "sk-test-0123456789abcdefghijklmnop"
    done = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, log.read_text()


def write_config(project: Path, **settings: object) -> None:
    lines = [f"{k} = {json.dumps(v)}" for k, v in settings.items() if v is not None]
    (project / "evaltape.toml").write_text("\n".join(lines) + "\n")


def settings(project: Path) -> dict[str, object]:
    saved: dict[str, object] = json.loads((project / "settings.json").read_text())
    return saved


def record_live(project: Path, verdict: str) -> subprocess.CompletedProcess[str]:
    """Record a judged case live in ``project``, the judge answering ``verdict``; both servers
    are stopped when it returns."""
    (project / "evals" / "rubrics").mkdir(parents=True)
    (project / "evals" / "rubrics" / "demo.md").write_text(RUBRIC)
    case = {
        "id": "explain",
        "prompt": "In one sentence, what is a tape?",
        "failureCategory": "answer-quality",
        "whyModelBacked": "the wording is the model's",
        "expectMaxTurns": 1,
        "rubric": "demo",
    }
    (project / "evals" / "judged.jsonl").write_text(json.dumps(case) + "\n")
    with ChatServer() as agent_api, JudgeServer(verdict) as judge_api:
        config = {
            "agent": "chat_agent:run",
            "base_url": agent_api.url,
            "judge_model": "judge-1",
            "judge_base_url": judge_api.url,
        }
        (project / "settings.json").write_text(json.dumps(config))
        write_config(project, **config)
        live, _ = evaltape(
            project, "live", "--update-cassettes", "-m", "agent-1", "--source", "simulated"
        )
        assert live.returncode == 0, live.stderr
        assert len(judge_api.requests) == 1
        assert judge_api.requests[0][ROLE_HEADER] == JUDGE_ROLE
    return live


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A judged case recorded live, graded 4/5 by a judge server that is stopped afterwards."""
    project = tmp_path_factory.mktemp("judged")
    live = record_live(project, SCORED)
    assert "judged explain [agent-1]: PASS mean 4.00 >= 3.5, lowest 4 >= 2" in live.stdout
    assert live.stdout.splitlines()[-1] == "judge_status: graded"
    yield project


@pytest.fixture
def project(recorded: Path, tmp_path: Path) -> Path:
    """A fresh copy of the recorded project, so each test edits its own rubric and settings."""
    copy = tmp_path / "p"
    subprocess.run(["cp", "-a", str(recorded), str(copy)], check=True)
    return copy


def record_of(project: Path, done: subprocess.CompletedProcess[str]) -> RunRecord:
    """The run record a command wrote, as its ``record: PATH`` line on stderr names it
    (``latest`` cannot tell apart two runs started in the same second)."""
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("record: ")]
    return read_record(project / line.removeprefix("record: "))


# -- rescore --------------------------------------------------------------------------------


def test_rescore_reuses_the_recorded_verdict_with_the_judge_stopped_and_opens_no_socket(
    project: Path,
) -> None:
    done, connects = evaltape(project, "rescore", "cassettes", no_sockets=True)

    assert done.returncode == 0, done.stderr
    assert connects == ""
    lines = done.stdout.splitlines()
    assert f"judge judged/explain agent-1 (attempt 1): 4/5 by judge-1: {RATIONALE}" in lines
    assert (
        "judged explain [agent-1]: PASS mean 4.00 >= 3.5, lowest 4 >= 2 (1 scored trial)" in lines
    )
    assert not any(line.startswith(("FLIP", "changed")) for line in lines)  # as it was live
    assert lines[-1] == "judge_status: graded"
    record = record_of(project, done)
    assert record.kind is RunKind.RESCORE
    assert [a.verdict for a in record.attempts] == [Verdict.PASSED]
    assert "judge_status: graded" in record.notes


def test_rescore_after_a_rubric_edit_is_not_re_judged_and_calls_nothing(project: Path) -> None:
    rubric = project / "evals" / "rubrics" / "demo.md"
    rubric.write_text(RUBRIC + "\nAlso reward brevity.\n")

    done, connects = evaltape(project, "rescore", "cassettes", no_sockets=True)

    assert done.returncode == 0, done.stderr
    assert connects == ""
    lines = done.stdout.splitlines()
    assert f"judge judged/explain agent-1 (attempt 1): {NOT_REJUDGED}" in lines
    assert not any(line.startswith("judged explain") for line in lines)  # no score decides the case
    assert lines[-1] == "judge_status: not re-judged"
    record = record_of(project, done)
    # neither pass nor fail: a gate reads the status
    assert [a.verdict for a in record.attempts] == [Verdict.PASSED]
    assert "judge_status: not re-judged" in record.notes

    rubric.write_text(RUBRIC)  # the recorded verdict applies again
    again, _ = evaltape(project, "rescore", "cassettes", no_sockets=True)
    assert again.stdout.splitlines()[-1] == "judge_status: graded"


def test_rescore_judges_the_recorded_score_against_todays_floors(project: Path) -> None:
    write_config(project, **settings(project), judge_trial_floor=4.5)

    done, connects = evaltape(project, "rescore", "latest", no_sockets=True)

    assert done.returncode == 0, done.stderr
    assert connects == ""
    expected = f"judge scored 4/5 by judge-1, below the trial floor 4.5: {RATIONALE}"
    assert f"FLIP pass->fail judged/explain agent-1 (attempt 1): {expected}" in done.stdout
    assert "judged explain [agent-1]: FAIL a trial scored 4 < trial floor 4.5" in done.stdout


# -- replay ---------------------------------------------------------------------------------


def test_replay_reuses_the_verdict_and_prints_judge_status_with_every_server_stopped(
    project: Path,
) -> None:
    done, connects = evaltape(project, "replay", no_sockets=True)

    assert done.returncode == 0, done.stdout + done.stderr
    assert connects == ""
    lines = done.stdout.splitlines()
    assert any(line.startswith("$0.00 spent") for line in lines)
    assert (
        "judged explain [agent-1]: PASS mean 4.00 >= 3.5, lowest 4 >= 2 (1 scored trial)" in lines
    )
    assert lines[-2:] == ["judge_status: graded", "OK: 1 attempt replayed, harness unchanged"]
    record = record_of(project, done)
    assert record.kind is RunKind.REPLAY
    assert [a.verdict for a in record.attempts] == [Verdict.PASSED]
    assert record.notes == ("judge_status: graded",)


def test_replay_asks_the_judge_only_with_allow_live_judge(project: Path) -> None:
    (project / "evals" / "rubrics" / "demo.md").write_text(RUBRIC + "\nAlso reward brevity.\n")
    with JudgeServer() as judge_api:
        offline, _ = evaltape(project, "replay", "--judge-base-url", judge_api.url)
        assert offline.returncode == 0, offline.stdout + offline.stderr
        assert judge_api.requests == []  # default: never a live judge
        assert offline.stdout.splitlines()[-2] == "judge_status: not re-judged"

        live, _ = evaltape(
            project, "replay", "--allow-live-judge", "--judge-base-url", judge_api.url
        )
        assert live.returncode == 0, live.stdout + live.stderr
        assert len(judge_api.requests) == 1
        assert judge_api.requests[0][ROLE_HEADER] == JUDGE_ROLE
    lines = live.stdout.splitlines()
    assert not any(line.startswith("$0.00 spent") for line in lines)
    assert (
        "grading by judge-1 @ 127.0.0.1: 1 asked live, 0 recorded verdicts reused · "
        "100 tokens (90 in, 10 out), not counted above"
    ) in lines
    assert lines[-2:] == ["judge_status: graded", "OK: 1 attempt replayed, harness unchanged"]
    assert "judge: judge-1 @ 127.0.0.1 (asked only when no recorded verdict matches)" in live.stderr
    record = record_of(project, live)
    assert record.notes == ("judge: judge-1 @ 127.0.0.1", "judge_status: graded")
    # the new verdict is recorded on the replay's own tape, kept apart from the agent's turns
    (attempt,) = record.attempts
    tape = project / ".evaltape" / "results" / attempt.tape
    (replayed,) = [
        fold(s.events) for s in TapeReader(tape).sessions() if s.session_id == attempt.session_id
    ]
    assert replayed.header.mode is Mode.REPLAY
    assert len(judge_exchanges(replayed)) == 1 and len(replayed.turns) == 1


def test_a_recorded_verdict_with_no_score_is_an_error_in_live_rescore_and_replay(
    tmp_path: Path,
) -> None:
    live = record_live(tmp_path, "Looks fine to me, maybe a four.")
    reason = "the judge gave no score: the answer is not a JSON object"
    assert f"ERROR {reason}" in live.stderr
    assert live.stdout.splitlines()[-1] == "judge_status: unscored"

    rescored, connects = evaltape(tmp_path, "rescore", "latest", no_sockets=True)
    assert rescored.returncode == 0 and connects == ""
    assert not any(line.startswith(("FLIP", "changed")) for line in rescored.stdout.splitlines())
    (attempt,) = record_of(tmp_path, rescored).attempts
    assert attempt.verdict is Verdict.ERROR and attempt.tainted
    assert attempt.reason.startswith(reason)
    assert rescored.stdout.splitlines()[-1] == "judge_status: unscored"

    replayed, connects = evaltape(tmp_path, "replay", no_sockets=True)
    assert replayed.returncode == 0 and connects == ""
    (attempt,) = record_of(tmp_path, replayed).attempts
    assert attempt.verdict is Verdict.ERROR and attempt.reason.startswith(reason)
    assert "judged explain [agent-1]: FAIL no trial was scored (1 unscored)" in replayed.stdout
    assert replayed.stdout.splitlines()[-2] == "judge_status: unscored"


# -- refusals --------------------------------------------------------------------------------


def test_rescore_refuses_allow_live_judge_with_one_line(project: Path) -> None:
    runs = list((project / ".evaltape" / "results" / "runs").glob("*.json"))
    done, connects = evaltape(project, "rescore", "--allow-live-judge", no_sockets=True)
    assert done.returncode == 2 and connects == ""
    assert done.stderr.splitlines() == [
        "evaltape: error: --allow-live-judge: a rescore never calls the judge (it writes no "
        "tape to record a new verdict on); replay the tapes with "
        "`evaltape replay --allow-live-judge` instead"
    ]
    assert list((project / ".evaltape" / "results" / "runs").glob("*.json")) == runs


def test_replay_allow_live_judge_without_a_judge_is_refused_before_anything_runs(
    project: Path,
) -> None:
    config = settings(project) | {"judge_model": None, "judge_base_url": None}
    write_config(project, **config)
    runs = list((project / ".evaltape" / "results" / "runs").glob("*.json"))
    done, _ = evaltape(project, "replay", "--allow-live-judge")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "evaltape: error: --allow-live-judge needs a judge: set judge_model (and judge_base_url)"
    )
    assert "Traceback" not in done.stderr
    assert list((project / ".evaltape" / "results" / "runs").glob("*.json")) == runs

    write_config(project, **(config | {"judge_model": "agent-1"}))
    refused, _ = evaltape(project, "replay", "--allow-live-judge")
    assert refused.returncode == 2
    assert refused.stderr.splitlines()[-1].startswith(
        'evaltape: error: judge refused: judge model "agent-1" is the model under test'
    )
