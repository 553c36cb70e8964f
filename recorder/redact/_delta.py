"""Redacting one session's request bodies by what changed, so recording stays linear.

An agent's every request repeats the whole conversation, so scanning each
request body whole costs time that grows with the square of the turns.
``SessionRedactor`` keeps the session's last few request bodies with what the
rules and known values found in them, in the raw bytes and in each secret
view (JSON escapes undone, event texts joined; ``_secret_views.py``).  A new
body that shares a prefix with one of them is scanned, in each of these
tracks, only from shortly before the end of the shared prefix (the views of
the new body are themselves built from there, ``_secret_views_grow.py``).
The result is byte for byte what ``Redactor.redact_bytes`` gives on the
whole body:

- every match attempt of a rule reads at most ``reach`` bytes counting what
  its lookarounds read, plus what its ``run`` and ``close`` read past the
  end of a match (``reach`` is derived from the patterns); a match attempt
  that starts ``reach`` bytes before the end of the shared prefix, or a match
  that ends there, reads only shared bytes and is the same in both bodies;
- the scan resumes at a point no earlier match of the rule covers, with
  ``reach`` bytes of context before it, so every rule's chain of leftmost
  matches goes on as a scan from the start would;
- the masked body is the recent one's up to a point before every secret
  found or dropped anew and outside every mask, then masked anew.

A rule's ``run`` lets its match go on to the end of a long key while the
pattern (and so ``reach``) stays short: a key straddling the end of the
shared prefix is covered by a match that reaches it, so the scan resumes at
that match's start.  When a rule has no bounded length (an open-ended
repetition), the body is not content-encoded as sent, or it shares little
with the recent ones, the whole body is scanned, as ``Redactor.redact_exchange``
does.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from typing import Any

import attrs

from .._events import Exchange
from ..tape._delta import common_prefix
from ._bodies import header_value
from ._redactor import Redactor, mask
from ._rules import SecretRule
from ._track import Step, Track, advance
from ._views import event_texts, unescaped
from ._views_grow import event_texts_grown, marks_grown, unescaped_grown

KEEP = 4
"""Recent request bodies a new one is compared with (as the tape's delta stage does)."""

MIN_SHARED = 4096
"""A body shares at least this many leading bytes with a recent one to be scanned in part."""

_UNBOUNDED = 1 << 20
"""Widths from here on count as unbounded (sre reports open repetitions as ~2**64)."""

Span = tuple[int, int, int]
"""(start, end, rule index) of one rule's match, as ``Redactor._spans`` yields it."""


def _lookaround_width(tree: Any) -> int:
    """The most bytes the lookarounds and boundary tests of a parsed pattern read."""
    total = 0
    for op, av in tree:
        name = str(op)
        if name in ("ASSERT", "ASSERT_NOT"):
            total += av[1].getwidth()[1] + _lookaround_width(av[1])
        elif name == "AT":
            total += 1
        elif isinstance(av, tuple | list):
            for part in av:
                if hasattr(part, "getwidth"):
                    total += _lookaround_width(part)
                elif isinstance(part, list):
                    total += sum(_lookaround_width(p) for p in part if hasattr(p, "getwidth"))
    return total


def _reach_of(pattern: str, flags: int) -> int | None:
    try:
        tree = re._parser.parse(pattern.encode(), flags)  # type: ignore[attr-defined]
        widest = tree.getwidth()[1]
        around = _lookaround_width(tree)
    except Exception:  # a private parser: any surprise means "no bound"
        return None
    if not isinstance(widest, int) or widest >= _UNBOUNDED or around >= _UNBOUNDED:
        return None
    return int(widest) + around


def rule_reach(rule: SecretRule) -> int | None:
    """The most bytes one match attempt of ``rule`` reads, or None if unbounded: its
    pattern, then past the match's end one unit of its ``run`` or its ``close``."""
    flags = re.IGNORECASE if rule.ignore_case else 0
    parts = [_reach_of(p, flags) for p in (rule.pattern, rule.run, rule.close) if p]
    if any(p is None for p in parts):
        return None
    return sum(p for p in parts if p is not None)


def reach(rules: tuple[SecretRule, ...]) -> tuple[int, ...] | None:
    """Each rule's ``rule_reach`` (plus one); None if any rule is unbounded."""
    widths = [rule_reach(r) for r in rules]
    if any(w is None for w in widths):
        return None
    return tuple(w + 1 for w in widths if w is not None)


@attrs.frozen
class _Seen:
    raw: bytes
    """The body as sent."""
    redacted: bytes
    """The body as written."""
    tracks: tuple[Track | None, ...]
    """The raw bytes' track, then each view's (None: the body has no such view)."""
    marks: tuple[int, ...]
    """Where the body's first two ``data:`` are (``marks_grown``)."""


class SessionRedactor:
    """``redactor.redact_exchange`` for one session's exchanges, request bodies scanned by
    what changed (see the module docstring).  Thread-safe."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.reach = reach(redactor.rules)
        """Each rule's reach; None when some rule's matches have no bounded length."""
        values = [len(v.encode("utf-8", "surrogateescape")) for v in redactor.values]
        self._reaches = (*self.reach, max(values, default=0) + 1) if self.reach else ()
        self._recent: deque[_Seen] = deque(maxlen=KEEP)
        self._lock = threading.Lock()
        self.scanned = 0
        """Request body bytes scanned so far, in every track, context included (what
        the tests count)."""

    def redact_exchange(self, exchange: Exchange) -> Exchange:
        """A copy of ``exchange`` redacted as ``Redactor.redact_exchange`` redacts it."""
        request = exchange.request
        encoding = header_value(request.headers, "content-encoding")
        if self.reach is None or encoding not in ("", "identity"):
            return self.redactor.redact_exchange(exchange)
        body = self.redact_body(request.body)
        bare = attrs.evolve(exchange, request=attrs.evolve(request, body=b""))
        out = self.redactor.redact_exchange(bare)
        return attrs.evolve(out, request=attrs.evolve(out.request, body=body))

    def redact_body(self, raw: bytes) -> bytes:
        """One request body redacted (same length as ``raw``), remembered for the next."""
        assert self.reach is not None
        with self._lock:
            base, shared = None, 0
            for seen in reversed(self._recent):  # newest first: usually the one
                if len(seen.raw) <= shared:  # cannot share more
                    continue
                n = common_prefix(seen.raw, raw)
                if n > shared:
                    base, shared = seen, n
                if n >= len(seen.raw) - MIN_SHARED:  # no other can share much more
                    break
            if base is None or shared < MIN_SHARED:
                base, shared = None, 0
            seen = self._scan(raw, base, shared)
            self._recent.append(seen)
            return seen.redacted

    def _scan(self, raw: bytes, base: _Seen | None, shared: int) -> _Seen:
        olds = base.tracks if base is not None else (None, None, None)
        marks = marks_grown(base.marks if base is not None else (), raw, shared)
        first = self._advance(olds[0], raw, shared, None)
        steps: list[Step | None] = [first]
        changed = first.changed
        for j in (1, 2):
            # A view ``base`` lacks is carried on from another recent body that has it,
            # so a view that turns on is built and scanned whole once, not once per
            # base; its secrets are then all new to ``base``'s masks.
            old, at_shared = olds[j], shared
            other = base is not None and old is None
            if other:
                old, at_shared = self._with_track(raw, j)
                if old is None:
                    other, at_shared = False, shared
            prior = old.view if old is not None else None
            if base is None:
                view, at = (unescaped(raw), 0) if j == 1 else (event_texts(raw), 0)
            elif j == 1:
                view, at = unescaped_grown(prior, raw, at_shared)
            else:
                view, at = event_texts_grown(prior, raw, at_shared, marks)
            step = None if view is None else self._advance(old, view.data, at, view)
            steps.append(step)
            if step is not None:
                news = [f[1] for f in step.track.found] if other else []
                changed = min([changed, step.changed, *news])
        for old, step in zip(olds[1:], steps[1:], strict=True):
            if old is not None and step is None:  # a view the body no longer has
                changed = min([changed] + [f[1] for f in old.found])
        found = sorted((f[1], f[2], f[3]) for s in steps if s is not None for f in s.track.found)
        merged = _merged(found)
        # Old masks are kept up to a point no mask covers; from there on, mask anew.
        keep = changed if base is not None else 0
        for start, end in reversed(merged):
            if start < keep < end:
                keep = start
        tail = [m for m in merged if m[0] >= keep]
        head = memoryview(base.redacted)[:keep] if base is not None and keep else b""
        tracks = tuple(None if s is None else s.track for s in steps)
        redacted = _masked(raw, tail, keep, head) if merged else raw
        return _Seen(raw, redacted, tracks, marks)

    def _with_track(self, raw: bytes, j: int) -> tuple[Track | None, int]:
        """The ``j``-th track of the recent body sharing the most with ``raw`` among
        those that have it, and how much they share (None, 0: none shares enough)."""
        best: tuple[Track | None, int] = (None, 0)
        for seen in self._recent:
            track = seen.tracks[j]
            if track is not None and len(seen.raw) > best[1]:
                n = common_prefix(seen.raw, raw)
                if n >= max(MIN_SHARED, best[1] + 1):
                    best = (track, n)
        return best

    def _advance(self, old: Track | None, data: bytes, shared: int, view: Any) -> Step:
        step = advance(self.redactor, self._reaches, old, data, shared, view)
        self.scanned += step.scanned
        return step


def _merged(spans: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    """Sorted spans' ranges, overlaps merged as ``Redactor.scan_bytes`` merges them."""
    merged: list[list[int]] = []
    for s, e, _ in spans:
        if merged and s < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return [(s, e) for s, e in merged]


def _masked(
    raw: bytes, merged: list[tuple[int, int]], start: int, head: bytes | memoryview
) -> bytes:
    """``head`` (the redacted ``raw[:start]``) then ``raw[start:]`` with ``merged`` (all
    from ``start`` on) masked."""
    if not merged and not head:
        return raw
    parts: list[bytes | memoryview] = [head]
    pos = start
    for s, e in merged:
        parts.append(raw[pos:s])
        parts.append(mask(e - s))
        pos = e
    parts.append(raw[pos:])
    return b"".join(parts)
