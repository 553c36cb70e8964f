"""Benchmark: hostile tapes cost a reader memory and work bounded by the tape, not its claims.

Two tapes a stranger could send, each at growing sizes, read by
``read_sessions(strict=False)`` in a fresh subprocess:

- *fake frame headers*: ``--fake`` MiB of frame headers, each claiming a
  payload up to the end of the file.  Work is the bytes the process read
  (``rchar`` of ``/proc/self/io``, the reader's imports subtracted), as a
  ratio to the file size: flat means linear.
- *delta bomb*: one 64 MiB request body, then ``--copies`` empty deltas that
  each rebuild it whole.  Memory is the subprocess's peak resident set
  (``ru_maxrss``) beside what the deltas claim: flat means bounded.

Updates the "Reading hostile tapes" section of docs/performance.md.

    python evals/perf/bench_hostile.py                   # updates the doc
    python evals/perf/bench_hostile.py --no-doc          # print the section only
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import msgpack
import zstandard

from evals.perf._report import kb, machine, replace_section
from evaltape.recorder import Chunk, Exchange, Mode, Request, Response, SessionStarted, to_plain
from evaltape.recorder.tape._frames import FLAG_END, FLAG_START, file_header, frame

HEADING = "## Reading hostile tapes"
DOC = Path(__file__).resolve().parents[2] / "docs" / "performance.md"
SID = bytes.fromhex("00000000000000b1")
BODY = 64 * 1024 * 1024

_READER = textwrap.dedent(
    """
    import resource, sys
    from evaltape.recorder import read_sessions
    for _ in read_sessions(sys.argv[1], strict=False):
        pass
    with open("/proc/self/io") as f:
        rchar = next(int(l.split()[1]) for l in f if l.startswith("rchar:"))
    print(rchar, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    """
)


def _exchange(body: bytes) -> Exchange:
    return Exchange(
        at=0.0,
        duration=0.0,
        request=Request(method="POST", url="https://api.example/v1/x", headers=(), body=body),
        response=Response(status=200, headers=(), chunks=(Chunk(at=0.0, data=b"{}"),)),
    )


def delta_bomb(path: Path, copies: int) -> None:
    """One 64 MiB body, then ``copies`` empty deltas reusing it whole."""
    zstd = zstandard.ZstdCompressor(level=3).compressobj()
    header = SessionStarted(session_id=SID.hex(), started_at=0.0, mode=Mode.LIVE)
    delta = to_plain(_exchange(b""))
    delta["request"] = {**delta["request"], "base": [1, BODY, 0]}
    plains = [to_plain(header), to_plain(_exchange(b" " * BODY)), *[delta] * copies]
    plains.append({"k": "end", "at": 1.0, "status": "completed", "reason": ""})
    out = [file_header("hostile 1.0")]
    for seq, plain in enumerate(plains):
        raw = msgpack.packb(plain, use_bin_type=True)
        last = seq == len(plains) - 1
        flush = zstandard.COMPRESSOBJ_FLUSH_FINISH if last else zstandard.COMPRESSOBJ_FLUSH_BLOCK
        flags = FLAG_START if seq == 0 else FLAG_END if last else 0
        out.append(frame(flags, SID, seq, len(raw), zstd.compress(raw) + zstd.flush(flush)))
    path.write_bytes(b"".join(out))


def fake_headers(path: Path, size: int) -> None:
    """``size`` bytes of frame headers, each claiming a payload up to the end of the file."""
    one = len(frame(0, SID, 1, 0, b""))
    count = size // one
    parts = [file_header("hostile 1.0")]
    for i in range(count):
        left = (count - i - 1) * one
        parts.append(frame(0, SID, 1, left, b"")[: one - 8] + left.to_bytes(4, "little") + bytes(4))
    path.write_bytes(b"".join(parts))


def read(path: Path) -> tuple[int, int]:
    """(bytes read, peak resident bytes) of a fresh process reading ``path``."""
    done = subprocess.run(
        [sys.executable, "-c", _READER, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    rchar, rss = done.stdout.split()
    return int(rchar), int(rss)


def section(fakes: list[int], copies: list[int], command: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        empty = folder / "empty.tape"
        empty.write_bytes(file_header("hostile 1.0"))
        base_read, base_rss = read(empty)
        lines = [
            HEADING,
            "",
            f"Produced by `{command}`.",
            "",
            machine(),
            "",
            "### Fake frame headers: work per byte of tape",
            "",
            "| tape | frame headers | bytes read | read / tape size |",
            "|---:|---:|---:|---:|",
        ]
        for mib in fakes:
            path = folder / f"fake{mib}.tape"
            fake_headers(path, mib << 20)
            size = path.stat().st_size
            work = read(path)[0] - base_read
            headers = path.read_bytes().count(b"\xf0\x9f\x93\xbc")
            lines.append(f"| {kb(size)} | {headers:,} | {kb(work)} | {work / size:.2f}x |")
        lines += [
            "",
            "Unbounded resynchronisation would read each candidate's claimed payload:",
            "about (headers x tape size) / 2 bytes, i.e. a ratio growing with the tape.",
            "",
            "### Delta bomb: peak memory against what the deltas claim",
            "",
            "| tape | deltas | decoded size claimed | peak RSS of the reader | RSS / claimed |",
            "|---:|---:|---:|---:|---:|",
        ]
        for n in copies:
            path = folder / f"bomb{n}.tape"
            delta_bomb(path, n)
            claimed = (n + 1) * BODY
            rss = read(path)[1]
            lines.append(
                f"| {kb(path.stat().st_size)} | {n} | {kb(claimed)} | {kb(rss)} "
                f"| {rss / claimed:.2f}x |"
            )
        lines += [
            "",
            f"An empty tape's reader peaks at {kb(base_rss)}; the session budget is 512 MiB.",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fake", default="1,4,16", help="MiB of fake frame headers")
    parser.add_argument("--copies", default="10,40,160", help="empty deltas of the bomb")
    parser.add_argument("--no-doc", action="store_true", help="print instead of updating docs")
    args = parser.parse_args(argv)
    command = "python evals/perf/bench_hostile.py" + "".join(
        f" --{name} {value}"
        for name, value, default in (
            ("fake", args.fake, "1,4,16"),
            ("copies", args.copies, "10,40,160"),
        )
        if value != default
    )
    fakes = [int(s) for s in args.fake.split(",")]
    copies = [int(s) for s in args.copies.split(",")]
    text = section(fakes, copies, command)
    if args.no_doc:
        print(text)
    else:
        replace_section(DOC, HEADING, text)
        print(f"updated {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
