"""Benchmark: what the replay and recording transports cost per HTTP exchange.

The traffic is a realistic coding-agent session (``traffic.py``): OpenAI Chat
Completions requests that carry the whole conversation, answered by streamed
tool calls (SSE, ~40 chunks each), plus the same session answered as plain
JSON (``"stream"`` dropped, one ``chat.completion`` body per answer).  Every
exchange goes through a real ``httpx.Client`` (request built, response body
read to the end), so the numbers are what a harness pays per model call.

1. Replay: ``ReplayTransport`` serving the recorded session, against a bare
   ``httpx.MockTransport`` whose handler looks each request up in a dict and
   returns the same status, headers and chunks.
2. Recording: ``RecordingTransport`` around that same MockTransport, writing
   a tape (redaction, encoding, zstd, one write per exchange), against the
   MockTransport alone.

Each repetition runs the whole session on every transport, interleaved;
times are medians over repetitions.  Updates the "Record and replay
overhead" section of docs/performance.md.

    python evals/perf/bench_transport.py                 # all of it, updates the doc
    python evals/perf/bench_transport.py --no-doc        # print the section only
    python evals/perf/bench_transport.py --turns 25 --reps 5 --no-doc
    python evals/perf/bench_transport.py --profile replay-sse   # cProfile one side
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

from evals.perf._report import kb, machine, replace_section  # noqa: E402
from evals.perf.traffic import agent_session, dumps  # noqa: E402
from evaltape.recorder import (  # noqa: E402
    Chunk,
    Exchange,
    RecordingTransport,
    Response,
    SessionStarted,
    open_session,
)
from evaltape.recorder.tape import new_session_id  # noqa: E402
from evaltape.replay import ReplayTransport  # noqa: E402

HEADING = "## Record and replay overhead"
COMMAND = "python evals/perf/bench_transport.py"
TARGET_REPLAY = 2.0
"""Replay may cost at most this many times the bare MockTransport per exchange."""
CLIENT_SETS = frozenset({"host", "content-length", "connection", "accept-encoding"})
"""Request headers httpx sets itself; the rest are sent as recorded."""


# -- traffic ------------------------------------------------------------------


def _as_json(exchange: Exchange) -> Exchange:
    """The same turn asked without streaming and answered with one JSON body."""
    assert exchange.response is not None
    params = json.loads(exchange.request.body)
    params.pop("stream", None)
    params.pop("stream_options", None)
    body = dumps(params)
    content, call, usage, envelope = "", None, None, {}
    for chunk in exchange.response.chunks:
        data = chunk.data.removeprefix(b"data: ").strip()
        if data == b"[DONE]":
            continue
        event = json.loads(data)
        envelope = event
        usage = event.get("usage") or usage
        for choice in event["choices"]:
            delta = choice["delta"]
            content += delta.get("content") or ""
            for tool in delta.get("tool_calls") or ():
                if call is None:
                    call = tool
                else:
                    call["function"]["arguments"] += tool["function"]["arguments"]
    assert call is not None
    call.pop("index", None)
    message = {"role": "assistant", "content": content or None, "tool_calls": [call]}
    answer = dumps(
        {
            "id": envelope["id"],
            "object": "chat.completion",
            "created": envelope["created"],
            "model": envelope["model"],
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls"}
            ],
            "usage": usage,
            "service_tier": "default",
            "system_fingerprint": envelope["system_fingerprint"],
        }
    )
    headers = (
        *(
            ("content-type", "application/json") if k == "content-type" else (k, v)
            for k, v in exchange.response.headers
            if k != "transfer-encoding"
        ),
        ("content-length", str(len(answer))),
    )
    request_headers = tuple(
        (k, str(len(body))) if k == "content-length" else (k, v)
        for k, v in exchange.request.headers
    )
    last = exchange.response.chunks[-1].at
    return attrs.evolve(
        exchange,
        request=attrs.evolve(exchange.request, headers=request_headers, body=body),
        response=Response(
            status=200, headers=headers, chunks=(Chunk(at=last, data=answer),), streamed=False
        ),
    )


@attrs.frozen(kw_only=True)
class Traffic:
    """One session's exchanges, streamed or not."""

    name: str
    """``sse`` or ``json``."""
    exchanges: tuple[Exchange, ...]
    """In the order the harness sends them."""

    @property
    def streamed(self) -> bool:
        return self.name == "sse"

    @property
    def request_bytes(self) -> int:
        return sum(len(e.request.body) for e in self.exchanges)

    @property
    def response_bytes(self) -> int:
        return sum(len(e.response.body) for e in self.exchanges if e.response)

    @property
    def chunks(self) -> float:
        return statistics.mean(len(e.response.chunks) for e in self.exchanges if e.response)


