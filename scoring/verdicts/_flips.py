"""Why a case's attempts disagree: the model, the judge, the harness or the infrastructure.

Every attempt carries two digests of its session (``outputs_digest`` and
``effects_digest``).  Attempts of one case with one model that split between
pass and fail are then told apart by evidence, not opinion:

- different outputs behind the verdicts: the model sampled differently (*model*);
- the same outputs and the same effects, yet different verdicts, with a judge
  involved: the judge ruled differently on the same transcript (*judge*);
- the same outputs but different effects: the harness did something else with
  the same model outputs (*harness*); replaying the tapes confirms it, since a
  replay serves those outputs again;
- an attempt that could not be judged (error, tainted evidence) and no clean
  pass/fail pair: the split is the infrastructure's (*infra*);
- anything else (no digests, a deterministic check that moved on equal
  evidence): *unattributed*.

Digests leave out ids, timings and usage, so two attempts that did the same
thing get the same digests however fast they ran.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence

import attrs

from evaltape.recorder import Session

from ..results._records import AttemptResult, Verdict


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _arguments(raw: str) -> object:
    """Tool arguments as canonical JSON when they parse, else the text as sent."""
    try:
        return {"json": json.loads(raw)}
    except (ValueError, RecursionError):
        return {"text": raw}


def outputs_digest(session: Session) -> str:
    """sha256 of what the model said and called, turn by turn, in order.

    Each turn contributes its reply text and its tool calls (name and
    arguments, compared as JSON when they parse).  Call ids, timings, usage
    and the judge's calls are left out.
    """
    turns = [
        {
            "text": turn.call.output_text,
            "calls": [[c.name, _arguments(c.arguments)] for c in turn.call.tool_calls],
        }
        for turn in session.turns
    ]
    return _digest(turns)


def effects_digest(session: Session) -> str:
    """sha256 of what the harness did with the model's outputs.

    The tool results sent back (in call order, ``None`` when none was), the
    final workspace (path, mode and content digest of every file, paths left
    out) and how the session ended: the evidence outcome checks read.
    """
    evidence = {
        "results": [[r.call.name, r.result] for r in session.tool_calls],
        "workspace": [
            [f.path, f.mode, hashlib.sha256(f.data).hexdigest()] for f in session.workspace
        ],
        "omitted": list(session.workspace_omitted),
        "end": session.end.status.value if session.end is not None else None,
    }
    return _digest(evidence)


class FlipCause(enum.Enum):
    """Why a case's attempts with one model split between pass and fail."""

    MODEL = "model"
    """The verdicts follow different model outputs: the model sampled differently."""
    JUDGE = "judge"
    """The same outputs and effects were graded differently by the judge."""
    HARNESS = "harness"
    """The same model outputs led to different effects; replay the tapes to confirm."""
    INFRA = "infra"
    """An attempt ended in error or with tainted evidence, and no clean attempts disagree."""
    UNATTRIBUTED = "unattributed"
    """The evidence decides none of the above (for example, attempts without digests)."""


HINTS: dict[FlipCause, str] = {
    FlipCause.MODEL: "the model's outputs differ",
    FlipCause.JUDGE: "same outputs and effects, the judge's verdicts differ",
    FlipCause.HARNESS: "same outputs, different effects; replay the tapes to confirm",
    FlipCause.INFRA: "an attempt could not be judged (error or tainted evidence)",
    FlipCause.UNATTRIBUTED: "the evidence decides none",
}
"""One line per cause, as the reports print it."""


@attrs.frozen(kw_only=True)
class FlippedCase:
    """A case whose attempts with one model disagree, and why."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case."""
    model: str
    """The model."""
    passed: int
    """Attempts that passed."""
    total: int
    """Attempts counted (skipped ones are not)."""
    trajectories: int
    """Distinct outputs digests among the attempts (0 when none carries one)."""
    cause: FlipCause
    """Why the attempts split."""


@attrs.frozen(kw_only=True)
class FlipSummary:
    """How the cases of a run behaved across their attempts."""

    cases: int
    """Case and model pairs with at least one counted attempt."""
    all_passed: int
    """Pairs whose every attempt passed."""
    all_failed: int
    """Pairs none of whose attempts passed."""
    flipped: tuple[FlippedCase, ...]
    """Pairs whose attempts disagree, in the order first seen."""

    @property
    def causes(self) -> dict[FlipCause, int]:
        """Flipped pairs per cause, every cause present (0 when none)."""
        counts = Counter(f.cause for f in self.flipped)
        return {cause: counts[cause] for cause in FlipCause}


