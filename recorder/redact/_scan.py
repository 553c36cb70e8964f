"""The secret scanner: rules compiled into one pass over the data, and what it finds."""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator

import attrs

from .._errors import RedactionError
from .._events import (
    Chunk,
    Headers,
    Scalar,
)
from ._bodies import (
    decode_body,
    header_value,
)
from ._rules import (
    RULE_ANCHORS,
    SecretRule,
)


@attrs.frozen(kw_only=True)
class Finding:
    """A secret-shaped span of some data."""

    kind: str
    """The rule's kind."""
    start: int
    """Byte offset where the secret starts."""
    end: int
    """Byte offset just past the secret."""


def _entropy(data: bytes) -> float:
    counts = Counter(data)
    n = len(data)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def looks_random(data: bytes) -> bool:
    return (
        len(data) >= 16
        and any(48 <= b <= 57 for b in data)
        and any(65 <= (b | 32) <= 122 for b in data)
        and _entropy(data) >= 3.5
    )


class Scanner:
    """One rule's compiled pattern and the fastest exact way to run it."""

    def __init__(
        self,
        regex: re.Pattern[bytes],
        anchors: tuple[bytes, ...],
        shortest: int,
        tail: re.Pattern[bytes] | None = None,
    ):
        self.regex = regex
        self.anchors = anchors  # every match starts with one of these; () if unknown
        self.shortest = shortest  # no match is shorter
        self.tail = tail  # matched where a match ends: the rule's run and close

    def finditer(
        self, data: bytes, found: dict[bytes, tuple[int, list[int]]], pos: int = 0
    ) -> Iterator[tuple[re.Match[bytes], int]]:
        """The matches ``regex.finditer(data, pos)`` gives, each with where it ends
        once its tail is matched (the next match is searched from there); ``found``
        caches where each anchor occurs in ``data`` (from which offset on, and where)."""
        if len(data) - pos < self.shortest:
            return
        tail = self.tail
        if not self.anchors:
            if tail is None:
                for m in self.regex.finditer(data, pos):
                    yield m, m.end()
                return
            search = self.regex.search
            while (hit := search(data, pos)) is not None:
                end = _tail_end(tail, data, hit.end())
                yield hit, end
                pos = max(end, hit.start() + 1)
            return
        starts: list[int] = []
        for anchor in self.anchors:
            searched, places = found.get(anchor, (len(data) + 1, []))
            if searched > pos:  # rules search from different points: from the earliest
                places = _occurrences(data, anchor, pos)
                found[anchor] = (pos, places)
            starts += places[bisect.bisect_left(places, pos) :] if searched < pos else places
        if not starts:
            return
        for start in sorted(set(starts)):  # as finditer: leftmost match, then on past it
            if start >= pos:
                hit = self.regex.match(data, start)
                if hit is not None:
                    pos = hit.end() if tail is None else _tail_end(tail, data, hit.end())
                    yield hit, pos


def _tail_end(tail: re.Pattern[bytes], data: bytes, at: int) -> int:
    went = tail.match(data, at)
    return at if went is None else went.end()


def _occurrences(data: bytes, literal: bytes, pos: int = 0) -> list[int]:
    """Where ``literal`` occurs in ``data`` from ``pos`` on."""
    out = []
    at = data.find(literal, pos)
    while at >= 0:
        out.append(at)
        at = data.find(literal, at + 1)
    return out


@functools.lru_cache(maxsize=256)
def _shortest(pattern: bytes, flags: int) -> int:
    """Fewest bytes a match of ``pattern`` spans (0 if the parser cannot tell).

    Cached like ``re.compile`` caches: every recording builds a redactor."""
    try:
        low = re._parser.parse(pattern, flags).getwidth()[0]  # type: ignore[attr-defined]
    except Exception:  # a private parser: any surprise means "no bound"
        return 0
    return low if isinstance(low, int) and low > 0 else 0


