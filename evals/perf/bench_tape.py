"""Benchmark: how big a tape is and what writing and reading it costs.

Generates the same realistic agent sessions (``traffic.py``) for several
turn counts and stores each one five ways: as an evaltape tape, as a vcrpy
YAML cassette recorded by real vcrpy through a local HTTP server, as JSON
Lines + gzip, and as the zstd -19 "floor" of its deduplicated content (once
bare, once with the headers and chunk timings the tape also keeps).  Then it
times writing and reading the tape and updates the "Tape size and write
cost" section of docs/performance.md.

    python evals/perf/bench_tape.py                # all of it, updates the doc
    python evals/perf/bench_tape.py --no-doc       # print the section only
    python evals/perf/bench_tape.py --turns 25 --reps 3 --no-doc
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import http.server
import json
import statistics
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import zstandard

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

import evaltape.recorder as recorder  # noqa: E402
from evals.perf._report import kb, machine, replace_section  # noqa: E402
from evals.perf.traffic import URL, AgentSession, agent_session, dumps, write_session  # noqa: E402
from evaltape.recorder import Chunk, Exchange, TapeReader  # noqa: E402
from evaltape.recorder.tape._codec import to_plain  # noqa: E402
from evaltape.recorder.tape._pack import Packer  # noqa: E402

HEADING = "## Tape size and write cost"
COMMAND = "python evals/perf/bench_tape.py"
FLOOR_LEVEL = 19
JSONL_GZIP_LEVEL = 6
LEVELS = (3, 6, 9, 12, 19)
"""zstd levels tried for the tape, against the writer's own parameters."""

TARGET_VS_VCR = 30.0
"""The tape must be at least this many times smaller than vcrpy YAML (fewest turns)."""
TARGET_VS_FLOOR = 1.2
"""The tape must be at most this many times the floor."""
TARGET_WRITE_GROWTH = 10.0
"""Writing 8x the turns may cost at most this many times as long (linear is 8x)."""


# -- the five encodings -------------------------------------------------------


def tape_size(session: AgentSession, folder: Path, name: str = "session.tape") -> int:
    """Bytes of the tape holding ``session``."""
    path = folder / name
    path.unlink(missing_ok=True)
    write_session(path, session)
    return path.stat().st_size


def jsonl_gzip_size(session: AgentSession) -> int:
    """One JSON object per exchange with full bodies, gzip level 6."""
    lines = []
    for e in session.exchanges:
        assert e.response is not None
        record = {
            "at": e.at,
            "duration": e.duration,
            "request": {
                "method": e.request.method,
                "url": e.request.url,
                "headers": dict(e.request.headers),
                "body": json.loads(e.request.body),
            },
            "response": {
                "status": e.response.status,
                "headers": dict(e.response.headers),
                "body": e.response.body.decode(),
            },
        }
        lines.append(json.dumps(record, ensure_ascii=False) + "\n")
    data = "".join(lines).encode()
    return len(gzip.compress(data, compresslevel=JSONL_GZIP_LEVEL, mtime=0))


def distinct_content(session: AgentSession) -> list[bytes]:
    """Each distinct message, tool schema and response body, in first-seen order."""
    seen: set[bytes] = set()
    parts: list[bytes] = []

    def add(item: bytes) -> None:
        if item not in seen:
            seen.add(item)
            parts.append(item)

    for e in session.exchanges:
        assert e.response is not None
        body = json.loads(e.request.body)
        for message in body["messages"]:
            add(dumps(message))
        for tool in body["tools"]:
            add(dumps(tool))
        add(e.response.body)
    return parts


