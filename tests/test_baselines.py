"""Baselines and the gate's view of history, on real run records written by ``RunLog``."""

from __future__ import annotations

import itertools
from pathlib import Path

import attrs
import pytest

from evaltape.scoring import (
    AttemptResult,
    GateState,
    RunKind,
    RunRecord,
    RunState,
    Verdict,
    decide_gate,
)
from evaltape.scoring.results._baselines import (
    BaselineError,
    check_name,
    default_name,
    from_record,
    load,
    save,
    timeline,
)
from evaltape.scoring.results._gate_history import exemptions, gate_history
from evaltape.scoring.results._history import RunLog
from evaltape.scoring.results._records import Exemption, GateInputs

_clock = itertools.count(1_800_000_000)


def attempt(
    case: str, passed: bool, *, model: str = "m", n: int = 0, fp: str = "v1"
) -> AttemptResult:
    return AttemptResult(
        suite="s",
        case_id=case,
        model=model,
        attempt=n,
        verdict=Verdict.PASSED if passed else Verdict.FAILED,
        fingerprint=fp,
    )


def write_run(
    results: Path,
    run_id: str,
    attempts: list[AttemptResult],
    *,
    purpose: str = "",
    blocked: bool = False,
    accepted: bool = False,
    kind: RunKind = RunKind.LIVE,
    exempt: tuple[Exemption, ...] = (),
) -> RunRecord:
    record = RunRecord(
        run_id=run_id,
        kind=kind,
        state=RunState.RUNNING,
        started_at=float(next(_clock)),
        models=tuple(sorted({a.model for a in attempts})),
        suites=("s",),
        trials=1,
        total=len(attempts),
        purpose=purpose,
    )
    log = RunLog(results, record, clock=lambda: float(next(_clock)))
    log.start()
    for a in attempts:
        log.add(a)
    log.update(
        gate="closed" if blocked or accepted else "open",
        gate_blocked=blocked,
        baseline_accepted=accepted,
        gate_inputs=(GateInputs(model="m", decision="open", exemptions=exempt),) if exempt else (),
    )
    return log.finish(RunState.COMPLETED)


def pool(results: Path, model: str = "m", **kw: object) -> list[str]:
    h = gate_history(results, model, trials=1, **kw)  # type: ignore[arg-type]
    return [p.record.run_id for p in h.pool]


def test_the_baseline_pool_skips_blocked_runs_entry_checks_and_other_models(
    tmp_path: Path,
) -> None:
    write_run(tmp_path, "r1", [attempt("a", True)])
    write_run(tmp_path, "r2", [attempt("a", True, model="other")])
    write_run(tmp_path, "r3", [attempt("a", False)], blocked=True)
    write_run(tmp_path, "r4", [attempt("a", False)], purpose="entry_check")
    write_run(tmp_path, "r5", [attempt("a", True)], kind=RunKind.REPLAY)
    assert pool(tmp_path) == ["r1"]
    write_run(tmp_path, "r6", [attempt("a", False)], accepted=True)
    assert pool(tmp_path) == ["r6", "r1"]  # waved through: it may be pooled
    assert pool(tmp_path, exclude="r6") == ["r1"]
    assert pool(tmp_path, before="r6") == ["r1"]
    write_run(tmp_path, "r7", [attempt("a", True)])
    write_run(tmp_path, "r8", [attempt("a", True)])
    assert pool(tmp_path) == ["r8", "r7", "r6"]  # the last three
    assert pool(tmp_path, "nobody") == []


def exempt_now(results: Path, *cases: str) -> set[tuple[str, str]]:
    h = gate_history(results, "m", trials=1)
    prints = {("s", c): "v1" for c in cases}
    return {(e.case_id, e.run_id) for e in exemptions(h.gated, "m", prints)}


