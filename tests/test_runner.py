"""The runner as a library: jobs, the pool, workspaces, retries and the replay decision."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path

import attrs
import httpx
import pytest
from agents.chat_server import ChatServer

from evaltape.recorder import (
    Exchange,
    FactKind,
    RecordedSession,
    RunnerFact,
    Source,
    Status,
    TapeReader,
    fold,
)
from evaltape.recorder._events import SessionEnded
from evaltape.recorder.apis import CallDecoder
from evaltape.recorder.tape._buffer import SessionBuffer
from evaltape.recorder.tape._frames import FILE_FIXED_SIZE, file_header_size
from evaltape.recorder.tape._writer import DEFAULT_LEVEL
from evaltape.scoring import Case, Score, Suite, Verdict, load_suites
from evaltape.scoring._network import retry_delay
from evaltape.scoring.checks._score import completed_without_error
from evaltape.scoring.cost._pricing import built_in_prices
from evaltape.scoring.outputs.console._progress import Progress
from evaltape.scoring.outputs.export._config import export_config
from evaltape.scoring.outputs.export._exporter import Exporter
from evaltape.scoring.outputs.export._span_model import TraceOptions
from evaltape.scoring.run._export_step import export_job
from evaltape.scoring.run._jobs import JobEnv, JobResult, LiveWire
from evaltape.scoring.run._plan import plan_live, plan_replay
from evaltape.scoring.run._stop import Stop, StopKind
from evaltape.scoring.run.attempt._agents import AgentKind, load_agent, parse_agent
from evaltape.scoring.run.attempt._attempt import LIVE_LEVEL, run_job
from evaltape.scoring.run.attempt._workspace import (
    make_workspace,
    remove_workspace,
    snapshot_workspace,
)
from evaltape.scoring.run.executors._pool import run_pool
from evaltape.scoring.verdicts._replaycheck import (
    Change,
    HarnessChange,
    decide,
    replay_exit_code,
    scoreboard,
)

AGENTS = Path(__file__).parent / "agents"


def suites_of(
    tmp_path: Path, prompts: dict[str, str], files: dict[str, str] | None = None
) -> tuple[Suite, ...]:
    lines = []
    for case_id, prompt in prompts.items():
        obj: dict[str, object] = {
            "id": case_id,
            "prompt": prompt,
            "failureCategory": "runner",
            "whyModelBacked": "runner test",
            "expectMaxTurns": 3,
        }
        if files is not None:
            obj["files"] = files
            obj["verify"] = "true"
        lines.append(json.dumps(obj))
    path = tmp_path / "suite.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return load_suites([path], rubrics_dir=tmp_path / "rubrics")


def env_for(server: ChatServer, **overrides: object) -> JobEnv:
    spec = parse_agent("chat_agent:run")
    options: dict[str, object] = {
        "spec": spec,
        "agent": load_agent(spec, AGENTS),
        "scorer": completed_without_error,
        "stop": Stop(),
        "base_url": server.url,
        "hang_limit": 5.0,
        "wall_clock": time.time,
        "environ": {},
        "live": LiveWire(
            network=httpx.HTTPTransport(), source=Source.SIMULATED, retries=1, retry_delay=0.05
        ),
    }
    return JobEnv(**(options | overrides))


def only_case(suites: tuple[Suite, ...]) -> Case:
    return suites[0].cases[0]


# -- workspace -----------------------------------------------------------------


def test_a_workspace_holds_the_case_files_and_its_snapshot_is_bounded(tmp_path: Path) -> None:
    case = only_case(suites_of(tmp_path, {"c": "p"}, files={"a.txt": "A", "src/b.txt": "B"}))
    root = make_workspace(case)
    assert (root / "a.txt").read_text() == "A" and (root / "src/b.txt").read_text() == "B"
    (root / "big.bin").write_bytes(b"x" * 2000)
    (root / "mid1.txt").write_bytes(b"y" * 600)
    (root / "mid2.txt").write_bytes(b"z" * 600)
    (root / "link").symlink_to("/etc/passwd")
    snap = snapshot_workspace(root, at=1.0, max_file=1000, max_total=1000)
    assert [f.path for f in snap.files] == ["a.txt", "mid1.txt"]
    assert set(snap.omitted) == {"big.bin", "link", "mid2.txt", "src/b.txt"}
    remove_workspace(root)
    assert not root.exists()


def test_a_trajectory_case_gets_an_empty_folder(tmp_path: Path) -> None:
    root = make_workspace(only_case(suites_of(tmp_path, {"c": "p"})))
    assert list(root.iterdir()) == []
    remove_workspace(root)


# -- agents and retries ----------------------------------------------------------


def test_agent_specs_name_a_python_function_or_a_command() -> None:
    assert parse_agent("pkg.mod:run").kind is AgentKind.PYTHON
    assert parse_agent("cmd:python a.py {prompt}").target == "python a.py {prompt}"
    assert parse_agent("node agent.mjs {prompt}").kind is AgentKind.COMMAND


def test_retry_waits_follow_the_providers_hint_then_back_off() -> None:
    assert retry_delay(httpx.Headers({"retry-after": "2"}), 0, base=0.5, cap=60) == 2.0
    assert retry_delay(httpx.Headers({"retry-after-ms": "150"}), 0, base=0.5, cap=60) == 0.15
    assert retry_delay(httpx.Headers({"retry-after": "999"}), 0, base=0.5, cap=30) == 30
    assert retry_delay(httpx.Headers(), 3, base=0.5, cap=60) == 4.0


# -- jobs and the pool -----------------------------------------------------------


class _Watched(threading.Event):
    """A stop event that tells when a wait on it begins (the retry's backoff)."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.set()
        return super().wait(timeout)


def test_a_stop_during_a_retry_wait_sends_no_retry(tmp_path: Path, server: ChatServer) -> None:
    suites = suites_of(tmp_path, {"down": "[500] the provider is down"})
    (job,) = plan_live(suites, ["m"], 1, tmp_path / "results", "run")
    wire = LiveWire(network=httpx.HTTPTransport(), source=Source.SIMULATED, retries=3)
    stop = Stop()
    stop.event = watched = _Watched()
    env = env_for(server, stop=stop, hang_limit=120.0, live=attrs.evolve(wire, retry_delay=60.0))
    results: list[JobResult] = []
    worker = threading.Thread(target=lambda: results.append(run_job(job, env)))
    worker.start()
    assert watched.waiting.wait(30)  # the first 500 is in; its retry waits 60 s
    stop.set(StopKind.INTERRUPT, "interrupted (SIGTERM)", cause="SIGTERM")
    worker.join(60)
    (result,) = results
    assert len(server.requests) == 1  # the retry was never sent
    assert result.status is Status.INTERRUPTED
    (session,) = TapeReader(job.tape).sessions()
    (exchange,) = [e for e in session.events if isinstance(e, Exchange)]
    assert exchange.response is None and exchange.error is not None
    assert exchange.error.type == "RunStopped"
    assert exchange.error.message == (
        "evaltape: the run was stopped (SIGTERM); no new model calls are sent"
    )
    notes = [e.message for e in session.events if isinstance(e, RunnerFact)]
    assert notes[0] == "retry 1: HTTP 500 (waited 60 s)"


def test_two_models_take_about_as_long_as_one(tmp_path: Path) -> None:
    suites = suites_of(tmp_path, {f"case-{n}": f"question {n}" for n in range(4)})
    jobs = plan_live(suites, ["m1", "m2"], 2, tmp_path / "results", "run-1")
    assert len(jobs) == 16
    with ChatServer(meet=16, hang=30.0) as slow:  # each answer waits until all 16 are in
        outcome = run_pool(jobs, env_for(slow, hang_limit=60.0), concurrency=16)
    assert slow.peak == 16  # one after another, at most one would be in flight
    assert outcome.stopped is None
    assert sorted((r.model, r.case.id, r.attempt) for r in outcome.results) == sorted(
        (j.model, j.case.id, j.attempt) for j in jobs
    )
    assert all(r.verdict is Verdict.PASSED for r in outcome.results)
    tape = tmp_path / "results" / "tapes" / "run-1" / "suite" / "case-0.tape"
    models = sorted(s.header.model for s in TapeReader(tape).sessions())
    assert models == ["m1", "m1", "m2", "m2"]


@pytest.mark.slow
def test_a_hung_python_agent_is_abandoned_at_the_hang_limit(tmp_path: Path) -> None:
    suites = suites_of(tmp_path, {"stuck": "[hang] wait"})
    (job,) = plan_live(suites, ["m"], 1, tmp_path / "results", "run")
    with ChatServer(hang=60.0) as hanging:  # held until the server stops
        result = run_job(job, env_for(hanging, hang_limit=0.4))
        assert hanging.wait_holding(1)  # abandoned while its request is held, not waited for
    assert result.status is Status.TIMEOUT and result.verdict is Verdict.ERROR
    (recorded,) = TapeReader(job.tape).sessions()
    facts = [e for e in recorded.events if isinstance(e, RunnerFact)]
    assert [f.fact for f in facts] == [FactKind.TIMEOUT]


@pytest.mark.slow
def test_the_overall_time_limit_stops_the_run_and_keeps_what_finished(tmp_path: Path) -> None:
    suites = suites_of(tmp_path, {f"s-{n}": f"[slow] {n}" for n in range(6)})
    jobs = plan_live(suites, ["m"], 1, tmp_path / "results", "run")
    finished: list[JobResult] = []

    def clock() -> float:  # 0.3 s per finished job, whatever the machine's speed
        return 0.3 * len(finished)

    with ChatServer(slow=0.3) as s:
        outcome = run_pool(
            jobs,
            env_for(s),
            concurrency=1,
            time_limit=0.5,
            on_result=finished.append,
            clock=clock,
        )
    assert outcome.stopped is StopKind.LIMIT
    assert 1 <= len(outcome.results) < 6
    assert any(r.verdict is Verdict.PASSED for r in outcome.results)


def test_a_401_stops_the_pool_and_cancels_the_attempts_in_flight(tmp_path: Path) -> None:
    prompts = {"denied": "[401] key?"} | {f"s-{n}": f"[hang] {n}" for n in range(5)}
    suites = suites_of(tmp_path, prompts)
    jobs = plan_live(suites, ["m"], 1, tmp_path / "results", "run")
    # meet=2: the 401 is answered only once the [hang] request is in the server too,
    # so an attempt is surely in flight when the credentials are refused.
    with ChatServer(hang=60.0, meet=2) as s:  # [hang] is held until the server stops
        outcome = run_pool(jobs, env_for(s, hang_limit=60.0), concurrency=2)
        # the pool returned while that request is still held: cancelled, not waited for
        assert s.wait_holding(1)
    assert outcome.stopped is StopKind.AUTH and "HTTP 401" in outcome.reason
    assert len(outcome.results) == 2
    cancelled = [r for r in outcome.results if r.status is Status.INTERRUPTED]
    assert cancelled and all("cancelled" in r.reason for r in cancelled)


def test_a_replay_job_reproduces_the_recorded_verdict(tmp_path: Path, server: ChatServer) -> None:
    suites = suites_of(tmp_path, {"hello": "hi", "broken": "[malformed] x"})
    jobs = plan_live(suites, ["m"], 1, tmp_path / "results", "live")
    live = run_pool(jobs, env_for(server), concurrency=2)
    server.stop()
    recorded = []
    for job in jobs:
        (session,) = TapeReader(job.tape).sessions()
        recorded.append((job.case, session))
    replays = plan_replay(recorded, tmp_path / "results", "replay")
    outcome = run_pool(replays, env_for(server), concurrency=2)
    verdicts = {r.case.id: r.verdict for r in live.results}
    # A 200 whose body is cut short is the provider's fault, live and replayed alike.
    assert verdicts == {"hello": Verdict.PASSED, "broken": Verdict.ERROR}
    served = {job.case.id: job.recorded for job in replays}
    for result in outcome.results:
        assert result.decision is not None and result.decision.change is Change.UNCHANGED
        assert result.verdict is verdicts[result.case.id]
        (session,) = TapeReader(result.tape).sessions()
        recorded_session = served[result.case.id]
        assert recorded_session is not None
        assert session.header.replay_of == recorded_session.session_id
        assert fold(session.events).usage == fold(recorded_session.events).usage


def test_an_attempt_folds_each_exchange_once_and_its_outputs_get_that_fold(
    tmp_path: Path, server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    suites = suites_of(tmp_path, {"hello": "hi", "broken": "[malformed] x"})
    jobs = plan_live(suites, ["m"], 1, tmp_path / "results", "live")
    decoded: list[Exchange] = []
    decode = CallDecoder.decode

    def counted(self: CallDecoder, exchange: Exchange) -> object:
        decoded.append(exchange)
        return decode(self, exchange)

    monkeypatch.setattr(CallDecoder, "decode", counted)
    handed: list[JobResult] = []
    outcome = run_pool(jobs, env_for(server), concurrency=1, on_result=handed.append)
    during = len(decoded)
    monkeypatch.undo()
    exchanges = 0
    for result in handed:
        (recorded,) = TapeReader(result.job.tape).sessions()
        exchanges += sum(isinstance(e, Exchange) for e in recorded.events)
        # What the outputs (export, cassettes) are handed is the fold of the tape.
        assert result.session == fold(recorded.events)
    assert exchanges >= 2
    assert during == exchanges  # scored before the end and after it: one fold
    # The run keeps its attempts, not their decoded sessions.
    assert len(outcome.results) == 2
    assert not any(hasattr(r, "session") for r in outcome.results)


def test_the_exporter_builds_from_the_runs_fold_and_reads_the_tape_without_one(
    tmp_path: Path, server: ChatServer
) -> None:
    suites = suites_of(tmp_path, {"hello": "hi"})
    jobs = plan_live(suites, ["m"], 1, tmp_path / "results", "live")
    handed: list[JobResult] = []
    run_pool(jobs, env_for(server), concurrency=1, on_result=handed.append)
    (result,) = handed
    config = export_config({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert config is not None
    exporter = Exporter(config, TraceOptions(run_id="r", agent="a"), built_in_prices())
    try:
        from_fold = exporter.build(export_job(result))
        result.job.tape.unlink()  # what the exporter reads when the job has no fold
        gone = exporter.build(export_job(attrs.evolve(result, session=None)))
        still = exporter.build(export_job(result))
    finally:
        exporter.close(timeout=5)
    assert isinstance(gone, str) and str(result.job.tape) in gone
    assert not isinstance(from_fold, str) and not isinstance(still, str)
    assert [s.name for s in still.spans] == [s.name for s in from_fold.spans]


def _encoded(session: RecordedSession, level: int) -> bytes:
    """The frames ``SessionBuffer`` makes of ``session``'s events at ``level``."""
    end = session.events[-1]
    assert isinstance(end, SessionEnded)
    buffer = SessionBuffer(session.header, clock=lambda: end.at, level=level)
    for event in session.events[1:-1]:
        buffer.append(event)
    buffer.end(end.status, end.reason)
    return buffer.data


def test_a_live_session_is_compressed_harder_than_a_replayed_one(
    tmp_path: Path, server: ChatServer
) -> None:
    # Live tapes are kept and replayed for as long as their case lives; a replay's
    # session is made again on every run.
    assert LIVE_LEVEL > DEFAULT_LEVEL
    suites = suites_of(tmp_path, {"c": "hi"}, files={"a.txt": "x" * 3000})
    (job,) = plan_live(suites, ["m"], 1, tmp_path / "results", "live")
    run_job(job, env_for(server))
    (recorded,) = TapeReader(job.tape).sessions()
    (replay,) = plan_replay([(job.case, recorded)], tmp_path / "results", "replay")
    run_job(replay, env_for(server))
    (replayed,) = TapeReader(replay.tape).sessions()
    for path, session, level, other in (
        (job.tape, recorded, LIVE_LEVEL, DEFAULT_LEVEL),
        (replay.tape, replayed, DEFAULT_LEVEL, LIVE_LEVEL),
    ):
        data = path.read_bytes()
        frames = data[file_header_size(data[:FILE_FIXED_SIZE]) :]
        assert frames == _encoded(session, level)
        assert frames != _encoded(session, other)


def test_progress_lines_name_model_case_attempt_and_verdict(
    tmp_path: Path, server: ChatServer
) -> None:
    (job,) = plan_live(suites_of(tmp_path, {"c": "hi"}), ["m1"], 1, tmp_path / "t", "r")
    result = run_job(job, env_for(server))
    stream = io.StringIO()
    Progress(3, stream)(result.attempt_result())
    assert stream.getvalue() == "[1/3] m1 :: c (attempt 1) PASS\n"


# -- the replay decision -----------------------------------------------------------

PASS = Score(passed=True, reason="ok")
FAIL = Score(passed=False, reason="bad")


@pytest.mark.parametrize(
    ("rescored", "replayed", "stale", "change"),
    [
        (PASS, PASS, "", Change.UNCHANGED),
        (FAIL, FAIL, "", Change.UNCHANGED),
        (PASS, FAIL, "", Change.REGRESSION),
        (FAIL, PASS, "", Change.IMPROVEMENT),
        (PASS, PASS, "diverged at messages[0]", Change.STALE),
        (PASS, None, "", Change.UNTESTED),
        (FAIL, None, "", Change.UNTESTED),
    ],
)
def test_the_replay_decision_table(
    rescored: Score, replayed: Score | None, stale: str, change: Change
) -> None:
    assert decide(rescored, replayed, stale).change is change


def test_exit_codes_and_scoreboard_count_each_change() -> None:
    rows = [
        ("s", "a", decide(PASS, PASS)),
        ("s", "a", decide(PASS, FAIL)),
        ("s", "b", decide(FAIL, PASS)),
        ("t", "c", decide(PASS, None, "stale")),
    ]
    (s, t) = scoreboard(rows)
    assert (s.cases, s.attempts, s.rescored_passed, s.replayed_passed) == (2, 3, 2, 2)
    assert (s.regressions, s.improvements, s.stale) == (1, 1, 0)
    assert (t.attempts, t.stale) == (1, 1)
    assert replay_exit_code(d.change for _, _, d in rows) == 1
    assert replay_exit_code([Change.STALE, Change.IMPROVEMENT]) == 3
    assert replay_exit_code([Change.UNCHANGED]) == 0
    assert replay_exit_code([Change.CHANGED, Change.STALE]) == 1
    assert replay_exit_code([Change.UNTESTED, Change.STALE]) == 2
    assert replay_exit_code([Change.UNTESTED, Change.REGRESSION]) == 1
    assert replay_exit_code([]) == 0


def test_a_harness_change_outranks_both_verdicts_and_an_assumption_keeps_the_outcome() -> None:
    changed = HarnessChange(
        change=Change.CHANGED, what="tool result", label="tool result changed: read",
        summary="tool result changed: read {}", edit_key="k",
    )  # fmt: skip
    strict = decide(PASS, None, harness=changed)
    assert (strict.change, strict.assumed, strict.detail) == (
        Change.CHANGED, None, "tool result changed: read {}",
    )  # fmt: skip
    assumed = decide(PASS, FAIL, harness=changed, assumed=True)
    assert (assumed.change, assumed.assumed) == (Change.CHANGED, Change.REGRESSION)
    untested = decide(PASS, PASS, untested="the workspace could not be made")
    assert (untested.change, untested.detail) == (
        Change.UNTESTED, "the workspace could not be made",
    )  # fmt: skip
