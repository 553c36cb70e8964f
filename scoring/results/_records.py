"""Run records: what every run (live, replay, rescore) writes, as values and as files.

A run writes ``<results>/runs/<run id>.json`` while it runs (``RunLog`` in
``scoring._history``), so ``evaltape status`` can show its progress, and one
line in ``<results>/history.jsonl`` when it ends.  Every write
replaces the file atomically: a reader sees the previous version or the new
one, never a mix.  The JSON mapping sits beside the values as plain functions,
with a schema version; a newer schema is refused, never guessed at.
"""

from __future__ import annotations

import enum
import os
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence

import attrs

from evaltape.recorder import VERSION, Usage

from .._errors import ScoringError
from ._gate_inputs import Exemption, GateInputs

__all__ = ["Exemption", "GateInputs"]

RUNS_DIR = "runs"
"""Folder under the results folder that holds one ``<run id>.json`` per run."""


class RecordError(ScoringError):
    """A run record or history line could not be read, written or found."""


class Verdict(enum.Enum):
    """The outcome of one attempt."""

    PASSED = "passed"
    """Every check held."""
    FAILED = "failed"
    """A check failed; ``reason`` names the first one."""
    ERROR = "error"
    """The attempt could not be judged: infrastructure failure, timeout, crash."""
    SKIPPED = "skipped"
    """Not run (for example, a replay with no recorded tape for the case)."""
    INTERRUPTED = "interrupted"
    """Cut short when the run's driver died; its session, up to the last event on disk,
    was put on the run's tapes by ``evaltape recover``.  Neither a pass nor a fail."""

    @property
    def judged(self) -> bool:
        """The attempt counts as a pass or a fail (or an error): not skipped, not interrupted."""
        return self not in (Verdict.SKIPPED, Verdict.INTERRUPTED)


class RunKind(enum.Enum):
    """How a run (and each of its attempts) obtained its sessions."""

    LIVE = "live"
    """Real model calls, each recorded to a tape."""
    REPLAY = "replay"
    """The agent ran again against a tape's recorded model responses."""
    RESCORE = "rescore"
    """Recorded sessions scored again; nothing ran."""


class RunState(enum.Enum):
    """Where a run is in its life."""

    RUNNING = "running"
    """Attempts are still being added."""
    COMPLETED = "completed"
    """Every planned attempt finished (whatever the verdicts)."""
    FAILED = "failed"
    """The run stopped early on an error of its own."""
    CANCELLED = "cancelled"
    """Someone stopped the run (Ctrl-C, a CI timeout)."""
    CRASHED = "crashed"
    """The run's driver died (killed, out of memory, power loss) and ``evaltape recover``
    closed its record; attempts in flight are ``interrupted``."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


@attrs.frozen(kw_only=True)
class AttemptResult:
    """One attempt at one case with one model: its verdict and where its evidence lives."""

    case_id: str
    """The case's id."""
    suite: str
    """The case's suite."""
    model: str
    """The model under test."""
    attempt: int
    """Zero-based attempt index among the case's trials."""
    verdict: Verdict
    """The outcome."""
    reason: str = attrs.field(default="", converter=_one_line)
    """One line: why it did not pass (empty when it passed); newlines are folded."""
    usage: Usage = attrs.field(factory=Usage)
    """Token counts summed over the attempt's model calls."""
    duration: float = 0.0
    """Seconds the attempt took."""
    tape: str = ""
    """The tape holding the session, relative to the results or cassettes folder; "" if none."""
    session_id: str = ""
    """The session's id within ``tape``."""
    mode: RunKind = RunKind.LIVE
    """How this attempt's session was obtained."""
    tainted: bool = False
    """The evidence is unreliable (infrastructure error, damaged tape); kept out of statistics."""
    quarantined: bool = False
    """The case is quarantined: reported, but kept out of the gate."""
    known_gap: bool = False
    """The case is a known gap: expected to fail today."""
    rescored: Verdict | None = None
    """Replay only: the recorded session scored with today's scorers."""
    replayed: Verdict | None = None
    """Replay only: the session today's harness produced from the recorded model outputs."""
    change: str = ""
    """Replay only: the decision (``unchanged``, ``regression``, ``improvement``,
    ``changed``, ``stale``, ``untested``); empty for live and rescore attempts."""
    change_detail: str = ""
    """Replay only, for ``changed`` and ``stale``: what the harness changed, one line
    (``tool result changed: read {"path": "a.txt"}``, ``system prompt changed``)."""
    change_diff: tuple[str, ...] = ()
    """Replay only, for ``changed`` and ``stale``: the short recorded-vs-now diff
    (``-`` recorded, ``+`` now), as ``evaltape replay`` prints it."""
    cost: float | None = None
    """USD for the agent's model calls (provider-reported where given); None when unknown."""
    judge_usage: Usage = attrs.field(factory=Usage)
    """Tokens the judge spent grading this attempt; never added to ``usage``."""
    judge_cost: float | None = None
    """USD the judge spent grading this attempt; None when unknown or not judged."""
    judge_score: float | None = None
    """The judge's 0-5 score; None when not judged or unscored."""
    fingerprint: str = ""
    """The case definition's fingerprint when it ran (an edited case gets a new one)."""
    outputs_digest: str = ""
    """Digest of the model's outputs in the session (what the model said and called)."""
    effects_digest: str = ""
    """Digest of what the harness did with them (tool results and the outcome checked)."""
    confirmation: bool = False
    """A gate's confirmation re-run: the case was green in the baseline and failed every
    planned trial, so the gate ran it again before blocking.  Kept out of the paired test
    and the pass rates, which compare the planned trials only."""


