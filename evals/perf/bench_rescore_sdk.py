"""Benchmark: rescoring sessions recorded through the real OpenAI and Anthropic SDKs.

``sdk_traffic.py`` records 25-turn coding-agent sessions through openai and
anthropic over httpx2 with ``recording_client`` (streamed: every turn an SSE
stream of about ``--chunks`` chunks, 40 and 150 by default; mixed: every 4th
turn a JSON response; two dozen response headers a request).  Each distinct
session is copied under many session ids into one tape per traffic kind, and
then, in one process and interleaved, timed (CPU time, so per core):

- read: ``TapeReader(path).sessions()`` alone (frames, zstd, msgpack, deltas);
- read + the reference decoder: every exchange decoded by the adapters as they
  were before the fast fold (``tests/_fold_reference``), with the same reuse
  of one decoder per session that ``fold`` has;
- read + fold, chunks parsed: ``fold`` of the same sessions stored without their
  assembled messages (as a tape of format 2.0 reads), so the streams are parsed;
- read + fold: ``fold(session.events)``, today's;
- rescore: ``rescore_tapes`` with trajectory expectations (read + fold + score).

It also checks that both decoders give equal calls on every exchange.

    python evals/perf/bench_rescore_sdk.py              # measure and update the doc
    python evals/perf/bench_rescore_sdk.py --no-doc --copies 100 --chunks 40
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[2]
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:  # run as a script: make ``evals.perf`` importable
        sys.path.insert(0, str(extra))

from _fold_reference import CallDecoder as ReferenceDecoder  # noqa: E402

from evals.perf._report import machine, publish  # noqa: E402
from evals.perf.sdk_traffic import APIS, TOOL_NAMES, ModelServer, record_session  # noqa: E402
from evaltape.recorder import Event, Exchange, TapeReader, fold, open_session  # noqa: E402
from evaltape.recorder._events import with_assembled  # noqa: E402
from evaltape.scoring import Case, Scorer, make_scorer, rescore_tapes  # noqa: E402
from evaltape.scoring.cases._frozen import FrozenMap  # noqa: E402

HEADING = "## Rescoring SDK-recorded sessions"
DOC = ROOT / "docs" / "performance.md"
TARGET = 500.0
"""Sessions per second per core, on turns of about 40 chunks."""
TARGET_LONG = 200.0
"""Sessions per second per core, on turns of about 150 chunks."""
TURNS = 25
SEEDS = 4
"""Distinct recorded sessions per API and traffic kind."""
KINDS = ("streamed", "mixed")


def case_for(api: str, kind: str) -> Case:
    """The trajectory case the sessions of one API and kind are scored against."""
    return Case(
        suite="perf",
        path="evals/perf.jsonl",
        line=1,
        id=f"{api}-{kind}-{TURNS}",
        prompt="fix the parser",
        failure_category="code-edit",
        why_model_backed="benchmark",
        fingerprint="",
        forbid_tools=("delete_file",),
        expect_max_turns=TURNS + 5,
        expect_first_tool_in=TOOL_NAMES,
        expect_tool="open_file",
        expect_in_args=FrozenMap.of({"path": "lib/"}),
    )


def record_all(folder: Path, chunks: int) -> dict[tuple[str, str], list[Path]]:
    """``SEEDS`` sessions per API and kind, each in its own tape (recorded 4 at a time),
    of about ``chunks`` chunks a streamed turn."""
    jobs = [(api, kind, seed) for api in APIS for kind in KINDS for seed in range(SEEDS)]
    out: dict[tuple[str, str], list[Path]] = {}
    where = folder / f"recorded-{chunks}"
    with ModelServer(chunks) as server, ThreadPoolExecutor(4) as pool:

        def one(job: tuple[str, str, int]) -> Path:
            api, kind, seed = job
            path = where / f"{api}-{kind}-{seed}.tape"
            record_session(server, path, api, seed, TURNS, kind, f"{seed + 1:016x}")
            return path

        where.mkdir(parents=True)
        for job, path in zip(jobs, pool.map(one, jobs), strict=True):
            out.setdefault(job[:2], []).append(path)
    return out


def _unassembled(event: Event) -> Event:
    """``event`` without its assembled message, as a tape of format 2.0 reads."""
    if not isinstance(event, Exchange) or event.response is None:
        return event
    return attrs.evolve(event, response=with_assembled(event.response, None))


def copy_sessions(
    sources: list[Path], target: Path, case_id: str, copies: int, *, assembled: bool = True
) -> int:
    """Write ``copies`` sessions into ``target``, cycling through the recorded ones
    (without their assembled messages unless ``assembled``)."""
    recorded = [s for p in sources for s in TapeReader(p).sessions()]
    for n in range(copies):
        source = recorded[n % len(recorded)]
        header = attrs.evolve(source.header, session_id=f"{n + 1:016x}", case_id=case_id, attempt=n)
        with open_session(target, header, clock=lambda: 0.0) as writer:
            for event in source.events[1:-1]:
                writer.append(event if assembled else _unassembled(event))
    return copies


def _decode_reference(path: Path) -> None:
    for session in TapeReader(path).sessions():
        decoder = ReferenceDecoder()
        for e in session.events:
            if isinstance(e, Exchange):
                decoder.decode(e)


def _read(path: Path) -> None:
    for _ in TapeReader(path).sessions():
        pass


def _fold(path: Path) -> None:
    for session in TapeReader(path).sessions():
        fold(session.events)


def same_calls(path: Path) -> int:
    """Exchanges checked; raises if the two decoders differ on one."""
    checked = 0
    for session in TapeReader(path).sessions():
        reference = ReferenceDecoder()
        folded = fold(session.events)
        calls = [reference.decode(e) for e in session.events if isinstance(e, Exchange)]
        if [c for c in calls if c is not None] != [t.call for t in folded.turns]:
            raise SystemExit(f"{path}: session {session.header.session_id}: decoders differ")
        checked += len(calls)
    return checked


def cpu(fn: Callable[[], object]) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


@attrs.frozen
class Row:
    chunks: int
    api: str
    kind: str
    sessions: int
    read: float
    reference: float
    parsed: float
    folded: float
    rescored: float


@attrs.frozen
class _Job:
    chunks: int
    api: str
    kind: str
    tape: Path
    bare: Path
    rescore: Callable[[], None]


def _jobs(folder: Path, copies: int, chunk_counts: list[int]) -> tuple[list[_Job], int]:
    jobs = []
    checked = 0
    for chunks in chunk_counts:
        for (api, kind), sources in record_all(folder, chunks).items():
            case = case_for(api, kind)
            tape = folder / f"cassettes-{chunks}" / "perf" / f"{case.id}.tape"
            bare = folder / f"bare-{chunks}" / f"{case.id}.tape"
            tape.parent.mkdir(parents=True, exist_ok=True)
            bare.parent.mkdir(parents=True, exist_ok=True)
            copy_sessions(sources, tape, case.id, copies)
            copy_sessions(sources, bare, case.id, copies, assembled=False)
            checked += same_calls(tape) + same_calls(bare)
            scorer = make_scorer()
            cases = {case.id: case}

            def rescore(
                tape: Path = tape, cases: dict[str, Case] = cases, scorer: Scorer = scorer
            ) -> None:
                rescore_tapes([tape], cases, scorer, cassettes=tape.parents[1], results=ROOT)

            jobs.append(_Job(chunks, api, kind, tape, bare, rescore))
    return jobs, checked


def measure(folder: Path, copies: int, reps: int, chunk_counts: list[int]) -> tuple[list[Row], int]:
    jobs, checked = _jobs(folder, copies, chunk_counts)
    names = ("read", "ref", "parsed", "fold", "rescore")
    times: dict[tuple[int, str], list[float]] = {}
    for _ in range(reps):  # interleaved, so a busy spell hits every measure and row alike
        for n, job in enumerate(jobs):
            runs = (
                lambda job=job: _read(job.tape),
                lambda job=job: _decode_reference(job.tape),
                lambda job=job: _fold(job.bare),
                lambda job=job: _fold(job.tape),
                job.rescore,
            )
            for name, run in zip(names, runs, strict=True):
                times.setdefault((n, name), []).append(cpu(run))
    rows = []
    for n, job in enumerate(jobs):
        best = {name: min(times[n, name]) / copies for name in names}
        rows.append(
            Row(
                job.chunks,
                job.api,
                job.kind,
                copies,
                *(best["read"], best["ref"], best["parsed"], best["fold"], best["rescore"]),
            )
        )
    return rows, checked


def section(
    rows: list[Row], checked: int, copies: int, reps: int, chunk_counts: list[int], command: str
) -> str:
    lines = [
        "| chunks a turn | API | traffic | sessions | read | read + reference decode "
        "| read + fold, chunks parsed | read + fold | rescore "
        "| **rescore sessions / s / core** | target |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        rate = 1 / r.rescored
        target = TARGET if r.chunks < 100 else TARGET_LONG
        met = "met" if rate >= target else f"**missed** ({target / rate:.2f}x short)"
        lines.append(
            f"| ~{r.chunks} | {r.api} | {r.kind} | {r.sessions} | {r.read * 1e3:.2f} ms | "
            f"{r.reference * 1e3:.2f} ms | {r.parsed * 1e3:.2f} ms | {r.folded * 1e3:.2f} ms | "
            f"{r.rescored * 1e3:.2f} ms | **{rate:,.0f}** | {target:,.0f}: {met} |"
        )
    table = "\n".join(lines)
    return f"""{HEADING}

