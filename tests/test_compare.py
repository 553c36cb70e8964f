"""Comparing two runs on their common cases: outcomes, the paired test, moves, the report."""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from evaltape.scoring import AttemptResult, Verdict, compare, render_comparison
from evaltape.scoring.stats import mcnemar_exact, sign_flip_test
from evaltape.scoring.stats._stats import mcnemar_worse
from evaltape.scoring.verdicts._compare import Method, MoveKind
from evaltape.scoring.verdicts._outcomes import case_outcomes

VERDICTS = {"P": Verdict.PASSED, "F": Verdict.FAILED, "E": Verdict.ERROR, "S": Verdict.SKIPPED}


def run(
    spec: Mapping[str, str],
    *,
    model: str = "m",
    quarantined: frozenset[str] = frozenset(),
    known_gap: frozenset[str] = frozenset(),
) -> list[AttemptResult]:
    """Attempts from ``{"suite/case": "PPF"}``: P pass, F fail, E error, S skipped, T tainted."""
    out = []
    for name, trials in spec.items():
        suite, case_id = name.split("/")
        for i, letter in enumerate(trials):
            out.append(
                AttemptResult(
                    suite=suite,
                    case_id=case_id,
                    model=model,
                    attempt=i,
                    verdict=Verdict.FAILED if letter == "T" else VERDICTS[letter],
                    tainted=letter == "T",
                    quarantined=name in quarantined,
                    known_gap=name in known_gap,
                )
            )
    return out


def cases(n: int, trials: str, prefix: str = "c") -> dict[str, str]:
    return {f"s/{prefix}{i:02d}": trials for i in range(n)}


def test_case_outcomes_leave_out_skipped_and_tainted_attempts() -> None:
    out = case_outcomes(run({"s/a": "PPS", "s/b": "PFT", "s/c": "SS", "s/d": "EPF"}))
    assert [(k, o.passed, o.total) for k, o in out.items()] == [
        (("s", "a"), 2, 2),
        (("s", "b"), 1, 2),
        (("s", "c"), 0, 0),
        (("s", "d"), 1, 3),
    ]
    a, b, c, d = out.values()
    assert (a.green, a.consistent, a.rate) == (True, True, 1.0)
    assert (b.green, b.consistent, b.rate) == (False, False, 0.5)
    assert (c.green, c.consistent) == (False, True) and math.isnan(c.rate)
    assert d.rate == pytest.approx(1 / 3)


def test_case_outcomes_flag_quarantine_and_known_gap_and_refuse_two_models() -> None:
    out = case_outcomes(run({"s/a": "PP", "s/b": "F"}, quarantined=frozenset({"s/a"})))
    assert out[("s", "a")].quarantined and out[("s", "a")].excluded
    assert not out[("s", "b")].excluded
    with pytest.raises(ValueError, match="more than one model: a, b"):
        case_outcomes(run({"s/x": "P"}, model="a") + run({"s/y": "P"}, model="b"))


def test_one_trial_a_side_uses_mcnemar_on_the_discordant_pairs() -> None:
    before = {**cases(12, "P"), **cases(3, "F", "f")}
    after = {**cases(12, "P"), **cases(3, "F", "f")}
    for name in ("s/c00", "s/c01", "s/c02", "s/c03", "s/c04", "s/c05"):
        after[name] = "F"  # six pass -> fail
    after["s/f00"] = "P"  # one fail -> pass
    c = compare(run(before), run(after))
    assert c.test.method is Method.MCNEMAR_EXACT
    assert (c.test.cases, c.test.moved) == (15, 7)
    assert c.test.p_worse == pytest.approx(mcnemar_worse(6, 1))
    assert c.test.p_two_sided == pytest.approx(mcnemar_exact(6, 1))
    assert c.test.effect_points == pytest.approx(-500 / 15)


def test_several_trials_use_the_sign_flip_test_on_per_case_differences() -> None:
    before = {"s/a": "PPP", "s/b": "PPP", "s/c": "PPF", "s/d": "PPP", "s/e": "PFF", "s/f": "PP"}
    after = {"s/a": "PFF", "s/b": "PPF", "s/c": "FFF", "s/d": "PPP", "s/e": "PPF", "s/f": "PF"}
    c = compare(run(before), run(after))
    diffs = [Fraction(-2, 3), Fraction(-1, 3), Fraction(-2, 3), 0, Fraction(1, 3), Fraction(-1, 2)]
    expected = sign_flip_test(diffs)
    assert c.test.method is Method.SIGN_FLIP_EXACT
    assert (c.test.p_worse, c.test.p_two_sided) == (expected.p_worse, expected.p_two_sided)
    assert c.test.moved == 5
    floats = [float(d) for d in diffs]
    ci = sps.ttest_1samp(floats, 0.0).confidence_interval(0.95)
    assert c.test.effect_points == pytest.approx(100 * sum(floats) / 6)
    assert (c.test.ci_low, c.test.ci_high) == pytest.approx((100 * ci.low, 100 * ci.high))


def test_run_sides_carry_intervals_clustered_by_case_and_pass_at_k() -> None:
    c = compare(
        run({"s/a": "PPP", "s/b": "PPF", "s/c": "PFF"}),
        run({"s/a": "PPP", "s/b": "FFF", "s/c": "PPF"}),
    )
    assert (c.baseline.passed, c.baseline.total) == (6, 9)
    # the per-case rates are the sample (a t interval on them), never the 9 pooled trials
    ci = sps.ttest_1samp([1.0, 2 / 3, 1 / 3], 0.0).confidence_interval(0.95)
    assert c.baseline.interval == pytest.approx((max(0.0, ci.low), min(1.0, ci.high)))
    pooled = proportion_confint(6, 9, method="wilson")
    assert c.baseline.interval[1] - c.baseline.interval[0] > pooled[1] - pooled[0]
    assert c.baseline.k == 3
    assert c.baseline.pass_hat_k == pytest.approx(1 / 3)  # a: 1, b: 0, c: 0
    assert c.current.pass_at_k == pytest.approx(2 / 3)  # a: 1, b: 0, c: 1
    assert c.cohens_h < 0 and c.effect in {"small", "medium", "large"}


