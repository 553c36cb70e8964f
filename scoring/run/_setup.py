"""The steps every run shares before its first model call, and the run record's end.

Each step turns the library error it meets into ``RunRefused`` (bad input,
found before anything ran); invalid suite files carry one problem per file line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from evaltape.recorder import Source

from .._config import Config, display_path, scorer_names
from .._errors import ScoringError
from ..cases._cases import CaseError, Problem, SelectionError, Suite, select
from ..cases._load import load_suites
from ..cost._pricing import (
    Prices,
    PricingError,
    resolve_prices,
    with_price_flags,
)
from ..judge._judge import Judge, resolve_judge
from ..judge._judgement import JudgeError, JudgeStatus
from ..judge._prompt import CONSTRAINTS
from ..outputs.export._config import ExportConfigError
from ..outputs.export._exporter import Exporter
from ..results._history import HEARTBEAT, RunLog
from ..results._records import RunRecord, RunState
from ..sandbox import Sandbox
from ._export_step import start_export
from ._finished import PoolOutcome
from ._host import Host, Reporter, records_redactor
from ._jobs import DEFAULT_BASE_URL
from ._stop import StopKind
from .attempt._agents import AgentError, AgentSpec, load_agent, parse_agent
from .attempt._task import Agent
from .attempt._workspace import run_workspaces


class RunRefused(ScoringError):
    """The request cannot run: bad input, found before any model call.

    ``problems`` holds one ``path:line: message`` per problem when suite files
    were refused; the message alone otherwise.
    """

    def __init__(self, message: str, problems: tuple[Problem, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


@attrs.frozen(kw_only=True)
class Selection:
    """What a run is about: the suites, the selected cases and the agent."""

    suites: tuple[Suite, ...]
    """Every suite, validated."""
    chosen: tuple[Suite, ...]
    """The suites pruned to the selected cases."""
    spec: AgentSpec
    """The agent setting, parsed."""
    agent: Agent | None
    """The imported Python agent; None for a command agent."""


def load_cases(
    config: Config, cases: tuple[str, ...], suite: str | None
) -> tuple[tuple[Suite, ...], tuple[Suite, ...]]:
    """Every suite and the selected ones, or ``RunRefused`` (with the problems of invalid
    suite files)."""
    try:
        names, where = scorer_names(config)
        suites = load_suites(
            (display_path(config.suites),),
            rubrics_dir=display_path(config.rubrics),
            scorers=names,
            scorers_from=where,
        )
    except CaseError as exc:
        raise RunRefused(str(exc), problems=exc.problems) from exc
    try:
        return suites, select(suites, cases=cases, suite=suite)
    except SelectionError as exc:
        raise RunRefused(str(exc)) from exc


def load_selection(
    config: Config, host: Host, cases: tuple[str, ...], suite: str | None
) -> Selection:
    """Validate every suite, select the cases and load the agent: all before a token is spent."""
    suites, chosen = load_cases(config, cases, suite)
    try:
        spec = parse_agent(config.agent)
        agent = load_agent(spec, host.project)
    except AgentError as exc:
        raise RunRefused(str(exc)) from exc
    return Selection(suites=suites, chosen=chosen, spec=spec, agent=agent)


def prices_for(config: Config, environ: Mapping[str, str]) -> Prices:
    """The price table calls are costed with; ``RunRefused`` on a bad override file."""
    try:
        return with_price_flags(resolve_prices(config.pricing, environ), config.price)
    except PricingError as exc:
        raise RunRefused(str(exc)) from exc


def base_url_of(config: Config) -> str:
    """Where the agent's model calls go."""
    return config.base_url or DEFAULT_BASE_URL


