"""The text rendering of a comparison between two runs."""

from __future__ import annotations

import math

from ...verdicts._compare import Comparison, Method, RunSide
from ...verdicts._outcomes import CaseKey


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x * 100:.1f}%"


def _pts(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x:+.1f}"


def _p(x: float) -> str:
    return f"{x:.4f}" if x >= 0.0001 else f"{x:.1e}"


def _name(key: CaseKey) -> str:
    return f"{key[0]}/{key[1]}"


def _side_line(label: str, s: RunSide) -> str:
    if math.isnan(s.clustered_se):
        spread = "one case: no interval"
    else:
        low, high = s.interval
        spread = (
            f"95% CI {_pct(low)}-{_pct(high)} clustered by case; "
            f"SE {s.clustered_se * 100:.1f} points"
        )
    return f"  {label}: {s.passed}/{s.total} trials passed, per-case mean {_pct(s.rate)} ({spread})"


def render_comparison(c: Comparison, *, baseline_label: str, current_label: str) -> list[str]:
    """The regression report: statistical evidence, then aggregate deltas, then per-case moves.

    Plain text, no colour; cases in (suite, id) order, so two renderings of
    one comparison are identical.
    """
    t = c.test
    lines = [
        f"Comparison: {current_label} ({c.current.model}) against "
        f"{baseline_label} ({c.baseline.model}), {t.cases} common cases tested, "
        f"alpha {c.alpha:g}",
        "Statistical evidence:",
    ]
    if t.method is Method.NONE:
        lines.append("  no common cases to test")
    else:
        verdict = "significant regression" if c.significant else "not significant"
        lines.append(
            f"  {t.method.value}: {t.moved} of {t.cases} cases moved; "
            f"p(current worse) = {_p(t.p_worse)}, two-sided p = {_p(t.p_two_sided)} ({verdict})"
        )
        if t.runs > 1:
            lines.append(
                f"  baseline: {t.runs} runs pooled; the test allows {t.drift_points:.1f} points "
                "of run-to-run spread (the spread of their suite means)"
            )
        ci = "n/a" if math.isnan(t.ci_low) else f"{t.ci_low:+.1f} to {t.ci_high:+.1f}"
        lines.append(
            f"  effect: {_pts(t.effect_points)} points "
            f"(95% CI {ci}, paired t on per-case differences: clustered by case); "
            f"Cohen's h = {c.cohens_h:+.2f} ({c.effect})"
        )
    lines.append("Pass rates:")
    if t.method is not Method.NONE:
        lines.append(_side_line(baseline_label, c.baseline))
        lines.append(_side_line(current_label, c.current))
        lines.append(f"  delta: {_pts((c.current.rate - c.baseline.rate) * 100)} points")
        for sign, attr in (("@", "pass_at_k"), ("^", "pass_hat_k")):
            if min(c.baseline.k, c.current.k) > 1:
                lines.append(
                    f"  pass{sign}k: {baseline_label} {_pct(getattr(c.baseline, attr))} "
                    f"(k={c.baseline.k}), {current_label} {_pct(getattr(c.current, attr))} "
                    f"(k={c.current.k})"
                )
    if c.ztest is not None:
        z = c.ztest
        zs = "n/a" if math.isnan(z.z) else f"{z.z:.2f}"
        extra = (
            f"; fewer than 10 cases, so the {z.threshold_points:g}-point rule "
            f"{'flags' if z.flagged else 'does not flag'} it"
            if z.low_n
            else ""
        )
        lines.append(
            f"  unpaired z-test (trials as independent; shown for comparison, never decides): "
            f"z = {zs}, p = {_p(z.p_worse)}{extra}"
        )
    lines.append(f"Per-case moves ({len(c.moves)}; Fisher exact p, BH-adjusted over the moves):")
    if not c.moves:
        lines.append("  none")
    for m in c.moves:
        b, n = m.baseline, m.current
        tag = "" if m.gated else "  [quarantined/known gap: not gated]"
        lines.append(
            f"  {m.kind.value:<9} {_name(m.key)}: {b.passed}/{b.total} -> {n.passed}/{n.total}"
            f"  p = {_p(m.p_value)}, adjusted {_p(m.p_adjusted)}{tag}"
        )
    for label, keys in (
        (f"only in {baseline_label} (ignored)", c.only_baseline),
        (f"only in {current_label} (ignored)", c.only_current),
        ("no countable trial on one side (ignored)", c.unusable),
        ("quarantined or known gap (reported, not tested)", c.excluded),
    ):
        if keys:
            lines.append(f"Cases {label}: {len(keys)}: {', '.join(_name(k) for k in keys)}")
    return lines
