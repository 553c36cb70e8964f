"""Reading recorded bodies: JSON, server-sent events, error texts.

Bodies come here with their Content-Encoding undone (``_encoding``).  Nothing raises:
each reader returns what it could decode plus a one-line problem, because a
cut-short stream still says what the model had produced so far.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Any

import attrs
import msgspec

_LINE_END = re.compile(r"\r\n|\r|\n")
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


@attrs.frozen(kw_only=True)
class SseEvent:
    """One dispatched server-sent event."""

    event: str
    """The ``event:`` field, empty when the server sent none."""
    data: str
    """The ``data:`` lines joined by newlines."""


@attrs.frozen(kw_only=True)
class SseStream:
    """The events of a stream body, as parallel tuples (no object per event)."""

    names: tuple[str, ...]
    """Each event's ``event:`` field, empty when the server sent none."""
    payloads: tuple[str, ...]
    """Each event's ``data:`` lines joined by newlines."""
    complete: bool
    """False when the body ends inside an event (the stream was cut)."""

    @property
    def events(self) -> tuple[SseEvent, ...]:
        """Every event terminated by a blank line, in order."""
        pairs = zip(self.names, self.payloads, strict=True)
        return tuple(SseEvent(event=e, data=d) for e, d in pairs)


def load_json(data: bytes, what: str) -> tuple[Any, str]:
    """``(value, "")`` or ``(None, problem)`` for a JSON text."""
    if data[:1] in (b"{", b"[") and data[1:2] != b"\x00":  # json.loads: then UTF-8
        try:
            return fast(data), ""
        except (msgspec.DecodeError, RecursionError):
            pass
    try:
        return json.loads(data), ""
    except UnicodeDecodeError as exc:
        return None, f"{what} is not UTF-8 text (byte {exc.start})"
    except json.JSONDecodeError as exc:
        return None, f"{what} is not valid JSON: {exc.msg} at offset {exc.pos}"
    except (ValueError, RecursionError) as exc:  # a huge integer, or nesting too deep
        return None, f"{what} cannot be read as JSON: {str(exc).splitlines()[0][:120]}"


def load_json_text(data: str, what: str) -> tuple[Any, str]:
    """``load_json(data.encode(), what)`` without encoding the text again.

    A text that is one JSON object and nothing else (the usual stream event)
    goes straight to the scanner ``json.loads`` ends in; anything else takes
    the long way, which also words the problem.
    """
    if data[:1] == "{":
        try:
            return fast(data), ""
        except (msgspec.DecodeError, RecursionError):
            pass
        try:
            value, end = _scan(data, 0)
        except (StopIteration, ValueError, RecursionError):
            pass
        else:
            if end == len(data):
                return value, ""
    if data[:1] in ("\ufeff", "\x00") or data[1:2] == "\x00":
        return load_json(data.encode(), what)  # read as the bytes would be
    try:
        return json.loads(data), ""
    except json.JSONDecodeError as exc:
        return None, f"{what} is not valid JSON: {exc.msg} at offset {exc.pos}"
    except (ValueError, RecursionError) as exc:  # a huge integer, or nesting too deep
        return None, f"{what} cannot be read as JSON: {str(exc).splitlines()[0][:120]}"


def parse_sse(data: bytes) -> SseStream:
    """Split an event-stream body into events, following the WHATWG rules.

    Comments and ``id``/``retry`` fields are dropped; an event the body ends
    in the middle of is left out and marks the stream incomplete.
    """
    text = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    if "\r" not in text and text.startswith("data: ") and text.endswith("\n\n"):
        # The usual body: only "data: ..." lines, each followed by a blank line.
        payloads = text[6:-2].split("\n\ndata: ")
        if text.count("\n") == 2 * len(payloads):  # so no payload holds a line end
            return SseStream(names=("",) * len(payloads), payloads=tuple(payloads), complete=True)
    if "\r" not in text and text.startswith("event: ") and text.endswith("\n\n"):
        named = named_pairs(text)
        if named is not None:
            return SseStream(names=named[0], payloads=named[1], complete=True)
    lines = text.split("\n") if "\r" not in text else _LINE_END.split(text)
    tail = lines.pop()  # text after the last line end: a cut-off line, or ""
    names: list[str] = []
    payloads = []
    event = ""
    values: list[str] = []
    pending = False
    for line in lines:
        if not line:
            if values:
                names.append(event)
                payloads.append("\n".join(values))
            event, values, pending = "", [], False
            continue
        if line.startswith("data:"):  # the usual line, read without the general split
            values.append(line[6:] if line.startswith(" ", 5) else line[5:])
            pending = True
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "data":
            values.append(value)
            pending = True
        elif field == "event":
            event = value
            pending = True
    return SseStream(
        names=tuple(names), payloads=tuple(payloads), complete=not pending and not tail
    )


