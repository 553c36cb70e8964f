"""A live run and a replay from Python through the library entry points, with no CLI.

A real chat server on 127.0.0.1, a real project folder with a small suite and a
``module:function`` agent, real tapes and run records.  The clock, the entropy
and the environment come in through ``Host``; nothing is printed.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents.chat_server import ChatServer

from evaltape.recorder import Mode, Source, TapeReader
from evaltape.scoring import (
    AttemptResult,
    Host,
    LiveRequest,
    ReplayRequest,
    RunKind,
    RunRefused,
    RunState,
    Verdict,
    load_config,
    read_record,
    run_live,
    run_replay,
)
from evaltape.scoring.verdicts._replaycheck import Change

AGENT = """
def run(task):
    body = {"model": task.model, "messages": [{"role": "user", "content": task.prompt}]}
    response = task.client.post(task.base_url + "/chat/completions", json=body)
    response.raise_for_status()
    if task.environ.get("ENTRY_AGENT_BREAK"):
        raise RuntimeError("the harness broke after the model answered")
    return response.json()["choices"][0]["message"]["content"]
"""


def case(case_id: str, prompt: str) -> str:
    return json.dumps(
        {
            "id": case_id,
            "prompt": prompt,
            "failureCategory": "runner",
            "whyModelBacked": "exercises the entry points against a fake model",
            "expectMaxTurns": 3,
        }
    )


class Recorder:
    """A ``Reporter`` that keeps what it is told."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.warnings: list[str] = []
        self.attempts: list[tuple[str, int]] = []

    def note(self, line: str) -> None:
        self.notes.append(line)

    def warning(self, message: str) -> None:
        self.warnings.append(message)

    def attempt(self, result: AttemptResult, total: int) -> None:
        self.attempts.append((result.case_id, total))


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as s:
        yield s


def project_at(root: Path, server: ChatServer) -> Path:
    (root / "evals").mkdir(parents=True)
    cases = [case("hello", "say hello"), case("broken", "[500] explode")]
    (root / "evals" / "basic.jsonl").write_text("\n".join(cases) + "\n")
    (root / "entry_points_agent.py").write_text(AGENT)
    (root / "evaltape.toml").write_text(
        f'agent = "entry_points_agent:run"\nbase_url = "{server.url}"\nhang_limit = 10\n'
    )
    return root


def host_at(project: Path, **environ: str) -> Host:
    ticks = itertools.count()
    return Host(
        project=project,
        environ=environ,
        clock=lambda: 1_700_000_000.0 + next(ticks),
        entropy=lambda n: bytes(range(n)),
    )


def test_a_live_run_then_a_replay_from_python(tmp_path: Path, server: ChatServer) -> None:
    project = project_at(tmp_path, server)
    config = load_config(project)
    live_reports = Recorder()
    live = run_live(
        LiveRequest(
            config=config,
            host=host_at(project),
            models=("fake-1",),
            trials=1,
            source=Source.SIMULATED,
            retries=0,
            export=False,
            update_cassettes=True,
            reporter=live_reports,
        )
    )

    assert live.ran and live.pool.stopped is None
    verdicts = {r.case.id: r.verdict for r in live.pool.results}
    assert verdicts == {"hello": Verdict.PASSED, "broken": Verdict.ERROR}
    assert live.record is not None and live.record_path is not None
    assert read_record(live.record_path) == live.record
    assert live.record.state is RunState.COMPLETED and live.record.kind is RunKind.LIVE
    assert live.record.run_id == live.run_id and len(live.record.attempts) == 2
    assert sorted(live_reports.attempts) == [("broken", 2), ("hello", 2)]
    assert live_reports.notes[0].startswith(f"run {live.run_id}: 2 attempts")
    # The 500 records the outage, not the model: it never goes into a cassette.
    assert [p.name for p in live.cassettes] == ["hello.tape"] and live.recorded == 1
    (skipped,) = live.unrecorded
    assert (skipped.case_id, skipped.written, skipped.kept) == ("broken", False, False)
    assert skipped.why.startswith("the provider answered HTTP 500")
    assert skipped.line() in live_reports.warnings
    assert not (config.cassettes / "basic" / "broken.tape").exists()
    tape = config.cassettes / "basic" / "hello.tape"
    (recorded,) = TapeReader(tape).sessions()
    (own,) = TapeReader(live.tapes / "basic" / "hello.tape").sessions()  # type: ignore[operator]
    assert own.events == recorded.events
    assert recorded.header.mode is Mode.LIVE and recorded.header.source is Source.SIMULATED
    assert dict(recorded.header.metadata)["run_id"] == live.run_id
    calls = len(server.requests)
    assert calls >= 2

    replay = run_replay(ReplayRequest(config=config, host=host_at(project), cases=("hello",)))
    assert replay.ran and replay.exit_code == 0
    assert replay.changes == (Change.UNCHANGED,)
    assert len(server.requests) == calls  # offline: no model call
    assert replay.record is not None and replay.record.kind is RunKind.REPLAY
    assert replay.record_path is not None and replay.record_path.is_file()
    by_case = {r.case.id: r for r in replay.pool.results}
    assert sorted(by_case) == ["hello"]
    replayed = by_case["hello"]
    assert replayed.verdict is Verdict.PASSED
    # both runs' clocks start alike here, so they share a run id and its tapes folder
    (session,) = [s for s in TapeReader(replayed.tape).sessions() if s.header.mode is Mode.REPLAY]
    assert session.header.mode is Mode.REPLAY and session.header.replay_of == recorded.session_id


def test_a_replay_with_a_broken_harness_reports_the_harness_change(
    tmp_path: Path, server: ChatServer
) -> None:
    project = project_at(tmp_path, server)
    config = load_config(project)
    live = run_live(
        LiveRequest(
            config=config,
            host=host_at(project),
            models=("fake-1",),
            trials=1,
            cases=("hello",),
            source=Source.SIMULATED,
            export=False,
            update_cassettes=True,
        )
    )
    assert [r.verdict for r in live.pool.results] == [Verdict.PASSED]

    broken = host_at(project, ENTRY_AGENT_BREAK="1")  # the environment is the request's
    replay = run_replay(ReplayRequest(config=config, host=broken))
    # A harness that now raises is a harness change, whatever the recorded verdict.
    assert replay.changes == (Change.CHANGED,)
    assert replay.exit_code == 1
    (decision,) = (r.decision for r in replay.pool.results)
    assert decision is not None and decision.harness is not None
    assert decision.harness.summary.startswith("conversation changed: the harness raised after")
    assert "the harness broke" in replay.pool.results[0].reason


def test_bad_input_is_refused_before_any_model_call(tmp_path: Path, server: ChatServer) -> None:
    project = project_at(tmp_path, server)
    request = LiveRequest(
        config=load_config(project),
        host=host_at(project),
        models=("fake-1",),
        trials=1,
        suite="nope",
        source=Source.SIMULATED,
        export=False,
    )
    with pytest.raises(RunRefused, match="nope"):
        run_live(request)
    assert server.requests == []
    assert not (project / ".evaltape" / "results").exists()
