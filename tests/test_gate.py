"""The release gate: which runs close it, which never do, and what it says when unsure."""

from __future__ import annotations

import math

import pytest
from test_compare import cases, run

from evaltape.scoring import GateState, decide_gate
from evaltape.scoring.judge._judgement import JudgeStatus
from evaltape.scoring.stats._power import binomial_diff_sd, cases_needed
from evaltape.scoring.verdicts._gate import MIN_GREEN_TRIALS, decide

HEALTHY = cases(20, "PPP")


def with_(base: dict[str, str], **changes: str) -> dict[str, str]:
    return {**base, **{f"s/{k}": v for k, v in changes.items()}}


REGRESSED = {**cases(10, "FFP"), **cases(10, "PPP", "d")}
IMPROVED = with_(HEALTHY, c00="PPP")


@pytest.mark.parametrize(
    ("name", "baseline", "current", "state", "reason"),
    [
        ("same results", HEALTHY, HEALTHY, GateState.OPEN, None),
        (
            "a significant paired drop",
            cases(20, "PPP"),
            REGRESSED,
            GateState.CLOSED,
            "significant regression",
        ),
        ("an improvement", with_(HEALTHY, c00="FFF", c01="PFF"), HEALTHY, GateState.OPEN, None),
        (
            "previously green, no trial passes now",
            HEALTHY,
            with_(HEALTHY, c07="FFF"),
            GateState.CLOSED,
            "previously green case s/c07 fails now: 3/3 in the baseline, 0/3 now",
        ),
        (
            "previously green, errors now",
            HEALTHY,
            with_(HEALTHY, c07="EEE"),
            GateState.CLOSED,
            "previously green case s/c07",
        ),
        ("green case that wobbles", HEALTHY, with_(HEALTHY, c07="FFP"), GateState.OPEN, None),
        (
            "a case that was not green",
            with_(HEALTHY, c07="PPF"),
            with_(HEALTHY, c07="FFF"),
            GateState.OPEN,
            None,
        ),
        (
            "a lost case and a gained one",
            with_(HEALTHY, c01="FFF"),
            with_(HEALTHY, c02="FFF"),
            GateState.CLOSED,
            "previously green case s/c02",
        ),
    ],
)
def test_gate_decisions(
    name: str,
    baseline: dict[str, str],
    current: dict[str, str],
    state: GateState,
    reason: str | None,
) -> None:
    d = decide_gate(run(baseline), run(current))
    assert d.state is state, (name, d.reasons)
    assert d.comparison is not None
    if reason is None:
        assert d.reasons == ()
        assert d.exit_code == 0
    else:
        assert any(r.startswith(reason) for r in d.reasons), d.reasons
        assert d.exit_code == 1


def test_the_short_name_is_the_same_function() -> None:
    assert decide is decide_gate


@pytest.mark.parametrize("flag", ["quarantined", "known_gap"])
def test_quarantined_and_known_gap_cases_never_close_the_gate(flag: str) -> None:
    bad = frozenset(f"s/c{i:02d}" for i in range(12))
    current = {**HEALTHY, **{name: "FFF" for name in bad}}
    d = decide_gate(
        run(HEALTHY, **{flag: bad}),
        run(current, **{flag: bad}),
        floor_failures=["c00", "s/c01"],
    )
    assert d.state is GateState.OPEN, d.reasons
    assert sum("quarantined or known gap: not gated" in n for n in d.notes) == 2
    assert d.comparison is not None and d.comparison.test.cases == 8


def test_a_floor_failure_closes_the_gate_and_is_named() -> None:
    d = decide_gate(run(HEALTHY), run(HEALTHY), floor_failures=["explain-gate"])
    assert d.state is GateState.CLOSED
    assert d.reasons == ("judged case explain-gate is below its score floor",)


@pytest.mark.parametrize(
    ("status", "closes"),
    [
        ("ok", False),
        ("no judged cases", False),
        (JudgeStatus.GRADED, False),
        (JudgeStatus.NOT_NEEDED, False),
        ("not configured", True),
        (JudgeStatus.NOT_CONFIGURED, True),
        (JudgeStatus.UNSCORED, True),
        (JudgeStatus.NOT_REJUDGED, True),
        ("judge error", True),
    ],
)
def test_a_judge_that_did_not_grade_closes_the_gate(
    status: JudgeStatus | str, closes: bool
) -> None:
    d = decide_gate(run(HEALTHY), run(HEALTHY), judge_status=status)
    assert (d.state is GateState.CLOSED) == closes
    text = status.value if isinstance(status, JudgeStatus) else status
    expected = f"judge status is {text!r}: the judged cases were not graded by a working judge"
    assert d.reasons == ((expected,) if closes else ())


