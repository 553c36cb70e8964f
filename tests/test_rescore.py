"""``evaltape rescore`` as a user runs it: tapes recorded by ``evaltape live`` against a
chat server on 127.0.0.1, then rescored in a subprocess that may not open any socket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents.chat_server import ChatServer

from evaltape.recorder import (
    Chunk,
    Exchange,
    Mode,
    Request,
    Response,
    SessionStarted,
    Status,
    open_session,
)
from evaltape.scoring import (
    RunKind,
    RunRecord,
    RunState,
    Verdict,
    load_suites,
    make_scorer,
    read_history,
    read_record,
    rescore_tapes,
    resolve_run,
)

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).parent.parent

AGENT = '''\
"""Calls the model as many times as the prompt's [turns=N] says."""
import re

from evaltape.scoring import Task


def run(task: Task) -> str:
    found = re.search(r"\\[turns=(\\d+)\\]", task.prompt)
    messages = [{"role": "user", "content": task.prompt}]
    text = ""
    for i in range(int(found.group(1)) if found else 1):
        response = task.client.post(
            task.base_url + "/chat/completions", json={"model": task.model, "messages": messages}
        )
        response.raise_for_status()
        text = response.json()["choices"][0]["message"]["content"]
        messages += [{"role": "assistant", "content": text}, {"role": "user", "content": f"go {i}"}]
    (task.workspace / "reply.txt").write_text(text)
    return text
