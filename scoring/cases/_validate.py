"""The checks one line of a suite file must pass before anything runs.

A broken case that failed only after the model call would read exactly like
an agent failure, so every problem is found here, at load time.  The checks
work on plain JSON (what ``json.loads`` returns) and produce messages; the
loader in ``_cases.py`` attaches ``path:line:`` and builds the values.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

from ._field_checks import FIELD_CHECKS, check_text
from ._fields import (
    ANSWER_FIELDS,
    FIELDS,
    MUTATING_MODES,
    NON_MUTATING_MODES,
    REQUIRED,
    TRAJECTORY_FIELDS,
    Messages,
    json_type,
    sandbox_path_problem,
    suggest,
)


def parse_line(text: str) -> tuple[dict[str, object] | None, str | None]:
    """Decode one line: ``(object, None)`` or ``(None, message)``.

    Stricter than ``json.loads``: a key given twice and the non-JSON constants
    ``NaN``/``Infinity`` are refused instead of silently accepted.
    """
    stripped = text.lstrip()
    if stripped.startswith(("//", "#")):
        return None, "comments are not allowed in JSON Lines (say why in whyModelBacked)"
    duplicates: list[str] = []

    def pairs_hook(pairs: list[tuple[str, object]]) -> dict[str, object]:
        seen: dict[str, object] = {}
        for key, value in pairs:
            if key in seen:
                duplicates.append(key)
            seen[key] = value
        return seen

    def refuse_constant(name: str) -> object:
        raise ValueError(name)

    try:
        value = json.loads(text, object_pairs_hook=pairs_hook, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON at column {exc.colno}: {exc.msg}"
    except ValueError as exc:
        return None, f"invalid JSON: {exc} is not a JSON number"
    except RecursionError:
        return None, "invalid JSON: nested too deeply"
    if not isinstance(value, dict):
        return None, f"expected a JSON object, got {json_type(value)}"
    if duplicates:
        return None, f'field "{duplicates[0]}" is given twice'
    return value, None


def check_case(case: dict[str, object], *, rubrics_dir: Path) -> Messages:
    """Every problem with one decoded case, in field order; empty when it is valid."""
    out: Messages = []
    for name in case:
        if name not in FIELDS:
            out.append(f'unknown field "{name}"{suggest(name, FIELDS)}')
    for name in REQUIRED:
        if name not in case:
            out.append(f'missing required field "{name}"')
        elif check_text(out, name, case[name]) and name == "id":
            _check_id(out, str(case[name]))
    for name, check in FIELD_CHECKS:
        if name in case:
            check(out, case[name])
    _check_relations(out, case, rubrics_dir)
    return out


SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""What a case id may be: it names the case's tape file, so no path separators, no
leading dot, nothing a file system or a shell reads specially, at most 128 characters."""


def _check_id(out: Messages, value: str) -> None:
    if not SAFE_ID.fullmatch(value):
        shown = json.dumps(value[:60], ensure_ascii=False)
        out.append(
            f'field "id": {shown} may hold only letters, digits, ".", "_" and "-", start with '
            "a letter or digit and be at most 128 characters (it names the case's tape file)"
        )


# --- checks across fields ------------------------------------------------------


def _check_relations(out: Messages, case: dict[str, object], rubrics_dir: Path) -> None:
    has_files = "files" in case
    for name in ("verify", "immutable"):
        if name in case and not has_files:
            out.append(f'field "{name}" needs "files" (a sandbox to run in)')
    for name in ("verifyTimeout", "verifyExpect"):
        if name in case and "verify" not in case:
            out.append(f'field "{name}" needs "verify"')
    files = case.get("files")
    immutable = case.get("immutable")
    if isinstance(files, dict) and isinstance(immutable, list):
        known = {posixpath.normpath(p) for p in files if isinstance(p, str)}
        for path in immutable:
            if isinstance(path, str) and path.strip() and posixpath.normpath(path) not in known:
                out.append(f'field "immutable": "{path}" is not one of "files"')
    mode = case.get("agentMode")
    if mode in MUTATING_MODES and not has_files:
        out.append(
            f'field "agentMode": "{mode}" lets the agent write, but the case has no '
            f'"files" sandbox; use {_either(NON_MUTATING_MODES)}, or add "files"'
        )
    tool = case.get("expectTool", "")
    if tool is None:
        for name in ("expectFirstToolIn", "expectInArgs", "expectBashMatches"):
            if name in case:
                out.append(f'field "{name}" contradicts "expectTool": null (no tool may fire)')
    elif "expectInArgs" in case and "expectTool" not in case:
        out.append('field "expectInArgs" needs "expectTool" (the tool whose arguments it checks)')
    forbid = case.get("forbidTools")
    if isinstance(forbid, list):
        expected = set(_strings(case.get("expectFirstToolIn")))
        if isinstance(tool, str):
            expected.add(tool)
        for name in forbid:
            if isinstance(name, str) and name in expected:
                out.append(f'field "forbidTools": "{name}" is both expected and forbidden')
    if "knownGap" in case and case.get("quarantined") is True:
        out.append('a case is either a "knownGap" or "quarantined", not both')
    rubric = case.get("rubric")
    if _rubric_name_ok(rubric):
        where = rubrics_dir / f"{rubric}.md"
        if not where.is_file():
            out.append(f'field "rubric": no rubric "{rubric}" (looked for {where})')
    checks = (*TRAJECTORY_FIELDS, *ANSWER_FIELDS, "verify", "immutable", "rubric")
    typo = any(name not in FIELDS for name in case)  # reported above; likely the check
    if not typo and not any(name in case for name in checks):
        out.append(
            "case checks nothing: give a trajectory expectation, verify/immutable, or a rubric"
        )


def _either(names: tuple[str, ...]) -> str:
    quoted = [f'"{n}"' for n in names]
    return " or ".join([", ".join(quoted[:-1]), quoted[-1]] if len(quoted) > 1 else quoted)


def _rubric_name_ok(value: object) -> bool:
    return (
        isinstance(value, str)
        and bool(value.strip())
        and not value.endswith(".md")
        and sandbox_path_problem(value) is None
    )


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