def traffic(turns: int, seed: int) -> list[Traffic]:
    session = agent_session(turns, seed=seed)
    return [
        Traffic(name="json", exchanges=tuple(_as_json(e) for e in session.exchanges)),
        Traffic(name="sse", exchanges=session.exchanges),
    ]


# -- the two sides ----------------------------------------------------------------


class _Chunks(httpx.SyncByteStream):
    def __init__(self, chunks: tuple[bytes, ...]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._chunks)


def mock_transport(t: Traffic) -> httpx.MockTransport:
    """A MockTransport answering each recorded request with its recorded response."""
    answers: dict[tuple[str, str, bytes], Exchange] = {}
    for e in t.exchanges:
        answers.setdefault((e.request.method, e.request.url, e.request.body), e)

    def handler(request: httpx.Request) -> httpx.Response:
        e = answers[(request.method, str(request.url), request.content)]
        assert e.response is not None
        raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in e.response.headers]
        stream = _Chunks(tuple(c.data for c in e.response.chunks))
        return httpx.Response(e.response.status, headers=raw, stream=stream)

    return httpx.MockTransport(handler)


def drive(transport: Any, t: Traffic) -> int:
    """Send every request of ``t`` through an httpx client; return response bytes read."""
    got = 0
    with httpx.Client(transport=transport) as client:
        for e in t.exchanges:
            headers = [(k, v) for k, v in e.request.headers if k not in CLIENT_SETS]
            with client.stream("POST", e.request.url, content=e.request.body, headers=headers) as r:
                for data in r.iter_raw():
                    got += len(data)
    return got


@attrs.frozen(kw_only=True)
class Timing:
    """Median seconds for one whole session on each side."""

    mock: float
    """Bare MockTransport, per session."""
    replay: float
    """ReplayTransport serving the session (built beforehand)."""
    replay_build: float
    """Building the ReplayTransport (normalizes every recorded request)."""
    record: float
    """RecordingTransport around the MockTransport, appends included."""
    record_session: float
    """Opening and ending the tape session (header, end frame, fsync)."""
    tape_bytes: int
    """Size of one recorded tape."""


def measure(t: Traffic, reps: int, folder: Path) -> Timing:
    runs: dict[str, list[float]] = {
        "mock": [],
        "replay": [],
        "replay_build": [],
        "record": [],
        "record_session": [],
    }
    expected = t.response_bytes
    tape_bytes = 0
    for rep in range(reps + 1):  # the first round warms caches and is not counted
        gc.collect()
        mock = mock_transport(t)
        started = time.perf_counter()
        got = drive(mock, t)
        mock_s = time.perf_counter() - started
        assert got == expected, (got, expected)

        gc.collect()
        started = time.perf_counter()
        replay = ReplayTransport(t.exchanges)
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        got = drive(replay, t)
        replay_s = time.perf_counter() - started
        assert got == expected
        replay.finish()

        gc.collect()
        path = folder / f"{t.name}-{rep}.tape"
        header = SessionStarted(session_id=new_session_id(), started_at=time.time())
        started = time.perf_counter()
        writer = open_session(path, header)
        opened = time.perf_counter()
        got = drive(RecordingTransport(writer, mock_transport(t)), t)
        recorded = time.perf_counter()
        writer.end()
        ended = time.perf_counter()
        assert got == expected
        tape_bytes = path.stat().st_size
        path.unlink()
        if rep:
            runs["mock"].append(mock_s)
            runs["replay"].append(replay_s)
            runs["replay_build"].append(build_s)
            runs["record"].append(recorded - opened)
            runs["record_session"].append((opened - started) + (ended - recorded))
    return Timing(**{k: statistics.median(v) for k, v in runs.items()}, tape_bytes=tape_bytes)


