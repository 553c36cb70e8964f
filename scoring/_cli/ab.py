"""``evaltape ab``: two variants of the harness, run now, interleaved; a report, never a gate."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import click

from evaltape.recorder import VERSION, Source, Usage
from evaltape.scoring._cli._boundary import boundary, fail
from evaltape.scoring._cli._options import config_options
from evaltape.scoring._cli.live import (
    DEFAULT_BASE_URL,
    EXIT_INTERRUPTED,
    SOURCES,
    cases_and_agent,
    interruptible,
)
from evaltape.scoring._config import Config, display_path
from evaltape.scoring.judge._floors import judge_status
from evaltape.scoring.judge._judge import resolve_judge
from evaltape.scoring.judge._judgement import Floors, JudgeError
from evaltape.scoring.results._record_files import write_atomic
from evaltape.scoring.results._record_json import record_to_json
from evaltape.scoring.results._records import (
    AttemptResult,
    RunKind,
    RunRecord,
    RunState,
    Verdict,
    git_commit,
    make_run_id,
)
from evaltape.scoring.run._runner import (
    JobEnv,
    JobResult,
    PoolOutcome,
    Stop,
    StopKind,
    default_scorer,
    run_pool,
)
from evaltape.scoring.verdicts._ab import (
    BASELINE,
    CANDIDATE,
    Variant,
    VariantError,
    ab_folder,
    case_verdicts,
    parse_variants,
    plan_ab,
    render_cases,
    single_model,
    variant_of,
)
from evaltape.scoring.verdicts._compare import Comparison, compare
from evaltape.scoring.verdicts._compare_render import render_comparison

EXIT_AUTH = 2
"""The provider refused the credentials: the A/B could not run."""


class _Progress:
    """``[k/total] variant :: case (trial n) PASS|FAIL|ERROR reason`` on stderr."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0

    def __call__(self, result: JobResult) -> None:
        self.done += 1
        job = result.job
        word = {Verdict.PASSED: "PASS", Verdict.FAILED: "FAIL"}.get(result.verdict, "ERROR")
        text = (
            f"[{self.done}/{self.total}] {variant_of(job)} :: {job.case.id} "
            f"(trial {job.attempt + 1}) {word}"
        )
        click.echo(text + (f" {result.reason}" if result.reason else ""), err=True)


def _tokens(usage: Usage) -> str:
    return f"{usage.total_tokens:,} tokens ({usage.input_tokens:,} in, {usage.output_tokens:,} out)"


def _write_side(
    folder: Path,
    record: RunRecord,
    variant: Variant,
    other: Variant,
    attempts: Sequence[AttemptResult],
    state: RunState,
    notes: tuple[str, ...],
) -> Path:
    """``<results>/ab/<run id>/<variant>.json``: that side's attempts as a run record."""
    side = RunRecord(
        run_id=record.run_id,
        kind=RunKind.LIVE,
        state=state,
        started_at=record.started_at,
        finished_at=time.time(),
        updated_at=time.time(),
        commit=record.commit,
        models=record.models,
        suites=record.suites,
        trials=record.trials,
        total=record.total // 2,
        attempts=tuple(attempts),
        notes=(
            f"ab {variant.name}: {variant.spec}",
            f"ab {other.name}: {other.spec}",
            *notes,
        ),
    )
    path = folder / f"{variant.name}.json"
    write_atomic(path, json.dumps(record_to_json(side), indent=1) + "\n")
    return path


def _suite_line(c: Comparison) -> str:
    """One plain sentence on the paired suite-level test, in the A/B's terms."""
    t = c.test
    if not t.cases:
        return "suite: no case has counted trials on both sides; nothing to compare"
    p = t.p_two_sided
    ci = "n/a" if math.isnan(t.ci_low) else f"{t.ci_low:+.1f} to {t.ci_high:+.1f}"
    shown = f"{p:.4f}" if p >= 0.0001 else f"{p:.1e}"
    if p <= c.alpha and t.effect_points > 0:
        word = "candidate better"
    elif p <= c.alpha and t.effect_points < 0:
        word = "candidate worse"
    else:
        word = "no significant difference"
    return (
        f"suite: {word}: {t.effect_points:+.1f} points (95% CI {ci}), "
        f"two-sided paired p = {shown} over {t.cases} case(s)"
    )


