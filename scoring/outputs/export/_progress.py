"""What of each attempt's export was delivered, and how the run record remembers it.

An attempt is *exported* (``RunRecord.exported``) only once its spans and
every one of its scores were accepted.  When the spans went but a score was
refused (or the process stopped in between), the record keeps the attempt in
``RunRecord.export_partial`` with the names of the scores that did go, so
``evaltape export RUN`` sends exactly the missing ones and never the spans a
second time.
"""

from __future__ import annotations

import attrs

from ...results._records import RunRecord


@attrs.frozen(kw_only=True)
class Delivered:
    """One attempt's export as far as it got."""

    key: str
    """``attempt_key`` of the attempt."""
    spans: bool
    """Its spans were accepted."""
    scores: tuple[str, ...] = ()
    """Names of its scores that were accepted (previous sends included)."""
    complete: bool = False
    """The spans and every score were accepted."""


def merge(record: RunRecord, delivered: tuple[Delivered, ...]) -> RunRecord:
    """``record`` with ``delivered`` folded into ``exported`` and ``export_partial``."""
    exported = dict.fromkeys(record.exported)
    partial = dict(record.export_partial)
    for d in delivered:
        if d.complete:
            exported[d.key] = None
            partial.pop(d.key, None)
        elif d.spans:
            known = partial.get(d.key, ())
            partial[d.key] = tuple(dict.fromkeys((*known, *d.scores)))
    return attrs.evolve(record, exported=tuple(exported), export_partial=tuple(partial.items()))


def sent_before(record: RunRecord, key: str) -> tuple[bool, tuple[str, ...]]:
    """Whether ``key``'s spans were delivered already, and the names of its scores that were."""
    if key in record.exported:
        return True, ()
    partial = dict(record.export_partial)
    if key in partial:
        return True, partial[key]
    return False, ()
