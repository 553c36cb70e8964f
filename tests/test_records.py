"""Run records and the history index: values, JSON, atomic files, the throttled writer."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import attrs
import pytest

from evaltape.recorder import Usage
from evaltape.scoring import (
    AttemptResult,
    RecordError,
    RunKind,
    RunLog,
    RunRecord,
    RunState,
    Verdict,
    read_history,
    read_record,
)
from evaltape.scoring.results._history import append_history, entry_from_record
from evaltape.scoring.results._record_files import write_record
from evaltape.scoring.results._record_json import record_from_json, record_to_json
from evaltape.scoring.results._records import (
    Exemption,
    GateInputs,
    git_commit,
    inconsistent_cases,
    make_run_id,
    tally,
)

T0 = 1_796_000_000.0  # 2026-11-29T...Z


class FakeClock:
    """Unix time that advances by ``step`` on every reading."""

    def __init__(self, start: float = T0, step: float = 0.0) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        value = self.now
        self.now += self.step
        return value


def attempt(case: str, model: str, index: int, verdict: Verdict, **kw: object) -> AttemptResult:
    return AttemptResult(
        case_id=case, suite="core", model=model, attempt=index, verdict=verdict, **kw
    )  # type: ignore[arg-type]


def record(run_id: str = "20261129T231500Z-abcdef", **kw: object) -> RunRecord:
    base = RunRecord(
        run_id=run_id,
        kind=RunKind.LIVE,
        state=RunState.RUNNING,
        started_at=T0,
        commit="1a2b3c4",
        models=("m-a", "m-b"),
        suites=("core",),
        trials=3,
        total=12,
    )
    return attrs.evolve(base, **kw)


def test_a_record_round_trips_through_json_and_a_file(tmp_path: Path) -> None:
    full = record(
        kind=RunKind.REPLAY,
        state=RunState.COMPLETED,
        finished_at=T0 + 61.5,
        notes=("first note", "second"),
        attempts=(
            attempt(
                "edit-file",
                "m-a",
                0,
                Verdict.FAILED,
                reason="expected tool edit\n  got read",
                usage=Usage(
                    input_tokens=1200,
                    output_tokens=80,
                    cache_read_tokens=1000,
                    cache_write_tokens=7,
                    reasoning_tokens=30,
                ),
                duration=3.25,
                tape="core/edit-file.tape",
                session_id="s-1",
                mode=RunKind.REPLAY,
                tainted=True,
                quarantined=True,
                known_gap=True,
                rescored=Verdict.PASSED,
                replayed=Verdict.FAILED,
            ),
            attempt("plan", "m-b", 2, Verdict.SKIPPED, usage=Usage.unknown()),
        ),
    )
    assert full.attempts[0].reason == "expected tool edit got read"
    data = json.loads(json.dumps(record_to_json(full)))
    assert data["schema"] == 1
    assert data["completed"] == 2
    assert record_from_json(data, "x") == full
    path = write_record(tmp_path, full)
    assert path == tmp_path / "runs" / f"{full.run_id}.json"
    assert read_record(path) == full


def test_gate_inputs_round_trip_and_records_without_them_still_read(tmp_path: Path) -> None:
    inputs = GateInputs(
        model="m-a",
        decision="closed",
        baseline_runs=("r3", "r2", "r1"),
        history=("r3", "r1"),
        exemptions=(Exemption(suite="core", case_id="plan", run_id="r1"),),
        reruns=12,
        alpha=0.01,
        confirm=12,
        plan_drop=0.1,
        judge_status="not needed",
        floor_failures=("core/essay",),
    )
    gated = record(state=RunState.COMPLETED, gate="closed", gate_inputs=(inputs,))
    data = json.loads(json.dumps(record_to_json(gated)))
    assert data["gate_inputs"][0]["exemptions"] == [{"suite": "core", "case": "plan", "run": "r1"}]
    assert record_from_json(data, "x") == gated
    del data["gate_inputs"]  # a record written before the inputs were kept
    assert record_from_json(data, "x").gate_inputs == ()
    data["gate_inputs"] = [{"model": "m-a"}]
    with pytest.raises(RecordError, match=r'x: gate_inputs\[0\]: missing field "exemptions"'):
        record_from_json(data, "x")


def test_a_newer_schema_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    path = write_record(tmp_path, record())
    data = json.loads(path.read_text())
    data["schema"] = 7
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError, match=r"run record schema 7 is newer .* upgrade evaltape"):
        read_record(path)


def test_a_bad_field_is_named_with_its_file_and_attempt(tmp_path: Path) -> None:
    path = write_record(tmp_path, record(attempts=(attempt("a", "m-a", 0, Verdict.PASSED),) * 2))
    data = json.loads(path.read_text())
    data["attempts"][1]["verdict"] = "won"
    path.write_text(json.dumps(data))
    with pytest.raises(RecordError) as caught:
        read_record(path)
    assert str(caught.value) == (
        f'{path}: attempts[1]: field "verdict": expected one of passed, failed, error, '
        'skipped, interrupted, got "won"'
    )
    path.write_text('{"schema": 1,\n "run_id": ')
    with pytest.raises(RecordError, match=r"invalid JSON at line 2 column"):
        read_record(path)


def test_run_ids_sort_by_start_time_and_carry_six_hex_digits() -> None:
    seeds = iter([b"\x00\x00\x01", b"\xff\xff\xff", b"\x12\x34\x56"])
    ids = [make_run_id(lambda t=t: T0 + t, lambda n: next(seeds)[:n]) for t in (0, 1, 3600)]
    assert all(re.fullmatch(r"\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{6}", i) for i in ids)
    assert ids == sorted(ids)
    assert ids[1].endswith("-ffffff")
    assert ids[0][:15] == time.strftime("%Y%m%dT%H%M%S", time.gmtime(T0))


def test_runs_started_in_the_same_second_sort_in_start_order() -> None:
    tails = iter([b"\xff\xff\xff", b"\x00\x00\x00"])  # a tail that would sort them wrongly
    first, second = (make_run_id(lambda t=t: T0 + t, lambda n: next(tails)[:n]) for t in (0.1, 0.2))
    assert first < second


def test_git_commit_is_the_short_head_inside_a_repository_and_empty_outside(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    (outside / ".git").write_text("not a repository")  # stops git searching upward
    assert git_commit(outside) == ""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=repo, check=True)
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    assert head and git_commit(repo) == head


@pytest.mark.slow
def test_a_concurrent_reader_never_sees_a_partial_record(tmp_path: Path) -> None:
    attempts = [attempt(f"case-{i:03d}", "m-a", 0, Verdict.PASSED) for i in range(150)]
    write_record(tmp_path, record())
    path = tmp_path / "runs" / f"{record().run_id}.json"
    done = threading.Event()

    def writer() -> None:
        for n in range(1, 151):
            write_record(tmp_path, record(attempts=tuple(attempts[:n])))
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    seen: list[int] = []
    while not done.is_set():
        seen.append(read_record(path).completed)  # raises on a torn file
    thread.join()
    assert len(seen) > 1
    assert seen == sorted(seen)  # versions only move forward
    assert read_record(path).completed == 150
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [path.name]  # no temp files left


@pytest.mark.slow
def test_many_adds_cost_few_rewrites_and_finish_always_writes(tmp_path: Path) -> None:
    clock = FakeClock(step=0.01)  # each add reads the clock once: 100 adds per second
    log = RunLog(tmp_path, record(total=1000), clock=clock, interval=0.5)
    log.start()
    for i in range(999):
        log.add(attempt(f"c{i}", "m-a", 0, Verdict.PASSED if i % 3 else Verdict.FAILED))
    on_disk = read_record(log.path)
    assert 900 < on_disk.completed < 999  # progress is visible while running
    assert on_disk.state is RunState.RUNNING
    log.add(attempt("last", "m-b", 0, Verdict.ERROR))
    writes_before_finish = log.writes
    assert writes_before_finish <= 1 + 1000 * 0.01 / 0.5 + 1
    final = log.finish(RunState.COMPLETED, notes=("done",))
    assert log.writes == writes_before_finish + 1
    on_disk = read_record(log.path)
    assert on_disk == final
    assert on_disk.completed == 1000 and on_disk.state is RunState.COMPLETED
    assert on_disk.notes == ("done",) and on_disk.finished_at == on_disk.updated_at
    with pytest.raises(RuntimeError, match="already finished"):
        log.add(attempt("late", "m-a", 0, Verdict.PASSED))
    (entry,) = read_history(tmp_path)
    assert entry.run_id == final.run_id
    assert [(m.model, m.passed, m.total) for m in entry.models] == [
        ("m-a", 666, 999),
        ("m-b", 0, 1),
    ]


def test_adds_from_many_threads_all_land(tmp_path: Path) -> None:
    log = RunLog(tmp_path, record(total=400), clock=FakeClock(step=0.01), interval=0.5)
    log.start()
    threads = [
        threading.Thread(
            target=lambda k=k: [
                log.add(attempt(f"t{k}-{i}", "m-a", 0, Verdict.PASSED)) for i in range(100)
            ]
        )
        for k in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = log.finish(RunState.CANCELLED)
    assert read_record(log.path).completed == 400 == final.completed


def test_tallies_and_inconsistent_cases_count_judged_attempts() -> None:
    attempts = [
        attempt("flip", "m-a", 0, Verdict.PASSED),
        attempt("flip", "m-a", 1, Verdict.FAILED),
        attempt("flip", "m-a", 2, Verdict.PASSED),
        attempt("flip", "m-b", 0, Verdict.PASSED),
        attempt("flip", "m-b", 1, Verdict.SKIPPED),
        attempt("steady", "m-a", 0, Verdict.FAILED),
        attempt("steady", "m-a", 1, Verdict.ERROR),
    ]
    (flip,) = inconsistent_cases(attempts)
    assert (flip.case_id, flip.model, flip.passed, flip.total) == ("flip", "m-a", 2, 3)
    counts = {m.model: (m.passed, m.total) for m in tally(attempts, ("m-c",))}
    assert counts == {"m-c": (0, 0), "m-a": (2, 5), "m-b": (1, 1)}


APPENDER = """
import sys
from pathlib import Path
import attrs
from evaltape.scoring import AttemptResult, RunKind, RunRecord, RunState, Verdict
from evaltape.scoring.results._history import append_history, entry_from_record