def _varint(n: int) -> bytes:
    """LEB128 of a zigzag-encoded int: the tightest plain encoding of a small step."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def side_facts(session: AgentSession) -> list[bytes]:
    """Per exchange: its headers as text lines, its start and duration as float64,
    and its chunk times as varint microsecond steps (the precision a tape keeps)."""
    parts = []
    for e in session.exchanges:
        assert e.response is not None
        lines = [f"{k}: {v}\n" for k, v in (*e.request.headers, *e.response.headers)]
        parts.append("".join(lines).encode())
        parts.append(struct.pack("<2d", e.at, e.duration))
        last = 0
        for c in e.response.chunks:
            now = round(c.at * 1_000_000)
            parts.append(_varint(now - last))
            last = now
    return parts


def events_one_piece_size(session: AgentSession) -> int:
    """The tape's packed events (delta stage included) as one zstd -19 piece: no
    frames, no per-event flush.  Separates the cost of the framing from the encoding."""
    packer = Packer()
    events = [packer.pack(to_plain(session.header))]
    events += [packer.pack(to_plain(e)) for e in session.exchanges]
    return zstd_size(events)


def zstd_size(parts: list[bytes]) -> int:
    return len(zstandard.ZstdCompressor(level=FLOOR_LEVEL).compress(b"".join(parts)))


def _handler(responses: dict[bytes, Exchange]) -> type[http.server.BaseHTTPRequestHandler]:
    """A request handler answering each known request body with its recorded response."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            response = responses[body].response
            assert response is not None
            self.send_response_only(response.status)
            for name, value in response.headers:
                self.send_header(name, value)
            self.end_headers()
            for chunk in response.chunks:  # chunked transfer encoding, one SSE event each
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk.data), chunk.data))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextlib.contextmanager
def _serve(session: AgentSession) -> Iterator[str]:
    """A local HTTP server answering each request of ``session`` with its response."""
    handler = _handler({e.request.body: e for e in session.exchanges})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def vcr_cassette_size(session: AgentSession, folder: Path) -> int:
    """Bytes of a vcrpy YAML cassette recorded from real httpx requests."""
    import httpx
    import vcr  # type: ignore[import-untyped]

    path = folder / "cassette.yaml"
    path.unlink(missing_ok=True)

    def as_recorded(request: Any) -> Any:
        request.uri = URL  # the tape holds the API's URL, not the local server's
        return request

    recorder_ = vcr.VCR(record_mode="all", before_record_request=as_recorded)
    with _serve(session) as url, recorder_.use_cassette(str(path)), httpx.Client() as client:
        for e in session.exchanges:
            assert e.response is not None
            reply = client.post(url, content=e.request.body, headers=list(e.request.headers))
            if reply.content != e.response.body:
                raise RuntimeError("the local server did not echo the recorded response")
    return path.stat().st_size


# -- timing -------------------------------------------------------------------


