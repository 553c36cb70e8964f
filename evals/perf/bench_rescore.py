"""Benchmark: how many recorded sessions ``rescore`` scores per second on one core.

Writes 2,000 recorded 25-turn agent sessions (``traffic.py``: streamed
OpenAI Chat Completions tool calls over a realistic repository) to 20 tapes
of 100 sessions each, one tape per case, as ``evaltape live`` lays them out.
Then it rescores every session with ``rescore_tapes`` and trajectory
expectations (forbidTools, expectMaxTurns, expectFirstToolIn, expectTool,
expectInArgs): read + fold + score, in this one process.  The target is
500 sessions per second per core; the time is process CPU time, so the
figure is per core.  It also times the three stages apart and, when the
target is missed, prints the functions the time goes to (cProfile).

Appends or refreshes the "Rescoring throughput" section of docs/performance.md.

    python evals/perf/bench_rescore.py              # measure and update the doc
    python evals/perf/bench_rescore.py --no-doc     # print the section only
    python evals/perf/bench_rescore.py --sessions 400 --no-doc
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

from evals.perf._report import machine, publish  # noqa: E402
from evals.perf.traffic import agent_session, write_session  # noqa: E402
from evaltape.recorder import Exchange, TapeReader, fold  # noqa: E402
from evaltape.scoring import Case, make_scorer, rescore_tapes, score_session  # noqa: E402
from evaltape.scoring.cases._frozen import FrozenMap  # noqa: E402

HEADING = "## Rescoring throughput"
DOC = ROOT / "docs" / "performance.md"
TARGET = 500.0
"""Sessions per second per core."""
TURNS = 25
CASES = 20
DISTINCT = 10
"""Distinct generated sessions (seeds); each is written under many session ids."""
TOOL_NAMES = ("read_file", "grep", "edit_file", "run_tests", "list_symbols", "run_command")
TOOL_NAMES += ("list_directory", "git_diff", "find_files", "write_file")
"""The tools ``traffic.py``'s agent calls."""


def make_case(index: int) -> Case:
    """A trajectory case every generated session is scored against."""
    return Case(
        suite="perf",
        path="evals/perf.jsonl",
        line=index + 1,
        id=f"agent-{index:02d}",
        prompt="fix the bug",
        failure_category="code-edit",
        why_model_backed="benchmark",
        fingerprint="",
        forbid_tools=("delete_file",),
        expect_max_turns=TURNS + 5,
        expect_first_tool_in=tuple(n for n in TOOL_NAMES if n != "delete_file"),
        expect_tool="read_file",
        expect_in_args=FrozenMap.of({"path": "lib/"}),
    )


def write_tapes(folder: Path, sessions: int) -> list[Path]:
    """``sessions`` recorded sessions spread over ``CASES`` tapes; returns the tapes."""
    generated = [agent_session(TURNS, seed=seed) for seed in range(DISTINCT)]
    tapes = [folder / "perf" / f"agent-{i:02d}.tape" for i in range(CASES)]
    tapes[0].parent.mkdir(parents=True, exist_ok=True)
    for n in range(sessions):
        source = generated[n % DISTINCT]
        case = n % CASES
        header = attrs.evolve(
            source.header,
            session_id=f"{n:016x}",
            case_id=f"agent-{case:02d}",
            attempt=n // CASES,
            started_at=source.header.started_at + n,
        )
        write_session(tapes[case], attrs.evolve(source, header=header))
    return tapes


def measure(tapes: list[Path], cases: dict[str, Case]) -> tuple[float, float, int, int]:
    """CPU and wall seconds of one ``rescore_tapes`` over ``tapes``; sessions, passes."""
    scorer = make_scorer()
    wall, cpu = time.perf_counter(), time.process_time()
    outcome = rescore_tapes(tapes, cases, scorer, cassettes=tapes[0].parents[1], results=ROOT)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    passed = sum(r.score.passed for r in outcome.rescored)
    return cpu, wall, len(outcome.rescored), passed