@click.command()
@click.argument("suite", required=False, metavar="[SUITE]")
@click.option(
    "--baseline",
    "baseline_spec",
    required=True,
    metavar="env:K=V[,K=V]",
    help="Variant A: environment overrides for its attempts.",
)
@click.option(
    "--candidate",
    "candidate_spec",
    required=True,
    metavar="env:K=V[,K=V]",
    help="Variant B: environment overrides for its attempts.",
)
@click.option("-m", "--model", "model", metavar="MODEL", help="The model under test (both sides).")
@click.option(
    "--cases", "cases_prefix", metavar="PREFIX", help="Only cases whose id starts with PREFIX."
)
@click.option(
    "--alpha",
    type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance level of the per-case and suite-level tests.",
)
@click.option(
    "--source",
    type=click.Choice([s.value for s in SOURCES]),
    default=Source.REAL_API.value,
    show_default=True,
    help="Where the model responses come from, as recorded in each session.",
)
@click.option(
    "--source-detail",
    default="",
    metavar="TEXT",
    help='Free text naming the server and model, e.g. "llama.cpp SmolLM2-135M".',
)
@click.option(
    "--seed",
    type=int,
    default=None,
    help="Sampling seed; trial t of both sides gets seed + t.",
)
@click.option(
    "--retries",
    type=click.IntRange(min=0),
    default=4,
    show_default=True,
    help="Retries of a 429, 5xx or connection failure before the agent sees it.",
)
@config_options(
    "suites",
    "rubrics",
    "results",
    "agent",
    "base_url",
    "concurrency",
    "trials",
    "hang_limit",
    "judge_model",
    "judge_base_url",
    "judge_mean_floor",
    "judge_trial_floor",
)
@boundary
@interruptible
def ab(
    suite: str | None,
    baseline_spec: str,
    candidate_spec: str,
    model: str | None,
    cases_prefix: str | None,
    alpha: float,
    source: str,
    source_detail: str,
    seed: int | None,
    retries: int,
    config: Config,
) -> None:
    """A/B two variants of the harness now, interleaved; a report, never a gate.

    Both variants run every selected case --trials times with one model, in
    one pool, trial t of each case in ABBA order (A then B when t is even,
    B then A when odd).  Tapes go to <results>/ab/<run id>/<variant>/; the
    cassettes and the run history are not touched.  Prints a verdict per case
    (improved, regressed, unchanged-pass, unchanged-fail, inconclusive) and a
    paired suite-level test.  Exit 0 once it ran, whatever the verdicts; 2 on
    bad input (before any model call) or refused credentials; 130 on Ctrl-C.
    """
    try:
        baseline, candidate = parse_variants(baseline_spec, candidate_spec)
    except VariantError as exc:
        fail(str(exc), 2)
    chosen_model = model or config.model
    if not chosen_model:
        fail('no model: pass -m MODEL or set "model" in evaltape.toml', 2)
    assert chosen_model is not None
    _, chosen, agent, spec = cases_and_agent(config, cases_prefix, suite)
    if source == Source.REAL_API.value and not (
        os.environ.get("OPENAI_API_KEY") or os.environ.get("ANTHROPIC_API_KEY")
    ):
        click.echo(
            "evaltape: warning: neither OPENAI_API_KEY nor ANTHROPIC_API_KEY is set", err=True
        )
    run_id = make_run_id(time.time, os.urandom)
    jobs = plan_ab(chosen, chosen_model, config.trials, config.results, run_id, baseline, candidate)
    base_url = config.base_url or DEFAULT_BASE_URL
    try:
        judge = resolve_judge(
            judge_model=config.judge_model,
            judge_base_url=config.judge_base_url,
            models_under_test=sorted({job.model for job in jobs}),
            base_url=base_url,
            environ=os.environ,
        )
    except JudgeError as exc:
        fail(f"judge refused: {exc}", 2)
    commit = git_commit(Path.cwd())
    env = JobEnv(
        spec=spec,
        agent=agent,
        scorer=default_scorer(),
        stop=Stop(),
        base_url=base_url,
        source=Source(source),
        source_detail=source_detail,
        seed=seed,
        hang_limit=config.hang_limit,
        harness_commit=commit,
        harness_version=VERSION,
        retries=retries,
        judge=judge,
        floors=Floors(mean=config.judge_mean_floor, trial=config.judge_trial_floor),
        environ=dict(os.environ),
    )
    record = RunRecord(
        run_id=run_id,
        kind=RunKind.LIVE,
        state=RunState.RUNNING,
        started_at=time.time(),
        commit=commit,
        models=tuple(dict.fromkeys(job.model for job in jobs)),
        suites=tuple(s.name for s in chosen),
        trials=config.trials,
        total=len(jobs),
    )
    cases = sum(len(s.cases) for s in chosen)
    click.echo(
        f"ab {run_id}: {cases} case(s) x {config.trials} trial(s) x 2 variants = "
        f"{len(jobs)} attempts with {chosen_model}, ABBA order, concurrency {config.concurrency}",
        err=True,
    )
    click.echo(f"  A {baseline.name}: {baseline.spec}", err=True)
    click.echo(f"  B {candidate.name}: {candidate.spec}", err=True)
    if judge is not None:
        click.echo(f"judge: {judge.who}", err=True)
    outcome = run_pool(jobs, env, concurrency=config.concurrency, on_result=_Progress(len(jobs)))
    _report(outcome, baseline, candidate, alpha, config, record)
    if outcome.stopped is StopKind.AUTH:
        fail(f"{outcome.reason}; check OPENAI_API_KEY / ANTHROPIC_API_KEY", EXIT_AUTH)
    if outcome.stopped is StopKind.INTERRUPT:
        click.echo("evaltape: interrupted; finished attempts were kept", err=True)
        sys.exit(EXIT_INTERRUPTED)