_TAGS: tuple[tuple[str, Any], ...] = (
    ("false", False),
    ("true", True),
    ("9007199254740993", 2**53 + 1),  # an int no float equals
)
"""Values that mark each payload's place in a batch, with their only spelling."""


def _batch(payloads: Sequence[str]) -> list[Any] | None:
    """``[json.loads(p) for p in payloads]`` in one parse, or None.

    The payloads are parsed as one array ``[TAG,p0,TAG,p1,...]``, which
    shares the decoder's key cache across events and saves a call per event.
    TAG is a value with a single spelling that no payload contains.  A result
    whose even items are all TAG (same type, same value) then proves each
    payload a JSON text by itself: only the inserted tags can be those items,
    so every tag sits in the outer array and exactly one value lies between
    two of them.  None when that does not hold (a payload is not JSON alone,
    or every tag occurs in the payloads); the caller then parses the payloads
    one by one.
    """
    n = len(payloads)
    for spelling, tag in _TAGS:
        joined = f"[{spelling}," + f",{spelling},".join(payloads) + "]"
        if joined.count(spelling) == n:
            return _untag(joined, n, tag)
    return None


def _untag(joined: str, n: int, tag: Any) -> list[Any] | None:
    """The values of a batch of ``n`` payloads tagged with ``tag``; see ``_batch``."""
    try:
        items = fast(joined)
    except (msgspec.DecodeError, RecursionError):
        try:
            items = json.loads(joined)
        except (ValueError, RecursionError):  # bad JSON, an overlong int, deep nesting
            return None
    tags = items[::2]
    if len(items) != 2 * n or tags != [tag] * n or set(map(type, tags)) != {type(tag)}:
        return None
    values: list[Any] = items[1::2]
    return values


def decode_payloads(
    payloads: Sequence[str], what: str, *, batch: bool = True
) -> tuple[list[Any], list[str] | None]:
    """Each payload's JSON value, as ``load_json_text(p, f"{what} {n}")`` gives it.

    Returns ``(values, None)`` when every payload decodes, else ``(values,
    problems)`` with ``None`` values where ``problems[n]`` is set.  ``batch``
    (the default) parses all payloads in one call first (``_batch``) and
    falls back on the payloads one by one only when that fails.
    """
    if batch and payloads:
        values = _batch(payloads)
        if values is not None:
            return values, None
    decoded = [load_json_text(p, f"{what} {n}") for n, p in enumerate(payloads)]
    problems = [bad for _, bad in decoded]
    return [value for value, _ in decoded], problems if any(problems) else None


# -- tolerant access to decoded JSON --------------------------------------------
# API bodies are foreign input: a field of the wrong type reads as absent.


