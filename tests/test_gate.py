"""The release gate: which runs close it, which never do, and what it says when unsure."""

from __future__ import annotations

import math

import attrs
import pytest
from scipy import stats as sps
from test_compare import cases, run

from evaltape.scoring import AttemptResult, GateDecision, GateState, decide_gate
from evaltape.scoring.judge._judgement import JudgeStatus
from evaltape.scoring.stats import cases_needed, plan_power, planned_power, shrunk_rates
from evaltape.scoring.verdicts._gate import decide
from evaltape.scoring.verdicts._gate_green import MIN_GREEN_TRIALS, UnequalTrials, to_confirm

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
            "a case that failed most baseline trials",
            with_(HEALTHY, c07="PFF"),
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


def confirmations(spec: dict[str, str]) -> list[AttemptResult]:
    """Confirmation re-runs of ``{"suite/case": "FFF"}``, numbered after 3 planned trials."""
    return [attrs.evolve(a, attempt=a.attempt + 3, confirmation=True) for a in run(spec)]


def test_a_broken_green_case_closes_only_when_its_confirmation_re_runs_fail_too() -> None:
    current = run(with_(HEALTHY, c07="FFF"))
    confirmed = decide_gate(run(HEALTHY), current + confirmations({"s/c07": "FFF"}), confirm=3)
    assert confirmed.state is GateState.CLOSED
    assert confirmed.reasons == (
        "previously green case s/c07 fails now: 3/3 in the baseline, 0/3 now "
        "and 0/3 on confirmation re-runs",
    )
    lucky = decide_gate(run(HEALTHY), current + confirmations({"s/c07": "FPF"}), confirm=3)
    assert lucky.state is GateState.OPEN
    assert any("but 1/3 on confirmation re-runs: not confirmed" in n for n in lucky.notes)
    unconfirmed = decide_gate(run(HEALTHY), current)  # the re-runs never ran: closed, and said
    assert unconfirmed.state is GateState.CLOSED
    assert "no confirmation re-run was counted" in unconfirmed.reasons[0]
    unasked = decide_gate(run(HEALTHY), current, confirm=0)
    assert unasked.reasons == (
        "previously green case s/c07 fails now: 3/3 in the baseline, 0/3 now",
    )


def test_a_case_that_failed_one_baseline_trial_is_held_to_the_rule_too() -> None:
    """2/3 in the baseline and 0/3 now is held to the rule (with its re-runs); 1/3 is not:
    a case at 0.93 is 3/3 in only 80% of baselines, so the rule alone missed a broken case
    in a small suite one run in five."""
    base = run(with_(HEALTHY, c03="PFP", c04="FPF"))
    current = run(with_(HEALTHY, c03="FFF", c04="FFF"))
    assert to_confirm(base, current) == (("s", "c03"),)
    twelve = {"s/c03": "F" * 12}
    d = decide_gate(base, current + confirmations(twelve))
    assert d.state is GateState.CLOSED
    assert d.reasons == (
        "previously passing case s/c03 fails now: 2/3 in the baseline, 0/3 now "
        "and 0/12 on confirmation re-runs",
    )
    short = decide_gate(base, current + confirmations({"s/c03": "FFF"}))
    assert short.reasons[0].endswith("and 0/3 on confirmation re-runs (of 12 planned)")
    late = decide_gate(base, current + confirmations({"s/c03": "F" * 11 + "P"}))
    assert late.state is GateState.OPEN
    assert any("but 1/12 on confirmation re-runs: not confirmed" in n for n in late.notes)
    assert not any("s/c04" in line for line in (*d.reasons, *d.notes))


def test_confirmation_re_runs_never_enter_the_paired_test_or_the_rates() -> None:
    base = run(HEALTHY)
    current = run(with_(HEALTHY, c07="FFF"))
    plain = decide_gate(base, current, confirm=0).comparison
    mixed = decide_gate(base, current + confirmations({"s/c07": "PPP"})).comparison
    assert plain is not None and mixed is not None
    assert mixed.test == plain.test and mixed.current == plain.current
    assert to_confirm(base, current) == (("s", "c07"),)
    assert to_confirm(base, current, flaky={("s", "c07")}) == ()


def test_a_baseline_with_other_trials_per_case_is_refused() -> None:
    with pytest.raises(UnequalTrials, match="1 trial\\(s\\) per case and this run 3"):
        decide_gate(run(cases(20, "P")), run(cases(20, "PPP")))


def test_the_power_note_is_planned_from_the_baseline_not_from_the_result() -> None:
    baseline = with_(cases(20, "PPP"), c00="PPF", c01="FPP")
    quiet = decide_gate(run(baseline), run(baseline))
    dropped = decide_gate(run(baseline), run(with_(baseline, c02="PFF", c03="PPF")))
    assert quiet.state is dropped.state is GateState.OPEN

    def note(d: GateDecision) -> str:
        return next(n for n in d.notes if n.startswith("power: "))

    assert note(quiet) == note(dropped)  # a-priori: the same whatever happened now
    rates = shrunk_rates([(3, 3)] * 18 + [(2, 3)] * 2)
    plan = plan_power(rates, 3, drop=0.05)
    assert note(quiet) == (
        f"power: 20 cases x 3 trial(s) detect a drop of {plan.detectable_points:.1f} points "
        "with 80% power at alpha 0.05 (a conservative approximation: 84-94% of simulated runs "
        f"closed at that drop); a 5-point drop needs about {plan.cases_needed} cases "
        "at 3 trial(s) (planned from the baseline's per-case rates, not from this result)"
    )
    assert not any("underpowered" in n for n in quiet.notes + dropped.notes)


def test_the_planned_power_matches_the_normal_formula_and_grows_with_cases() -> None:
    rates = [0.9] * 50
    drop = 0.10
    sd = math.sqrt((0.9 * 0.1 + 0.8 * 0.2) / 3)
    expected = float(sps.norm.cdf(drop * math.sqrt(50) / sd - sps.norm.ppf(0.95)))
    assert planned_power(rates, 3, drop) == pytest.approx(expected)
    assert planned_power(rates, 3, drop, cases=200) > planned_power(rates, 3, drop)
    plan = plan_power(rates, 3, drop=drop)
    assert planned_power(rates, 3, plan.detectable_points / 100) == pytest.approx(0.8, abs=1e-6)
    assert plan.cases_needed == cases_needed(drop, sd)


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
