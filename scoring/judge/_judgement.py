"""What a judge decides: the request it grades, its judgement, and the floors a case must reach."""

from __future__ import annotations

import enum

import attrs

from evaltape.recorder import Usage

from .._errors import ScoringError
from ._prompt import judge_digest

DIGEST_HEADER = "x-evaltape-judge-digest"
"""Request header holding ``judge_digest(rubric, input)``: which verdict this is."""

JUDGE_EVENT = "judge"
"""Name of the harness events that bracket a judge call on the tape."""


DEFAULT_MEAN_FLOOR = 3.5
"""A judged case needs at least this mean score over its scored trials."""
DEFAULT_TRIAL_FLOOR = 2.0
"""A judged trial scoring below this fails (and fails its case)."""

NOT_REJUDGED = "not re-judged (rubric or transcript changed; run with --allow-live-judge)"
"""Detail of the judge check when the tape holds verdicts, but none for this input."""
NOT_RECORDED = "not re-judged (no judge verdict recorded; run with --allow-live-judge)"
"""Detail of the judge check when the tape holds no verdict for the rubric at all."""


class JudgeError(ScoringError):
    """The judge was refused or a rubric could not be read (before any model call)."""


class JudgeState(enum.Enum):
    """What became of one trial's grading."""

    SCORED = "scored"
    """The judge gave a valid 0-5 score."""
    UNSCORED = "unscored"
    """The judge was asked but gave no valid score (bad answer, failed call)."""
    NOT_CONFIGURED = "not configured"
    """No judge is configured; the deterministic checks decided alone."""
    NOT_REJUDGED = "not re-judged"
    """Replay or rescore found no recorded verdict for this rubric and transcript."""


class JudgeStatus(enum.Enum):
    """The judge's state over a whole run, for the summary and a gate.

    A gate stays open only on GRADED or NOT_NEEDED: a run whose judge was
    missing, failed or was not re-run graded nothing it can vouch for.
    """

    NOT_NEEDED = "not needed"
    """No trial reached the judge (no judged case, or all failed deterministically)."""
    GRADED = "graded"
    """Every trial that reached the judge got a valid score."""
    NOT_CONFIGURED = "not configured"
    """Judged trials ran with no judge configured."""
    UNSCORED = "unscored"
    """The judge was asked but at least one trial got no valid score."""
    NOT_REJUDGED = "not re-judged"
    """Replay/rescore: at least one trial had no recorded verdict to reuse."""

    @property
    def gate_open(self) -> bool:
        """Whether a gated run may pass with this judge status."""
        return self in (JudgeStatus.GRADED, JudgeStatus.NOT_NEEDED)


@attrs.frozen(kw_only=True)
class Floors:
    """The pass thresholds of judged cases (scores are 0-5)."""

    mean: float = DEFAULT_MEAN_FLOOR
    """Lowest mean over a case's scored trials that passes."""
    trial: float = DEFAULT_TRIAL_FLOOR
    """Lowest score of one trial that passes."""


DEFAULT_FLOORS = Floors()
"""Mean 3.5, trial 2.0: uncalibrated starting points; treat a first judged run as data."""


@attrs.frozen(kw_only=True)
class JudgeRequest:
    """What one trial asks the judge: a rubric and the judge input built from the trace."""

    rubric: str
    """The rubric's name."""
    rubric_text: str
    """The rubric's markdown."""
    judge_input: str
    """Request, tools that fired and final reply (``scoring._judge_prompt.judge_input``)."""

    @property
    def digest(self) -> str:
        """The verdict's identity: hash of prompt version, rubric text and input."""
        return judge_digest(self.rubric_text, self.judge_input)


@attrs.frozen(kw_only=True)
class Judgement:
    """One trial's grading."""

    state: JudgeState
    """Scored, unscored, not configured, or not re-judged."""
    rubric: str
    """The rubric's name."""
    score: float | None = None
    """0-5 when scored, else None."""
    rationale: str = ""
    """The judge's reason, when it gave one."""
    problem: str = ""
    """Why the trial is not scored; "" when it is."""
    model: str = ""
    """The judge model that graded (as requested)."""
    host: str = ""
    """Host of the judge's base URL: who graded."""
    digest: str = ""
    """``JudgeRequest.digest`` of the graded input."""
    usage: Usage = attrs.field(factory=Usage)
    """Tokens the judge call spent (zero for a reused verdict)."""
    recorded: bool = False
    """True when the verdict was reused from a tape, not asked for now."""
