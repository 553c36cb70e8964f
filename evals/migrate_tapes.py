"""Rewrite tapes as today's writer writes them (docs/format.md, "What a recording keeps").

Older tapes need no migration to be read; this is for the ones a project keeps and
replays (``cassettes/``), so that they are as small and as quick to rescore as a
fresh recording.  Each session keeps its id, header, events and end.

    python evals/migrate_tapes.py cassettes          # every *.tape under the folder
    python evals/migrate_tapes.py a.tape b.tape
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evaltape.recorder import TapeError
from evaltape.recorder._migrate import migrate_tape


def tapes(paths: list[Path]) -> list[Path]:
    """The tapes named, folders replaced by the tapes under them (sorted)."""
    out: list[Path] = []
    for path in paths:
        out += sorted(path.rglob("*.tape")) if path.is_dir() else [path]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="+", type=Path, help="tapes, or folders of tapes")
    args = p.parse_args(argv)
    for path in tapes(args.paths):
        before = path.stat().st_size if path.exists() else 0
        try:
            sessions = migrate_tape(path)
        except (TapeError, OSError) as exc:
            print(f"migrate_tapes: error: {exc}", file=sys.stderr)
            return 1
        print(f"{path}: {sessions} sessions, {before:,} -> {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
