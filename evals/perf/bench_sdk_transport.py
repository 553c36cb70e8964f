"""Benchmark: recording and replay cost per turn on SDK-recorded traffic, 25 to 500 turns.

One coding-agent session recorded through the real OpenAI SDK
(``sdk_traffic.py``, mixed: every 4th turn not streamed); its first N
exchanges are the N-turn session.  Each exchange is sent again through an
``httpx.Client`` over

- a bare ``httpx.MockTransport`` serving the recorded bytes (the baseline);
- ``RecordingTransport`` around that MockTransport, writing a real tape
  (redaction, delta + msgpack, the writer's zstd parameters), with ``default_redactor()`` (each
  request body scanned from shortly before what changed, in the raw bytes and
  in every secret view; see ``recorder/redact/_delta.py``) and, up to 200
  turns, with the same redactor scanning every body whole (what it did before);
- ``ReplayTransport`` serving the session, built inside the timing.

CPU time, the best of the repetitions, taken in rounds that go through every
session length (each ratio compares times taken side by side); a session
shorter than ``SPAN`` turns is timed several times back to back per repetition
and the mean taken.  Recording's added cost is its time less the baseline's;
linear means it grows as the turns do (200 turns = 8x 25 turns).

    python evals/perf/bench_sdk_transport.py                    # records the traffic first
    python evals/perf/bench_sdk_transport.py --traffic s.tape   # a tape sdk_traffic.py wrote
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

from evals.perf._report import machine, publish  # noqa: E402
from evals.perf.bench_transport import Traffic, drive, mock_transport  # noqa: E402
from evals.perf.sdk_traffic import ModelServer, record_session  # noqa: E402
from evaltape.recorder import Exchange, SessionStarted, TapeReader, open_session  # noqa: E402
from evaltape.recorder._transport import RecordingTransport  # noqa: E402
from evaltape.recorder.redact import Redactor, default_redactor  # noqa: E402
from evaltape.recorder.redact._delta import SessionRedactor  # noqa: E402
from evaltape.replay import ReplayTransport  # noqa: E402

HEADING = "## Recording and replay per turn (SDK traffic)"
DOC = ROOT / "docs" / "performance.md"


def cpu(fn: Callable[[], object]) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def record_traffic(folder: Path, turns: int) -> Path:
    tape = folder / "sdk.tape"
    with ModelServer() as server:
        record_session(server, tape, "openai", 0, turns, "mixed", "00000000000000e5")
    return tape


def exchanges_of(tape: Path) -> tuple[Exchange, ...]:
    (session, *_) = TapeReader(tape).sessions()
    return tuple(e for e in session.events if isinstance(e, Exchange))


class WholeBodies:
    """``redactor`` scanning every request body whole: a transport uses a
    ``SessionRedactor`` only around a ``Redactor`` itself."""

    def __init__(self, redactor: Redactor) -> None:
        self.redact_exchange = redactor.redact_exchange


SPAN = 200
"""Turns each timing covers at least: a shorter session is timed ``SPAN // turns``
times back to back and the mean taken, so its few milliseconds are not lost in
the machine's noise."""


