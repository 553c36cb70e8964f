"""Rescoring on every core: the process pool gives what one thread gives, and fails loudly.

The shipped cassettes (168 recorded sessions of the reference agent, with judged,
coding and trajectory cases) are rescored in this process and in a pool of two
processes, in batches small enough that every batch goes to the pool, with the
tapes sent whole and with their sessions sent one by one; the results must be
the same, in the same order.  So must a damaged tape's lines and notes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import exchange

from evaltape.recorder import Mode, SessionStarted, Status, open_session
from evaltape.scoring import load_suites
from evaltape.scoring.checks._scorers import make_scorer
from evaltape.scoring.run.executors._batches import RescoreFailed
from evaltape.scoring.run.executors._process_rescore import ProcessRescorer
from evaltape.scoring.run.rescore._exec import Rescorer
from evaltape.scoring.run.rescore._rescore import TapesRescored
from evaltape.scoring.run.rescore._tapes import rescore_on, rescore_tapes
from evaltape.scoring.run.rescore._whole import WHOLE_TAPE_BYTES
from evaltape.scoring.sandbox import Sandbox
from evaltape.scoring.verdicts._replaycheck import find_tapes

REPO = Path(__file__).parent.parent
pytestmark = pytest.mark.slow


class Pool:
    """A rescorer factory that keeps the pool it made, to count its batches; tapes of up
    to ``whole_limit`` bytes go whole (0: every session is read here and sent)."""

    def __init__(self, batch: int, whole_limit: int = 0) -> None:
        self.batch = batch
        self.whole_limit = whole_limit
        self.made: list[ProcessRescorer] = []

    def __call__(self, scorer: Any, floors: Any) -> Rescorer:
        made = ProcessRescorer(
            scorer, floors, processes=2, batch=self.batch, whole_limit=self.whole_limit
        )
        self.made.append(made)
        return made


@pytest.mark.parametrize("whole", [False, True], ids=["sessions", "whole-tapes"])
def test_the_shipped_cassettes_rescore_the_same_in_two_processes_as_in_one_thread(
    whole: bool,
) -> None:
    suites = load_suites([REPO / "evals"], rubrics_dir=REPO / "evals" / "rubrics")
    cases = {c.id: c for s in suites for c in s.cases}
    tapes = find_tapes(REPO / "cassettes")
    scorer = make_scorer(sandbox=Sandbox.find())
    where = {"cassettes": REPO / "cassettes", "results": REPO / ".evaltape" / "results"}
    here = rescore_tapes(tapes, cases, scorer, **where)
    pool = Pool(batch=1 if whole else 16, whole_limit=WHOLE_TAPE_BYTES if whole else 0)
    there = rescore_on(pool, tapes, cases, scorer, **where)
    assert len(here.rescored) == 168
    assert [r.attempt_result() for r in there.rescored] == [
        r.attempt_result() for r in here.rescored
    ]
    assert [r.judgement for r in there.rescored] == [r.judgement for r in here.rescored]
    assert (there.skipped, there.notes) == (here.skipped, here.notes)
    if whole:  # every tape went to the pool as it is, one batch each
        assert pool.made[0].tapes == pool.made[0].batches == len(tapes) > 1
    else:  # every session went to the pool
        assert pool.made[0].batches == 168 // 16 + 1 and pool.made[0].tapes == 0


def test_a_damaged_tape_sent_whole_gives_the_lines_and_notes_reading_it_here_gives(
    tmp_path: Path,
) -> None:
    cases = _suite_with_scorer(tmp_path, "damage_checks")
    tape = tmp_path / "t.tape"
    _tape(tape, 3)
    gone = SessionStarted(
        session_id="00000000000000aa", started_at=0.0, case_id="gone", model="m", mode=Mode.LIVE
    )
    with open_session(tape, gone, clock=lambda: 1.0) as writer:
        writer.end(Status.COMPLETED)
    _tape(tape, 2)  # two more sessions (their ids repeat: the reader says so)
    data = bytearray(tape.read_bytes())
    data[len(data) // 3] ^= 0xFF  # a corrupt frame in the first sessions
    unended = SessionStarted(
        session_id="00000000000000bb", started_at=0.0, case_id="c", model="m", mode=Mode.LIVE
    )
    tape.write_bytes(bytes(data))
    with open_session(tape, unended, clock=lambda: 1.0) as writer:
        writer.end(Status.COMPLETED)
    tape.write_bytes(tape.read_bytes()[:-5])  # its end frame cut short: it has no end
    where = {"cassettes": tmp_path, "results": tmp_path}
    here = rescore_tapes([tape], cases, make_scorer(), **where)
    pool = Pool(batch=1, whole_limit=WHOLE_TAPE_BYTES)
    there = rescore_on(pool, [tape], cases, make_scorer(), **where)
    assert pool.made[0].tapes == pool.made[0].batches == 1
    assert here.notes and here.skipped and here.rescored  # the tape shows each kind
    assert (there.rescored, there.skipped, there.notes) == (
        here.rescored,
        here.skipped,
        here.notes,
    )


def _suite_with_scorer(tmp_path: Path, module: str) -> dict[str, Any]:
    # A module name of the test's own: every folder a scorer was imported from stays on
    # sys.path, and processes started later inherit it.
    (tmp_path / f"{module}.py").write_text(
        "from evaltape.scoring import Score\n\n"
        "def ok(case, session):\n"
        "    return Score(passed=True, reason='')\n"
    )
    suites = tmp_path / "evals"
    suites.mkdir()
    case = {
        "id": "c",
        "prompt": "p",
        "failureCategory": "f",
        "whyModelBacked": "w",
        "scorer": f"{module}:ok",
    }
    (suites / "s.jsonl").write_text(json.dumps(case) + "\n")
    loaded = load_suites([suites], rubrics_dir=tmp_path, code_dir=tmp_path)
    return {c.id: c for s in loaded for c in s.cases}


def _tape(path: Path, sessions: int) -> None:
    for n in range(sessions):
        start = SessionStarted(
            session_id=f"{n + 1:016x}", started_at=0.0, case_id="c", model="m", mode=Mode.LIVE
        )
        with open_session(path, start, clock=lambda: 1.0) as writer:
            writer.append(
                exchange(
                    "http://x/v1/chat/completions",
                    {"model": "m", "messages": [{"role": "user", "content": "p"}]},
                    {"choices": [{"message": {"role": "assistant", "content": "done"}}]},
                )
            )
            writer.end(Status.COMPLETED)


def _rescore(tmp_path: Path, module: str, sessions: int, pool: Pool) -> TapesRescored:
    """Rescore ``sessions`` sessions of a case with the custom scorer ``module:ok``."""
    cases = _suite_with_scorer(tmp_path, module)
    tape = tmp_path / "t.tape"
    _tape(tape, sessions)
    if module == "vanishing_checks":
        (tmp_path / f"{module}.py").unlink()  # imported here already; a new process cannot
    return rescore_on(pool, [tape], cases, make_scorer(), cassettes=tmp_path, results=tmp_path)


def test_custom_scorers_travel_by_name_to_the_processes(tmp_path: Path) -> None:
    pool = Pool(batch=2)
    outcome = _rescore(tmp_path, "travelling_checks", 6, pool)
    assert [r.score.passed for r in outcome.rescored] == [True] * 6
    assert any(c.name == "travelling_checks:ok" for c in outcome.rescored[0].score.checks)
    assert pool.made[0].batches == 3


def test_a_scorer_the_processes_cannot_import_fails_the_rescore_in_one_line(
    tmp_path: Path,
) -> None:
    with pytest.raises(RescoreFailed) as caught:
        _rescore(tmp_path, "vanishing_checks", 4, Pool(batch=2))
    message = str(caught.value)
    assert message.startswith("rescore: a batch of sessions failed: ScorerUnavailable: ")
    assert "cannot import vanishing_checks" in message and "\n" not in message


def test_fewer_sessions_than_a_batch_are_scored_without_starting_a_pool(tmp_path: Path) -> None:
    pool = Pool(batch=64)
    outcome = _rescore(tmp_path, "few_checks", 3, pool)
    assert len(outcome.rescored) == 3 and pool.made[0].batches == 0


def test_the_cli_rescore_on_every_core_prints_what_threads_print(tmp_path: Path) -> None:
    outputs = []
    for executor in ("threads", "auto"):
        done = subprocess.run(
            [sys.executable, "-m", "evaltape.scoring.cli", "rescore", "--executor", executor,
             "--results", str(tmp_path / executor), "--json", "-"],
            cwd=REPO, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        run_id = found.pop("run_id")
        found.pop("record_path")
        for clock in ("started_at", "finished_at", "updated_at"):
            found["record"].pop(clock)
        outputs.append(json.loads(json.dumps(found).replace(run_id, "RUN")))
    assert outputs[0]["counts"] == outputs[1]["counts"] and outputs[0]["counts"]
    assert outputs[0] == outputs[1]


def test_a_pool_started_by_sessions_still_gets_the_cases_with_the_whole_tapes_after(
    tmp_path: Path,
) -> None:
    """Today's cases go to the processes once, when the pool starts with a whole tape;
    a pool the sessions of a larger tape started gets them with each later tape."""
    cases = _suite_with_scorer(tmp_path, "mixed_checks")
    big, small = tmp_path / "big.tape", tmp_path / "small.tape"
    _tape(big, 6)
    _tape(small, 1)
    limit = (big.stat().st_size + small.stat().st_size) // 2
    where = {"cassettes": tmp_path, "results": tmp_path}
    here = rescore_tapes([big, small], cases, make_scorer(), **where)
    for tapes in ([big, small], [small, big]):
        pool = Pool(batch=1, whole_limit=limit)
        there = rescore_on(pool, tapes, cases, make_scorer(), **where)
        assert pool.made[0].tapes == 1 and pool.made[0].batches == 7
        assert len(there.rescored) == 7
        key = sorted((r.tape, r.session_id, r.verdict) for r in there.rescored)
        assert key == sorted((r.tape, r.session_id, r.verdict) for r in here.rescored)


def test_rescoring_a_run_record_in_two_processes_gives_what_one_thread_gives() -> None:
    """A run's attempts are scored where the rescore's executor says, not only here: the
    shipped cassettes' sessions, as a rescore record names them, rescored in a pool."""
    from evaltape.scoring import RunKind, RunRecord, RunState
    from evaltape.scoring.run.rescore._run import rescore_run

    suites = load_suites([REPO / "evals"], rubrics_dir=REPO / "evals" / "rubrics")
    cases = {c.id: c for s in suites for c in s.cases}
    scorer = make_scorer(sandbox=Sandbox.find())
    where = {"cassettes": REPO / "cassettes", "results": REPO / ".evaltape" / "results"}
    tapes = rescore_tapes(find_tapes(REPO / "cassettes"), cases, scorer, **where)
    record = RunRecord(
        run_id="20261203T000000.000Z-0000aa",
        kind=RunKind.RESCORE,
        state=RunState.COMPLETED,
        started_at=0.0,
        attempts=tuple(r.attempt_result() for r in tapes.rescored),
    )
    here = rescore_run(record, cases, scorer, **where)
    pool = Pool(batch=16)
    there = rescore_run(record, cases, scorer, **where, rescorer=pool)
    assert len(here.rescored) == 168 and pool.made[0].batches == 168 // 16 + 1
    assert [r.attempt_result() for r in there.rescored] == [
        r.attempt_result() for r in here.rescored
    ]
    assert (there.skipped, there.notes) == (here.skipped, here.notes)
