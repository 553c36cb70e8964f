"""Benchmark: what journalling a run's sessions costs per turn, 25 to 500 turns.

A run's attempt records into a ``SessionBuffer`` (packed in memory, compressed
once at the end at ``LIVE_LEVEL``) and, so a killed driver loses at most the
event in flight, hands every packed event to the session's ``Journal`` beside
its tape (framed, compressed at zstd level 1, one ``write`` each); once the
whole session is appended to the tape the journal is deleted.  Timed here on
the SDK traffic of ``bench_sdk_transport.py`` (the same sessions, the same
``RecordingTransport`` with ``default_redactor()``), CPU time per session, the
best of the repetitions, taken in rounds across every length:

- **buffer**: the runner's path without a journal (record, end, append to the tape);
- **buffer + journal**: the same with the journal written and then deleted;
- **journal alone**: the session's packed events fed to a ``Journal`` (compressed,
  framed, written) and the file deleted: what the journal adds, without the rest
  of recording's time and its noise.

Also printed: the zstd state an open journal holds, beside a ``SessionWriter``'s
stream (``ZstdCompressor.memory_size()`` after its first byte).

    python evals/perf/bench_journal.py                    # records the traffic first
    python evals/perf/bench_journal.py --traffic s.tape   # a tape sdk_traffic.py wrote
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import zstandard

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

from evals.perf._report import machine, publish  # noqa: E402
from evals.perf.bench_sdk_transport import (  # noqa: E402
    cpu,
    exchanges_of,
    record_traffic,
    sessions_per_timing,
)
from evals.perf.bench_transport import Traffic, drive, mock_transport  # noqa: E402
from evaltape.recorder import Exchange, SessionStarted  # noqa: E402
from evaltape.recorder._transport import RecordingTransport  # noqa: E402
from evaltape.recorder.redact import default_redactor  # noqa: E402
from evaltape.recorder.tape import (  # noqa: E402
    Journal,
    SessionBuffer,
    append_session,
    discard_journal,
    journal_path,
)
from evaltape.recorder.tape._journal import JOURNAL_LEVEL, JOURNAL_WINDOW_LOG  # noqa: E402
from evaltape.recorder.tape._table_budget import TABLES  # noqa: E402
from evaltape.recorder.tape._writer import stream_params  # noqa: E402
from evaltape.scoring.run.attempt._attempt import LIVE_LEVEL  # noqa: E402

HEADING = "## Journalling a run's sessions (per turn)"
DOC = ROOT / "docs" / "performance.md"
SESSION = "00000000000000f7"


def one_session(t: Traffic, tape: Path, journalled: bool) -> None:
    """Record ``t`` as a run's attempt does, end it and append it to ``tape``."""
    header = SessionStarted(session_id=SESSION, started_at=0.0)
    sink = Journal(journal_path(tape, SESSION), SESSION) if journalled else None
    buffer = SessionBuffer(header, level=LIVE_LEVEL, sink=sink)
    drive(RecordingTransport(buffer, mock_transport(t), redactor=default_redactor()), t)
    buffer.end()
    append_session(tape, buffer.data)
    if journalled:
        discard_journal(tape, SESSION)


def packed(t: Traffic) -> list[tuple[int, bytes]]:
    """The packed events (with their frame flags) a run's attempt hands its journal."""
    taken: list[tuple[int, bytes]] = []
    header = SessionStarted(session_id=SESSION, started_at=0.0)
    buffer = SessionBuffer(header, level=LIVE_LEVEL, sink=lambda f, raw: taken.append((f, raw)))
    drive(RecordingTransport(buffer, mock_transport(t), redactor=default_redactor()), t)
    buffer.end()
    return taken


def journal_alone(events: list[tuple[int, bytes]], path: Path) -> None:
    """Write ``events`` to a journal at ``path`` and delete it."""
    journal = Journal(path, SESSION)
    for flags, raw in events:
        journal(flags, raw)
    path.unlink()