def judge_for(config: Config, environ: Mapping[str, str], models: Sequence[str]) -> Judge | None:
    """The configured judge, or None; ``RunRefused`` when it is refused."""
    constrain = config.judge_constrain or "none"
    if constrain not in CONSTRAINTS:
        raise RunRefused(f'judge_constrain: "{constrain}" is not one of {", ".join(CONSTRAINTS)}')
    try:
        judge = resolve_judge(
            judge_model=config.judge_model,
            judge_base_url=config.judge_base_url,
            models_under_test=sorted(set(models)),
            base_url=base_url_of(config),
            environ=environ,
        )
    except JudgeError as exc:
        raise RunRefused(f"judge refused: {exc}") from exc
    return None if judge is None else attrs.evolve(judge, constrain=constrain)


def warn_without_keys(source: Source, environ: Mapping[str, str], reporter: Reporter) -> None:
    """A real-API run with neither API key set gets a warning (the agent may have its own)."""
    if source is Source.REAL_API and not (
        environ.get("OPENAI_API_KEY") or environ.get("ANTHROPIC_API_KEY")
    ):
        reporter.warning("neither OPENAI_API_KEY nor ANTHROPIC_API_KEY is set")


def judge_notes(judge: Judge | None, status: JudgeStatus) -> tuple[str, ...]:
    """Run-record notes: who graded (model and base URL host) and the judge status."""
    who = f"judge: {judge.who}" if judge is not None else "judge: none"
    return (who, f"judge_status: {status.value}")


def finish(log: RunLog, outcome: PoolOutcome, *, notes: tuple[str, ...] = ()) -> RunRecord:
    """End the run record in the state the pool's outcome implies, with ``notes``; the
    record as written."""
    if outcome.stopped is None:
        return log.finish(RunState.COMPLETED, notes=notes)
    if outcome.stopped is StopKind.AUTH:
        return log.finish(RunState.FAILED, notes=(outcome.reason, *notes))
    return log.finish(RunState.CANCELLED, notes=(outcome.reason, *notes))


def exporter_for(
    enabled: bool,
    *,
    run_id: str,
    config: Config,
    content: bool,
    prices: Prices,
    environ: Mapping[str, str],
    reporter: Reporter,
) -> Exporter | None:
    """The run's exporter when ``enabled`` (None otherwise, or when nothing is configured);
    ``RunRefused`` on a bad export variable, before any model call."""
    if not enabled:
        return None
    try:
        return start_export(
            run_id=run_id,
            agent=config.agent or "agent",
            content=content,
            prices=prices,
            environ=environ,
            reporter=reporter,
        )
    except ExportConfigError as exc:
        raise RunRefused(str(exc)) from exc


def start_run_log(config: Config, host: Host, record: RunRecord) -> tuple[RunLog, Path]:
    """The run's log, started with its record (naming the run's workspace folder, beating
    its heartbeat), and that folder: where every attempt of the run makes its workspace."""
    workspaces = run_workspaces(record.run_id)
    record = attrs.evolve(record, workspaces=str(workspaces))
    log = RunLog(
        config.results, record, clock=host.clock, redactor=records_redactor(host),
        heartbeat=HEARTBEAT,
    )  # fmt: skip
    log.start()
    return log, workspaces


UNCONFINED = "verify commands and the agent's bash tool run unconfined"
"""What the opt-out warning says happens."""


def sandbox_for(config: Config, host: Host, reporter: Reporter) -> Sandbox:
    """The sandbox for this run's commands; raises ``RunRefused`` when it is missing."""
    found = Sandbox.find(host.environ)
    if not config.sandbox:
        why = "bubblewrap (bwrap) is not on PATH" if found.bwrap is None else "opted out"
        reporter.warning(f"sandbox off ({why}; --no-sandbox / sandbox = false): {UNCONFINED}")
        return Sandbox.unconfined(host.environ)
    problem = found.problem()
    if problem is not None:
        raise RunRefused(
            f"no sandbox: {problem}; install bubblewrap, or pass --no-sandbox "
            "(config: sandbox = false) to run verify commands and tools unconfined"
        )
    return found
