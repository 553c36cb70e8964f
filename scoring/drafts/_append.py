"""Appending a drafted case to a suite file, keeping the file one JSON object a line."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .._config import display_path
from ..cases._validate import parse_line
from ._harvest import Draft, HarvestError

CODING_FIELDS = ("files", "verify", "immutable")
"""Fields that make a suite a coding suite, which ``append_case`` refuses."""


_SUITE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _suite_lines(path: Path) -> list[tuple[int, dict[str, object]]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HarvestError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    out = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        text = raw.decode("utf-8", errors="replace")
        if not text.strip():
            continue
        obj, _ = parse_line(text)
        if obj is not None:
            out.append((number, obj))
    return out


def append_case(suites: Path, suite: str, draft: Draft) -> tuple[Path, int]:
    """Append ``draft`` to ``<suites>/<suite>.jsonl``; returns the file and the new line number.

    Refused (``HarvestError``): a suite name that is not a plain file stem; a
    coding suite (named ``coding`` or holding a case with files, verify or
    immutable), because a tape holds the sandbox's end state, not the files
    the case must start from; an id already used by any suite in the folder.
    """
    if not _SUITE_NAME.match(suite) or suite.endswith(".jsonl"):
        raise HarvestError(
            f'--write takes a suite name such as "trajectory" (the file stem), not "{suite}"'
        )
    target = suites / f"{suite}.jsonl"
    existing = _suite_lines(target) if target.is_file() else []
    coding = next((n for n, obj in existing if any(f in obj for f in CODING_FIELDS)), None)
    if suite == "coding" or coding is not None:
        where = f" ({display_path(target)}:{coding} has files/verify/immutable)" if coding else ""
        raise HarvestError(
            f'suite "{suite}" is a coding suite{where}: a recorded session holds the '
            "workspace as the agent left it, not the files the case must start from; "
            "write the draft to a trajectory suite, or add files and verify by hand"
        )
    files = sorted(suites.glob("*.jsonl")) if suites.is_dir() else []
    for path in files:
        for number, obj in _suite_lines(path) if path != target else existing:
            if obj.get("id") == draft.case_id:
                raise HarvestError(
                    f'duplicate id "{draft.case_id}" (already at {display_path(path)}:{number}); '
                    "choose another with --id"
                )
    line = (draft.line() + "\n").encode("utf-8")
    try:
        suites.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = b"\n" + line
            os.write(fd, line)
        finally:
            os.close(fd)
        lines = target.read_bytes().count(b"\n")
    except OSError as exc:
        raise HarvestError(f"{target}: cannot write: {exc.strerror or exc}") from exc
    return target, lines
