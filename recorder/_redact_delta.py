"""Redacting one session's request bodies by what changed, so recording stays linear.

An agent's every request repeats the whole conversation, so scanning each
request body whole costs time that grows with the square of the turns.
``SessionRedactor`` keeps the session's last few request bodies with the
secret spans found in them; a new body that shares a prefix with one of them
is scanned only from shortly before the end of that prefix.  The result is
byte for byte what scanning the whole body gives:

- every match of a rule is at most ``reach`` bytes long counting what its
  lookarounds read (``reach`` is derived from the rules' patterns), so a
  match attempt that starts ``reach`` bytes before the end of the shared
  prefix reads only shared bytes and finds in the new body exactly what it
  found in the old one;
- the scan resumes at a point no earlier span covers, with ``reach`` bytes
  of context before it, so every rule's chain of leftmost matches goes on as
  a scan from the start would.

When a rule has no bounded length (an open-ended repetition), the body is
not content-encoded as sent, or it shares little with the recent ones, the
whole body is scanned, as ``Redactor.redact_exchange`` does.
"""

from __future__ import annotations

import re
import threading
from collections import deque
from typing import Any

import attrs

from evaltape.recorder._delta import common_prefix
from evaltape.recorder._events import Exchange
from evaltape.recorder._redact import Redactor, mask
from evaltape.recorder._redact_bodies import header_value
from evaltape.recorder._secret_rules import SecretRule

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


def rule_reach(rule: SecretRule) -> int | None:
    """The most bytes one match attempt of ``rule`` reads, or None if unbounded."""
    flags = re.IGNORECASE if rule.ignore_case else 0
    try:
        tree = re._parser.parse(rule.pattern.encode(), flags)  # type: ignore[attr-defined]
        widest = tree.getwidth()[1]
        around = _lookaround_width(tree)
    except Exception:  # a private parser: any surprise means "no bound"
        return None
    if not isinstance(widest, int) or widest >= _UNBOUNDED or around >= _UNBOUNDED:
        return None
    return int(widest) + around


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
    spans: tuple[Span, ...]
    """The secrets found in ``raw``, sorted."""
    matches: tuple[Span, ...]
    """The whole span of every rule's every match in ``raw``, secret or not."""


class SessionRedactor:
    """``redactor.redact_exchange`` for one session's exchanges, request bodies scanned by
    what changed (see the module docstring).  Thread-safe."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.reach = reach(redactor.rules)
        """Each rule's reach; None when some rule's matches have no bounded length."""
        self._recent: deque[_Seen] = deque(maxlen=KEEP)
        self._lock = threading.Lock()
        self.scanned = 0
        """Request body bytes scanned so far, context included (what the tests count)."""

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
                n = common_prefix(seen.raw, raw)
                if n > shared:
                    base, shared = seen, n
                if n >= len(seen.raw) - MIN_SHARED:  # no other can share much more
                    break
            if base is None or shared < MIN_SHARED:
                seen = self._scan(raw, (0,) * len(self.reach), (), (), b"")
            else:
                seen = self._from(base, shared, raw, self.reach)
            self._recent.append(seen)
            return seen.redacted

    def _from(self, base: _Seen, shared: int, raw: bytes, reaches: tuple[int, ...]) -> _Seen:
        resume = [max(0, shared - r) for r in reaches]
        # Move each rule back to a point none of its matches covers: there its chain
        # of leftmost matches is free, in the old body and so in the new one.
        for start, end, index in sorted(base.matches, reverse=True):
            if start < resume[index] < end:
                resume[index] = start
        matches = tuple(m for m in base.matches if m[0] < resume[m[2]])
        spans = tuple(s for s in base.spans if s[0] < resume[s[2]])
        return self._scan(raw, tuple(resume), spans, matches, base.redacted)

    def _scan(
        self,
        raw: bytes,
        resume: tuple[int, ...],
        spans: tuple[Span, ...],
        matches: tuple[Span, ...],
        old: bytes,
    ) -> _Seen:
        """``raw`` scanned by rule ``i`` from ``resume[i]`` on (its reach of bytes before
        in view), its secrets and matches before there being ``spans`` and ``matches``,
        and ``old`` the redacted body they come from."""
        every: list[Span] = []
        late: list[Span] = []
        # Rules of a short reach need only a short window: scan them apart from the
        # long ones (a PEM key's rule reaches far back).
        assert self.reach is not None
        for group in _groups(self.reach):
            start = max(0, min(resume[i] - self.reach[i] for i in group))
            part = raw[start:] if start else raw
            far = len(part)
            where = tuple(resume[i] - start if i in group else far for i in range(len(resume)))
            seen: list[Span] = []
            found = self.redactor._spans(part, where, seen)
            self.scanned += len(part)
            late += [(s + start, e + start, i) for s, e, i in found]
            every += [(s + start, e + start, i) for s, e, i in seen]
        spans = tuple(sorted(spans + tuple(late)))
        matches += tuple(every)
        # Old masks are kept up to a point no secret covers; from there on, mask anew.
        keep = min(resume)
        for start, end, _ in reversed(spans):
            if start < keep < end:
                keep = start
        tail = [x for x in spans if x[0] >= keep]
        return _Seen(raw, _masked(raw, tail, keep, old[:keep]), spans, matches)


SHORT = 8192
"""Rules reaching at most this far are scanned in one window, the others in another."""


def _groups(reaches: tuple[int, ...]) -> list[set[int]]:
    """Rule indexes split into short and long reaches (no empty group)."""
    short = {i for i, r in enumerate(reaches) if r <= SHORT}
    long = set(range(len(reaches))) - short
    return [g for g in (short, long) if g]


def _masked(raw: bytes, spans: list[Span], start: int, head: bytes) -> bytes:
    """``head`` (the redacted ``raw[:start]``) then ``raw[start:]`` with ``spans`` (all
    from ``start`` on) masked, overlaps merged as ``Redactor.scan_bytes`` merges them."""
    merged: list[list[int]] = []
    for s, e, _ in spans:
        if merged and s < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    if not merged:
        return head + raw[start:] if head else raw
    parts = [head]
    pos = start
    for s, e in merged:
        parts.append(raw[pos:s])
        parts.append(mask(e - s))
        pos = e
    parts.append(raw[pos:])
    return b"".join(parts)