def _clean(a: AttemptResult) -> bool:
    return a.verdict in (Verdict.PASSED, Verdict.FAILED) and not a.tainted


def flip_cause(attempts: Sequence[AttemptResult]) -> FlipCause:
    """The cause of a split among ``attempts`` (one case, one model).

    Clean attempts (passed or failed, not tainted) decide.  If no clean pass
    and clean fail exist, the split involves an attempt that could not be
    judged: *infra*.  If a pass and a fail share their outputs digest,
    something other than the model moved the verdict: different effects mean
    *harness*, equal effects with a judge score on either side mean *judge*,
    else *unattributed*.  Otherwise, when every attempt carries a digest, the
    verdicts follow different outputs: *model*.
    """
    passes = [a for a in attempts if _clean(a) and a.verdict is Verdict.PASSED]
    fails = [a for a in attempts if _clean(a) and a.verdict is Verdict.FAILED]
    if not passes or not fails:
        return FlipCause.INFRA
    if any(not a.outputs_digest or not a.effects_digest for a in (*passes, *fails)):
        return FlipCause.UNATTRIBUTED
    pairs = [(p, f) for p in passes for f in fails if p.outputs_digest == f.outputs_digest]
    if not pairs:
        return FlipCause.MODEL
    if any(p.effects_digest != f.effects_digest for p, f in pairs):
        return FlipCause.HARNESS
    if any(p.judge_score is not None or f.judge_score is not None for p, f in pairs):
        return FlipCause.JUDGE
    return FlipCause.UNATTRIBUTED


def summarize_flips(attempts: Iterable[AttemptResult]) -> FlipSummary:
    """Group ``attempts`` by case and model; count agreement and explain every split.

    Skipped attempts are not counted; an attempt that errored counts as not
    passed (and makes a split *infra* unless clean attempts disagree too).
    """
    groups: dict[tuple[str, str, str], list[AttemptResult]] = {}
    for a in attempts:
        if a.verdict.judged:
            groups.setdefault((a.suite, a.case_id, a.model), []).append(a)
    all_passed = all_failed = 0
    flipped: list[FlippedCase] = []
    for (suite, case_id, model), group in groups.items():
        passed = sum(1 for a in group if a.verdict is Verdict.PASSED)
        if passed == len(group):
            all_passed += 1
        elif passed == 0:
            all_failed += 1
        else:
            flipped.append(
                FlippedCase(
                    suite=suite,
                    case_id=case_id,
                    model=model,
                    passed=passed,
                    total=len(group),
                    trajectories=len({a.outputs_digest for a in group if a.outputs_digest}),
                    cause=flip_cause(group),
                )
            )
    return FlipSummary(
        cases=len(groups), all_passed=all_passed, all_failed=all_failed, flipped=tuple(flipped)
    )


def render_flips(summary: FlipSummary) -> list[str]:
    """The lines the live summary and ``evaltape status`` print."""
    lines = [
        f"repeats: {summary.cases} case(s): {summary.all_passed} all passed, "
        f"{summary.all_failed} all failed, {len(summary.flipped)} flipped"
    ]
    for f in summary.flipped:
        lines.append(
            f"flipped {f.suite}/{f.case_id} [{f.model}]: {f.passed}/{f.total} passed, "
            f"{f.trajectories} distinct trajectories, cause {f.cause.value} "
            f"({HINTS[f.cause]})"
        )
    return lines


def flips_to_json(summary: FlipSummary) -> dict[str, object]:
    """The plain-dict form: counts, causes and every flipped case."""
    return {
        "cases": summary.cases,
        "all_passed": summary.all_passed,
        "all_failed": summary.all_failed,
        "flipped": len(summary.flipped),
        "causes": {cause.value: n for cause, n in summary.causes.items()},
        "flipped_cases": [
            {
                "suite": f.suite,
                "case": f.case_id,
                "model": f.model,
                "passed": f.passed,
                "total": f.total,
                "distinct_trajectories": f.trajectories,
                "cause": f.cause.value,
            }
            for f in summary.flipped
        ],
    }
