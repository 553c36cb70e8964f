"""The turn-by-turn trace of a run's attempts at one case, read back from their tapes.

A pass/fail line says that an attempt failed, not why.  The trace shows, for
each attempt as its own block: every model turn's thinking and text, every
tool call's exact arguments and what the tool returned (the result the next
request carried back), the failures, how the session ended, and the verdict
with its reason, scored now with today's case and scorer.  Nothing is
re-derived from anything but the recorded events, and only the display is
cut: ``Cut`` shortens long values with a marker, the tape is never touched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import attrs

from evaltape.recorder import HarnessEvent, RecordedSession, Session, fold

from ...cases._cases import Case
from ...checks._score import Check, Scorer
from ...results._records import AttemptResult, RunRecord, Verdict
from ._rescore import TapeCache, locate_tape, rescore_session

DEFAULT_WIDTH = 400
"""Characters of one value shown before it is cut (``--full`` shows all)."""

JUDGE_EVENT = "judge"
"""Name of the harness event a session records a judge's grade with."""

INDENT = "    "


@attrs.frozen(kw_only=True)
class Cut:
    """Shortens long values for display; ``limit`` None shows everything."""

    limit: int | None = DEFAULT_WIDTH
    """Characters kept of one value."""

    def __call__(self, text: str) -> str:
        if self.limit is None or len(text) <= self.limit:
            return text
        hidden = len(text) - self.limit
        return f"{text[: self.limit]}… [{hidden:,} more chars; --full shows all]"


@attrs.frozen(kw_only=True)
class CaseLine:
    """One case of a run, with its attempts' verdicts counted."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case."""
    models: tuple[str, ...]
    """Models it ran with, in first-seen order."""
    counts: tuple[tuple[Verdict, int], ...]
    """How many attempts ended with each verdict (only verdicts that occur)."""

    @property
    def attempts(self) -> int:
        """Attempts in the run."""
        return sum(n for _, n in self.counts)


def run_cases(record: RunRecord) -> tuple[CaseLine, ...]:
    """The run's cases in first-seen order, with verdict counts."""
    grouped: dict[tuple[str, str], list[AttemptResult]] = {}
    for a in record.attempts:
        grouped.setdefault((a.suite, a.case_id), []).append(a)
    lines = []
    for (suite, case_id), attempts in grouped.items():
        counts = tuple((v, n) for v in Verdict if (n := sum(a.verdict is v for a in attempts)) > 0)
        lines.append(
            CaseLine(
                suite=suite,
                case_id=case_id,
                models=tuple(dict.fromkeys(a.model for a in attempts)),
                counts=counts,
            )
        )
    return tuple(lines)


def format_case_lines(lines: tuple[CaseLine, ...]) -> list[str]:
    """``suite/case  models  2 passed, 1 failed`` per case, aligned."""
    rows = [
        (
            f"{c.suite}/{c.case_id}",
            ", ".join(c.models),
            ", ".join(f"{n} {v.value}" for v, n in c.counts),
        )
        for c in lines
    ]
    if not rows:
        return []
    width = [max(len(r[i]) for r in rows) for i in range(2)]
    return [f"{a.ljust(width[0])}  {b.ljust(width[1])}  {c}" for a, b, c in rows]


def _block(label: str, text: str, cut: Cut, indent: str = "") -> list[str]:
    """``label: text``; the lines of a multi-line value are indented under the label."""
    shown = cut(text).splitlines() or [""]
    pad = indent + " " * (len(label) + 2)
    return [f"{indent}{label}: {shown[0]}", *(pad + line for line in shown[1:])]


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _fields(event: HarnessEvent) -> str:
    return " ".join(
        f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in event.fields if k != "digest"
    )


