"""``expectAnswer``: deterministic checks on the final reply, as a case declares them.

The trajectory rules never read the reply; these do, without a judge model.
The reply is the model's last turn as recorded (``Session.reply``), so a
rescore of an old tape checks exactly what a live run checked:

```json
"expectAnswer": {"contains": "4242", "matches": "\\bdone\\b", "equals": "4242",
                 "json": {"total": 4242, "items.0.name": "a"}}
```

Every key is optional (at least one is needed) and every given key must hold.
``contains`` and ``matches`` take a string or an array of strings (each must
hold); ``matches`` is a Python regular expression searched in the reply;
``equals`` compares the reply with surrounding whitespace stripped; ``json``
maps a dotted path (array indexes as numbers) to the JSON value found there
once the reply (or its one fenced ````json`` block) is parsed.  This module
checks the field at load time and builds the value; ``checks._answer``
applies it.
"""

from __future__ import annotations

import re

import attrs

from ._fields import Messages, json_type, suggest
from ._frozen import JsonValue, freeze

FIELD = "expectAnswer"
"""The case field."""

KEYS: tuple[str, ...] = ("contains", "matches", "equals", "json")
"""The checks ``expectAnswer`` may hold, in the order they run."""


@attrs.frozen(kw_only=True)
class AnswerExpectation:
    """What the final reply must satisfy; empty parts are not checked."""

    contains: tuple[str, ...] = ()
    """Each must occur in the reply (exact, case-sensitive)."""
    matches: tuple[str, ...] = ()
    """Python regular expressions; each must match somewhere in the reply (``re.search``)."""
    equals: str | None = None
    """The reply, stripped of surrounding whitespace, must be exactly this."""
    json: tuple[tuple[str, JsonValue], ...] = ()
    """``(dotted path, value)``: the reply parsed as JSON must hold ``value`` at ``path``."""


def check_expect_answer(out: Messages, value: object) -> None:
    """Add a message per problem of an ``expectAnswer`` value (unknown key, bad regex...)."""
    if not isinstance(value, dict):
        out.append(f'field "{FIELD}": expected an object, got {json_type(value)}')
        return
    if not value:
        out.append(f'field "{FIELD}": give at least one of {", ".join(KEYS)}')
    for key in value:
        if key not in KEYS:
            out.append(f'field "{FIELD}": unknown key "{key}"{suggest(key, KEYS)}')
    for key in ("contains", "matches"):
        if key in value:
            for where, item in _items(out, f"{FIELD}.{key}", value[key]):
                if key == "matches":
                    try:
                        re.compile(item)
                    except re.error as exc:
                        out.append(f'field "{where}": invalid regular expression: {exc}')
    if "equals" in value and not isinstance(value["equals"], str):
        out.append(f'field "{FIELD}.equals": expected a string, got {json_type(value["equals"])}')
    if "json" in value:
        fields = value["json"]
        if not isinstance(fields, dict) or not fields:
            out.append(
                f'field "{FIELD}.json": expected an object of path -> value, '
                f"got {json_type(fields) if not isinstance(fields, dict) else 'an empty object'}"
            )
        else:
            for path in fields:
                if not path or any(not part for part in path.split(".")):
                    out.append(f'field "{FIELD}.json": path "{path}" has an empty part')


def _items(out: Messages, where: str, value: object) -> list[tuple[str, str]]:
    """The strings of a string-or-array value, with their field names; problems to ``out``."""
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not value:
        out.append(f'field "{where}": must not be an empty array')
    good: list[tuple[str, str]] = []
    for i, item in enumerate(items):
        label = f"{where}[{i}]" if isinstance(value, list) else where
        if not isinstance(item, str):
            out.append(f'field "{label}": expected a string, got {json_type(item)}')
        elif not item:
            out.append(f'field "{label}": must not be empty')
        else:
            good.append((label, item))
    return good


def build_answer(value: object) -> AnswerExpectation | None:
    """The value of a checked ``expectAnswer`` field; None when the case has none."""
    if not isinstance(value, dict):
        return None

    def strings(key: str) -> tuple[str, ...]:
        got = value.get(key)
        if got is None:
            return ()
        return tuple(str(v) for v in got) if isinstance(got, list) else (str(got),)

    equals = value.get("equals")
    fields = value.get("json")
    return AnswerExpectation(
        contains=strings("contains"),
        matches=strings("matches"),
        equals=equals if isinstance(equals, str) else None,
        json=tuple((str(k), freeze(v)) for k, v in fields.items())
        if isinstance(fields, dict)
        else (),
    )
