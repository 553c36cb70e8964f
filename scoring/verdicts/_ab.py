"""A/B: two variants of the harness run now, interleaved, and compared case by case.

A gate asks "did this regress since the last run?".  An A/B asks "is this
change worth switching on?", so both variants run in the same run, on the
same cases, with the same model, their attempts interleaved per case in ABBA
order (trial t: A then B when t is even, B then A when odd).  Whatever
drifts while the run goes on (provider load, rate limits, a model update)
falls on both sides alike instead of on whichever ran second.

A variant is a set of environment overrides, ``env:K=V[,K2=V2]``.  Both
variants share one process and one pool, so ``os.environ`` is never changed:
each job carries its overrides (``Job.environ``); a command agent gets them
in its subprocess environment, a Python agent in ``Task.environ``.

Each case gets a verdict from an exact test of its two pass counts (Fisher's
exact test, two-sided, on the 2x2 table of passed/failed per side):

- ``improved`` / ``regressed``: p <= alpha, candidate rate higher / lower;
- ``unchanged-pass`` / ``unchanged-fail``: not significant, and every
  counted trial on both sides passed / failed;
- ``inconclusive``: anything else, including fewer than ``MIN_TRIALS``
  counted trials on either side.

Nothing here is a gate: no baseline is read or saved and no history line is
written.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from evaltape.recorder._shared import given_values, is_secret_name

from .._errors import ScoringError
from ..cases._cases import Case
from ..results._records import AttemptResult
from ..stats._stats import fisher_exact
from ._outcomes import CaseKey, CaseOutcome, case_outcomes

ENV_PREFIX = "env:"
"""The one kind of variant: environment overrides."""

BASELINE = "baseline"
"""Name (and folder) of variant A."""
CANDIDATE = "candidate"
"""Name (and folder) of variant B."""

AB_DIR = "ab"
"""Folder under the results folder that holds every A/B run."""

MIN_TRIALS = 2
"""Fewest counted trials per side for a case to get any verdict but inconclusive."""

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

HIDDEN = "[REDACTED]"
"""What a variant's value is shown as where it may be a secret."""


class VariantError(ScoringError):
    """A ``--baseline`` / ``--candidate`` spec that cannot be used."""


@attrs.frozen(kw_only=True)
class Variant:
    """One side of an A/B: a name and the environment overrides it runs with."""

    name: str
    """``baseline`` or ``candidate``: the folder its tapes go to."""
    spec: str
    """The spec as the user typed it (``env:K=V,...``); never printed or written, its
    values may be keys (``shown`` is)."""
    overrides: tuple[tuple[str, str], ...]
    """``(name, value)`` pairs, in the order given."""

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values the redactor masks wherever they occur: any value may be a key, so
        every one long enough to be told from other text is one (``given_values``)."""
        return given_values(value for _, value in self.overrides)

    @property
    def shown(self) -> str:
        """The spec as printed and recorded: every name, and a value only when it is short
        and its name does not look like a key's (``AB_FLAG=1``); else ``[REDACTED]``."""
        return ENV_PREFIX + ",".join(f"{k}={_shown_value(k, v)}" for k, v in self.overrides)


def _shown_value(name: str, value: str) -> str:
    if value and (is_secret_name(name) or given_values((value,))):
        return HIDDEN
    return value


_PAIR = re.compile(r"([^,=]*)=([^,]*)")


def hidden_values(spec: str) -> str:
    """A spec that may not parse, each ``NAME=VALUE`` in it shown as ``Variant.shown``
    shows it."""
    return _PAIR.sub(lambda m: f"{m[1]}={_shown_value(m[1].strip(), m[2])}", spec)


def parse_variant(name: str, spec: str) -> Variant:
    """Parse ``env:K=V[,K2=V2]`` for the flag ``--<name>``; ``VariantError`` names the part.

    Names follow shell rules (letters, digits, underscore; not starting with
    a digit); a value may be empty but cannot hold a comma; a name given
    twice is refused.
    """
    where = f'--{name} "{hidden_values(spec)}"'
    if not spec.startswith(ENV_PREFIX):
        raise VariantError(f"{where}: expected env:NAME=VALUE[,NAME=VALUE...]")
    body = spec[len(ENV_PREFIX) :]
    if not body.strip():
        raise VariantError(f"{where}: no NAME=VALUE after env:")
    pairs: list[tuple[str, str]] = []
    for n, part in enumerate(body.split(","), 1):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq:
            raise VariantError(f'{where}: item {n} has no "=" (expected NAME=VALUE)')
        if not _ENV_NAME.fullmatch(key):
            raise VariantError(f'{where}: item {n}: "{key}" is not an environment variable name')
        if any(k == key for k, _ in pairs):
            raise VariantError(f'{where}: item {n}: "{key}" is given twice')
        pairs.append((key, value))
    return Variant(name=name, spec=spec, overrides=tuple(pairs))