'''

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


def case(case_id: str, turns: int, max_turns: int) -> dict[str, object]:
    return {
        "id": case_id,
        "prompt": f"[turns={turns}] talk to me",
        "failureCategory": "turn-budget",
        "whyModelBacked": "the number of turns is the model's choice",
        "expectMaxTurns": max_turns,
    }


def write_suite(project: Path, cases: list[dict[str, object]]) -> None:
    (project / "evals" / "basic.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))


def run_cli(
    project: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    base["PYTHONPATH"] = os.pathsep.join([str(project), str(AGENTS), str(REPO)])
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project,
        env=base | (env or {}),
        capture_output=True,
        text=True,
        timeout=60,
    )


def record_of(project: Path, done: subprocess.CompletedProcess[str]) -> RunRecord:
    """The run record a rescore wrote, as its ``record: PATH`` line on stderr names it
    (``latest`` cannot tell apart two runs started in the same second)."""
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("record: ")]
    return read_record(project / line.removeprefix("record: "))


def offline(project: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run the CLI with every socket connect refused; returns the result and the refusals."""
    guard = project / "guard"
    guard.mkdir(exist_ok=True)
    (guard / "sitecustomize.py").write_text(NO_SOCKETS)
    log = project / "connects.log"
    log.write_text("")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env = base | {
        "PYTHONPATH": os.pathsep.join([str(guard), str(REPO)]),
        "NO_SOCKET_LOG": str(log),
    }
    done = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "rescore", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, log.read_text()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project whose cases were recorded live: 'two' takes 2 turns, 'three' 3, 'one' 1."""
    project = tmp_path_factory.mktemp("project")
    (project / "evals").mkdir()
    (project / "turns_agent.py").write_text(AGENT)
    write_suite(project, [case("one", 1, 3), case("two", 2, 3), case("three", 3, 3)])
    with ChatServer() as server:
        (project / "evaltape.toml").write_text(
            f'agent = "turns_agent:run"\nbase_url = "{server.url}"\n'
        )
        live = run_cli(
            project,
            "live",
            "--update-cassettes",
            "-m",
            "fake-1",
            "--trials",
            "2",
            "--source",
            "simulated",
        )
        assert live.returncode == 0, live.stderr
        assert "fake-1: 6/6 passed" in live.stdout
    yield project


@pytest.fixture
def project(recorded: Path, tmp_path: Path) -> Path:
    """A fresh copy of the recorded project, so each test edits its own suites."""
    copy = tmp_path / "p"
    subprocess.run(["cp", "-a", str(recorded), str(copy)], check=True)
    return copy


@pytest.mark.slow
def test_tighter_expect_max_turns_flips_recorded_passes_and_opens_no_socket(
    project: Path,
) -> None:
    live_id = read_record(resolve_run(project / ".evaltape" / "results")).run_id
    write_suite(project, [case("one", 1, 3), case("two", 2, 3), case("three", 3, 2)])

    done, connects = offline(project, "cassettes")

    assert done.returncode == 0, done.stderr
    assert connects == ""  # the guard logged no connect attempt
    flips = sorted(line for line in done.stdout.splitlines() if line.startswith("FLIP"))
    assert flips == [
        "FLIP pass->fail basic/three fake-1 (attempt 1): 3 turns > max 2",
        "FLIP pass->fail basic/three fake-1 (attempt 2): 3 turns > max 2",
    ]
    table = [line.split() for line in done.stdout.splitlines() if line.startswith("basic")]
    assert table == [["basic", "3", "6", "4/6", "6/6", "2", "0"]]
    assert "no agent ran and no model was called" in done.stdout
    assert done.stdout.splitlines()[-1] == "judge_status: not needed"  # no judged case

    record = record_of(project, done)
    assert record.kind is RunKind.RESCORE and record.state is RunState.COMPLETED
    assert record.run_id != live_id
    assert record.notes == ("rescore of 3 tapes", "judge_status: not needed")
    live = read_record(resolve_run(project / ".evaltape" / "results", live_id))
    # the rescore read the cassettes, which hold the live run's sessions under the same ids
    assert {(Path(a.tape).name, a.session_id) for a in record.attempts} == {
        (Path(a.tape).name, a.session_id) for a in live.attempts
    }
    verdicts = {(a.case_id, a.attempt): a.verdict for a in record.attempts}
    assert verdicts[("three", 0)] is verdicts[("three", 1)] is Verdict.FAILED
    assert [v for (c, _), v in verdicts.items() if c != "three"] == [Verdict.PASSED] * 4
    assert all(a.mode is RunKind.RESCORE for a in record.attempts)
    assert read_history(project / ".evaltape" / "results")[-1].run_id == record.run_id


@pytest.mark.slow
def test_rescoring_a_run_compares_with_its_verdicts_and_loosening_flips_back(
    project: Path,
) -> None:
    write_suite(project, [case("one", 1, 1), case("two", 2, 1), case("three", 3, 3)])
    live_id = read_record(resolve_run(project / ".evaltape" / "results")).run_id

    tight, connects = offline(project, live_id[:10])
    assert tight.returncode == 0, tight.stderr
    assert connects == ""
    assert sum(line.startswith("FLIP pass->fail basic/two") for line in tight.stdout.splitlines())
    assert [line.split() for line in tight.stdout.splitlines() if line.startswith("basic")] == [
        ["basic", "3", "6", "4/6", "6/6", "2", "0"]
    ]
    rescore_id = record_of(project, tight).run_id
    assert record_of(project, tight).notes == (
        f"rescore of run {live_id}",
        "judge_status: not needed",
    )

    write_suite(project, [case("one", 1, 3), case("two", 2, 3), case("three", 3, 3)])
    loose, _ = offline(project, rescore_id)  # a rescore record can be rescored again
    assert loose.returncode == 0, loose.stderr
    back = sorted(line for line in loose.stdout.splitlines() if line.startswith("FLIP"))
    assert back == [
        "FLIP fail->pass basic/two fake-1 (attempt 1): was: 2 turns > max 1",
        "FLIP fail->pass basic/two fake-1 (attempt 2): was: 2 turns > max 1",
    ]


@pytest.mark.slow
def test_sessions_of_removed_cases_are_reported_and_skipped(project: Path) -> None:
    write_suite(project, [case("one", 1, 3)])
    done, _ = offline(project)  # default: every tape under cassettes/
    assert done.returncode == 0, done.stderr
    gone = [line for line in done.stderr.splitlines() if "no longer exists" in line]
    assert len(gone) == 4 and all(('"two"' in g) or ("(two)" in g) or "three" in g for g in gone)
    assert [line.split() for line in done.stdout.splitlines() if line.startswith("basic")] == [
        ["basic", "1", "2", "2/2", "2/2", "0", "0"]
    ]


@pytest.mark.slow
def test_a_missing_tape_of_a_run_is_skipped_with_its_reason(project: Path) -> None:
    results = project / ".evaltape" / "results"
    (two,) = {a.tape for a in read_record(resolve_run(results)).attempts if a.case_id == "two"}
    (results / two).unlink()  # the run's own tape of case two
    done, _ = offline(project, "latest")
    assert done.returncode == 0, done.stderr
    missing = [line for line in done.stderr.splitlines() if "two.tape: no such tape" in line]
    assert len(missing) == 2
    record = record_of(project, done)
    assert sorted(a.verdict.value for a in record.attempts if a.case_id == "two") == [
        "skipped",
        "skipped",
    ]
    assert "skipped" in done.stdout.splitlines()[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nope",), 'no run "nope"'),
        (("missing.tape",), "missing.tape: no such tape or folder"),
        (("latest", "cassettes"), "give one run"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    project: Path, args: tuple[str, ...], message: str
) -> None:
    done, _ = offline(project, *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_rescore_library_scores_a_timed_out_session_as_error_not_a_flip(tmp_path: Path) -> None:
    suites = tmp_path / "evals"
    suites.mkdir()
    (suites / "s.jsonl").write_text(json.dumps(case("slow", 1, 3)) + "\n")
    tape = tmp_path / "slow.tape"
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
    reply = b'{"choices": [{"message": {"role": "assistant", "content": "hi"}}]}'
    for i, status in enumerate((Status.COMPLETED, Status.TIMEOUT)):
        header = SessionStarted(
            session_id=f"{i:016x}", started_at=0.0, case_id="slow", model="m", mode=Mode.LIVE
        )
        writer = open_session(tape, header, clock=lambda: 1.0)
        writer.append(
            Exchange(
                at=0.1,
                duration=0.1,
                request=Request(method="POST", url="http://x/v1/chat/completions", body=body),
                response=Response(status=200, chunks=(Chunk(at=0.05, data=reply),)),
            )
        )
        writer.end(status, "the attempt passed the hang limit" if i else "")
    cases = {c.id: c for s in load_suites([suites], rubrics_dir=tmp_path) for c in s.cases}
    outcome = rescore_tapes(
        [tape], cases, make_scorer(), cassettes=tmp_path / "c", results=tmp_path / "r"
    )
    verdicts = [(r.verdict, r.reason, r.flip) for r in outcome.rescored]
    assert verdicts[1] == (Verdict.ERROR, "timeout: the attempt passed the hang limit", None)
    assert verdicts[0][0] is Verdict.PASSED and outcome.rescored[0].tape == str(tape.resolve())


def test_latest_keeps_the_newest_session_per_case_model_and_attempt(tmp_path: Path) -> None:
    suites = tmp_path / "evals"
    suites.mkdir()
    (suites / "s.jsonl").write_text(json.dumps(case("again", 1, 3)) + "\n")
    tape = tmp_path / "again.tape"
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
    reply = b'{"choices": [{"message": {"role": "assistant", "content": "hi"}}]}'
    for i, started in enumerate((200.0, 100.0, 150.0)):
        header = SessionStarted(
            session_id=f"{i:016x}", started_at=started, case_id="again", model="m"
        )
        writer = open_session(tape, header, clock=lambda: 1.0)
        writer.append(
            Exchange(
                at=0.1,
                duration=0.1,
                request=Request(method="POST", url="http://x/v1/chat/completions", body=body),
                response=Response(status=200, chunks=(Chunk(at=0.05, data=reply),)),
            )
        )
        writer.end(Status.COMPLETED)
    cases = {c.id: c for s in load_suites([suites], rubrics_dir=tmp_path) for c in s.cases}
    every = rescore_tapes([tape], cases, make_scorer(), cassettes=tmp_path, results=tmp_path)
    newest = rescore_tapes(
        [tape], cases, make_scorer(), cassettes=tmp_path, results=tmp_path, latest=True
    )
    assert [r.session_id for r in every.rescored] == [f"{i:016x}" for i in range(3)]
    assert [r.session_id for r in newest.rescored] == ["0" * 16]
    assert newest.rescored[0].tape == "again.tape"  # labelled relative to the cassettes folder