def session_lines(session: Session, cut: Cut) -> list[str]:
    """The turns of one session: thinking, text, tool calls with results, failures, end."""
    out: list[str] = []
    users = 0
    calls: dict[int, list[int]] = {}
    for i, record in enumerate(session.tool_calls):
        calls.setdefault(record.turn, []).append(i)
    for turn in session.turns:
        call = turn.call
        usage = call.usage
        tokens = (
            f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens"
            if usage.reported
            else "tokens not reported"
        )
        model = call.model_responded or call.model_requested or "?"
        status = f"HTTP {call.status}" if call.status is not None else "no response"
        finish = f" · finish {call.finish_reason}" if call.finish_reason else ""
        out.append(
            f"--- turn {turn.index + 1} · {turn.exchange.at:.2f}s +{turn.exchange.duration:.2f}s"
            f" · {model} · {status} · {tokens}{finish}"
        )
        said = [m.text for m in call.input_messages if m.role == "user"]
        for text in said[users:]:  # requests repeat the conversation: show only new messages
            out += _block("prompt" if users == 0 else "user", text, cut, INDENT)
            users += 1
        if call.thinking:
            out += _block("thinking", call.thinking, cut, INDENT)
        if call.output_text:
            out += _block("text", call.output_text, cut, INDENT)
        for i in calls.get(turn.index, []):
            record = session.tool_calls[i]
            out += _block(f"call {record.call.name}", record.call.arguments, cut, INDENT)
            if record.result is None:
                out.append(f"{INDENT}  result: (no later request carried a result)")
            else:
                out += _block("result", record.result, cut, INDENT + "  ")
        for failure in session.errors:
            if failure.turn == turn.index:
                out += _block(f"error ({failure.origin})", failure.message, cut, INDENT)
    for failure in session.errors:
        if failure.turn is None:
            out += _block(f"error ({failure.origin}) at {failure.at:.2f}s", failure.message, cut)
    if session.end is None:
        out.append("end: none recorded (the tape stops before the session's end)")
    else:
        ending = session.end.status.value
        out += _block(
            "end", f"{ending}: {session.end.reason}" if session.end.reason else ending, cut
        )
    return out


def judge_lines(session: Session, cut: Cut) -> list[str]:
    """Grades a judge recorded in the session: ``judge`` harness events carrying a score."""
    return [
        line
        for event in session.harness
        if event.name == JUDGE_EVENT and any(k == "score" for k, _ in event.fields)
        for line in _block("judge (recorded)", _fields(event), cut)
    ]


def attempt_lines(
    attempt: AttemptResult,
    case: Case | None,
    scorer: Scorer,
    *,
    cassettes: Path,
    results: Path,
    tapes: TapeCache,
    cut: Cut,
) -> list[str]:
    """One attempt's block: header, turns, verdict now (rescored) and recorded verdict."""
    recorded_reason = f" ({attempt.reason})" if attempt.reason else ""
    out = [
        f"=== {attempt.suite}/{attempt.case_id} · {attempt.model} · attempt {attempt.attempt + 1}"
        f" · recorded: {attempt.verdict.value}{recorded_reason}"
    ]
    if not attempt.tape or not attempt.session_id:
        out.append("no session was recorded for this attempt")
        return out
    path = locate_tape(attempt.tape, attempt.mode, cassettes=cassettes, results=results)
    found = tapes.sessions(path)
    recorded: RecordedSession | None = None
    if isinstance(found, str):
        out.append(f"cannot read the session: {found}")
        return out
    recorded = found.get(attempt.session_id)
    if recorded is None:
        out.append(f"cannot read the session: {path}: no session {attempt.session_id}")
        return out
    session = fold(recorded.events)
    header = session.header
    out.append(
        f"session {attempt.session_id} in {attempt.tape} · {header.mode.value}"
        f" · {_count(len(session.turns), 'turn')} · {_count(len(session.tool_calls), 'tool call')}"
        f" · {session.usage.total_tokens:,} tokens · {session.duration:.2f}s"
    )
    if recorded.problem:
        out.append(f"the tape is damaged here: {recorded.problem}")
    out += session_lines(session, cut)
    if case is None:
        out.append(f'verdict now: not rescored: case "{attempt.case_id}" no longer exists')
    else:
        now = rescore_session(case, session, scorer, tape=attempt.tape, before=attempt)
        word = now.verdict.value.upper()
        out += _block(f"verdict now: {word}", now.reason or now.score.reason, cut)
        checks = ", ".join(f"{c.name} {_outcome(c)}" for c in now.score.checks)
        if checks:
            out.append(f"checks: {checks}")
        for check in now.score.checks:
            if check.name == "judge":
                out += _block("judge", check.detail, cut)
    out += judge_lines(session, cut)
    return out


def _outcome(check: Check) -> str:
    if not check.ran:
        return "not run"
    return "ok" if check.passed else "FAILED"


def trace_case(
    record: RunRecord,
    case_id: str,
    cases: Mapping[str, Case],
    scorer: Scorer,
    *,
    cassettes: Path,
    results: Path,
    model: str | None = None,
    cut: Cut | None = None,
) -> list[list[str]]:
    """One block of lines per attempt of ``case_id`` in ``record`` (of ``model`` if given),
    in attempt order; empty when the run has no such attempt."""
    chosen = [
        a for a in record.attempts if a.case_id == case_id and (model is None or a.model == model)
    ]
    chosen.sort(key=lambda a: (a.model, a.attempt))
    tapes = TapeCache()
    return [
        attempt_lines(
            a,
            cases.get(case_id),
            scorer,
            cassettes=cassettes,
            results=results,
            tapes=tapes,
            cut=cut or Cut(),
        )
        for a in chosen
    ]