def parse_variants(baseline: str, candidate: str) -> tuple[Variant, Variant]:
    """Both sides, refusing two sides that would run identically."""
    a = parse_variant(BASELINE, baseline)
    b = parse_variant(CANDIDATE, candidate)
    if dict(a.overrides) == dict(b.overrides):
        raise VariantError(
            "--baseline and --candidate set the same environment; an A/B needs two variants"
        )
    return a, b


# -- planning ----------------------------------------------------------------


def ab_folder(results: Path, run_id: str) -> Path:
    """``<results>/ab/<run id>``: the run's tapes and records."""
    return results / AB_DIR / run_id


def ab_tape(results: Path, run_id: str, variant: str, case: Case) -> tuple[Path, str]:
    """``<results>/ab/<run id>/<variant>/<suite>/<case>.tape`` and its label relative to results."""
    label = f"{AB_DIR}/{run_id}/{variant}/{case.suite}/{case.id}.tape"
    return results / label, label


# -- per-case verdicts -------------------------------------------------------


class CaseVerdict(enum.Enum):
    """What an A/B says about one case."""

    IMPROVED = "improved"
    """The candidate passes significantly more often (Fisher's exact, p <= alpha)."""
    REGRESSED = "regressed"
    """The candidate passes significantly less often (Fisher's exact, p <= alpha)."""
    UNCHANGED_PASS = "unchanged-pass"
    """Not significant, and every counted trial on both sides passed."""
    UNCHANGED_FAIL = "unchanged-fail"
    """Not significant, and every counted trial on both sides failed."""
    INCONCLUSIVE = "inconclusive"
    """Not significant with mixed results, or too few counted trials to say anything."""


@attrs.frozen(kw_only=True)
class CaseAB:
    """One case's two sides and its verdict."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case."""
    baseline_passed: int
    """Baseline trials that passed."""
    baseline_total: int
    """Baseline trials counted (tainted and skipped attempts are not)."""
    candidate_passed: int
    """Candidate trials that passed."""
    candidate_total: int
    """Candidate trials counted."""
    p_value: float | None
    """Two-sided Fisher exact p of the 2x2 table; None below ``MIN_TRIALS`` a side."""
    verdict: CaseVerdict
    """The verdict."""
    quarantined: bool = False
    """The case is quarantined (reported all the same; an A/B gates nothing)."""
    known_gap: bool = False
    """The case is a known gap."""


def fisher_p(a_passed: int, a_total: int, b_passed: int, b_total: int) -> float:
    """Two-sided Fisher exact p-value of passed/failed, side A against side B."""
    return fisher_exact((a_passed, a_total), (b_passed, b_total))


def smallest_p(trials: int) -> float:
    """The smallest p any case can reach with ``trials`` per side (n/n against 0/n)."""
    return fisher_p(trials, trials, 0, trials) if trials > 0 else 1.0


def trials_needed(alpha: float, limit: int = 1000) -> int:
    """The fewest trials per side with which a case can come out improved or regressed."""
    for n in range(MIN_TRIALS, limit + 1):
        if smallest_p(n) <= alpha:
            return n
    return limit


def case_verdict(
    b_passed: int, b_total: int, c_passed: int, c_total: int, *, alpha: float
) -> tuple[CaseVerdict, float | None]:
    """The verdict and Fisher p of one case (see the module docstring for the rule)."""
    if min(b_total, c_total) < MIN_TRIALS:
        return CaseVerdict.INCONCLUSIVE, None
    p = fisher_p(b_passed, b_total, c_passed, c_total)
    if p <= alpha:
        better = c_passed / c_total > b_passed / b_total
        return (CaseVerdict.IMPROVED if better else CaseVerdict.REGRESSED), p
    if b_passed == b_total and c_passed == c_total:
        return CaseVerdict.UNCHANGED_PASS, p
    if b_passed == 0 and c_passed == 0:
        return CaseVerdict.UNCHANGED_FAIL, p
    return CaseVerdict.INCONCLUSIVE, p


