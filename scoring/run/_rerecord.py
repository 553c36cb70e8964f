"""``run_rerecord``: record again, live, exactly the attempts a replay found stale.

One ``RerecordRequest`` in, one ``RerecordOutcome`` out.  The replay run is
read (``from_run``) or run now (``run_replay``); its STALE attempts (and,
only when accepted, its CHANGED ones) are planned with the same case, model
and attempt index, whole or, with ``from_turn``, from each one's first
changed turn (``_rerecord_plan``); the plan and its cost, estimated from the
recorded tokens of what will be sent, are reported; then a refusal (harness changes not
accepted, the estimate over the budget) comes before any model call.  The
live run replaces each re-recorded session in its cassette when the new one
is at least as complete (``_cassettes``), and each new session keeps the
source label of the one it replaces unless the request names one.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from evaltape.recorder import Mode, Source, TapeReader

from .._config import Config
from .._errors import ScoringError
from ..cases._cases import Case
from ..results._record_files import read_record, resolve_run
from ..results._records import RunKind, RunRecord
from ._host import SILENT, Host, Reporter
from ._jobs import SourceLabel
from ._live import LiveOutcome, LiveRequest, run_live
from ._plan import AttemptKey, cassette_tape
from ._replay import ReplayRequest, run_replay
from ._rerecord_plan import FromTurn, Planned, from_turns, plan_attempts, planned_for, usd
from ._setup import RunRefused, load_cases, prices_for


@attrs.frozen(kw_only=True)
class RerecordRequest:
    """Which replay to act on, and the limits of the live run."""

    config: Config
    """Resolved settings: folders, agent, base URL, concurrency, pricing."""
    host: Host
    """The project folder, environment, clock, entropy and network the run reads."""
    from_run: str | None = None
    """A replay run (``latest``, an id, a unique prefix, a record path); None: replay now."""
    cases: tuple[str, ...] = ()
    """Only these cases: each an exact case id or, when no id equals it, an id prefix."""
    suite: str | None = None
    """Only the suite of this name."""
    budget: float | None = None
    """USD: refuse when the estimate exceeds it; stop starting attempts once spent."""
    accept_harness_changes: bool = False
    """Also re-record CHANGED attempts (a tool result or the conversation changed)."""
    from_turn: bool = False
    """Serve each stale attempt's recorded turns before its first changed one and go live
    from there (``_rerecord_plan``); the estimate and the budget count the live turns only."""
    source: Source | None = None
    """Where the model responses come from, as recorded in each new session; None: each
    keeps its recording's source (and, unless ``source_detail`` is given, its detail)."""
    source_detail: str | None = None
    """Free text naming the server and model; None: the recording's when ``source`` is None,
    else ""."""
    seed: int | None = None
    """Sampling seed; attempt ``n`` gets ``seed + n``."""
    retries: int = 4
    """Retries of a 429, 5xx or connection failure before the agent sees it."""
    reporter: Reporter = SILENT
    """Where the plan and progress go."""


@attrs.frozen(kw_only=True)
class RerecordOutcome:
    """What a re-record did."""

    replay: RunRecord
    """The replay run whose decisions were acted on."""
    planned: tuple[Planned, ...] = ()
    """What was (to be) recorded again; empty: nothing stale."""
    estimate: float | None = 0.0
    """USD estimated from the recorded tokens; None when a model has no price."""
    live: LiveOutcome | None = None
    """The live run; None when nothing was stale."""

    @property
    def attempts(self) -> int:
        """How many attempts were planned."""
        return sum(len(p.attempts) for p in self.planned)


def _replay_record(request: RerecordRequest) -> RunRecord:
    config = request.config
    if request.from_run is None:
        request.reporter.note(
            "replaying the recordings to find the stale attempts (nothing is sent; "
            "STALE below is what is to be recorded again)"
        )
        outcome = run_replay(
            ReplayRequest(
                config=config,
                host=request.host,
                cases=request.cases,
                suite=request.suite,
                allow_unrecorded=True,
                reporter=request.reporter,
            )
        )
        if outcome.record is None:
            raise RunRefused("the replay found no recorded attempt; nothing to re-record")
        return outcome.record
    try:
        record = read_record(resolve_run(config.results, request.from_run))
    except ScoringError as exc:
        raise RunRefused(str(exc)) from exc
    if record.kind is not RunKind.REPLAY:
        raise RunRefused(
            f"run {record.run_id} is a {record.kind.value} run; --from takes a replay run"
        )
    return record