def test_cases_in_one_run_only_are_counted_and_do_not_move_the_test() -> None:
    before = {**cases(8, "PPP"), "s/gone": "PPP"}
    after = {**cases(8, "PPP"), "s/c00": "FFP", **cases(5, "FFF", "new")}
    c = compare(run(before), run(after))
    alone = compare(run(cases(8, "PPP")), run({**cases(8, "PPP"), "s/c00": "FFP"}))
    assert c.only_baseline == (("s", "gone"),)
    assert c.only_current == tuple(("s", f"new{i:02d}") for i in range(5))
    assert c.test == alone.test
    assert c.current.cases == 8


def test_quarantined_and_known_gap_cases_are_reported_but_not_tested() -> None:
    before = {**cases(6, "PPP"), "s/q": "PPP", "s/g": "FFF"}
    after = {**cases(6, "PPP"), "s/q": "FFF", "s/g": "PPP"}
    c = compare(
        run(before, quarantined=frozenset({"s/q"})),
        run(after, quarantined=frozenset({"s/q"}), known_gap=frozenset({"s/g"})),
    )
    assert c.test.cases == 6 and c.test.moved == 0 and c.test.p_worse == 1.0
    assert set(c.excluded) == {("s", "q"), ("s", "g")}
    assert [(m.key, m.kind, m.gated) for m in c.moves] == [
        (("s", "g"), MoveKind.IMPROVED, False),
        (("s", "q"), MoveKind.REGRESSED, False),
    ]


def test_moves_are_classified_and_bh_adjusted_over_the_moved_cases() -> None:
    before = {"s/a": "PPP", "s/b": "PPF", "s/c": "PFF", "s/d": "PPF", "s/e": "PPPPP", "s/f": "P"}
    after = {"s/a": "PFF", "s/b": "FFF", "s/c": "PPP", "s/d": "PPF", "s/e": "FFFFF", "s/f": "P"}
    c = compare(run(before), run(after))
    kinds = {m.key[1]: m.kind for m in c.moves}
    assert kinds == {
        "a": MoveKind.REGRESSED,
        "b": MoveKind.WORSE,
        "c": MoveKind.IMPROVED,
        "e": MoveKind.REGRESSED,
    }
    assert [m.key[1] for m in c.regressions] == ["a", "e"]
    assert [m.key[1] for m in c.improvements] == ["c"]
    assert [m.broken for m in c.moves] == [False, False, False, True]
    _, adjusted, _, _ = multipletests([m.p_value for m in c.moves], method="fdr_bh")
    assert [m.p_adjusted for m in c.moves] == pytest.approx(list(adjusted))
    e = c.moves[-1]
    table = [[5, 0], [0, 5]]
    assert e.p_value == pytest.approx(sps.fisher_exact(table).pvalue)


def test_a_case_with_no_countable_trial_on_one_side_is_left_out() -> None:
    c = compare(run({"s/a": "PPP", "s/b": "SSS"}), run({"s/a": "PPP", "s/b": "FFF"}))
    assert c.unusable == (("s", "b"),)
    assert c.test.cases == 1


def test_no_common_cases_gives_no_test() -> None:
    c = compare(run({"s/a": "PPP"}), run({"s/b": "FFF"}))
    assert c.test.method is Method.NONE and c.test.p_worse == 1.0 and c.ztest is None
    lines = render_comparison(c, baseline_label="base", current_label="now")
    assert "  no common cases to test" in lines


def test_the_report_puts_evidence_first_then_rates_then_moves() -> None:
    before = {**cases(12, "PPP"), "s/old": "PPP"}
    after = {**cases(12, "PPP"), "s/c00": "FFF", "s/c01": "FFP", "s/c02": "FPP", "s/new": "PPP"}
    c = compare(run(before), run(after))
    lines = render_comparison(c, baseline_label="run A", current_label="run B")
    assert lines == render_comparison(c, baseline_label="run A", current_label="run B")
    text = "\n".join(lines)
    assert "\x1b[" not in text
    order = [
        text.index("Statistical evidence:"),
        text.index("paired sign-flip permutation test (exact)"),
        text.index("effect:"),
        text.index("Pass rates:"),
        text.index("clustered by case; SE"),
        text.index("pass@k: run A"),
        text.index("pass^k: run A"),
        text.index("unpaired z-test"),
        text.index("Per-case moves"),
        text.index("Cases only in run A (ignored): 1: s/old"),
        text.index("Cases only in run B (ignored): 1: s/new"),
    ]
    assert order == sorted(order)
    assert f"p(current worse) = {c.test.p_worse:.4f}" in text
    assert f"Cohen's h = {c.cohens_h:+.2f} ({c.effect})" in text
    assert "  regressed s/c00: 3/3 -> 0/3" in text
    assert "Wilson" not in text  # no headline interval pools the trials of a case


def test_the_one_trial_report_names_mcnemar_and_omits_pass_at_k() -> None:
    c = compare(run(cases(12, "P")), run({**cases(12, "P"), "s/c03": "F"}))
    text = "\n".join(render_comparison(c, baseline_label="A", current_label="B"))
    assert "McNemar exact test: 1 of 12 cases moved" in text
    assert "pass@k" not in text
    assert "fewer than 10 cases" not in text