def single_model(attempts: Iterable[AttemptResult]) -> list[AttemptResult]:
    """The attempts, relabelled to one model name when cases pin different models.

    Both sides run every case with the same model, so pairing by case is
    unaffected; the comparison only needs one label per side.
    """
    items = list(attempts)
    models = sorted({a.model for a in items})
    if len(models) <= 1:
        return items
    label = "+".join(models)
    return [attrs.evolve(a, model=label) for a in items]


def case_verdicts(
    baseline: Sequence[AttemptResult], candidate: Sequence[AttemptResult], *, alpha: float = 0.05
) -> tuple[CaseAB, ...]:
    """One ``CaseAB`` per case on either side, sorted by (suite, case id)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    before = case_outcomes(single_model(baseline))
    after = case_outcomes(single_model(candidate))
    rows = []
    for key in sorted(before.keys() | after.keys()):
        b = before.get(key) or _empty(key)
        c = after.get(key) or _empty(key)
        verdict, p = case_verdict(b.passed, b.total, c.passed, c.total, alpha=alpha)
        rows.append(
            CaseAB(
                suite=key[0],
                case_id=key[1],
                baseline_passed=b.passed,
                baseline_total=b.total,
                candidate_passed=c.passed,
                candidate_total=c.total,
                p_value=p,
                verdict=verdict,
                quarantined=b.quarantined or c.quarantined,
                known_gap=b.known_gap or c.known_gap,
            )
        )
    return tuple(rows)


def _empty(key: CaseKey) -> CaseOutcome:
    return CaseOutcome(suite=key[0], case_id=key[1], model="", passed=0, total=0)


# -- the report --------------------------------------------------------------


def _p(p: float | None) -> str:
    if p is None:
        return "-"
    return f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"


def render_cases(rows: Sequence[CaseAB], *, trials: int, alpha: float) -> list[str]:
    """The per-case table, the verdict counts, and any warning about too few trials.

    Below ``MIN_TRIALS`` trials the report says first, in words, that every
    case is inconclusive; with too few trials for Fisher's test to ever reach
    ``alpha`` it says how many would.
    """
    lines: list[str] = []
    if trials < MIN_TRIALS:
        lines.append(
            f"every case is inconclusive: {trials} trial per side cannot tell the variants "
            f"apart; run --trials {trials_needed(alpha)} or more for a per-case verdict"
        )
    elif smallest_p(trials) > alpha:
        lines.append(
            f"no case can come out improved or regressed: with {trials} trials per side the "
            f"most lopsided result ({trials}/{trials} against 0/{trials}) has p = "
            f"{_p(smallest_p(trials))} > alpha {alpha:g}; run --trials {trials_needed(alpha)} "
            "or more"
        )
    names = [f"{r.suite}/{r.case_id}" for r in rows]
    width = max([len("CASE"), *(len(n) for n in names)])
    lines.append(f"{'CASE':<{width}}  BASELINE  CANDIDATE  FISHER P  VERDICT")
    for name, r in zip(names, rows, strict=True):
        marks = (" [quarantined]" if r.quarantined else "") + (
            " [known gap]" if r.known_gap else ""
        )
        lines.append(
            f"{name:<{width}}  {f'{r.baseline_passed}/{r.baseline_total}':<8}  "
            f"{f'{r.candidate_passed}/{r.candidate_total}':<9}  {_p(r.p_value):<8}  "
            f"{r.verdict.value}{marks}"
        )
    counts = {v: sum(1 for r in rows if r.verdict is v) for v in CaseVerdict}
    lines.append("verdicts: " + ", ".join(f"{n} {v.value}" for v, n in counts.items()))
    if rows and trials >= MIN_TRIALS and smallest_p(trials) <= alpha:
        lines.append(
            f"(Fisher's exact test per case at alpha {alpha:g}, not corrected for "
            f"{len(rows)} cases: expect about {alpha * len(rows):.1f} by chance)"
        )
    return lines
