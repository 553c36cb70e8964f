"""The command ``git bisect run`` calls at each commit: one replay, read as good, bad or skip.

``python -m evaltape.scoring.run._bisect_oracle --log FILE --cwd DIR -- REPLAY-ARGS...``
runs ``evaltape replay REPLAY-ARGS --json ...`` in DIR of the checked-out tree and
answers git with its exit code:

- 0 (good): nothing got worse (every attempt unchanged or improved);
- 1 (bad): a regression or a harness change (a tool result or the conversation);
- 125 (skip): the recording is stale at this commit (only harness text
  differs, so replay cannot say), something could not be tested, or the
  replay refused to run (a suite invalid at this commit);
- 130 (abort): the replay was interrupted; ``git bisect run`` stops.

Each step appends one JSON line to ``--log`` (commit, answer, the replay's
exit code, decision and counts), which ``run_bisect`` reads back.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

GOOD = 0
"""``git bisect run``: this commit is good."""
BAD = 1
"""``git bisect run``: this commit is bad."""
SKIP = 125
"""``git bisect run``: this commit cannot be tested."""
ABORT = 130
"""``git bisect run``: stop bisecting (an exit code above 127)."""


def answer(exit_code: int, counts: dict[str, int] | None) -> int:
    """git's answer for a replay that exited ``exit_code`` with these counts (None: no JSON)."""
    if exit_code == ABORT:
        return ABORT
    if counts is None:
        return SKIP
    if counts.get("regression", 0) or counts.get("changed", 0):
        return BAD
    return GOOD if exit_code == 0 else SKIP


def _head(cwd: Path) -> str:
    done = subprocess.run(
        ["git", "rev-parse", "HEAD"],
        cwd=cwd, capture_output=True, text=True, check=False, timeout=30,
    )  # fmt: skip
    return done.stdout.strip()


def main(argv: Sequence[str]) -> int:
    """Replay once, log the step, return git's answer."""
    if len(argv) < 5 or (argv[0], argv[2], argv[4]) != ("--log", "--cwd", "--"):
        print("usage: python -m evaltape.scoring.run._bisect_oracle --log FILE --cwd DIR -- ARGS")
        return ABORT
    log, cwd, replay_args = Path(argv[1]), Path(argv[3]), list(argv[5:])
    with tempfile.TemporaryDirectory(prefix="evaltape-bisect-") as scratch:
        out = Path(scratch) / "replay.json"
        done = subprocess.run(
            [sys.executable, "-m", "evaltape.scoring.cli", "replay", *replay_args,
             "--json", str(out), "--no-step-summary"],
            cwd=cwd, check=False,
        )  # fmt: skip
        document = json.loads(out.read_text()) if out.is_file() else None
    counts = document["counts"] if document is not None else None
    verdict = answer(done.returncode, counts)
    step = {
        "commit": _head(cwd),
        "answer": {GOOD: "good", BAD: "bad", SKIP: "skip"}.get(verdict, "abort"),
        "exit_code": done.returncode,
        "decision": document["decision"] if document is not None else "replay did not run",
        "counts": {k: n for k, n in (counts or {}).items() if n},
    }
    with log.open("a", encoding="utf-8") as out_log:
        out_log.write(json.dumps(step) + "\n")
    return verdict


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
