"""Benchmark: recording and replay cost per turn on SDK-recorded traffic, 25 to 500 turns.

One coding-agent session recorded through the real OpenAI SDK
(``sdk_traffic.py``, mixed: every 4th turn not streamed); its first N
exchanges are the N-turn session.  Each exchange is sent again through an
``httpx.Client`` over

- a bare ``httpx.MockTransport`` serving the recorded bytes (the baseline);
- ``RecordingTransport`` around that MockTransport, writing a real tape
  (redaction, delta + msgpack, zstd level 9), with the built-in rules and
  with the same rules' open repetitions capped at 512 bytes (bounded rules
  let redaction scan only what changed; see ``recorder/_redact_delta.py``);
- ``ReplayTransport`` serving the session, built inside the timing.

CPU time, the best of the repetitions, interleaved.  Recording's added cost is
its time less the baseline's; linear means it grows as the turns do (200 turns
= 8x 25 turns).

    python evals/perf/bench_sdk_transport.py                    # records the traffic first
    python evals/perf/bench_sdk_transport.py --traffic s.tape   # a tape sdk_traffic.py wrote
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

from evals.perf._report import machine, replace_section  # noqa: E402
from evals.perf.bench_transport import Traffic, drive, mock_transport  # noqa: E402
from evals.perf.sdk_traffic import ModelServer, record_session  # noqa: E402
from evaltape.recorder import (  # noqa: E402
    Exchange,
    Redactor,
    SecretRule,
    SessionStarted,
    TapeReader,
    default_redactor,
    open_session,
)
from evaltape.recorder._transport import RecordingTransport  # noqa: E402
from evaltape.replay import ReplayTransport  # noqa: E402

HEADING = "## Recording and replay per turn (SDK traffic)"
DOC = ROOT / "docs" / "performance.md"
LIMIT = 512


def bounded(rule: SecretRule) -> SecretRule:
    """``rule`` with every open repetition (``*``, ``+``, ``{n,}``) capped at ``LIMIT``."""
    out: list[str] = []
    p, i, in_class = rule.pattern, 0, False
    while i < len(p):
        c = p[i]
        if c == "\\":
            out.append(p[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c in "*+":
            c = f"{{{0 if c == '*' else 1},{LIMIT}}}"
        elif c == "{" and (m := re.match(r"\{(\d+),\}", p[i:])):
            out.append(f"{{{m.group(1)},{LIMIT}}}")
            i += m.end()
            continue
        out.append(c)
        i += 1
    return attrs.evolve(rule, pattern="".join(out))


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


def measure(
    exchanges: tuple[Exchange, ...], folder: Path, reps: int, redactors: dict[str, Redactor]
) -> dict[str, float]:
    t = Traffic(name="mixed", exchanges=exchanges)
    mock = mock_transport(t)
    times: dict[str, list[float]] = {"mock": [], "replay": []} | {k: [] for k in redactors}
    for rep in range(reps):
        times["mock"].append(cpu(lambda: drive(mock, t)))

        def replay() -> None:
            transport = ReplayTransport(exchanges)
            drive(transport, t)
            transport.finish()

        times["replay"].append(cpu(replay))
        for name, redactor in redactors.items():
            path = folder / f"{name}-{len(exchanges)}-{rep}.tape"
            header = SessionStarted(session_id="00000000000000f6", started_at=0.0)

            def recorded(
                path: Path = path, redactor: Redactor = redactor, header: SessionStarted = header
            ) -> None:
                with open_session(path, header) as writer:
                    drive(RecordingTransport(writer, mock, redactor=redactor), t)

            times[name].append(cpu(recorded))
            path.unlink()
    return {k: min(v) for k, v in times.items()}


def section(rows: dict[int, dict[str, float]], reps: dict[int, int]) -> str:
    base = rows[min(rows)]
    names = [k for k in base if k not in ("mock", "replay")]
    head = "| turns | reps | MockTransport | " + " | ".join(
        f"recording ({n}) | added | vs {min(rows)} turns" for n in names
    )
    lines = [head + " | replay incl. build | replay / mock |"]
    lines.append("|---:" * (3 + 3 * len(names) + 2) + "|")
    for turns, r in rows.items():
        cells = [f"{turns}", f"{reps[turns]}", f"{r['mock'] * 1e3:,.0f} ms"]
        for n in names:
            if n not in r:
                cells += ["—", "—", "—"]
                continue
            added, first = r[n] - r["mock"], base[n] - base["mock"]
            cells += [f"{r[n] * 1e3:,.0f} ms", f"{added * 1e3:,.0f} ms", f"{added / first:.1f}x"]
        cells += [f"{r['replay'] * 1e3:,.0f} ms", f"{r['replay'] / r['mock']:.2f}x"]
        lines.append("| " + " | ".join(cells) + " |")
    return f"""{HEADING}

One 500-turn coding-agent session recorded through the OpenAI SDK
(`evals/perf/sdk_traffic.py`, mixed traffic); its first N exchanges are the
N-turn session.  Every exchange is sent again through an `httpx.Client` over a
bare `httpx.MockTransport` serving the recorded bytes, over `RecordingTransport`
around it (a real tape: redaction, deltas, zstd level 9, fsync at the end), and
over a `ReplayTransport` built inside the timing.  CPU time per session, the
best of the interleaved repetitions.  *built-in rules* redact with
`default_redactor()`; *bounded rules* with the same rules, each open repetition
capped at {LIMIT} bytes, which lets redaction scan each request body only from
shortly before what changed (`recorder/_redact_delta.py`); while a rule has no
bounded length every body is scanned whole.

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
    whole = {"built-in rules": default_redactor()}
    rules = Redactor(rules=tuple(bounded(r) for r in default_redactor().rules))
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-sdk-") as scratch:
        folder = Path(scratch)
        tape = args.traffic or record_traffic(folder, max(turns))
        exchanges = exchanges_of(tape)
        rows: dict[int, dict[str, float]] = {}
        reps: dict[int, int] = {}
        for n in turns:
            reps[n] = 5 if n <= 100 else 3 if n <= 200 else 1
            chosen = {"bounded rules": rules} | (whole if n <= 200 else {})
            rows[n] = measure(exchanges[:n], folder, reps[n], chosen)
            print(n, {k: round(v, 3) for k, v in rows[n].items()}, flush=True)
    text = section(rows, reps)
    print(text)
    if not args.no_doc:
        replace_section(DOC, HEADING, text)
        print(f"updated {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
