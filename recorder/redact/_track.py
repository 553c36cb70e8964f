"""One scan of a request body (or of one of its secret views) carried on from a recent body's.

A *track* is some bytes (the raw body, its JSON escapes undone, or its event
texts joined) with what the rules and known values found in them.  When the
next body's track repeats the first ``shared`` bytes of a recent one,
``advance`` keeps what was found well before ``shared`` and scans only from
shortly before it (see ``_redact_delta.py`` for why the result equals a scan
of the whole track).
"""

from __future__ import annotations

import bisect

import attrs

from ._redactor import Redactor
from ._views import View

Span = tuple[int, int, int]
"""(start, end, rule index) of a match or a secret; known values have the index
``len(rules)``."""

Found = tuple[int, int, int, int]
"""A secret's (start in the track, raw start, raw end, rule index): a secret in a
view may give several raw ranges, one entry each."""


@attrs.frozen
class Track:
    """What was found in one track of one body."""

    data: bytes
    """The track's bytes."""
    view: View | None
    """How the bytes map to the raw body (None: they are the raw body)."""
    matches: tuple[tuple[tuple[int, int], ...], ...]
    """Per rule, the (start, end) of each of its matches in order, secret or not."""
    found: tuple[Found, ...]
    """The raw ranges of the secrets found, ordered by their start in the track."""


@attrs.frozen
class Step:
    """A new body's track, with what changed from the old one's."""

    track: Track
    """The new track."""
    changed: int
    """No raw range before this offset was added or dropped."""
    scanned: int
    """Track bytes scanned."""


def advance(
    redactor: Redactor,
    reaches: tuple[int, ...],
    old: Track | None,
    data: bytes,
    shared: int,
    view: View | None,
) -> Step:
    """``data``'s track (its view ``view``), carried on from ``old`` whose first ``shared``
    bytes it repeats; ``old`` None or ``shared`` 0 scans it whole."""
    count = len(redactor.rules)
    if old is None:
        shared = 0
    resume = [max(0, shared - r) for r in reaches]
    kept: list[tuple[tuple[int, int], ...]] = []
    for i in range(count):
        chain = old.matches[i] if old is not None else ()
        k = bisect.bisect_left(chain, resume[i], key=lambda m: m[0])
        if k and chain[k - 1][1] > resume[i]:  # resume where no match of the rule covers
            k -= 1
            resume[i] = chain[k][0]
        kept.append(chain[:k])
    start = max(0, min(resume[i] - reaches[i] for i in range(len(reaches))))
    part = data[start:] if start else data
    every: list[Span] = []
    where = tuple(resume[i] - start for i in range(count))
    spans = [(s + start, e + start, i) for s, e, i in redactor._spans(part, where, every)]
    spans += _values(redactor.values, data, resume[count], count)
    chains = [list(c) for c in kept]
    for s, e, i in every:
        chains[i].append((s + start, e + start))
    old_found = old.found if old is not None else ()
    keep = [f for f in old_found if f[0] < resume[f[3]]]
    new = _raw(spans, view)
    changed = min(resume) if view is None else len(data) + (1 << 40)
    for f in new:
        changed = min(changed, f[1])
    for f in old_found:
        if f[0] >= resume[f[3]]:  # dropped: found again or gone
            changed = min(changed, f[1])
    found = tuple(sorted(keep + new))
    track = Track(data=data, view=view, matches=tuple(tuple(c) for c in chains), found=found)
    return Step(track=track, changed=changed, scanned=len(part))


def _values(values: tuple[str, ...], data: bytes, pos: int, index: int) -> list[Span]:
    """Every occurrence of each known value in ``data`` from ``pos`` on."""
    out: list[Span] = []
    for value in values:
        raw = value.encode("utf-8", "surrogateescape")
        at = data.find(raw, pos)
        while at >= 0:
            out.append((at, at + len(raw), index))
            at = data.find(raw, at + 1)
    return out


def _raw(spans: list[Span], view: View | None) -> list[Found]:
    """The raw ranges of secrets found in a track (as ``Redactor.scan_bytes`` maps them)."""
    if view is None:
        return [(s, s, e, i) for s, e, i in spans]
    return [(s, lo, hi, i) for s, e, i in spans for lo, hi in view.to_raw(s, e)]
