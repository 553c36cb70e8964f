"""The checks one line of a suite file must pass before anything runs.

A broken case that failed only after the model call would read exactly like
an agent failure, so every problem is found here, at load time.  The checks
work on plain JSON (what ``json.loads`` returns) and produce messages; the
loader in ``_cases.py`` attaches ``path:line:`` and builds the values.
"""

from __future__ import annotations

import difflib
import json
import math
import posixpath
import re
from collections.abc import Callable
from pathlib import Path

REQUIRED: tuple[str, ...] = ("id", "prompt", "failureCategory", "whyModelBacked")
"""Every case has these; without the last two a suite cannot say what it covers."""

TRAJECTORY_FIELDS: tuple[str, ...] = (
    "expectFirstToolIn",
    "expectTool",
    "expectInArgs",
    "expectMaxTurns",
    "forbidTools",
    "expectBashMatches",
)
CODING_FIELDS: tuple[str, ...] = ("files", "verify", "verifyTimeout", "immutable")
JUDGED_FIELDS: tuple[str, ...] = ("rubric",)
OPTIONAL_FIELDS: tuple[str, ...] = ("model", "agentMode", "knownGap", "quarantined")

FIELDS: tuple[str, ...] = (
    REQUIRED + TRAJECTORY_FIELDS + CODING_FIELDS + JUDGED_FIELDS + OPTIONAL_FIELDS
)
"""Every field a case may have, in the order the documentation lists them."""

KNOWN_GAP_FIELDS: tuple[str, ...] = ("notes", "target")

NON_MUTATING_MODES: tuple[str, ...] = ("plan", "read-only")
"""Agent modes in which the agent may not change files."""
MUTATING_MODES: tuple[str, ...] = ("edit", "build", "danger")
"""Agent modes in which the agent may write; refused on a case without a sandbox."""
AGENT_MODES: tuple[str, ...] = NON_MUTATING_MODES + MUTATING_MODES

Messages = list[str]


def suggest(name: str, choices: tuple[str, ...]) -> str:
    """`` (did you mean "x"?)`` for the nearest choice, or ``""`` when none is close."""
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f' (did you mean "{close[0]}"?)' if close else ""