{TURNS}-turn coding-agent sessions recorded through the real openai and anthropic SDKs
against a scripted model on 127.0.0.1 (`evals/perf/sdk_traffic.py`) that streams
about {" or ".join(map(str, chunk_counts))} chunks a turn, one token each, and sends
25-28 response headers a request, 10-13 of them with values of their own (*mixed* asks
every 4th turn without streaming).  {SEEDS} recorded sessions per row, copied to
{copies} sessions in one tape.  CPU time per session, the best of {reps} passes, every
measure of every row interleaved in each pass.  The reference decoder
(`tests/_fold_reference`) builds, parses and normalizes every request and parses
every stream; *chunks parsed* folds the same sessions stored without their
assembled messages (what a tape of format 2.0 gives); the fold reads each streamed
response's message as the recorder assembled it, and what only the requests say
when first asked for (docs/session.md).  Every one of the {checked:,} exchanges
decoded to an equal call both ways.

```sh
{command}
```

Machine: {machine()}.

{table}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=200, help="sessions per tape")
    parser.add_argument("--reps", type=int, default=5, help="interleaved passes")
    parser.add_argument(
        "--chunks", default="40,150", help="chunks a streamed turn, comma-separated"
    )
    parser.add_argument("--no-doc", action="store_true", help="print, do not update the doc")
    args = parser.parse_args(argv)
    chunk_counts = [int(c) for c in args.chunks.split(",")]
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-rescore-sdk-") as scratch:
        rows, checked = measure(Path(scratch), args.copies, args.reps, chunk_counts)
    command = " ".join(["python evals/perf/bench_rescore_sdk.py", *(argv or sys.argv[1:])])
    text = section(rows, checked, args.copies, args.reps, chunk_counts, command)
    publish(DOC, HEADING, text, write=not args.no_doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
