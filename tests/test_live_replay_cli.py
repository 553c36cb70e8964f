"""``evaltape live`` and ``evaltape replay`` as a user runs them: real subprocesses,
a real chat server on 127.0.0.1, real tapes and run records."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from agents.chat_server import ChatServer

from evaltape.recorder import (
    FactKind,
    Mode,
    RecordedSession,
    RunnerFact,
    SessionEnded,
    Source,
    Status,
    TapeReader,
    fold,
)
from evaltape.scoring import RunState, Verdict, read_record, resolve_run

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).parent.parent


def case(case_id: str, prompt: str) -> str:
    return json.dumps(
        {
            "id": case_id,
            "prompt": prompt,
            "failureCategory": "runner",
            "whyModelBacked": "exercises the runner against a fake model",
            "expectMaxTurns": 3,
        }
    )


def make_project(root: Path, cases: list[str], **settings: object) -> Path:
    (root / "evals").mkdir(parents=True)
    (root / "evals" / "basic.jsonl").write_text("\n".join(cases) + "\n")
    lines = [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    (root / "evaltape.toml").write_text("\n".join(lines) + "\n")
    return root


def evaltape(
    project: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project,
        env=agent_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def agent_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(AGENTS), str(REPO)])
    env["OPENAI_API_KEY"] = "sk-test-0123456789abcdefghijklmnop"
    env.pop("CHAT_AGENT_VARIANT", None)
    return env | (extra or {})


def sessions(tape: Path) -> list[RecordedSession]:
    return list(TapeReader(tape).sessions())


def end_status(session: RecordedSession) -> Status:
    end = session.events[-1]
    assert isinstance(end, SessionEnded)
    return end.status


pytestmark = [
    pytest.mark.slow,
    pytest.mark.chat_server(hang=4.0),
]


MIXED = [
    case("hello", "say hello"),
    case("slow", "[slow] take your time"),
    case("rate-limited", "[429] once more"),
    case("server-error", "[500] explode"),
    case("malformed", "[malformed] broken body"),
    case("hangs", "[hang] never answers in time"),
]


def test_live_records_every_failure_kind_and_replay_offline_is_unchanged(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(
        tmp_path, MIXED, agent="chat_agent:run", base_url=server.url, hang_limit=1.5
    )
    live = evaltape(
        project,
        "live",
        "--update-cassettes",
        "-m",
        "fake-1",
        "--source",
        "simulated",
        "--retries",
        "1",
    )
    # The three failures record the provider, not the model: they stay out of the cassettes.
    assert live.returncode == 4, live.stderr
    unrecorded = [
        line.removeprefix("evaltape: warning: did not record ")
        for line in live.stderr.splitlines()
        if "did not record" in line
    ]
    assert sorted(unrecorded) == [
        "hangs [fake-1] (attempt 1) into its cassette: no model call was answered "
        "(no recorded session to keep)",
        "malformed [fake-1] (attempt 1) into its cassette: the provider's answer was unusable: "
        "response body is not valid JSON: Expecting value at offset 26 "
        "(no recorded session to keep)",
        "server-error [fake-1] (attempt 1) into its cassette: the provider answered HTTP 500 "
        "(no recorded session to keep)",
    ]
    assert "evaltape: 3 attempt(s) not recorded into the cassettes" in live.stderr
    assert "fake-1: 3/6 passed, 3 could not be judged" in live.stdout
    assert f"{3 * 15} tokens" in live.stdout  # three answers with usage, 15 tokens each
    lines = [line for line in live.stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 6 and all("fake-1 :: " in line for line in lines)

    record = read_record(resolve_run(project / ".evaltape" / "results"))
    assert record.state is RunState.COMPLETED
    by_case = {a.case_id: a for a in record.attempts}
    assert by_case["hello"].verdict is Verdict.PASSED
    assert by_case["slow"].verdict is Verdict.PASSED
    assert by_case["rate-limited"].verdict is Verdict.PASSED
    # A 200 whose body is cut short is the provider's fault, not the agent's.
    assert by_case["malformed"].verdict is Verdict.ERROR and by_case["malformed"].tainted
    assert "unusable body" in by_case["malformed"].reason
    assert "JSONDecodeError" in by_case["malformed"].reason
    assert by_case["server-error"].verdict is Verdict.ERROR
    assert "500" in by_case["server-error"].reason
    assert by_case["hangs"].verdict is Verdict.ERROR and by_case["hangs"].tainted
    assert "hang limit" in by_case["hangs"].reason

    cassettes = project / "cassettes" / "basic"
    assert sorted(p.name for p in cassettes.iterdir()) == [
        "hello.tape",
        "rate-limited.tape",
        "slow.tape",
    ]
    retried = fold(sessions(cassettes / "rate-limited.tape")[0].events)
    assert retried.header.source is Source.SIMULATED
    assert dict(retried.header.metadata) == {
        "suite": "basic",
        "run_id": record.run_id,
        "base_url": server.url,
    }
    notes = [
        e for e in sessions(cassettes / "rate-limited.tape")[0].events if isinstance(e, RunnerFact)
    ]
    assert notes and notes[0].fact is FactKind.NOTE and "429" in notes[0].message
    assert len(retried.turns) == 1  # the agent never saw the 429
    run_tapes = project / ".evaltape" / "results" / "tapes" / record.run_id
    hung = sessions(run_tapes / "basic" / "hangs.tape")[0]
    assert end_status(hung) is Status.TIMEOUT
    assert any(isinstance(e, RunnerFact) and e.fact is FactKind.TIMEOUT for e in hung.events)
    reply = fold(sessions(cassettes / "hello.tape")[0].events)
    assert [f.path for f in reply.workspace] == ["reply.txt"]
    assert "OPENAI_API_KEY" not in (cassettes / "hello.tape").read_bytes().decode("latin-1")
    assert b"sk-test-0123456789" not in (cassettes / "hello.tape").read_bytes()

    server.stop()
    requests_before = len(server.requests)
    replay = evaltape(project, "replay", str(run_tapes))  # the run's own tapes hold them all
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "hangs" in replay.stderr and "skipped" in replay.stderr
    board = [line.split() for line in replay.stdout.splitlines() if line.startswith("basic")]
    assert board == [["basic", "5", "5", "3/5", "3/5", "0", "0", "0", "0", "0"]]
    assert "$0.00 spent" in replay.stdout
    assert replay.stdout.splitlines()[-2:] == [
        "judge_status: not needed",  # as live prints it
        "OK: 5 attempts replayed, harness unchanged",
    ]
    assert len(server.requests) == requests_before
    replay_record = read_record(resolve_run(project / ".evaltape" / "results"))
    assert replay_record.run_id != record.run_id
    replayed = [a for a in replay_record.attempts]
    assert all(a.rescored is a.replayed for a in replayed if a.verdict is not Verdict.ERROR)
    tape = project / ".evaltape" / "results" / replayed[0].tape
    header = sessions(tape)[0].header
    assert header.mode is Mode.REPLAY and header.replay_of


def test_a_command_agent_is_recorded_through_the_proxy_and_replayed(
    tmp_path: Path, server: ChatServer
) -> None:
    agent = f"cmd:{sys.executable} {AGENTS / 'urllib_agent.py'} {{prompt}}"
    project = make_project(
        tmp_path, [case("one", "first"), case("two", "second")], agent=agent, base_url=server.url
    )
    live = evaltape(project, "live", "--update-cassettes", "-m", "fake-1", "--trials", "2")
    assert live.returncode == 0, live.stderr
    assert "fake-1: 4/4 passed" in live.stdout
    assert len(server.requests) == 4
    recorded = sessions(project / "cassettes" / "basic" / "one.tape")
    assert len(recorded) == 2
    view = fold(recorded[0].events)
    assert view.reply == "echo: first"
    assert [(f.path, f.data) for f in view.workspace] == [("reply.txt", b"echo: first")]

    server.stop()
    replay = evaltape(project, "replay", "--latest")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert ["basic", "2", "4", "4/4", "4/4", "0", "0", "0", "0", "0"] in [
        line.split() for line in replay.stdout.splitlines()
    ]


def test_a_malformed_suite_is_refused_before_any_model_call(
    tmp_path: Path, server: ChatServer
) -> None:
    bad = [json.dumps({"id": f"bad-{n}", "prompt": "x"}) for n in range(20)]
    project = make_project(tmp_path, bad, agent="chat_agent:run", base_url=server.url)
    result = evaltape(project, "live", "--update-cassettes", "-m", "fake-1")
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("evals/basic.jsonl:")]
    assert len({line.split(":")[1] for line in errors}) == 20
    assert "Traceback" not in result.stderr
    assert server.requests == []
    assert not (project / "cassettes").exists()


def test_a_harness_change_shows_as_stale_or_regression(tmp_path: Path, server: ChatServer) -> None:
    project = make_project(
        tmp_path, [case("hello", "say hello")], agent="chat_agent:run", base_url=server.url
    )
    assert evaltape(project, "live", "--update-cassettes", "-m", "fake-1").returncode == 0
    server.stop()

    changed = evaltape(project, "replay", env={"CHAT_AGENT_VARIANT": "changed_request"})
    assert changed.returncode == 3, changed.stdout + changed.stderr
    assert "STALE system prompt changed (1 distinct edit): 1 attempt, suite basic" in changed.stdout
    example = (
        "  e.g. basic/hello fake-1 (attempt 1): system prompt changed (at messages[0].content)"
    )
    assert example in changed.stdout.splitlines()
    assert "      +You are a test agent. Answer briefly. Also be polite." in changed.stdout

    broken = evaltape(project, "replay", env={"CHAT_AGENT_VARIANT": "fail_after"})
    # A harness that now raises after the model answered is a harness change, named with
    # the call it stopped after and the error's first line.
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "HARNESS CHANGED conversation changed (1 distinct edit): 1 attempt" in broken.stdout
    assert "the harness raised after call 1 of 1: the agent failed: " in broken.stdout
    assert "the harness broke" in broken.stdout
    assert broken.stdout.splitlines()[-1] == "FAIL: 1 conversation changed (see above)"


def test_a_refused_api_key_stops_the_run_with_one_line(tmp_path: Path, server: ChatServer) -> None:
    cases = [case("denied", "[401] who are you")] + [
        case(f"later-{n}", f"[slow] later {n}") for n in range(6)
    ]
    project = make_project(
        tmp_path, cases, agent="chat_agent:run", base_url=server.url, concurrency=2
    )
    result = evaltape(project, "live", "--update-cassettes", "-m", "fake-1")
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("evaltape: error")]
    assert len(errors) == 1 and "HTTP 401" in errors[0]
    assert "Traceback" not in result.stderr
    record = read_record(resolve_run(project / ".evaltape" / "results"))
    assert record.state is RunState.FAILED
    assert record.completed < record.total
    assert len(server.requests) < len(cases)


def test_ctrl_c_keeps_every_finished_attempt(tmp_path: Path, server: ChatServer) -> None:
    # Two attempts are answered; the server holds every later one, so Ctrl-C
    # always lands while attempts are in flight, however busy the machine is.
    server.hold_after = 2
    server.hang = 60.0
    cases = [case(f"slow-{n}", f"[hold] number {n}") for n in range(8)]
    project = make_project(
        tmp_path, cases, agent="chat_agent:run", base_url=server.url, concurrency=2
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "evaltape.scoring.cli",
            "live",
            "-m",
            "fake-1",
        ],
        cwd=project,
        env=agent_env(),
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    for line in process.stderr:
        if line.startswith("[2/"):
            break
    server.wait_holding(2)
    process.send_signal(signal.SIGINT)
    for line in process.stderr:  # the run refuses new calls, then the held ones are answered
        if line.startswith("evaltape: stopping (Ctrl-C)"):
            break
    server.release()
    _out, err = process.communicate(timeout=20)
    assert process.returncode == 130, err
    assert "Traceback" not in err

    record = read_record(resolve_run(project / ".evaltape" / "results"))
    assert record.state is RunState.CANCELLED
    assert 2 <= record.completed < 8
    finished = {a.session_id for a in record.attempts if a.verdict is Verdict.PASSED}
    assert len(finished) >= 2
    on_tape = {}
    assert not (project / "cassettes").exists()  # live leaves the cassettes alone by default
    for tape in (project / ".evaltape" / "results" / "tapes").rglob("*.tape"):
        for s in sessions(tape):
            on_tape[s.session_id] = s
    for session_id in finished:
        assert on_tape[session_id].complete
        assert end_status(on_tape[session_id]) is Status.COMPLETED
    cancelled = [a for a in record.attempts if "cancelled" in a.reason]
    assert len(cancelled) == 2  # the two held when Ctrl-C came
    for a in cancelled:
        assert end_status(on_tape[a.session_id]) is Status.INTERRUPTED
        # the call in flight finished: its answer is on the tape
        (turn,) = fold(on_tape[a.session_id].events).turns
        assert turn.call.status == 200


def test_compare_runs_both_models_through_one_pool_and_replays_with_the_recorded_seed(
    tmp_path: Path, server: ChatServer
) -> None:
    project = make_project(
        tmp_path,
        [case("one", "first"), case("two", "second")],
        agent="chat_agent:run",
        base_url=server.url,
    )
    live = evaltape(
        project, "live", "--update-cassettes", "--compare", "m1,m2", "--trials", "2", "--seed", "7"
    )
    assert live.returncode == 0, live.stderr
    assert "m1: 4/4 passed" in live.stdout and "m2: 4/4 passed" in live.stdout
    assert {body["seed"] for body in server.requests} == {7, 8}
    record = read_record(resolve_run(project / ".evaltape" / "results"))
    assert record.models == ("m1", "m2") and record.total == 8 and record.completed == 8
    recorded = sessions(project / "cassettes" / "basic" / "one.tape")
    assert sorted((s.header.model, s.header.attempt) for s in recorded) == [
        ("m1", 0),
        ("m1", 1),
        ("m2", 0),
        ("m2", 1),
    ]
    assert {(s.header.attempt, s.header.seed) for s in recorded} == {(0, 7), (1, 8)}

    server.stop()
    replay = evaltape(project, "replay")  # no --seed: the recorded one is used
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert ["basic", "2", "8", "8/8", "8/8", "0", "0", "0", "0", "0"] in [
        line.split() for line in replay.stdout.splitlines()
    ]