def test_only_gated_runs_the_gate_let_through_earn_an_exemption(tmp_path: Path) -> None:
    write_run(tmp_path, "r1", [attempt("old-def", False, fp="v0"), attempt("flaky", False)])
    write_run(tmp_path, "r2", [attempt("bought", False)])  # not gated
    write_run(tmp_path, "r3", [attempt("accepted", False)], purpose="gate", accepted=True)
    write_run(tmp_path, "r4", [attempt("broken", False)], purpose="gate", blocked=True)
    write_run(tmp_path, "r5", [attempt("entry", False)], purpose="entry_check")
    assert exempt_now(tmp_path, "old-def", "flaky", "bought", "accepted", "broken") == set()
    write_run(tmp_path, "r6", [attempt("flaky", False), attempt("old-def", False, fp="v0")],
              purpose="gate")  # fmt: skip
    assert exempt_now(tmp_path, "old-def", "flaky") == {("flaky", "r6")}


def test_an_exemption_is_spent_once_and_never_renews_itself(tmp_path: Path) -> None:
    write_run(tmp_path, "r1", [attempt("x", False)], purpose="gate")  # evidence
    assert exempt_now(tmp_path, "x") == {("x", "r1")}
    used = (Exemption(suite="s", case_id="x", run_id="r1"),)
    # r2 used it and failed x again: that failure earns nothing, and r1's evidence is spent
    write_run(tmp_path, "r2", [attempt("x", False)], purpose="gate", exempt=used)
    assert exempt_now(tmp_path, "x") == set()


def test_only_a_run_where_every_trial_failed_makes_a_case_flaky(tmp_path: Path) -> None:
    """A case at 0.93 fails a trial in most of ten 3-trial runs; what the previously-green
    rule cannot tell from a broken case is a run where all its trials failed together."""
    some = [attempt("some", t != 1, n=t) for t in range(3)]
    every = [attempt("every", False, n=t) for t in range(3)]
    again = attempt("every", True, n=3)
    write_run(tmp_path, "r1", [*some, *every, attrs.evolve(again, confirmation=True)],
              purpose="gate")  # fmt: skip
    write_run(tmp_path, "r2", [*some, *[attempt("every", True, n=t) for t in range(3)]],
              purpose="gate")  # fmt: skip
    assert exempt_now(tmp_path, "some", "every") == {("every", "r1")}


def test_a_flaky_case_breaking_is_a_note_not_a_reason() -> None:
    base = [attempt(c, True, n=t) for c in ("a", "b") for t in range(3)]
    now = [attempt("a", False, n=t) for t in range(3)] + [attempt("b", True, n=t) for t in range(3)]
    strict = decide_gate(base, now)
    assert strict.state is GateState.CLOSED
    assert any("previously green case s/a" in r for r in strict.reasons)
    lenient = decide_gate(base, now, flaky={("s", "a")})
    assert lenient.state is GateState.OPEN
    assert any("flaky, left to the paired test" in n for n in lenient.notes)


def test_saved_baselines_round_trip_and_refuse_bad_names(tmp_path: Path) -> None:
    record = write_run(tmp_path / "results", "r1", [attempt("a", True), attempt("b", False)])
    name = default_name(record.suites, "m")
    assert name == "s-m"
    b = from_record(record, "m", name, saved_at=1_800_000_000.0)
    latest, dated = save(tmp_path / "baselines", b)
    again = load(tmp_path / "baselines", name)
    assert again.attempts == b.attempts and again.path == latest
    assert [x.path for x in timeline(tmp_path / "baselines", name)] == [dated]
    with pytest.raises(BaselineError, match="use letters"):
        check_name("../escape")
    with pytest.raises(BaselineError, match="no attempts with model x"):
        from_record(record, "x", "n", saved_at=0.0)
    (tmp_path / "baselines" / "bad.json").write_text('{"schema": 1, "saved_at": 1, "name": 3}')
    with pytest.raises(BaselineError, match=r"bad\.json: field \"name\": expected a string"):
        load(tmp_path / "baselines", "bad")
