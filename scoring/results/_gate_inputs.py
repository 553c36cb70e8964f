"""What a gate decided on, kept in the run record so the decision can be made again.

A gate's decision depends on more than the run's own attempts: which earlier
runs were pooled as the baseline, which cases were exempt from the
previously-green rule and on what evidence, the significance level, the
confirmation count, the judge's status and the score floors.  All of it is
stored per model as ``GateInputs`` in ``RunRecord.gate_inputs``, so
``evaltape compare`` decides again from exactly these inputs, at any later
time, whatever runs were added to the history since.
"""

from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class Exemption:
    """A case left to the paired test by the previously-green rule, and why."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case."""
    run_id: str
    """The earlier gated run in which it failed every planned trial: the evidence.  One
    piece of evidence exempts the case in one later run only."""


@attrs.frozen(kw_only=True)
class GateInputs:
    """Everything one model's gate decision was made from, besides the run's own attempts."""

    model: str
    """The model."""
    decision: str
    """The decision made from these inputs: "open", "closed", "run zero", "no baseline"."""
    baseline_runs: tuple[str, ...] = ()
    """Run ids pooled as the baseline, newest first (empty: run zero or no baseline)."""
    saved_baseline: str = ""
    """The saved baseline's name when ``--baseline NAME`` was used ("" otherwise); its one
    run is ``baseline_runs[0]``."""
    history: tuple[str, ...] = ()
    """The gated runs read for exemptions, newest first (the history window)."""
    exemptions: tuple[Exemption, ...] = ()
    """Cases exempt from the previously-green rule in this run, with their evidence."""
    reruns: int = 0
    """Confirmation re-runs the run made for this model (attempts marked ``confirmation``)."""
    alpha: float = 0.05
    """Significance level of the paired test."""
    confirm: int = 0
    """Confirmation re-runs asked of a (nearly) green case that broke."""
    plan_drop: float = 0.05
    """The drop (a rate) the power note sized."""
    judge_status: str = "ok"
    """The judge status the decision read."""
    floor_failures: tuple[str, ...] = ()
    """Judged cases (``suite/case``) below their score floor."""
    missing: str = ""
    """With no baseline: what is missing for one ("" on run zero or with a baseline)."""
