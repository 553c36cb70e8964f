"""Reading the fields of a plain event: each checked for its type, and named when wrong."""

from __future__ import annotations

from typing import Any

from .._events import Scalar

Plain = dict[str, Any]
"""An event's plain form: msgpack-native values keyed by field name."""

_MISSING: Any = object()
_NUMBER = (int, float)
_SCALAR = (str, int, float, bool, type(None))


def _get(d: Plain, key: str, types: type | tuple[type, ...], default: Any = _MISSING) -> Any:
    """``d[key]`` checked against ``types``; ``default`` when absent, if given."""
    value = d.get(key, default)
    if value is _MISSING:
        raise ValueError(f"missing field {key!r}")
    if not isinstance(value, types) and value is not default:
        raise TypeError(f"field {key!r} holds {type(value).__name__}")
    return value


def _map(d: Plain, key: str) -> Plain:
    value: Plain = _get(d, key, dict)
    return value


def _rows(d: Plain, key: str, width: int) -> list[list[Any]]:
    """A list of fixed-width lists (pairs, chunks, files), absent meaning empty."""
    rows: list[Any] = _get(d, key, list, [])
    for row in rows:
        if type(row) is not list or len(row) != width:
            raise TypeError(f"field {key!r} holds a row that is not a list of {width}")
    return rows


def _pairs(d: Plain, key: str) -> tuple[tuple[str, Scalar], ...]:
    out: list[tuple[str, Scalar]] = []
    for row in _get(d, key, list, []):
        if type(row) is not list or len(row) != 2:
            raise TypeError(f"field {key!r} holds an item that is not [key, value]")
        k, v = row
        if type(k) is not str or not isinstance(v, _SCALAR):
            raise TypeError(f"field {key!r} holds an item that is not [str, scalar]")
        out.append((k, v))
    return tuple(out)
