"""Benchmark: the JSON parsers for rescoring's hot paths, msgspec against orjson.

On 25-turn sessions recorded through the real SDKs (``sdk_traffic.py``, the
traffic of ``bench_rescore_sdk.py``), one process, interleaved, CPU time:

- stream events: every streamed response's SSE payloads parsed as one batch
  array (the fold's ``[TAG,p0,TAG,p1,...]``), with the standard library,
  msgspec to Python objects, orjson, and msgspec straight into the typed
  records the adapters read (``_fast_streams``);
- new messages: each request's conversation items that the previous request
  did not hold (what the parse reuse leaves to parse), one text at a time;
- JSON response bodies: the non-streamed turns of mixed traffic.

orjson is a benchmark dependency only (``pip install -e '.[bench-json]'``); the fold uses
msgspec (see docs/performance.md, *JSON parsers on the rescore path*).

    python evals/perf/bench_json_rescore.py              # measure and update the doc
    python evals/perf/bench_json_rescore.py --no-doc
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``evals.perf`` importable
    sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402
import orjson  # noqa: E402

from evals.perf._report import machine, publish  # noqa: E402
from evals.perf.sdk_traffic import APIS, ModelServer, record_session  # noqa: E402
from evaltape.recorder import Exchange, TapeReader  # noqa: E402
from evaltape.recorder.apis import _fast_streams as fast  # noqa: E402
from evaltape.recorder.apis._bodies import parse_sse  # noqa: E402

HEADING = "## JSON parsers on the rescore path"
DOC = ROOT / "docs" / "performance.md"
TURNS = 25
KINDS = ("streamed", "mixed")


def _batch_text(payloads: tuple[str, ...]) -> str:
    return "[false," + ",false,".join(payloads) + "]"


def corpus(folder: Path) -> dict[str, Any]:
    """Stream batches (per API), new message texts and JSON bodies of recorded sessions."""
    streams: dict[str, list[str]] = {api: [] for api in APIS}
    messages: list[str] = []
    bodies: list[bytes] = []
    with ModelServer() as server:
        for api in APIS:
            for kind in KINDS:
                tape = folder / f"{api}-{kind}.tape"
                record_session(server, tape, api, 1, TURNS, kind, "00000000000000e1")
                for session in TapeReader(tape).sessions():
                    seen = 0
                    for e in session.events:
                        if not isinstance(e, Exchange) or e.response is None:
                            continue
                        items = json.loads(e.request.body)["messages"]
                        messages += [json.dumps(m) for m in items[max(seen - 1, 0) :]]
                        seen = len(items)
                        body = e.response.body
                        if body.startswith((b"data:", b"event:")):
                            payloads = parse_sse(body).payloads
                            done = payloads[-1].startswith("[DONE]")
                            streams[api].append(_batch_text(payloads[:-1] if done else payloads))
                        else:
                            bodies.append(body)
    return {"streams": streams, "messages": messages, "bodies": bodies}


def cpu(fn: Callable[[], object]) -> float:
    t = time.process_time()
    fn()
    return time.process_time() - t


def measure(data: dict[str, Any], reps: int) -> list[tuple[str, int, dict[str, float]]]:
    generic = msgspec.json.Decoder().decode
    typed = {"openai": fast.CHAT.decode, "anthropic": fast.MESSAGES.decode}
    rows: list[tuple[str, int, dict[str, Callable[[], object]]]] = []
    for api in APIS:
        texts = data["streams"][api]
        rows.append(
            (
                f"{api} stream events (batch per response)",
                len(texts),
                {
                    "json": lambda t=texts: [json.loads(x) for x in t],
                    "msgspec": lambda t=texts: [generic(x) for x in t],
                    "orjson": lambda t=texts: [orjson.loads(x) for x in t],
                    "msgspec typed": lambda t=texts, d=typed[api]: [d(x) for x in t],
                },
            )
        )
    plain = (("new request messages", data["messages"]), ("JSON bodies", data["bodies"]))
    for label, items in plain:
        rows.append(
            (
                label,
                len(items),
                {
                    "json": lambda t=items: [json.loads(x) for x in t],
                    "msgspec": lambda t=items: [generic(x) for x in t],
                    "orjson": lambda t=items: [orjson.loads(x) for x in t],
                },
            )
        )
    out = []
    for label, n, variants in rows:
        times: dict[str, list[float]] = {k: [] for k in variants}
        for _ in range(reps):  # interleaved
            for name, fn in variants.items():
                times[name].append(cpu(fn))
        out.append((label, n, {k: min(v) / n for k, v in times.items()}))
    return out


def section(rows: list[tuple[str, int, dict[str, float]]], reps: int) -> str:
    lines = [
        "| input | items | json | msgspec | orjson | msgspec typed | orjson / msgspec |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, n, t in rows:
        typed = f"{t['msgspec typed'] * 1e6:.1f} us" if "msgspec typed" in t else "-"
        best_msgspec = min(t["msgspec"], t.get("msgspec typed", t["msgspec"]))
        lines.append(
            f"| {label} | {n} | {t['json'] * 1e6:.1f} us | {t['msgspec'] * 1e6:.1f} us | "
            f"{t['orjson'] * 1e6:.1f} us | {typed} | {t['orjson'] / best_msgspec:.2f}x |"
        )
    table = "\n".join(lines)
    return f"""{HEADING}

The parsers measured on what rescoring parses, from {TURNS}-turn sessions
recorded through the real SDKs (the traffic of *Rescoring SDK-recorded
sessions*): each streamed response's events as one batch array, the
conversation items each request adds, and the JSON response bodies.  CPU time
per item, the best of {reps} interleaved passes.  The last column compares
orjson with the fastest msgspec variant for that input.

```sh
pip install -e '.[bench-json]'   # orjson, a benchmark dependency only
python evals/perf/bench_json_rescore.py
```

Machine: {machine()}.

{table}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7, help="interleaved passes")
    parser.add_argument("--no-doc", action="store_true", help="print, do not update the doc")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="evaltape-bench-json-") as scratch:
        data = corpus(Path(scratch))
    text = section(measure(data, args.reps), args.reps)
    publish(DOC, HEADING, text, write=not args.no_doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