# -- profiling --------------------------------------------------------------------


def _profiled(t: Traffic, side: str) -> pstats.Stats:
    """cProfile one side over 5 sessions (after one untimed session)."""
    folder = Path(tempfile.mkdtemp(prefix="bench-transport-"))
    work: Callable[[], object]
    if side == "replay":

        def work() -> object:
            return drive(ReplayTransport(t.exchanges), t)

    elif side == "record":

        def work() -> object:
            header = SessionStarted(session_id=new_session_id(), started_at=time.time())
            path = folder / "p.tape"
            with open_session(path, header) as writer:
                drive(RecordingTransport(writer, mock_transport(t)), t)
            path.unlink()
            return None

    else:

        def work() -> object:
            return drive(mock_transport(t), t)

    work()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(5):
        work()
    prof.disable()
    return pstats.Stats(prof)


def profile(t: Traffic, side: str, top: int = 25) -> str:
    """The top functions of one side by own time."""
    out = _StringIO()
    stats = _profiled(t, side)
    stats.stream = out  # type: ignore[attr-defined]
    stats.sort_stats("tottime").print_stats(top)
    return out.text


GROUPS = (
    ("redaction (recorder/redact/_redactor.py)", ("recorder/redact/_redactor.py",)),
    ("zstd compression", ("zstandard",)),
    ("tape encoding and framing (recorder/)", ("/recorder/",)),
    ("request matching (replay/_match.py, json, hashlib)", ("replay/_match.py", "/json/")),
    ("replay and recording transports", ("replay/_transport.py", "recorder/_transport.py")),
    ("httpx client and MockTransport", ("/httpx/", "bench_transport.py")),
)


def breakdown(t: Traffic, side: str) -> list[tuple[str, float]]:
    """Share of own time per group of functions (cProfile; its overhead inflates small calls)."""
    stats: Any = _profiled(t, side)
    totals: dict[str, float] = {}
    for (filename, _line, name), row in stats.stats.items():
        where = f"{filename} {name}"
        group = next(
            (g for g, keys in GROUPS if any(k in where for k in keys)),
            "hashing" if "sha256" in name or "hexdigest" in name else "other",
        )
        totals[group] = totals.get(group, 0.0) + row[2]
    whole = sum(totals.values())
    return sorted(((g, v / whole) for g, v in totals.items()), key=lambda gv: -gv[1])


class _StringIO:
    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> int:
        self.text += s
        return len(s)


# -- report -----------------------------------------------------------------------


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"


def _machine() -> str:
    return f"{machine()}; httpx {httpx.__version__}"


@attrs.frozen(kw_only=True)
class Row:
    turns: int
    traffic: Traffic
    timing: Timing