def sessions_per_timing(turns: int) -> int:
    """How many sessions of ``turns`` turns one timing runs back to back."""
    return max(1, SPAN // max(turns, 1))


def measure_once(
    exchanges: tuple[Exchange, ...],
    folder: Path,
    rep: int,
    redactors: dict[str, Redactor | WholeBodies],
) -> dict[str, float]:
    """One CPU time per session of each: the MockTransport, replay (built inside),
    each recording; each the mean of ``SPAN // len(exchanges)`` sessions or more."""
    t = Traffic(name="mixed", exchanges=exchanges)
    each = sessions_per_timing(len(exchanges))
    mock = mock_transport(t)

    def mocked() -> None:
        for _ in range(each):
            drive(mock, t)

    times = {"mock": cpu(mocked) / each}

    def replay() -> None:
        for _ in range(each):
            transport = ReplayTransport(exchanges)
            drive(transport, t)
            transport.finish()

    times["replay"] = cpu(replay) / each
    for name, redactor in redactors.items():
        paths = [folder / f"{name}-{len(exchanges)}-{rep}-{k}.tape" for k in range(each)]
        header = SessionStarted(session_id="00000000000000f6", started_at=0.0)

        def recorded(
            paths: list[Path] = paths,
            redactor: Redactor | WholeBodies = redactor,
            header: SessionStarted = header,
        ) -> None:
            for path in paths:
                with open_session(path, header) as writer:
                    drive(RecordingTransport(writer, mock, redactor=redactor), t)

        times[name] = cpu(recorded) / each
        for path in paths:
            path.unlink()
    return times


def measure(
    exchanges: tuple[Exchange, ...],
    folder: Path,
    reps: dict[int, int],
    redactors: Callable[[int], dict[str, Redactor | WholeBodies]],
) -> dict[int, dict[str, float]]:
    """The best of ``reps[n]`` times per session length ``n``, measured in rounds
    that go through every length, so a busy spell weighs on the ratios little."""
    times: dict[int, dict[str, list[float]]] = {n: {} for n in reps}
    for rep in range(max(reps.values())):
        for n, count in reps.items():
            if rep < count:
                once = measure_once(exchanges[:n], folder, rep, redactors(n))
                for name, value in once.items():
                    times[n].setdefault(name, []).append(value)
        print(f"round {rep + 1} of {max(reps.values())}", flush=True)
    return {n: {k: min(v) for k, v in row.items()} for n, row in times.items()}


def section(rows: dict[int, dict[str, float]], reps: dict[int, int]) -> str:
    base = rows[min(rows)]
    names = [k for k in base if k not in ("mock", "replay")]
    head = "| turns | reps | sessions per timing | MockTransport | " + " | ".join(
        f"recording ({n}) | added | vs {min(rows)} turns" for n in names
    )
    lines = [head + " | replay incl. build | replay / mock |"]
    lines.append("|---:" * (4 + 3 * len(names) + 2) + "|")
    for turns, r in rows.items():
        each = sessions_per_timing(turns)
        cells = [f"{turns}", f"{reps[turns]}", f"{each}", f"{r['mock'] * 1e3:,.0f} ms"]
        for n in names:
            if n not in r:
                cells += ["—", "—", "—"]
                continue
            added, first = r[n] - r["mock"], base[n] - base["mock"]
            cells += [f"{r[n] * 1e3:,.0f} ms", f"{added * 1e3:,.0f} ms", f"{added / first:.1f}x"]
        cells += [f"{r['replay'] * 1e3:,.0f} ms", f"{r['replay'] / r['mock']:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    widest = 2 * max(SessionRedactor(default_redactor()).reach or (0,))
    return f"""{HEADING}

One 500-turn coding-agent session recorded through the OpenAI SDK
(`evals/perf/sdk_traffic.py`, mixed traffic); its first N exchanges are the
N-turn session, sent again over a bare `httpx.MockTransport`, over
`RecordingTransport` around it (a real tape) and over a `ReplayTransport` built
inside the timing.  CPU time per session, the best of the repetitions; a session
shorter than {SPAN} turns is timed {SPAN} turns' worth of times back to back and the
mean taken.  *built-in rules* redact with `default_redactor()`, which scans each
request body only from shortly before what changed (twice the widest rule's
reach, {widest:,} bytes); *whole bodies* scans every request body whole, measured up
to 200 turns.

```sh
python evals/perf/bench_sdk_transport.py
```

Machine: {machine()}.

{chr(10).join(lines)}

Targets: recording's added cost at 200 turns at most 10x that at 25 (linear is
8x), at 500 at most 25x (linear 20x); replay including its set-up at most 2x
the MockTransport at 25 and 100 turns.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traffic", type=Path, help="a tape of one sdk_traffic.py session")
    parser.add_argument("--turns", default="25,100,200,500")
    parser.add_argument("--no-doc", action="store_true", help="print, do not update the doc")
    args = parser.parse_args(argv)
    turns = [int(t) for t in args.turns.split(",")]
    redactor = default_redactor()
    whole: dict[str, Redactor | WholeBodies] = {"whole bodies": WholeBodies(redactor)}
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-sdk-") as scratch:
        folder = Path(scratch)
        tape = args.traffic or record_traffic(folder, max(turns))
        exchanges = exchanges_of(tape)
        reps = {n: 9 if n <= 25 else 5 for n in turns}

        def chosen(n: int) -> dict[str, Redactor | WholeBodies]:
            return {"built-in rules": redactor} | (whole if n <= 200 else {})

        rows = measure(exchanges, folder, reps, chosen)
        for n, row in rows.items():
            print(n, {k: round(v, 3) for k, v in row.items()}, flush=True)
    text = section(rows, reps)
    publish(DOC, HEADING, text, write=not args.no_doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