def _median_seconds(run: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _read_all(path: Path, *, fold: Callable[[Any], object] | None = None) -> int:
    """Read every session back, folding each one when ``fold`` is given."""
    count = 0
    for session in TapeReader(path).sessions():
        if fold is not None:
            fold(session.events)
        count += 1
    return count


def _fold() -> Callable[[Any], object] | None:
    """``recorder.fold`` if this version of the recorder has it."""
    fold: Callable[[Any], object] | None = getattr(recorder, "fold", None)
    return fold


@attrs.frozen(kw_only=True)
class Row:
    """Everything measured for one turn count."""

    turns: int
    raw: int
    tape: int
    vcr: int
    jsonl_gz: int
    floor: int
    floor_facts: int
    tape_no_times: int
    tape_no_headers: int
    tape_content: int
    events_one_piece: int
    write_s: float
    read_s: float
    fold_s: float | None
    levels: tuple[tuple[int, int, float], ...]
    tool_result: float
    response: float
    chunks: float
    last_request: int


def _strip(session: AgentSession, *, times: bool, headers: bool) -> AgentSession:
    """The same session without chunk timings and/or headers (for the breakdown)."""

    def one(e: Exchange) -> Exchange:
        assert e.response is not None
        response = e.response
        request = e.request
        if times:
            zeroed = tuple(Chunk(at=0.0, data=c.data) for c in response.chunks)
            response = attrs.evolve(response, chunks=zeroed)
        if headers:
            request = attrs.evolve(request, headers=())
            response = attrs.evolve(response, headers=())
        return attrs.evolve(e, request=request, response=response)

    return attrs.evolve(session, exchanges=tuple(one(e) for e in session.exchanges))


def measure(
    turn_counts: list[int], *, reps: int, seed: int, log: Callable[[str], None]
) -> list[Row]:
    sessions = {n: agent_session(n, seed=seed) for n in turn_counts}
    sizes: dict[int, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-") as tmp:
        folder = Path(tmp)
        for n, s in sessions.items():
            log(f"sizes: {n} turns")
            raw = sum(len(e.request.body) + len(e.response.body) for e in s.exchanges if e.response)
            sizes[n] = {
                "raw": raw,
                "tape": tape_size(s, folder),
                "vcr": vcr_cassette_size(s, folder),
                "jsonl_gz": jsonl_gzip_size(s),
                "floor": zstd_size(distinct_content(s)),
                "floor_facts": zstd_size(distinct_content(s) + side_facts(s)),
                "tape_no_times": tape_size(_strip(s, times=True, headers=False), folder),
                "tape_no_headers": tape_size(_strip(s, times=False, headers=True), folder),
                "tape_content": tape_size(_strip(s, times=True, headers=True), folder),
                "events_one_piece": events_one_piece_size(_strip(s, times=True, headers=True)),
            }
        # Writes of all turn counts interleave, so drift in machine load hits all alike.
        writes: dict[int, list[float]] = {n: [] for n in turn_counts}
        paths = {n: folder / f"write-{n}.tape" for n in turn_counts}
        for rep in range(reps + 1):
            for n, s in sessions.items():
                paths[n].unlink(missing_ok=True)
                start = time.perf_counter()
                write_session(paths[n], s)
                if rep:  # the first round warms caches and is not counted
                    writes[n].append(time.perf_counter() - start)
            log(f"write round {rep}/{reps}")
        reads: dict[int, float] = {}
        folds: dict[int, float | None] = {}
        fold = _fold()
        for n in turn_counts:
            if _read_all(paths[n]) != 1:
                raise RuntimeError(f"the {n}-turn tape did not read back as one session")
            reads[n] = _median_seconds(lambda n=n: _read_all(paths[n]), reps)  # type: ignore[misc]
            folds[n] = None
            if fold is not None:
                folds[n] = _median_seconds(
                    lambda n=n: _read_all(paths[n], fold=fold),  # type: ignore[misc]
                    reps,
                )
            log(f"read: {n} turns")
        levels: dict[int, list[tuple[int, int, float]]] = {n: [] for n in turn_counts}
        for n in sorted({turn_counts[0], turn_counts[-1]}):
            times: dict[int, list[float]] = {level: [] for level in LEVELS}
            path = folder / "level.tape"
            for _ in range(min(reps, 3)):  # levels interleaved, like the writes above
                for level in LEVELS:
                    path.unlink(missing_ok=True)
                    start = time.perf_counter()
                    write_session(path, sessions[n], level=level)
                    times[level].append(time.perf_counter() - start)
            for level in LEVELS:
                path.unlink(missing_ok=True)
                write_session(path, sessions[n], level=level)
                levels[n].append((level, path.stat().st_size, statistics.median(times[level])))
            log(f"levels: {n} turns")
    return [
        Row(
            turns=n,
            write_s=statistics.median(writes[n]),
            read_s=reads[n],
            fold_s=folds[n],
            levels=tuple(levels[n]),
            **_traffic_stats(sessions[n]),
            **sizes[n],
        )
        for n in turn_counts
    ]


def _traffic_stats(session: AgentSession) -> dict[str, Any]:
    """Mean tool result and response sizes, and the size of the last request."""
    last = session.exchanges[-1].request.body
    results = [
        len(m["content"].encode()) for m in json.loads(last)["messages"] if m["role"] == "tool"
    ]
    responses = [e.response for e in session.exchanges if e.response is not None]
    return {
        "tool_result": statistics.mean(results) if results else 0.0,
        "response": statistics.mean(len(r.body) for r in responses),
        "chunks": statistics.mean(len(r.chunks) for r in responses),
        "last_request": len(last),
    }


# -- report -------------------------------------------------------------------


def _machine() -> str:
    import vcr
    import yaml

    libyaml = "with libyaml" if getattr(yaml, "__with_libyaml__", False) else "pure Python"
    return (
        f"{machine()}; "
        f"zstandard {zstandard.__version__} (libzstd {zstandard.ZSTD_VERSION[0]}."
        f"{zstandard.ZSTD_VERSION[1]}.{zstandard.ZSTD_VERSION[2]}); vcrpy {vcr.__version__}; "
        f"PyYAML {yaml.__version__} ({libyaml}); tape: {WRITER_PARAMS}"
    )


WRITER_PARAMS = "the writer's own zstd parameters (`AS_IT_GOES`, recorder/tape/_writer.py)"


def _ratio_table(head: list[str], rows: list[list[str]], align: str = "---:") -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join([align] * len(head)) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def render(rows: list[Row], *, reps: int, seed: int, command: str) -> str:
    first, last = rows[0], rows[-1]
    folded = all(r.fold_s is not None for r in rows)
    out = [
        HEADING,
        "",
        "One simulated coding-agent session per row, written by `recorder.open_session`:",
        "OpenAI Chat Completions requests that carry the whole conversation (system prompt,",
        "10 tool schemas, every earlier turn), each answered by a streamed tool call; each",
        "tool result is real text computed from files (see `evals/perf/traffic.py`). The",
        "shorter sessions are the first turns of the longest one.",
        "",
        f"Produced by `{command}` (seed {seed}, {reps} timed repetitions).",
        "Options: `--turns 25,50` (turn counts), `--reps 3` (timed repetitions), `--seed 1`,",
        "`--no-doc` (print this section instead of updating docs/performance.md).",
        "",
        f"Machine: {_machine()}.",
        "",
        "### The traffic",
        "",
    ]
    out += _ratio_table(
        [
            "turns",
            "bytes sent + received",
            "last request body",
            "mean tool result",
            "mean response (SSE)",
            "chunks per response",
        ],
        [
            [
                str(r.turns),
                kb(r.raw),
                kb(r.last_request),
                f"{r.tool_result:,.0f} B",
                f"{r.response:,.0f} B",
                f"{r.chunks:.1f}",
            ]
            for r in rows
        ],
    )
    out += ["", "### Size on disk", ""]
    out += _ratio_table(
        [
            "turns",
            "evaltape tape",
            "vcrpy 9 YAML",
            "JSONL + gzip -6",
            "floor: zstd -19 of distinct content",
            "vcrpy / tape",
            "JSONL.gz / tape",
            "tape / floor",
        ],
        [
            [
                str(r.turns),
                kb(r.tape),
                kb(r.vcr),
                kb(r.jsonl_gz),
                kb(r.floor),
                f"{r.vcr / r.tape:.1f}x",
                f"{r.jsonl_gz / r.tape:.1f}x",
                f"{r.tape / r.floor:.2f}x",
            ]
            for r in rows
        ],
    )
    out += [
        "",
        "### Where the tape's bytes go",
        "",
        "The same sessions written again with every chunk offset set to 0.0 and/or the",
        "headers dropped; the events of the last of these packed as the tape packs them",
        "(delta stage included) but compressed in one zstd -19 piece, without frames or",
        "per-event flushes; and the floor extended by the headers and timings (each",
        "exchange's headers as text, its start and duration as float64 and its chunk",
        "times as varint microsecond steps, zstd -19 in one piece).",
        "",
    ]
    out += _ratio_table(
        [
            "turns",
            "tape",
            "without chunk timings",
            "without headers",
            "without either",
            "its events in one zstd -19 piece",
            "floor + headers + timings",
            "tape / that floor",
            "without either / floor",
        ],
        [
            [
                str(r.turns),
                kb(r.tape),
                kb(r.tape_no_times),
                kb(r.tape_no_headers),
                kb(r.tape_content),
                kb(r.events_one_piece),
                kb(r.floor_facts),
                f"{r.tape / r.floor_facts:.2f}x",
                f"{r.tape_content / r.floor:.2f}x",
            ]
            for r in rows
        ],
    )
    out += [
        "",
        "### Write and read time",
        "",
        f"Write: median of {reps} writes of the whole session (open, append every exchange,",
        "end with fsync; the events are built beforehand), the turn counts interleaved in",
        "one process. Read: `TapeReader(path).sessions()`, which rebuilds every full",
        "request body."
        + (" Read + fold: the same, then `recorder.fold(session.events)`." if folded else "")
        + " Times vary by a few tens of percent between runs on a shared machine; sizes are"
        " exact and repeatable.",
        "",
    ]
    head = ["turns", "write", "per turn", f"vs {first.turns} turns", "read", "sessions / s"]
    if folded:
        head += ["read + fold", "sessions / s"]
    table = []
    for r in rows:
        cells = [
            str(r.turns),
            f"{r.write_s * 1000:.1f} ms",
            f"{r.write_s / r.turns * 1e6:.0f} µs",
            f"{r.write_s / first.write_s:.2f}x",
            f"{r.read_s * 1000:.1f} ms",
            f"{1 / r.read_s:,.1f}",
        ]
        if r.fold_s is not None:
            cells += [f"{r.fold_s * 1000:.1f} ms", f"{1 / r.fold_s:,.1f}"]
        table.append(cells)
    out += _ratio_table(head, table)
    if not folded:
        out += ["", "`recorder.fold` does not exist in this version, so only reading is timed."]
    out += [
        "",
        "### zstd level",
        "",
        f"The tape written at zstd levels (median of {min(reps, 3)} writes) against",
        f"{WRITER_PARAMS}.",
        "",
    ]
    out += _ratio_table(
        ["turns", "level", "tape", "write", "size vs the writer's", "time vs the writer's"],
        [
            [
                str(r.turns),
                str(level),
                kb(size),
                f"{seconds * 1000:.1f} ms",
                f"{size / r.tape:.3f}x",
                f"{seconds / r.write_s:.2f}x",
            ]
            for r in rows
            for level, size, seconds in r.levels
        ],
    )
    vs_vcr = first.vcr / first.tape
    worst_floor = max(r.tape / r.floor for r in rows)
    growth = last.write_s / first.write_s
    turns_growth = last.turns / first.turns
    write_limit = TARGET_WRITE_GROWTH * turns_growth / 8
    targets = [
        (
            f"tape >= {TARGET_VS_VCR:.0f}x smaller than vcrpy YAML at {first.turns} turns",
            f"{vs_vcr:.1f}x",
            vs_vcr >= TARGET_VS_VCR,
        ),
        (
            f"tape <= {TARGET_VS_FLOOR}x the floor (every row)",
            f"{worst_floor:.2f}x (worst row)",
            worst_floor <= TARGET_VS_FLOOR,
        ),
        (
            f"write time of {last.turns} turns <= {write_limit:g}x that of {first.turns} "
            f"(linear: {turns_growth:g}x)",
            f"{growth:.2f}x",
            growth <= write_limit,
        ),
    ]
    out += ["", "### Targets", ""]
    out += _ratio_table(
        ["target", "measured", "met"],
        [[t, m, "yes" if ok else "**no**"] for t, m, ok in targets],
        align="---",
    )
    return "\n".join(out) + "\n"


def _turn_counts(value: str) -> list[int]:
    try:
        counts = [int(v) for v in value.split(",")]
    except ValueError:
        msg = f"not a comma-separated list of integers: {value!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"turn counts must be positive: {value!r}")
    return sorted(set(counts))


def update_doc(path: Path, section: str) -> None:
    """Replace this benchmark's section of ``path`` (or add it), leaving the rest."""
    replace_section(path, HEADING, section)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=_turn_counts, default=[25, 100, 200])
    parser.add_argument("--reps", type=int, default=7, help="timed repetitions (median)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument("--no-doc", action="store_true", help="print the section only")
    args = parser.parse_args(argv)
    if args.reps < 1:
        parser.error("--reps must be at least 1")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    rows = measure(args.turns, reps=args.reps, seed=args.seed, log=log)
    command = " ".join([COMMAND, *(argv if argv is not None else sys.argv[1:])])
    section = render(rows, reps=args.reps, seed=args.seed, command=command)
    print(section)
    if not args.no_doc:
        update_doc(args.doc, section)
        log(f"updated {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