def json_type(value: object) -> str:
    """The JSON name of a decoded value's type, for "expected X, got Y" messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


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
        else:
            _text(out, name, case[name])
    for name, check in _CHECKS:
        if name in case:
            check(out, case[name])
    _check_relations(out, case, rubrics_dir)
    return out


# --- one check per field: each appends messages for that field alone --------


def _wrong(out: Messages, where: str, expected: str, value: object) -> None:
    out.append(f'field "{where}": expected {expected}, got {json_type(value)}')


def _text(out: Messages, where: str, value: object) -> bool:
    if not isinstance(value, str):
        _wrong(out, where, "a string", value)
        return False
    if not value.strip():
        out.append(f'field "{where}": must not be empty')
        return False
    return True


def _names(out: Messages, where: str, value: object, *, non_empty: bool) -> None:
    if not isinstance(value, list):
        _wrong(out, where, "an array of strings", value)
        return
    if non_empty and not value:
        out.append(f'field "{where}": must list at least one tool')
    for i, item in enumerate(value):
        _text(out, f"{where}[{i}]", item)


def _positive_int(out: Messages, where: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        _wrong(out, where, "a positive integer", value)
    elif value < 1:
        out.append(f'field "{where}": must be at least 1, got {value}')


def _check_first_tool_in(out: Messages, value: object) -> None:
    _names(out, "expectFirstToolIn", value, non_empty=True)


def _check_expect_tool(out: Messages, value: object) -> None:
    if value is not None:
        _text(out, "expectTool", value)


def _check_in_args(out: Messages, value: object) -> None:
    if not isinstance(value, dict):
        _wrong(out, "expectInArgs", "an object", value)
        return
    if not value:
        out.append('field "expectInArgs": must name at least one argument')
    for key, item in value.items():
        _arg_value(out, f"expectInArgs.{key}", item)


def _arg_value(out: Messages, where: str, value: object) -> None:
    if isinstance(value, bool | int | float | str):
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _arg_value(out, f"{where}[{i}]", item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _arg_value(out, f"{where}.{key}", item)
    else:
        _wrong(out, where, "a string, number, boolean, array or object", value)


def _check_max_turns(out: Messages, value: object) -> None:
    _positive_int(out, "expectMaxTurns", value)


def _check_forbid(out: Messages, value: object) -> None:
    _names(out, "forbidTools", value, non_empty=False)


def _check_bash(out: Messages, value: object) -> None:
    patterns = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not value:
        out.append('field "expectBashMatches": must list at least one pattern')
    for i, pattern in enumerate(patterns):
        where = f"expectBashMatches[{i}]" if isinstance(value, list) else "expectBashMatches"
        if not isinstance(pattern, str):
            _wrong(out, where, "a regular expression string", pattern)
        elif not pattern:
            out.append(f'field "{where}": must not be empty')
        else:
            try:
                re.compile(pattern)
            except re.error as exc:
                out.append(f'field "{where}": invalid regular expression {pattern!r}: {exc}')


def _check_files(out: Messages, value: object) -> None:
    if not isinstance(value, dict):
        _wrong(out, "files", "an object of path to content", value)
        return
    seen: dict[str, str] = {}
    for path, content in value.items():
        problem = sandbox_path_problem(path)
        if problem:
            out.append(f'field "files": path "{path}" {problem}')
            continue
        norm = posixpath.normpath(path)
        if norm in seen:
            out.append(f'field "files": path "{path}" is the same file as "{seen[norm]}"')
        seen[norm] = path
        if not isinstance(content, str):
            _wrong(out, f"files.{path}", "a string (the file's content)", content)
    for norm, path in seen.items():
        parent = posixpath.dirname(norm)
        while parent:
            if parent in seen:
                out.append(f'field "files": "{seen[parent]}" is a file and a folder of "{path}"')
                break
            parent = posixpath.dirname(parent)


def sandbox_path_problem(path: str) -> str | None:
    """Why ``path`` cannot name a file inside a sandbox folder, or None when it can."""
    if not path.strip():
        return "is empty"
    if "\x00" in path:
        return "contains a NUL byte"
    if path.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", path):
        return "is absolute (give it relative to the sandbox)"
    parts = re.split(r"[/\\]", path)
    if ".." in parts:
        return "escapes the sandbox (contains ..)"
    norm = posixpath.normpath(path.replace("\\", "/"))
    if norm == "." or path.endswith(("/", "\\")):
        return "names a folder, not a file"
    return None


def _check_verify(out: Messages, value: object) -> None:
    if isinstance(value, list):
        if not value:
            out.append('field "verify": must not be an empty array')
        for i, item in enumerate(value):
            if not isinstance(item, str):
                _wrong(out, f"verify[{i}]", "a string", item)
        if value and isinstance(value[0], str) and not value[0].strip():
            out.append('field "verify[0]": the program name must not be empty')
    else:
        if not isinstance(value, str):
            _wrong(out, "verify", "a command string or an array of arguments", value)
        elif not value.strip():
            out.append('field "verify": must not be empty')


def _check_timeout(out: Messages, value: object) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        _wrong(out, "verifyTimeout", "a positive number of seconds", value)
    elif not math.isfinite(value) or value <= 0:
        out.append(f'field "verifyTimeout": must be a positive number of seconds, got {value}')


def _check_immutable(out: Messages, value: object) -> None:
    _names(out, "immutable", value, non_empty=False)


def _check_rubric(out: Messages, value: object) -> None:
    if _text(out, "rubric", value):
        assert isinstance(value, str)
        if value.endswith(".md"):
            out.append(f'field "rubric": give the name without ".md" ("{value[:-3]}")')
        elif sandbox_path_problem(value):
            out.append(f'field "rubric": "{value}" is not a rubric name')


def _check_model(out: Messages, value: object) -> None:
    _text(out, "model", value)


def _check_mode(out: Messages, value: object) -> None:
    if _text(out, "agentMode", value) and value not in AGENT_MODES:
        assert isinstance(value, str)
        choices = ", ".join(AGENT_MODES)
        out.append(
            f'field "agentMode": unknown mode "{value}"{suggest(value, AGENT_MODES)}; '
            f"the modes are {choices}"
        )


def _check_known_gap(out: Messages, value: object) -> None:
    if not isinstance(value, dict):
        _wrong(out, "knownGap", 'an object with "notes" and "target"', value)
        return
    for key in value:
        if key not in KNOWN_GAP_FIELDS:
            out.append(f'field "knownGap": unknown key "{key}"{suggest(key, KNOWN_GAP_FIELDS)}')
    for key in KNOWN_GAP_FIELDS:
        if key not in value:
            meaning = "what happens today" if key == "notes" else "what passing looks like"
            out.append(f'field "knownGap": missing "{key}" ({meaning})')
        else:
            _text(out, f"knownGap.{key}", value[key])


def _check_quarantined(out: Messages, value: object) -> None:
    if not isinstance(value, bool):
        _wrong(out, "quarantined", "true or false", value)


_CHECKS: tuple[tuple[str, Callable[[Messages, object], None]], ...] = (
    ("expectFirstToolIn", _check_first_tool_in),
    ("expectTool", _check_expect_tool),
    ("expectInArgs", _check_in_args),
    ("expectMaxTurns", _check_max_turns),
    ("forbidTools", _check_forbid),
    ("expectBashMatches", _check_bash),
    ("files", _check_files),
    ("verify", _check_verify),
    ("verifyTimeout", _check_timeout),
    ("immutable", _check_immutable),
    ("rubric", _check_rubric),
    ("model", _check_model),
    ("agentMode", _check_mode),
    ("knownGap", _check_known_gap),
    ("quarantined", _check_quarantined),
)


# --- checks across fields ------------------------------------------------------


def _check_relations(out: Messages, case: dict[str, object], rubrics_dir: Path) -> None:
    has_files = "files" in case
    for name in ("verify", "immutable"):
        if name in case and not has_files:
            out.append(f'field "{name}" needs "files" (a sandbox to run in)')
    if "verifyTimeout" in case and "verify" not in case:
        out.append('field "verifyTimeout" needs "verify"')
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
    checks = (*TRAJECTORY_FIELDS, "verify", "immutable", "rubric")
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
