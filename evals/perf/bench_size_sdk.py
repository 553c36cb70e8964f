"""Benchmark: the tape against Inspect AI's ``.eval`` log and the floor, on SDK traffic.

Records one coding-agent session per API (openai, anthropic) and traffic kind
(streamed, mixed: every 4th turn not streamed) through the real SDKs and
``recording_client`` (``sdk_traffic.py``), for the most turns asked; the
shorter sessions are its first N exchanges.  Each is stored five ways:

- the tape as ``recording_client`` writes it (format 2.1, compact exchanges, each
  event on disk as it comes, with the writer's zstd parameters);
- the tape as a live run writes it: the session kept in memory and compressed
  when it ends, at the runner's ``LIVE_LEVEL``;
- Inspect AI's ``.eval`` log of the same exchanges (``inspect_log.py``,
  ``write_eval_log``), which keeps no headers, chunk boundaries or chunk times;
- the floor: each distinct message once plus every response body, zstd -19 --long.

Then it updates the "Tape size against Inspect AI" section of docs/performance.md.

    python evals/perf/bench_size_sdk.py                          # all of it, updates the doc
    python evals/perf/bench_size_sdk.py --turns 10,25 --no-doc
    python evals/perf/bench_size_sdk.py --cache /tmp/sdk-tapes   # keep the recordings
    python evals/perf/bench_size_sdk.py --chunks 150             # longer streamed turns
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import attrs
import zstandard

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

from evals.perf._report import kb, machine, replace_section  # noqa: E402
from evals.perf.inspect_log import eval_size  # noqa: E402
from evals.perf.sdk_traffic import APIS, ModelServer, record_session  # noqa: E402
from evaltape.recorder import (  # noqa: E402
    Exchange,
    SessionStarted,
    TapeReader,
    open_session,
)
from evaltape.recorder._events import Chunk, with_assembled  # noqa: E402
from evaltape.recorder.tape import _frames, _table_budget  # noqa: E402
from evaltape.recorder.tape._buffer import SessionBuffer, append_session  # noqa: E402
from evaltape.recorder.tape._writer import stream_params  # noqa: E402
from evaltape.scoring.run.attempt._attempt import LIVE_LEVEL  # noqa: E402

HEADING = "## Tape size against Inspect AI"
COMMAND = "python evals/perf/bench_size_sdk.py"
TRAFFIC = ("streamed", "mixed")
TARGET_VS_FLOOR = 1.3
"""The tape must be at most this many times the floor (every row)."""


@attrs.frozen(kw_only=True)
class Row:
    api: str
    traffic: str
    turns: int
    tape: int
    live: int
    inspect: int
    floor: int


def recorded(
    api: str, traffic: str, turns: int, cache: Path, chunks: int = 40
) -> tuple[SessionStarted, list[Exchange]]:
    """The header and exchanges of a ``turns``-turn session of about ``chunks`` chunks a
    streamed turn, recorded once into ``cache``."""
    path = cache / f"{api}-{traffic}-{turns}-{chunks}.tape"
    if not path.exists():
        with ModelServer(chunks) as server:
            record_session(server, path, api, 0, turns, traffic, "00000000000000a1")
    (session,) = TapeReader(path).sessions()
    return session.header, [e for e in session.events if isinstance(e, Exchange)]


def tape_size(header: SessionStarted, exchanges: list[Exchange], folder: Path) -> int:
    """Bytes of a tape holding the session, as ``recording_client`` writes it."""
    path = folder / "session.tape"
    path.unlink(missing_ok=True)
    end = exchanges[-1].at + exchanges[-1].duration if exchanges else 0.0
    with open_session(path, header, clock=lambda: end) as tape:
        for exchange in exchanges:
            tape.append(exchange)
    return path.stat().st_size


def live_size(header: SessionStarted, exchanges: list[Exchange], folder: Path) -> int:
    """Bytes of a tape holding the session as a live run writes it: kept in memory and
    compressed at ``LIVE_LEVEL`` when it ends, then appended."""
    path = folder / "live.tape"
    path.unlink(missing_ok=True)
    end = exchanges[-1].at + exchanges[-1].duration if exchanges else 0.0
    buffer = SessionBuffer(header, clock=lambda: end, level=LIVE_LEVEL)
    for exchange in exchanges:
        buffer.append(exchange)
    buffer.end()
    append_session(path, buffer.data)
    return path.stat().st_size


def floor_parts(exchanges: list[Exchange]) -> list[bytes]:
    """Each distinct message (Anthropic's system prompt counted as one) and every response body."""
    seen: set[bytes] = set()
    parts: list[bytes] = []
    for e in exchanges:
        body = json.loads(e.request.body)
        messages = body["messages"]
        if "system" in body:
            messages = [{"role": "system", "content": body["system"]}, *messages]
        for message in messages:
            item = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
            if item not in seen:
                seen.add(item)
                parts.append(item)
        assert e.response is not None
        parts.append(e.response.body)
    return parts


def floor_size(exchanges: list[Exchange]) -> int:
    """``zstd -19 --long`` of ``floor_parts`` in one piece."""
    params = zstandard.ZstdCompressionParameters.from_level(19, enable_ldm=True, window_log=27)
    data = b"".join(floor_parts(exchanges))
    return len(zstandard.ZstdCompressor(compression_params=params).compress(data))


def _without_times(e: Exchange, chunks: bool) -> Exchange:
    """``e`` with its chunk times (``chunks``) or its start and duration set to 0."""
    if not chunks:
        return attrs.evolve(e, at=0.0, duration=0.0)
    if e.response is None or len(e.response.chunks) < 2:
        return e
    zeroed = tuple(Chunk(at=0.0, data=c.data) for c in e.response.chunks)
    # (other chunks hold no assembled message: the one these make is given back)
    response = with_assembled(attrs.evolve(e.response, chunks=zeroed), e.response.assembled)
    return attrs.evolve(e, response=response)


def _step_entropy(exchanges: list[Exchange]) -> int:
    """Bytes the streams' chunk steps (whole microseconds) carry by their own frequencies."""
    steps: Counter[int] = Counter()
    for e in exchanges:
        if e.response is not None and len(e.response.chunks) > 1:
            before = 0.0
            for c in e.response.chunks:
                steps[round((c.at - before) * 1e6)] += 1
                before = c.at
    n = sum(steps.values())
    return round(-sum(k * math.log2(k / n) for k in steps.values()) / 8)


def parts(header: SessionStarted, exchanges: list[Exchange], folder: Path) -> dict[str, int]:
    """Where a tape's bytes beyond the floor go, each part in bytes of the tape.

    Frame headers are counted; the zstd blocks flushed after every event are
    the session's stream against its decompressed events compressed in one
    piece with the writer's parameters; the compressor's share is that piece
    against ``zstd -19 --long`` of the same bytes; chunk times and each
    exchange's start and duration are the tape against one written again
    with them set to 0.
    """
    tape = tape_size(header, exchanges, folder)
    data = (folder / "session.tape").read_bytes()
    start = _frames.file_header_size(data[: _frames.FILE_FIXED_SIZE])
    framing = start
    payloads = []
    for offset, size, head in _frames.walk(data[start:]):
        payloads.append(data[start + offset + size : start + offset + size + head.comp_len])
        framing += size
    stream = b"".join(payloads)
    raw = zstandard.ZstdDecompressor().decompressobj().decompress(stream)
    writer = stream_params(None, _table_budget.LARGE_LOG)
    best = zstandard.ZstdCompressionParameters.from_level(19, enable_ldm=True, window_log=27)
    one_piece = len(zstandard.ZstdCompressor(compression_params=writer).compress(raw))
    strongest = len(zstandard.ZstdCompressor(compression_params=best).compress(raw))
    everyone = _table_budget.TABLES
    _table_budget.TABLES = _table_budget.TableBudget(large_writers=0)
    try:
        small_tables = tape_size(header, exchanges, folder)
    finally:
        _table_budget.TABLES = everyone
    untimed = tape_size(header, [_without_times(e, True) for e in exchanges], folder)
    unstarted = tape_size(header, [_without_times(e, False) for e in exchanges], folder)
    return {
        "tape": tape,
        "floor": floor_size(exchanges),
        "entropy": _step_entropy(exchanges),
        "small tables": small_tables,
        "frame headers": framing,
        "a zstd block flushed after every event": len(stream) - one_piece,
        "the writer's zstd parameters (4 MiB window) against level 19 --long": one_piece
        - strongest,
        "chunk times": tape - untimed,
        "each exchange's start and duration": tape - unstarted,
    }


def render_parts(turns: int, found: dict[str, int]) -> list[str]:
    """The paragraph saying where the bytes of the ``turns``-turn Anthropic tape go."""
    tape, floor = found["tape"], found["floor"]
    pieces = [
        f"{name} {size / 1024:.1f} KiB ({size / floor:.1%} of the floor)"
        for name, size in found.items()
        if name not in ("tape", "floor", "entropy", "small tables")
    ]
    text = (
        f"Where the bytes go, on the {turns}-turn Anthropic streamed session (tape "
        f"{tape / 1024:.1f} KiB, floor {floor / 1024:.1f} KiB, {tape / floor:.3f}x; "
        "measured by this benchmark's `parts`): " + "; ".join(pieces) + "."
    )
    return textwrap.wrap(text, width=84)


def measure(
    turn_counts: list[int], cache: Path, log: Callable[[str], None], chunks: int = 40
) -> tuple[list[Row], dict[str, int]]:
    """The rows, and ``parts`` of the longest Anthropic streamed session."""
    rows = []
    found: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-") as tmp:
        folder = Path(tmp)
        for api in APIS:
            for traffic in TRAFFIC:
                log(f"recording {api} {traffic} {max(turn_counts)} turns (or reading the cache)")
                header, exchanges = recorded(api, traffic, max(turn_counts), cache, chunks)
                for n in turn_counts:
                    part = exchanges[:n]
                    rows.append(
                        Row(
                            api=api,
                            traffic=traffic,
                            turns=n,
                            tape=tape_size(header, part, folder),
                            live=live_size(header, part, folder),
                            inspect=eval_size(header, part, folder),
                            floor=floor_size(part),
                        )
                    )
                    log(f"{api} {traffic} {n}: {rows[-1]}")
                if (api, traffic) == ("anthropic", "streamed"):
                    found = parts(header, exchanges[: max(turn_counts)], folder)
    return rows, found


def _verdict(row: Row, tape: int) -> str:
    misses = []
    if tape > row.inspect:
        misses.append(f"**missed**: {tape / row.inspect - 1:.1%} larger than Inspect")
    if tape > TARGET_VS_FLOOR * row.floor:
        over = tape / (TARGET_VS_FLOOR * row.floor) - 1
        misses.append(
            f"**missed**: {tape / row.floor:.3f}x the floor, {over:.1%} over {TARGET_VS_FLOOR}x"
        )
    return "; ".join(misses) or "yes"


def render(rows: list[Row], found: dict[str, int], command: str, chunks: int = 40) -> str:
    import inspect_ai

    out = [
        HEADING,
        "",
        "Coding-agent sessions recorded through the real openai and anthropic SDKs with",
        "`recording_client` (`evals/perf/sdk_traffic.py`; *mixed* asks for every 4th turn",
        f"without streaming) from a server that streams about {chunks} chunks (one token",
        "each) a turn and sends 25-28 response headers a request, 10-13 of them with a value",
        "of their own each time, as hosted providers do; the shorter sessions are the first",
        "turns of the longest one. Each is stored as `recording_client` writes it",
        "(*tape 2.1*), as a live run writes it (*live run*: compressed when the session ends,",
        f"at level {LIVE_LEVEL}), as Inspect AI's `.eval` log of the same exchanges",
        "(`evals/perf/inspect_log.py`), and as the floor: each distinct message once plus",
        "every response body, `zstd -19 --long` in one piece. The tapes also keep every",
        "chunk boundary, chunk times to the millisecond, the headers a recording keeps",
        "(docs/format.md, *What a recording keeps*) and each streamed response's",
        "assembled message; Inspect's log and the floor keep none of these.",
        "",
        f"Produced by `{command}`. Options: `--turns 10,25` (turn counts), `--chunks N`",
        "(chunks a streamed turn), `--cache DIR` (keep the recorded sessions and reuse",
        "them), `--no-doc` (print this section only).",
        "Sizes are exact; chunk times and some headers (date) come from the recording.",
        "",
        f"Machine: {machine()}; inspect-ai {inspect_ai.__version__}; zstandard "
        f"{zstandard.__version__}.",
        "",
        "| API | traffic | turns | tape 2.1 | live run | Inspect .eval | floor "
        "| tape / Inspect | tape / floor | live / floor | met (tape) | met (live run) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r.api} | {r.traffic} | {r.turns} | {kb(r.tape)} | {kb(r.live)} | "
            f"{kb(r.inspect)} | {kb(r.floor)} | {r.tape / r.inspect:.2f}x | "
            f"{r.tape / r.floor:.2f}x | {r.live / r.floor:.2f}x | "
            f"{_verdict(r, r.tape)} | {_verdict(r, r.live)} |"
        )
    worst_inspect = max(rows, key=lambda r: r.tape / r.inspect)
    worst_floor = max(rows, key=lambda r: r.tape / r.floor)
    worst_live = max(rows, key=lambda r: r.live / r.floor)
    out += [
        "",
        f"Worst rows: tape / Inspect {worst_inspect.tape / worst_inspect.inspect:.2f}x "
        f"({worst_inspect.api} {worst_inspect.traffic} {worst_inspect.turns} turns); "
        f"tape / floor {worst_floor.tape / worst_floor.floor:.2f}x "
        f"({worst_floor.api} {worst_floor.traffic} {worst_floor.turns} turns); "
        f"live run / floor {worst_live.live / worst_live.floor:.2f}x "
        f"({worst_live.api} {worst_live.traffic} {worst_live.turns} turns).",
        "",
        *render_parts(max(r.turns for r in rows), found),
    ]
    return "\n".join(out) + "\n"


def _turn_counts(value: str) -> list[int]:
    try:
        counts = sorted({int(v) for v in value.split(",")})
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {value!r}") from None
    if not counts or counts[0] < 1:
        raise argparse.ArgumentTypeError(f"turn counts must be positive: {value!r}")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=_turn_counts, default=[10, 25, 100, 200, 500])
    parser.add_argument("--cache", type=Path, help="folder keeping the recorded sessions")
    parser.add_argument("--chunks", type=int, default=40, help="chunks a streamed turn")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument("--no-doc", action="store_true", help="print the section only")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="evaltape-sdk-") as tmp:
        cache = args.cache or Path(tmp)
        cache.mkdir(parents=True, exist_ok=True)
        rows, found = measure(args.turns, cache, log, args.chunks)
    command = " ".join([COMMAND, *(argv if argv is not None else sys.argv[1:])])
    section = render(rows, found, command, args.chunks)
    print(section)
    if not args.no_doc:
        replace_section(args.doc, HEADING, section)
        log(f"updated {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