@attrs.frozen(kw_only=True)
class RunRecord:
    """One run: what it set out to do, how far it got, and every attempt's result."""

    run_id: str
    """Sortable id, ``YYYYMMDDTHHMMSSZ-<6 hex>`` (see ``make_run_id``)."""
    kind: RunKind
    """Live, replay or rescore."""
    state: RunState
    """Running, completed, failed, cancelled or crashed."""
    started_at: float
    """Unix time the run started."""
    finished_at: float | None = None
    """Unix time the run ended; None while it runs."""
    updated_at: float | None = None
    """Unix time the record was last written; shows whether a running run is alive."""
    pid: int | None = None
    """The process id of the run's driver (the process that writes this record)."""
    host: str = ""
    """The name of the machine the driver runs on (a pid means something only there)."""
    heartbeat_at: float | None = None
    """Unix time the driver last said it was alive (rewritten every few seconds while it
    runs); None for a record written before heartbeats existed."""
    workspaces: str = ""
    """The folder holding the run's attempt workspaces (``evaltape-run-<run id>`` in the
    temporary folder), so a crashed run's leftovers can be found; "" when none."""
    commit: str = ""
    """Short git commit of the harness (``git_commit``); "" outside a git repository."""
    version: str = VERSION
    """The evaltape version that wrote the record."""
    models: tuple[str, ...] = ()
    """Models under test."""
    suites: tuple[str, ...] = ()
    """Suites selected."""
    trials: int = 1
    """Attempts per case and model."""
    total: int = 0
    """Attempts planned."""
    attempts: tuple[AttemptResult, ...] = ()
    """Results so far, in the order they finished."""
    notes: tuple[str, ...] = ()
    """Free-form lines (why it failed or was cancelled, flags worth remembering)."""
    purpose: str = ""
    """Why the run was started: "" (ordinary), "gate", "entry_check" or "scoreboard"."""
    gate: str = ""
    """The gate's decision: "open", "closed", "run zero", "no baseline", or "" when the run
    was not gated."""
    gate_blocked: bool = False
    """The gate closed on this run; it never becomes a baseline."""
    baseline_accepted: bool = False
    """The gate closed but ``--accept-baseline`` waved the run through."""
    baseline: str = ""
    """The run id (or saved baseline name) the gate compared against; "" for none."""
    confirm_trials: int = 0
    """Confirmation re-runs the gate asked of a green case that broke (0: none asked)."""
    gate_inputs: tuple[GateInputs, ...] = ()
    """Per model, everything the gate decided on besides the attempts (baseline runs,
    history window, exemptions, re-runs, alpha, judge status, floors); empty when the run
    was not gated or was written before these were kept."""
    exported: tuple[str, ...] = ()
    """Attempt keys (``attempt_key``) whose spans and every score were delivered; each is
    exported once."""
    export_partial: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Attempts whose spans were delivered but not every score: (attempt key, names of the
    scores delivered).  ``evaltape export RUN`` sends the rest."""

    @property
    def completed(self) -> int:
        """Attempts finished so far."""
        return len(self.attempts)

    def count(self, verdict: Verdict) -> int:
        """How many attempts ended with ``verdict``."""
        return sum(1 for a in self.attempts if a.verdict is verdict)


@attrs.frozen(kw_only=True)
class ModelTally:
    """Verdict counts of one model's attempts in a run."""

    model: str
    """The model."""
    passed: int
    """Attempts that passed."""
    total: int
    """Attempts that were judged (skipped and interrupted ones are not counted)."""