def compile_rules(rule: SecretRule) -> Scanner:
    if not rule.kind:
        raise RedactionError(f"redaction rule {rule.pattern!r} has no kind")
    try:
        regex = re.compile(rule.pattern.encode(), re.IGNORECASE if rule.ignore_case else 0)
    except (re.error, UnicodeEncodeError) as exc:
        raise RedactionError(f"redaction rule {rule.kind!r}: bad pattern: {exc}") from exc
    anchors = RULE_ANCHORS.get((rule.pattern, rule.lowercase, rule.ignore_case), ())
    return Scanner(regex, anchors, _shortest(regex.pattern, regex.flags), compile_tail(rule))


def compile_tail(rule: SecretRule) -> re.Pattern[bytes] | None:
    """``(?:run)*(?:close)?`` of the rule, or None if it has neither."""
    if not rule.run and not rule.close:
        return None
    run = f"(?:{rule.run})*" if rule.run else ""
    close = f"(?:{rule.close})?" if rule.close else ""
    try:
        return re.compile((run + close).encode(), re.IGNORECASE if rule.ignore_case else 0)
    except (re.error, UnicodeEncodeError) as exc:
        raise RedactionError(f"redaction rule {rule.kind!r}: bad run or close: {exc}") from exc


def compile_allow(patterns: tuple[str, ...]) -> tuple[re.Pattern[bytes], ...]:
    out = []
    for p in patterns:
        try:
            out.append(re.compile(p.encode()))
        except (re.error, UnicodeEncodeError) as exc:
            raise RedactionError(f"allow-list pattern {p!r}: {exc}") from exc
    return tuple(out)


def compile_header_pattern(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise RedactionError(f"header name pattern {pattern!r}: {exc}") from exc


def scan_pairs(
    text: Callable[[str, object], None], label: str, pairs: tuple[tuple[str, Scalar], ...]
) -> None:
    for key, value in pairs:
        text(f"{label} {key!r} (name)", key)
        text(f"{label} {key!r}", value)


def scan_body(
    data: Callable[[str | Callable[[int], str], bytes], None],
    label: str,
    chunks: tuple[Chunk, ...],
    headers: Headers,
) -> None:
    joined = b"".join(c.data for c in chunks)
    if not joined:
        return
    encoding = header_value(headers, "content-encoding")
    decoded = decode_body(joined, encoding)
    if decoded is not None and decoded is not joined:
        data(f"{label} (decoded {encoding.strip().lower()})", decoded)
    if len(chunks) == 1:
        data(label, joined)
        return
    ends: list[int] = []
    total = 0
    for c in chunks:
        total += len(c.data)
        ends.append(total)

    def where(offset: int) -> str:
        lo, hi = 0, len(ends)
        while lo < hi:
            mid = (lo + hi) // 2
            if ends[mid] <= offset:
                lo = mid + 1
            else:
                hi = mid
        return f"{label} chunk {lo}"

    data(where, joined)


def value_spans(data: bytes, values: tuple[str, ...], index: int) -> Iterator[tuple[int, int, int]]:
    """Every occurrence of each known secret value in ``data``, tagged ``index``."""
    for value in values:
        raw = value.encode("utf-8", "surrogateescape")
        for at in _occurrences(data, raw):
            yield at, at + len(raw), index


def longest_match(scanner: Scanner) -> int:
    """Most bytes a match of the scanner's pattern spans (``MAXREPEAT`` if unbounded)."""
    try:
        high = re._parser.parse(scanner.regex.pattern, scanner.regex.flags).getwidth()[1]  # type: ignore[attr-defined]
    except Exception:  # a private parser: any surprise means "no bound"
        return int(re._constants.MAXREPEAT)  # type: ignore[attr-defined]
    return int(high)


def secret_preview(secret: str) -> str:
    """A masked preview of a secret, safe to print: its first characters and length."""
    shown = 4 if len(secret) >= 16 else 2 if len(secret) >= 8 else 0
    return f"{secret[:shown]}{'*' * 4} ({len(secret)} chars)"