def measure(
    exchanges: tuple[Exchange, ...], folder: Path, reps: dict[int, int]
) -> dict[int, dict[str, float]]:
    best: dict[int, dict[str, float]] = {n: {} for n in reps}
    events = {n: packed(Traffic(name="mixed", exchanges=exchanges[:n])) for n in reps}
    for rep in range(max(reps.values())):
        for n, count in reps.items():
            if rep >= count:
                continue
            t = Traffic(name="mixed", exchanges=exchanges[:n])
            each = sessions_per_timing(n)
            variants = [("buffer", False), ("buffer + journal", True)]
            for name, journalled in variants if rep % 2 == 0 else variants[::-1]:
                tapes = [folder / f"{n}-{rep}-{k}-{journalled}.tape" for k in range(each)]

                def run(
                    tapes: list[Path] = tapes, journalled: bool = journalled, t: Traffic = t
                ) -> None:
                    for tape in tapes:
                        one_session(t, tape, journalled)

                took = cpu(run) / each
                best[n][name] = min(best[n].get(name, took), took)
                for tape in tapes:
                    tape.unlink()

            def alone(n: int = n, each: int = each) -> None:
                for k in range(each):
                    journal_alone(events[n], folder / f"alone-{k}.journal")

            took = cpu(alone) / each
            best[n]["journal alone"] = min(best[n].get("journal alone", took), took)
        print(f"round {rep + 1} of {max(reps.values())}", flush=True)
    return best


def journal_params() -> zstandard.ZstdCompressionParameters:
    return zstandard.ZstdCompressionParameters.from_level(
        JOURNAL_LEVEL, window_log=JOURNAL_WINDOW_LOG
    )


def writer_params() -> zstandard.ZstdCompressionParameters:
    log = TABLES.take()
    TABLES.give(log)
    return stream_params(None, log)


def _context(compressor: zstandard.ZstdCompressor) -> int:
    stream = compressor.compressobj()
    stream.compress(b"x")
    return int(compressor.memory_size())


def section(rows: dict[int, dict[str, float]], reps: dict[int, int]) -> str:
    lines = [
        "| turns | reps | sessions per timing | buffer | buffer + journal | difference "
        "| journal alone | per turn | of buffer |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, r in rows.items():
        added = r["buffer + journal"] - r["buffer"]
        alone = r["journal alone"]
        lines.append(
            f"| {n} | {reps[n]} | {sessions_per_timing(n)} | {r['buffer'] * 1e3:,.0f} ms "
            f"| {r['buffer + journal'] * 1e3:,.0f} ms | {added / r['buffer'] * 100:+.0f}% "
            f"| {alone * 1e3:,.1f} ms | {alone / n * 1e6:,.0f} µs "
            f"| {alone / r['buffer'] * 100:.1f}% |"
        )
    per_turn = [r["journal alone"] / n * 1e6 for n, r in rows.items()]
    share = max(r["journal alone"] / r["buffer"] for r in rows.values()) * 100
    journal = _context(zstandard.ZstdCompressor(compression_params=journal_params()))
    writer = _context(zstandard.ZstdCompressor(compression_params=writer_params()))
    return f"""{HEADING}

A run's attempt records into a `SessionBuffer` and hands each packed event to its
journal beside the tape, deleted once the whole session is on the tape.  The SDK
traffic of *Recording and replay per turn*, recorded with `default_redactor()` and
appended to a tape, without and with the journal; *journal alone* is what the journal
adds without the noise of the rest (the *difference* column moves by several per
cent either way from run to run).  CPU time per session, the best of the repetitions.

```sh
python evals/perf/bench_journal.py
```

Machine: {machine()}.

{chr(10).join(lines)}

The journal costs {min(per_turn):,.0f}-{max(per_turn):,.0f} µs of CPU a turn at these lengths,
at most {share:.1f}% of what recording into the buffer costs.  zstd state of one
open journal: {journal / 2**20:.1f} MiB (a `SessionWriter`'s stream: {writer / 2**20:.1f} MiB),
added to each attempt in flight; the buffer still holds the session packed, not compressed.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traffic", type=Path, help="a tape of one sdk_traffic.py session")
    parser.add_argument("--turns", default="25,100,200,500")
    parser.add_argument("--no-doc", action="store_true", help="print, do not update the doc")
    args = parser.parse_args(argv)
    turns = [int(t) for t in args.turns.split(",")]
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-journal-") as scratch:
        folder = Path(scratch)
        tape = args.traffic or record_traffic(folder, max(turns))
        exchanges = exchanges_of(tape)
        reps = {n: 5 if n <= 100 else 3 for n in turns}
        rows = measure(exchanges, folder, reps)
    publish(DOC, HEADING, section(rows, reps), write=not args.no_doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