@attrs.frozen(kw_only=True)
class Inconsistency:
    """A case whose attempts with one model disagree: some passed, some did not."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case."""
    model: str
    """The model."""
    passed: int
    """Attempts that passed."""
    total: int
    """Attempts that were judged."""


def tally(attempts: Iterable[AttemptResult], models: Sequence[str] = ()) -> tuple[ModelTally, ...]:
    """Passed/total per model: ``models`` first (even with no attempts), then any others.

    Planned trials only: a gate's confirmation re-runs are kept apart, as the gate keeps
    them out of its rates, so every tally a user reads (the live summary, ``status``,
    ``history``) counts what the gate counted.
    """
    counts: dict[str, list[int]] = {m: [0, 0] for m in models}
    for a in attempts:
        if a.confirmation:
            continue
        if not a.verdict.judged:
            counts.setdefault(a.model, [0, 0])
            continue
        row = counts.setdefault(a.model, [0, 0])
        row[0] += a.verdict is Verdict.PASSED
        row[1] += 1
    return tuple(ModelTally(model=m, passed=p, total=t) for m, (p, t) in counts.items())


def inconsistent_cases(attempts: Iterable[AttemptResult]) -> tuple[Inconsistency, ...]:
    """Cases whose judged attempts with one model did not all agree on passing."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for a in attempts:
        if not a.verdict.judged:
            continue
        row = groups.setdefault((a.suite, a.case_id, a.model), [0, 0])
        row[0] += a.verdict is Verdict.PASSED
        row[1] += 1
    return tuple(
        Inconsistency(suite=s, case_id=c, model=m, passed=p, total=t)
        for (s, c, m), (p, t) in groups.items()
        if 0 < p < t
    )


def attempt_key(a: AttemptResult) -> str:
    """``suite/case/model/attempt``: names one attempt within a run."""
    return f"{a.suite}/{a.case_id}/{a.model}/{a.attempt}"


def make_run_id(clock: Callable[[], float], random_bytes: Callable[[int], bytes]) -> str:
    """A run id that sorts by start time: ``20261129T231500.042Z-3fa9c1``.

    ``clock`` gives Unix time (``time.time``), ``random_bytes`` entropy
    (``os.urandom``).  Milliseconds keep runs started in the same second in
    order, so ``latest`` is the run started last; the tail keeps ids unique.
    """
    now = clock()
    millis = int(now * 1000) % 1000
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    return f"{stamp}.{millis:03d}Z-{random_bytes(3).hex()}"


def git_commit(cwd: str | os.PathLike[str]) -> str:
    """``git rev-parse --short HEAD`` in ``cwd``; "" outside a repository or without git."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


# JSON mapping -------------------------------------------------------------


# Files ---------------------------------------------------------------------