def _report(
    outcome: PoolOutcome,
    baseline: Variant,
    candidate: Variant,
    alpha: float,
    config: Config,
    record: RunRecord,
) -> None:
    """Write both sides' records, then print the per-case verdicts and the paired test."""
    sides: dict[str, list[AttemptResult]] = {BASELINE: [], CANDIDATE: []}
    usage: dict[str, Usage] = {BASELINE: Usage(), CANDIDATE: Usage()}
    for r in outcome.results:
        name = variant_of(r.job)
        sides[name].append(r.attempt_result())
        usage[name] += r.usage
    state = RunState.COMPLETED if outcome.stopped is None else RunState.CANCELLED
    status = judge_status(r.judgement for r in outcome.results)
    notes = (
        f"ab: ABBA interleaved, {config.trials} trial(s) per side, alpha {alpha:g}",
        *((outcome.reason,) if outcome.reason else ()),
        f"judge_status: {status.value}",
    )
    folder = ab_folder(config.results, record.run_id)
    _write_side(folder, record, baseline, candidate, sides[BASELINE], state, notes)
    _write_side(folder, record, candidate, baseline, sides[CANDIDATE], state, notes)

    click.echo(f"A/B {record.run_id}: baseline {baseline.spec}  vs  candidate {candidate.spec}")
    rows = case_verdicts(sides[BASELINE], sides[CANDIDATE], alpha=alpha)
    for line in render_cases(rows, trials=config.trials, alpha=alpha):
        click.echo(line)
    comparison = compare(single_model(sides[BASELINE]), single_model(sides[CANDIDATE]), alpha=alpha)
    click.echo("")
    for line in render_comparison(comparison, baseline_label=BASELINE, current_label=CANDIDATE):
        click.echo(line)
    click.echo(_suite_line(comparison))
    for name in (BASELINE, CANDIDATE):
        errors = sum(1 for a in sides[name] if a.tainted)
        extra = f", {errors} could not be judged" if errors else ""
        click.echo(f"{name}: {len(sides[name])} attempts{extra} · {_tokens(usage[name])}")
    click.echo(f"judge_status: {status.value}")
    click.echo("not a gate: no baseline saved, no history line, exit 0 whatever the verdicts")
    click.echo(f"tapes and records: {display_path(folder)}/", err=True)