def test_run_zero_passes_and_notes_what_it_did_not_gate() -> None:
    d = decide_gate(None, run(cases(5, "FFF")), judge_status="not configured", floor_failures=["x"])
    assert d.state is GateState.RUN_ZERO and d.exit_code == 0
    assert d.comparison is None and d.reasons == ()
    assert d.notes[0].startswith("run zero")
    assert any("not configured" in n for n in d.notes)
    assert any("judged case x" in n for n in d.notes)


def test_a_small_drop_that_is_not_significant_is_called_underpowered() -> None:
    baseline = cases(10, "PPP")
    current = with_(baseline, c00="PFF", c01="PPF")
    d = decide_gate(run(baseline), run(current))
    assert d.state is GateState.OPEN
    c = d.comparison
    assert c is not None and not c.significant
    needed = cases_needed(-c.test.effect_points / 100, c.test.sd_points / 100)
    assert needed > 10
    assert (
        f"inconclusive: underpowered — about {needed} cases needed to detect a drop of "
        f"{-c.test.effect_points:.1f} points" in d.notes[0]
    )


def test_an_even_drop_without_spread_uses_the_binomial_planning_sd() -> None:
    baseline = cases(3, "PPP")
    current = cases(3, "PPF")
    d = decide_gate(run(baseline), run(current))
    c = d.comparison
    assert c is not None and c.test.sd_points == 0.0 and not c.significant
    needed = cases_needed(1 / 3, binomial_diff_sd(1.0, 2 / 3, 3))
    assert any(f"about {needed} cases needed" in n for n in d.notes), d.notes


def test_no_underpowered_note_without_a_drop() -> None:
    d = decide_gate(run(HEALTHY), run(with_(HEALTHY, c00="FFP")))
    imp = decide_gate(run(with_(HEALTHY, c00="FFP")), run(HEALTHY))
    assert any("underpowered" in n for n in d.notes)
    assert not any("underpowered" in n for n in imp.notes)


def test_one_trial_runs_use_mcnemar_and_a_single_flip_is_only_a_note() -> None:
    baseline = cases(20, "P")
    flipped = decide_gate(run(baseline), run(with_(baseline, c04="F")))
    assert flipped.state is GateState.OPEN
    assert any(
        "previously green case s/c04 fails now: 1/1 in the baseline, 0/1 now" in n
        and f"fewer than {MIN_GREEN_TRIALS} trials" in n
        for n in flipped.notes
    )
    many = decide_gate(
        run(baseline),
        run(
            {**cases(12, "P"), **cases(8, "F", "x"), **{f"s/c{i:02d}": "F" for i in range(12, 20)}}
        ),
    )
    assert many.comparison is not None
    assert many.comparison.test.method.name == "MCNEMAR_EXACT"
    assert many.state is GateState.CLOSED
    assert many.reasons[0].startswith("significant regression")
    assert "McNemar exact test p = 0.0039" in many.reasons[0]


def test_cases_only_in_one_run_are_noted_not_gated() -> None:
    d = decide_gate(run(with_(HEALTHY, old="PPP")), run(with_(HEALTHY, new="FFF")))
    assert d.state is GateState.OPEN
    assert "1 cases only in the baseline and 1 only now were left out of the comparison" in d.notes
    empty = decide_gate(run({"s/a": "PPP"}), run({"s/b": "PPP"}))
    assert empty.state is GateState.OPEN
    assert any("no common cases" in n for n in empty.notes)
    assert math.isnan(empty.comparison.test.effect_points) if empty.comparison else False


def test_a_floor_failure_of_a_new_quarantined_case_is_only_a_note() -> None:
    current = run(HEALTHY) + run({"s/fresh": "PPP"}, quarantined=frozenset({"s/fresh"}))
    d = decide_gate(run(HEALTHY), current, floor_failures=["s/fresh"])
    assert d.state is GateState.OPEN
    assert "judged case s/fresh is below its score floor (quarantined or known gap: not gated)" in (
        d.notes
    )