def obj(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def arr(value: Any) -> list[Any]:
    """``value`` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def text(value: Any) -> str:
    """``value`` if it is a string, else ""."""
    return value if isinstance(value, str) else ""


def count(value: Any) -> int:
    """``value`` if it is a whole number of tokens, else 0."""
    if type(value) is int:  # the usual, decided at once
        return value
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


_NUMBER = (int, float)


def usd(value: Any) -> float | None:
    """``value`` as a cost in USD if it is a finite number >= 0, else None (not reported)."""
    if value is None or isinstance(value, bool) or not isinstance(value, _NUMBER):
        return None
    if value != value or value in (float("inf"), float("-inf")) or value < 0:
        return None
    return float(value)


def parts_text(content: Any, kinds: tuple[str, ...]) -> str:
    """Text of a message content: a string, or the ``text`` of parts of the given types."""
    if isinstance(content, str):
        return content
    texts = [
        text(part.get("text"))
        for part in arr(content)
        if isinstance(part, dict) and part.get("type") in kinds
    ]
    return "\n".join(t for t in texts if t)


def error_text(status: int, body: bytes) -> str:
    """One line for an HTTP error response: ``HTTP 400: invalid_request_error: ...``."""
    value, problem = load_json(body, "error body")
    err = obj(value).get("error") if not problem else None
    if isinstance(err, dict):
        kind = text(err.get("type")) or text(err.get("code"))
        message = text(err.get("message"))
        return f"HTTP {status}: " + ": ".join(x for x in (kind, message) if x)
    if isinstance(err, str):
        return f"HTTP {status}: {err}"
    snippet = " ".join(body.decode("utf-8", errors="replace").split())
    return f"HTTP {status}: {snippet[:200]}" if snippet else f"HTTP {status}"


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``, without building
its encoder on every call."""


def raw_json(value: Any) -> str:
    """Tool arguments as a JSON text: strings as sent, objects serialized compactly."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return _COMPACT(value)


def stream_error(data: Any, prefix: str = "stream error") -> str:
    """One line for an error object (``{"error": {...}}`` or ``{"message": ...}``)."""
    body = obj(data)
    err = body.get("error", body)
    if isinstance(err, dict):
        kind = text(err.get("type")) or text(err.get("code"))
        message = text(err.get("message"))
        detail = ": ".join(x for x in (kind, message) if x) or "no detail"
        return f"{prefix}: {detail}"
    return f"{prefix}: {err}"


_decode: Callable[[str | bytes], Any] = msgspec.json.Decoder().decode
_DIGITS = bytes(48 if 48 <= i < 58 else 32 for i in range(256))  # digits -> "0", else " "
_INT_DIGITS = sys.get_int_max_str_digits() or 0


def huge_int(text: str | bytes) -> bool:
    """True if ``text`` holds a run of more digits than ``json.loads`` turns into an int."""
    if not _INT_DIGITS or len(text) <= _INT_DIGITS:
        return False
    # Such a run spans two neighbouring characters of every ``step``-th one, so a text
    # whose sampled characters are never two digits in a row holds none (the usual
    # case, decided on a few characters instead of the whole text).
    step = (_INT_DIGITS + 1) // 2
    sample = text[::step]
    raw = sample if isinstance(sample, bytes) else sample.encode("utf-8", "surrogatepass")
    if b"00" not in raw.translate(_DIGITS):  # (a sampled non-ASCII char encodes to no digit)
        return False
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return b"0" * (_INT_DIGITS + 1) in raw.translate(_DIGITS)


def fast(text: str | bytes) -> Any:
    """A strict JSON parser in C: where it accepts a text, its value is ``json.loads``'s
    (big integers stay exact, duplicate keys keep the last).  What it refuses (a BOM,
    NaN, lone surrogates, anything malformed, an int past Python's digit limit) goes
    to ``json.loads``, which also words the problem."""
    if huge_int(text):
        raise msgspec.DecodeError("an integer past the digit limit")
    return _decode(text)


def named_pairs(text: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """``(names, payloads)`` of a body of ``event:``/``data:`` pairs, or None if it is
    anything else (the general reader in ``_sse.parse_sse`` then takes it).

    Such a body's lines are ``event line, data line, ""`` repeated, then one
    ``""`` after the last line end.
    """
    lines = text.split("\n")
    n = len(lines) // 3
    if len(lines) != 3 * n + 1 or lines[-1]:
        return None
    heads, datas = lines[0 : 3 * n : 3], lines[1 : 3 * n : 3]
    if any(lines[2 : 3 * n : 3]):  # each pair is followed by a blank line
        return None
    if not (
        all(map(str.startswith, heads, repeat("event: ")))
        and all(map(str.startswith, datas, repeat("data: ")))
    ):
        return None
    # No line holds a line end, so "\nevent: " occurs only where the lines are joined.
    names = ("\n" + "\n".join(heads)).split("\nevent: ")[1:]
    payloads = ("\n" + "\n".join(datas)).split("\ndata: ")[1:]
    return tuple(names), tuple(payloads)
