"""Answer checks: the case's ``expectAnswer`` applied to the session's final reply.

They run after the trajectory rules and before the outcome checks, in the
fixed order ``contains``, ``matches``, ``equals``, ``json``, and stop at the
first failure.  A pure function of the case and the reply: no judge, no clock.
"""

from __future__ import annotations

import json
import re

from evaltape.recorder import Session

from ..cases._cases import Case
from ..cases._frozen import JsonValue, thaw
from ._score import Check

_SHOWN = 80
"""Characters of the reply quoted in a reason before it is cut."""

_FENCED = re.compile(r"```(?:json)?\s*\n(.*?)\n\s*```", re.DOTALL)


def _quote(text: str) -> str:
    one = " ".join(text.split())
    return json.dumps(one if len(one) <= _SHOWN else one[:_SHOWN] + "…", ensure_ascii=False)


def answer_checks(case: Case, session: Session) -> tuple[Check, ...]:
    """The ``expectAnswer`` checks in order; the last one is the first failure, if any."""
    expect = case.expect_answer
    if expect is None:
        return ()
    reply = session.reply
    checks: list[Check] = []
    for needle in expect.contains:
        ok = needle in reply
        detail = f"reply contains {json.dumps(needle, ensure_ascii=False)}"
        if not ok:
            detail = f"reply does not contain {json.dumps(needle, ensure_ascii=False)}: "
            detail += _quote(reply)
        checks.append(Check(name="expectAnswer.contains", passed=ok, detail=detail))
        if not ok:
            return tuple(checks)
    for pattern in expect.matches:
        ok = re.search(pattern, reply) is not None
        word = "matches" if ok else "does not match"
        detail = f"reply {word} /{pattern}/" + ("" if ok else f": {_quote(reply)}")
        checks.append(Check(name="expectAnswer.matches", passed=ok, detail=detail))
        if not ok:
            return tuple(checks)
    if expect.equals is not None:
        ok = reply.strip() == expect.equals
        detail = (
            "reply equals the expected answer"
            if ok
            else f"reply is {_quote(reply)}, expected {_quote(expect.equals)}"
        )
        checks.append(Check(name="expectAnswer.equals", passed=ok, detail=detail))
        if not ok:
            return tuple(checks)
    if expect.json:
        checks.append(_json_check(reply, expect.json))
    return tuple(checks)


def _json_check(reply: str, fields: tuple[tuple[str, JsonValue], ...]) -> Check:
    name = "expectAnswer.json"
    text = reply.strip()
    fenced = _FENCED.findall(text)
    if len(fenced) == 1 and not text.startswith(("{", "[")):
        text = fenced[0]
    try:
        data: object = json.loads(text)
    except ValueError:
        return Check(name=name, passed=False, detail=f"reply is not JSON: {_quote(reply)}")
    for path, expected in fields:
        found, problem = _lookup(data, path)
        if problem is not None:
            return Check(name=name, passed=False, detail=f"reply JSON {path}: {problem}")
        want = thaw(expected)
        if not _same(found, want):
            shown = json.dumps(found, ensure_ascii=False)
            return Check(
                name=name,
                passed=False,
                detail=f"reply JSON {path} is {shown[:_SHOWN]}, expected "
                f"{json.dumps(want, ensure_ascii=False)}",
            )
    return Check(name=name, passed=True, detail=f"reply JSON holds {len(fields)} field(s)")


def _lookup(data: object, path: str) -> tuple[object, str | None]:
    here = data
    for part in path.split("."):
        if isinstance(here, dict):
            if part not in here:
                return None, f'missing (no key "{part}")'
            here = here[part]
        elif isinstance(here, list):
            if not part.isdigit() or int(part) >= len(here):
                return None, f"missing (no index {part} in an array of {len(here)})"
            here = here[int(part)]
        else:
            return None, f'missing ("{part}" of a {type(here).__name__})'
    return here, None


def _same(a: object, b: object) -> bool:
    """JSON equality: ``1 == 1.0``, but ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b