def stages(tape: Path, case: Case) -> tuple[float, float, float, int, int]:
    """CPU seconds to read, fold and score one tape's sessions, streamed one at a time as
    ``rescore`` does; how many sessions; their SSE chunks."""
    read = folding = scoring = 0.0
    count = chunks = 0
    sessions = iter(TapeReader(tape).sessions())
    while True:
        t = time.process_time()
        recorded = next(sessions, None)
        read += time.process_time() - t
        if recorded is None:
            break
        count += 1
        chunks += sum(
            len(e.response.chunks)
            for e in recorded.events
            if isinstance(e, Exchange) and e.response is not None
        )
        t = time.process_time()
        session = fold(recorded.events)
        folding += time.process_time() - t
        t = time.process_time()
        score_session(case, session)
        scoring += time.process_time() - t
    return read, folding, scoring, count, chunks


def profile(tape: Path, case: Case, top: int = 8) -> str:
    """The ``top`` functions by own time over reading, folding and scoring one tape."""
    profiler = cProfile.Profile()
    profiler.enable()
    for recorded in TapeReader(tape).sessions():
        score_session(case, fold(recorded.events))
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    total = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
    lines = ["| own time | share | function |", "|---:|---:|---|"]
    for (filename, line, name), (_, _, own, _, _) in rows[:top]:
        where = Path(filename)
        short = f"{where.parent.name}/{where.name}:{line}" if line else filename
        lines.append(f"| {own:.3f} s | {own / total:.0%} | `{name}` ({short}) |")
    return "\n".join(lines)


def section(sessions: int) -> str:
    cases = {make_case(i).id: make_case(i) for i in range(CASES)}
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-rescore-") as scratch:
        folder = Path(scratch) / "cassettes"
        t = time.perf_counter()
        tapes = write_tapes(folder, sessions)
        written = time.perf_counter() - t
        size = sum(p.stat().st_size for p in tapes)
        cpu, wall, count, passed = measure(tapes, cases)
        read, folding, scoring, n, _chunks = stages(tapes[0], cases["agent-00"])
        where = profile(tapes[0], cases["agent-00"]) if count / cpu < TARGET else ""
    rate = count / cpu
    per = {name: 1000 * value / n for name, value in (("read", read), ("fold", folding))}
    per["score"] = 1000 * scoring / n
    verdict = "met" if rate >= TARGET else f"**missed** by {TARGET / rate:.1f}x"
    text = f"""{HEADING}

`evaltape rescore` reads tapes, folds each session and scores it; no agent runs.
{count:,} recorded {TURNS}-turn sessions (generated by `evals/perf/traffic.py`:
streamed tool calls, {size / 1024 / 1024:,.1f} MiB of tapes in {CASES} files, written in
{written:.0f} s) were rescored with `rescore_tapes` and trajectory expectations
(forbidTools, expectMaxTurns, expectFirstToolIn, expectTool, expectInArgs), in
one process.

```sh
python evals/perf/bench_rescore.py --sessions {sessions}
```

Machine: {machine()}.

| measure | value |
|---|---:|
| sessions rescored | {count:,} ({passed:,} pass) |
| CPU time (one core) | {cpu:.1f} s |
| wall time | {wall:.1f} s |
| **sessions per second per core** | **{rate:,.0f}** |
| target | {TARGET:,.0f} per second per core: {verdict} |

Where one session's time goes (CPU, a second pass over one tape of {n}
sessions; on a shared two-core machine these figures and the one above vary
by up to a fifth from run to run, so their sum need not match the rate):

| stage | ms per session |
|---|---:|
| read (frames, zstd, msgpack, prefix deltas) | {per["read"]:.2f} |
| fold (decode every exchange into a model call) | {per["fold"]:.2f} |
| score (trajectory rules) | {per["score"]:.3f} |
"""
    if where:
        text += f"""
The functions with the most own time (cProfile over the same tape; profiling slows
everything down, so read the shares, not the seconds):

{where}
"""
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=2000, help="recorded sessions")
    parser.add_argument("--no-doc", action="store_true", help="print, do not update the doc")
    args = parser.parse_args(argv)
    if args.sessions < CASES:
        parser.error(f"--sessions must be at least {CASES}")
    text = section(args.sessions)
    publish(DOC, HEADING, text, write=not args.no_doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