def render(
    rows: list[Row],
    *,
    reps: int,
    seed: int,
    command: str,
    shares: dict[str, list[tuple[str, float]]],
) -> str:
    out = [
        HEADING,
        "",
        "What the transports cost per HTTP exchange against a bare `httpx.MockTransport` serving",
        "the same bytes, on the simulated session of the section above (`evals/perf/traffic.py`),",
        "answered by streamed tool calls (SSE) or, for the JSON rows, one `chat.completion` body",
        "each. The replay transport matches each request as a real replay does; the recording",
        "transport wraps the MockTransport and writes a real tape.",
        "",
        f"Produced by `{command}` (seed {seed}, median of {reps} repetitions, each running",
        "every session on every transport, interleaved, after one untimed warm-up round).",
        "",
        f"Machine: {_machine()}.",
        "",
        "### Replay",
        "",
        "| turns | traffic | requests sent | responses | MockTransport / exchange "
        "| ReplayTransport / exchange | replay / mock | building the ReplayTransport "
        "| replay incl. building / mock |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        n = len(r.traffic.exchanges)
        tm = r.timing
        out.append(
            f"| {r.turns} | {r.traffic.name} | {kb(r.traffic.request_bytes)} "
            f"| {kb(r.traffic.response_bytes)} ({r.traffic.chunks:.0f} chunks each) "
            f"| {_us(tm.mock / n)} | {_us(tm.replay / n)} | {tm.replay / tm.mock:.2f}x "
            f"| {_us(tm.replay_build / n)} per exchange "
            f"| {(tm.replay + tm.replay_build) / tm.mock:.2f}x |"
        )
    out += [
        "",
        "### Recording",
        "",
        "| turns | traffic | MockTransport / exchange | RecordingTransport + tape / exchange "
        "| recording / mock | added per exchange | session open + end (fsync) | tape |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        n = len(r.traffic.exchanges)
        tm = r.timing
        out.append(
            f"| {r.turns} | {r.traffic.name} | {_us(tm.mock / n)} | {_us(tm.record / n)} "
            f"| {tm.record / tm.mock:.2f}x | {_us((tm.record - tm.mock) / n)} "
            f"| {tm.record_session * 1e3:.1f} ms | {kb(tm.tape_bytes)} |"
        )
    worst = max(rows, key=lambda r: r.timing.replay / r.timing.mock)
    ratio = worst.timing.replay / worst.timing.mock
    out += [
        "",
        "### Target",
        "",
        "| target | measured (worst row) | met |",
        "|---|---|---|",
        f"| replay <= {TARGET_REPLAY:g}x the MockTransport per exchange | {ratio:.2f}x "
        f"({worst.turns} turns, {worst.traffic.name}) "
        f"| {'yes' if ratio <= TARGET_REPLAY else '**no**'} |",
        "",
    ]
    first = rows[0].turns
    out += [
        "### Where the time goes",
        "",
        f"Share of own time per group of functions, from cProfile over {first}-turn SSE sessions",
        f"(`{COMMAND} --profile replay-sse` and `--profile record-sse` list the functions).",
        "The profiler inflates many small calls, so the shares are approximate.",
        "",
    ]
    for side, groups in shares.items():
        out.append(f"- {side}: " + "; ".join(f"{g} {v:.0%}" for g, v in groups if v >= 0.01) + ".")
    return "\n".join(out).rstrip("\n") + "\n"


def update_doc(path: Path, section: str) -> None:
    """Replace this benchmark's section of ``path`` (or add it), leaving the rest."""
    replace_section(path, HEADING, section)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--turns", default="25,100", help="comma-separated session lengths (default 25,100)"
    )
    parser.add_argument("--reps", type=int, default=9, help="timed repetitions (median)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument("--no-doc", action="store_true", help="print the section only")
    parser.add_argument(
        "--profile",
        choices=[f"{s}-{k}" for s in ("replay", "record", "mock") for k in ("json", "sse")],
        help="print a cProfile of one side (first --turns value) and exit",
    )
    args = parser.parse_args(argv)
    try:
        turn_counts = [int(v) for v in args.turns.split(",")]
    except ValueError:
        parser.error(f"--turns: not a comma-separated list of integers: {args.turns!r}")
    if args.reps < 1 or min(turn_counts) < 1:
        parser.error("--reps and --turns must be at least 1")

    if args.profile:
        side, kind = args.profile.split("-")
        (t,) = [t for t in traffic(turn_counts[0], args.seed) if t.name == kind]
        print(profile(t, side))
        return 0

    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-transport-") as folder:
        for turns in turn_counts:
            for t in traffic(turns, args.seed):
                print(f"{turns} turns, {t.name}...", file=sys.stderr, flush=True)
                rows.append(Row(turns=turns, traffic=t, timing=measure(t, args.reps, Path(folder))))
    command = COMMAND
    if argv:
        command += " " + " ".join(a for a in argv if a != "--no-doc")
    (sse,) = [t for t in traffic(turn_counts[0], args.seed) if t.name == "sse"]
    shares = {
        "Replay (building the replay transport included)": breakdown(sse, "replay"),
        "Recording (session open and end not included)": breakdown(sse, "record"),
    }
    section = render(rows, reps=args.reps, seed=args.seed, command=command, shares=shares)
    if args.no_doc:
        print(section)
    else:
        update_doc(args.doc, section)
        print(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
