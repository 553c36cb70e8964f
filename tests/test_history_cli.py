"""`evaltape history` and `evaltape status`: click's runner on real files, a subprocess
where the exit code and the absence of a traceback matter."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from evaltape.scoring import AttemptResult, RunKind, RunLog, RunRecord, RunState, Verdict
from evaltape.scoring.cli.main import cli
from evaltape.scoring.results._record_files import write_record
from evaltape.scoring.results._records import make_run_id

T0 = 1_796_000_000.0


def _invoke(results: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--results", str(results)])


def _attempt(case: str, model: str, index: int, verdict: Verdict) -> AttemptResult:
    return AttemptResult(case_id=case, suite="core", model=model, attempt=index, verdict=verdict)


def _run(
    results: Path,
    run_id: str,
    verdicts: dict[tuple[str, str], list[Verdict]],
    *,
    state: RunState = RunState.COMPLETED,
    kind: RunKind = RunKind.LIVE,
    total: int | None = None,
) -> RunLog:
    """Record a run through the real writer; ``state`` RUNNING leaves it in progress."""
    clock_value = [T0]
    models = tuple(dict.fromkeys(m for _, m in verdicts))
    count = sum(len(v) for v in verdicts.values())
    log = RunLog(
        results,
        RunRecord(
            run_id=run_id,
            kind=kind,
            state=RunState.RUNNING,
            started_at=T0,
            commit="abc1234",
            models=models,
            suites=("core",),
            trials=3,
            total=total if total is not None else count,
        ),
        clock=lambda: clock_value[0],
    )
    log.start()
    for (case, model), outcomes in verdicts.items():
        for i, v in enumerate(outcomes):
            clock_value[0] += 1.0
            log.add(_attempt(case, model, i, v))
    clock_value[0] += 1.0
    if state is RunState.RUNNING:
        log.flush()
    else:
        log.finish(state)
    return log


P, F, E = Verdict.PASSED, Verdict.FAILED, Verdict.ERROR


@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    _run(folder, "20261129T100000Z-aaaaaa", {("a", "m1"): [P, P, P], ("b", "m1"): [F, F, F]})
    _run(
        folder,
        "20261129T110000Z-bbbbbb",
        {("a", "m1"): [P, F, P], ("b", "m1"): [P, P, P], ("a", "m2"): [E, P, F]},
        kind=RunKind.REPLAY,
    )
    _run(
        folder,
        "20261129T120000Z-bbbccc",
        {("a", "m1"): [P]},
        state=RunState.RUNNING,
        total=6,
    )
    return folder


def test_history_lists_finished_runs_newest_last_with_flip_markers(results: Path) -> None:
    done = _invoke(results, "history")
    assert done.exit_code == 0, done.output
    rows = done.stdout.splitlines()
    assert len(rows) == 2  # the run still in progress is not in the history yet
    assert "20261129T100000Z-aaaaaa" in rows[0] and "m1 3/6" in rows[0]
    assert "inconsistent" not in rows[0]
    second = rows[1].split()
    assert second[2:6] == ["20261129T110000Z-bbbbbb", "replay", "abc1234", "completed"]
    assert "m1 5/6" in rows[1] and "m2 1/3" in rows[1] and rows[1].endswith("~2 inconsistent")
    assert rows[0].startswith(time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(T0)))


def test_history_limit_and_json(results: Path) -> None:
    done = _invoke(results, "history", "--limit", "1", "--json")
    assert done.exit_code == 0
    (line,) = done.stdout.splitlines()
    entry = json.loads(line)
    assert entry["run_id"] == "20261129T110000Z-bbbbbb"
    assert entry["models"] == [
        {"model": "m1", "passed": 5, "total": 6},
        {"model": "m2", "passed": 1, "total": 3},
    ]
    assert {(i["case"], i["model"]) for i in entry["inconsistent"]} == {("a", "m1"), ("a", "m2")}


def test_a_corrupt_history_line_is_reported_and_skipped(results: Path) -> None:
    path = results / "history.jsonl"
    good = path.read_text().splitlines()
    broken = json.loads(good[0])
    broken["state"] = "exploded"
    path.write_text("\n".join([good[0], "{not json", json.dumps(broken), good[1]]) + "\n")
    done = _invoke(results, "history")
    assert done.exit_code == 1
    assert len(done.stdout.splitlines()) == 2
    errors = done.stderr.splitlines()
    assert errors[0].startswith("evaltape: history.jsonl:2: invalid JSON at column 2")
    assert errors[1] == (
        'evaltape: history.jsonl:3: field "state": expected one of running, completed, '
        'failed, cancelled, crashed, got "exploded"'
    )


def test_history_with_no_runs_says_so(tmp_path: Path) -> None:
    done = _invoke(tmp_path / "nothing", "history")
    assert done.exit_code == 0 and done.stdout == ""
    assert "no runs recorded" in done.stderr


def test_status_of_the_latest_run_shows_progress_while_it_runs(results: Path) -> None:
    done = _invoke(results, "status")
    assert done.exit_code == 0, done.output
    lines = dict(line.split(None, 1) for line in done.stdout.splitlines())
    assert lines["run"] == "20261129T120000Z-bbbccc (live)"
    assert lines["state"] == "running"
    assert lines["progress"] == "1/6 attempts"
    assert lines["verdicts"] == "1 passed, 0 failed, 0 error, 0 skipped"
    assert "last written" in lines["elapsed"]
    summary = json.loads(_invoke(results, "status", "latest", "--json").stdout)
    assert (summary["state"], summary["completed"], summary["total"]) == ("running", 1, 6)


def test_status_resolves_ids_unique_prefixes_and_paths(results: Path) -> None:
    by_prefix = _invoke(results, "status", "20261129T11", "--json")
    assert by_prefix.exit_code == 0
    summary = json.loads(by_prefix.stdout)
    assert summary["run_id"] == "20261129T110000Z-bbbbbb"
    assert (summary["passed"], summary["failed"], summary["error"]) == (6, 2, 1)
    assert summary["state"] == "completed" and summary["elapsed"] == 10.0
    path = results / "runs" / "20261129T100000Z-aaaaaa.json"
    by_path = _invoke(results, "status", str(path))
    assert by_path.exit_code == 0 and "3/6" in by_path.stdout
    exact = _invoke(results, "status", "20261129T100000Z-aaaaaa")
    assert exact.stdout == by_path.stdout
    bare_name = _invoke(results, "status", path.name)
    assert bare_name.exit_code == 0 and bare_name.stdout == by_path.stdout


def test_status_refuses_unknown_and_ambiguous_runs_with_exit_2(results: Path) -> None:
    unknown = _invoke(results, "status", "2030")
    assert unknown.exit_code == 2
    assert unknown.stderr == f'evaltape: error: no run "2030" in {results / "runs"}\n'
    ambiguous = _invoke(results, "status", "20261129T1")
    assert ambiguous.exit_code == 2
    assert ambiguous.stderr.startswith('evaltape: error: run prefix "20261129T1" is ambiguous')
    assert "3 runs match" in ambiguous.stderr
    empty = _invoke(results.parent / "empty", "status")
    assert empty.exit_code == 2 and "no runs recorded" in empty.stderr


@pytest.mark.slow
def test_a_damaged_or_newer_record_is_one_line_without_traceback(results: Path) -> None:
    run_id = make_run_id(lambda: T0 + 86400, lambda n: b"\x01" * n)
    path = write_record(
        results,
        RunRecord(run_id=run_id, kind=RunKind.RESCORE, state=RunState.FAILED, started_at=T0),
    )
    data = json.loads(path.read_text())
    data["schema"] = 2
    path.write_text(json.dumps(data))
    args = ["status", run_id, "--results", str(results)]
    done = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
    assert "run record schema 2 is newer" in done.stderr
    missing = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaltape.scoring.cli",
            "status",
            "nope",
            "--results",
            str(results),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2 and len(missing.stderr.splitlines()) == 1
