"""One check per field of a suite line, each adding messages for what is wrong with its value."""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Callable

from ._answer import check_expect_answer
from ._custom import check_scorer_field
from ._fields import (
    AGENT_MODES,
    KNOWN_GAP_FIELDS,
    Messages,
    json_type,
    sandbox_path_problem,
    suggest,
)


def _wrong(out: Messages, where: str, expected: str, value: object) -> None:
    out.append(f'field "{where}": expected {expected}, got {json_type(value)}')


def check_text(out: Messages, where: str, value: object) -> bool:
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
        check_text(out, f"{where}[{i}]", item)


def _positive_int(out: Messages, where: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        _wrong(out, where, "a positive integer", value)
    elif value < 1:
        out.append(f'field "{where}": must be at least 1, got {value}')


def _check_first_tool_in(out: Messages, value: object) -> None:
    _names(out, "expectFirstToolIn", value, non_empty=True)


def _check_expect_tool(out: Messages, value: object) -> None:
    if value is not None:
        check_text(out, "expectTool", value)


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


def _check_expect_line(out: Messages, value: object) -> None:
    if not isinstance(value, str):
        _wrong(out, "verifyExpect", "a string", value)
    elif not value.strip() or "\n" in value or "\r" in value:
        out.append('field "verifyExpect": must be one non-empty line')


def _check_immutable(out: Messages, value: object) -> None:
    _names(out, "immutable", value, non_empty=False)


def _check_rubric(out: Messages, value: object) -> None:
    if check_text(out, "rubric", value):
        assert isinstance(value, str)
        if value.endswith(".md"):
            out.append(f'field "rubric": give the name without ".md" ("{value[:-3]}")')
        elif sandbox_path_problem(value):
            out.append(f'field "rubric": "{value}" is not a rubric name')


def _check_model(out: Messages, value: object) -> None:
    check_text(out, "model", value)


def _check_mode(out: Messages, value: object) -> None:
    if check_text(out, "agentMode", value) and value not in AGENT_MODES:
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
            check_text(out, f"knownGap.{key}", value[key])


def _check_quarantined(out: Messages, value: object) -> None:
    if not isinstance(value, bool):
        _wrong(out, "quarantined", "true or false", value)


FIELD_CHECKS: tuple[tuple[str, Callable[[Messages, object], None]], ...] = (
    ("expectFirstToolIn", _check_first_tool_in),
    ("expectTool", _check_expect_tool),
    ("expectInArgs", _check_in_args),
    ("expectMaxTurns", _check_max_turns),
    ("forbidTools", _check_forbid),
    ("expectBashMatches", _check_bash),
    ("expectAnswer", check_expect_answer),
    ("scorer", check_scorer_field),
    ("files", _check_files),
    ("verify", _check_verify),
    ("verifyTimeout", _check_timeout),
    ("verifyExpect", _check_expect_line),
    ("immutable", _check_immutable),
    ("rubric", _check_rubric),
    ("model", _check_model),
    ("agentMode", _check_mode),
    ("knownGap", _check_known_gap),
    ("quarantined", _check_quarantined),
)