results, tag = Path(sys.argv[1]), sys.argv[2]
flips = tuple(
    AttemptResult(case_id=f"case-{i:04d}-" + "x" * 40, suite="s", model="m",
                  attempt=k, verdict=Verdict.PASSED if k else Verdict.FAILED)
    for i in range(60) for k in range(2)
)
for n in range(150):
    rec = RunRecord(run_id=f"{tag}-{n:04d}", kind=RunKind.LIVE, state=RunState.COMPLETED,
                    started_at=1.0, finished_at=2.0, models=("m",), attempts=flips)
    append_history(results, entry_from_record(rec))
"""


@pytest.mark.slow
def test_two_processes_appending_history_keep_every_line_whole(tmp_path: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", APPENDER, str(tmp_path), tag])
        for tag in ("one", "two")
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    data = (tmp_path / "history.jsonl").read_bytes()
    # Blank lines may appear (a writer that saw another's line half-landed starts afresh).
    lines = [line for line in data.split(b"\n") if line]
    assert data.endswith(b"\n") and len(lines) == 300
    assert min(len(line) for line in lines) > 4096  # big enough to tear if not atomic
    entries = read_history(tmp_path)  # strict: raises on any damaged line
    ids = sorted(e.run_id for e in entries)
    assert ids == sorted(
        [f"one-{n:04d}" for n in range(150)] + [f"two-{n:04d}" for n in range(150)]
    )
    assert all(len(e.inconsistent) == 60 for e in entries)


def test_a_torn_history_line_is_reported_and_the_next_append_starts_fresh(
    tmp_path: Path,
) -> None:
    first = entry_from_record(record(run_id="r1", state=RunState.COMPLETED, finished_at=T0 + 1))
    append_history(tmp_path, first)
    with (tmp_path / "history.jsonl").open("ab") as handle:
        handle.write(b'{"schema": 1, "run_id": "torn')  # a writer killed mid-line
    second = attrs.evolve(first, run_id="r2")
    append_history(tmp_path, second)
    problems: list[str] = []
    entries = read_history(tmp_path, on_problem=lambda p: problems.append(p.message))
    assert [e.run_id for e in entries] == ["r1", "r2"]
    assert len(problems) == 1 and problems[0].startswith("history.jsonl:2: invalid JSON")
    with pytest.raises(RecordError, match=r"history\.jsonl:2:"):
        read_history(tmp_path)
