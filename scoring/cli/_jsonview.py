"""Events as JSON-ready dicts, for ``evaltape show --json`` and git textconv.

Bytes that are UTF-8 become strings; anything else becomes
``{"base64": ...}``.  Output is deterministic so that diffs are meaningful.
"""

from __future__ import annotations

import base64
from typing import Any

from evaltape.recorder import Event, to_plain


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def event_json(event: Event, session_id: str) -> dict[str, Any]:
    """The JSON view of one event, tagged with its session id."""
    plain = to_plain(event)
    return {"session": session_id, **_jsonable(plain)}
