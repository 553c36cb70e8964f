"""The fields a suite line may carry, and the small helpers that name what is wrong with one."""

from __future__ import annotations

import difflib
import posixpath
import re

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
CODING_FIELDS: tuple[str, ...] = ("files", "verify", "verifyTimeout", "verifyExpect", "immutable")
JUDGED_FIELDS: tuple[str, ...] = ("rubric",)
ANSWER_FIELDS: tuple[str, ...] = ("expectAnswer", "scorer")
"""Checks of the final reply (``_answer.py``) and custom scorers (``_custom.py``)."""
OPTIONAL_FIELDS: tuple[str, ...] = ("model", "agentMode", "knownGap", "quarantined")

FIELDS: tuple[str, ...] = (
    REQUIRED + TRAJECTORY_FIELDS + ANSWER_FIELDS + CODING_FIELDS + JUDGED_FIELDS + OPTIONAL_FIELDS
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