def _recorded_labels(
    config: Config, planned: tuple[Planned, ...], cases: Mapping[str, Case]
) -> dict[AttemptKey, SourceLabel]:
    """Each planned attempt's source as its newest recorded session's header says."""
    labels: dict[AttemptKey, SourceLabel] = {}
    for p in planned:
        tape, _ = cassette_tape(config.cassettes, cases[p.case_id])
        if not tape.exists():
            continue
        for info in TapeReader(tape, strict=False).scan():
            h = info.header
            if (
                h is not None
                and h.mode is Mode.LIVE
                and (h.case_id, h.model) == (p.case_id, p.model)
                and h.attempt in p.attempts
            ):
                key = (p.case_id, p.model, h.attempt)
                labels[key] = SourceLabel(source=h.source, detail=h.source_detail)
    return labels


def _labels(
    request: RerecordRequest, planned: tuple[Planned, ...], cases: Mapping[str, Case]
) -> tuple[Source, str, tuple[tuple[AttemptKey, SourceLabel], ...]]:
    """The run's source and detail, and the attempts that keep their recording's."""
    if request.source is not None:
        return request.source, request.source_detail or "", ()
    recorded = _recorded_labels(request.config, planned, cases)
    detail = request.source_detail or ""
    if request.source_detail is not None:
        recorded = {k: attrs.evolve(v, detail=detail) for k, v in recorded.items()}
    sources = {label.source for label in recorded.values()}
    # One recorded source for all: the run's too (what its key warnings go by).
    source = sources.pop() if len(sources) == 1 else Source.REAL_API
    return source, detail, tuple(recorded.items())


def run_rerecord(request: RerecordRequest) -> RerecordOutcome:
    """Record the replay's stale attempts again; see the module docstring for the order.

    Raises ``RunRefused`` (exit 2 in the CLI) before any model call: CHANGED
    attempts without ``accept_harness_changes``, an estimate over the budget
    (or unknown under one), a --from run that is not a replay.
    """
    config, reporter = request.config, request.reporter
    _, chosen = load_cases(config, request.cases, request.suite)
    cases = {c.id: c for s in chosen for c in s.cases}
    prices = prices_for(config, request.host.environ)
    if request.from_turn and request.accept_harness_changes:
        raise RunRefused(
            "--from-turn cannot re-record CHANGED attempts (drop --accept-harness-changes): "
            "after a tool-result or conversation change the earlier turns are not what the "
            "model would be asked today"
        )
    record = _replay_record(request)
    keys, changes = plan_attempts(record, cases, request.accept_harness_changes)
    if not keys:
        return RerecordOutcome(replay=record)
    starts: dict[AttemptKey, FromTurn] = {}
    if request.from_turn:
        stale = tuple(a for a in record.attempts if a.attempt in keys.get((a.case_id, a.model), ()))
        starts = from_turns(config, stale, cases)
    planned = tuple(
        planned_for(config, prices, cases[c], m, tuple(sorted(a)), changes[(c, m)], starts)
        for (c, m), a in sorted(keys.items())
    )
    costs = [p.cost for p in planned]
    estimate = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    total = sum(len(p.attempts) for p in planned)
    reporter.note(f"rerecord from replay run {record.run_id}: {total} attempt(s)")
    for p in planned:
        shown = ",".join(str(a + 1) for a in p.attempts)
        turns = ",".join(str(t) for t in p.from_turns)
        goes = f"  live from turn {turns}" if p.from_turns else ""
        reporter.note(
            f"  {p.suite}/{p.case_id}  {p.model}  attempts {shown}  "
            f"({p.change.value}){goes}  est. {usd(p.cost)}"
        )
    unpriced = sorted({p.model for p in planned if p.cost is None})
    why = f" (no price for {', '.join(unpriced)})" if unpriced else ""
    reporter.note(f"estimated cost: {usd(estimate)}{why}")
    if request.budget is not None:
        if estimate is None:
            raise RunRefused(
                f"cannot hold --budget {request.budget:g}: the estimate is n/a{why}; "
                f"pass --price {unpriced[0] if unpriced else 'MODEL'}=IN/OUT (USD per million "
                "tokens; 0/0 for a free model) or --pricing FILE"
            )
        if estimate > request.budget:
            raise RunRefused(
                f"the estimated cost {usd(estimate)} exceeds --budget {request.budget:g}; "
                "nothing was sent"
            )
    only: tuple[AttemptKey, ...] = tuple(
        (p.case_id, p.model, a) for p in planned for a in p.attempts
    )
    source, detail, labels = _labels(request, planned, cases)
    live = run_live(
        LiveRequest(
            config=config,
            host=request.host,
            models=tuple(dict.fromkeys(p.model for p in planned)),
            trials=max(a for p in planned for a in p.attempts) + 1,
            cases=tuple(dict.fromkeys(p.case_id for p in planned)),
            only=only,
            source=source,
            source_detail=detail,
            labels=labels,
            prefixes=tuple((k, s.prefix) for k, s in starts.items() if s.prefix is not None),
            seed=request.seed,
            retries=request.retries,
            export=False,
            update_cassettes=True,
            budget=request.budget,
            reporter=reporter,
        )
    )
    return RerecordOutcome(replay=record, planned=planned, estimate=estimate, live=live)
