"""Which run a report is about: a run record, or an A/B run's two sides.

RUN is what every command takes (``latest``, a run id or unique prefix, a
record file) or an A/B run: its id (or unique prefix) under
``<results>/ab/``, or its folder.  An A/B run, or a plain run given a
``base``, is a comparison: the report shows both sides and the cases that
moved.
"""

from __future__ import annotations

from pathlib import Path

import attrs

from ...results._record_files import read_record, resolve_run
from ...results._records import RecordError, RunRecord
from ...verdicts._ab import AB_DIR, BASELINE, CANDIDATE


@attrs.frozen(kw_only=True)
class Runs:
    """The run a report shows and, for a comparison, the run it is compared against."""

    current: RunRecord
    """The run (an A/B's candidate side)."""
    source: Path
    """The record file or A/B folder it was read from."""
    base: RunRecord | None = None
    """The baseline side; None when nothing is compared."""
    ab: bool = False
    """The two sides are an A/B run's variants."""

    @property
    def labels(self) -> tuple[str, str]:
        """Names of the baseline and current side, for tables and plots."""
        if self.ab:
            return ("A baseline", "B candidate")
        if self.base is None:
            return ("", "")
        return (f"base {self.base.run_id}", f"run {self.current.run_id}")


def _ab_folder(results: Path, spec: str) -> Path | None:
    """The A/B folder ``spec`` names, or None when it names no A/B run."""
    given = Path(spec)
    if (given / f"{BASELINE}.json").is_file():
        return given
    root = results / AB_DIR
    if spec == "latest" or "/" in spec or not root.is_dir():
        return None
    ids = sorted(p.name for p in root.iterdir() if (p / f"{BASELINE}.json").is_file())
    matches = [i for i in ids if i == spec] or [i for i in ids if i.startswith(spec)]
    if len(matches) > 1:
        raise RecordError(f'A/B run prefix "{spec}" is ambiguous: {", ".join(matches[:5])}')
    return root / matches[0] if matches else None


def load_runs(results: Path, spec: str, base: str | None = None) -> Runs:
    """Read the run ``spec`` names (and ``base``); ``RecordError`` names what is missing."""
    folder = _ab_folder(results, spec)
    if folder is not None:
        if base is not None:
            raise RecordError(f"{folder}: an A/B run compares its own two sides; drop the base")
        return Runs(
            current=read_record(folder / f"{CANDIDATE}.json"),
            base=read_record(folder / f"{BASELINE}.json"),
            source=folder,
            ab=True,
        )
    path = resolve_run(results, spec)
    before = read_record(resolve_run(results, base)) if base is not None else None
    return Runs(current=read_record(path), source=path, base=before)
