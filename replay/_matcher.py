"""Handing out recorded exchanges to the requests of a replay.

``Matcher`` holds the recorded requests of one session and hands them out:
identical requests in recorded order (one FIFO per request key), and for a
request that matches nothing, a ``Diverged`` naming the first differing JSON
path against the nearest recorded request.  A tape lists exchanges in the
order they finished; identical requests are answered in the order they were
sent (their recorded start times), so concurrent identical calls get back
what each got live.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from evaltape.recorder import SCRIPT_MATCH_ANY, SCRIPT_MATCH_HEADER, Exchange

from ._errors import Diverged, Exhausted, NoRecording, UnusedRecordings
from ._match import (
    Difference,
    Divergence,
    Normalized,
    exact_key,
    first_difference,
    normalize,
    normalize_exchange,
    path_step,
)


def _leaves(value: Any, path: str = "") -> Iterable[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, path_step(path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, path_step(path, i))
    elif isinstance(value, bytes):
        yield f"{path}=#{hashlib.sha256(value).hexdigest()}"
    else:
        yield f"{path}={json.dumps(value)}"


def similarity(a: Normalized, b: Normalized) -> float:
    """Share of (path, value) leaves two requests have in common, 0..1."""
    la = {*_leaves(a.body), *(f"h:{k}={v}" for k, v in a.headers), f"m:{a.endpoint}"}
    lb = {*_leaves(b.body), *(f"h:{k}={v}" for k, v in b.headers), f"m:{b.endpoint}"}
    return len(la & lb) / max(1, len(la | lb))


@attrs.frozen(kw_only=True, slots=False)
class Recorded:
    """One recorded exchange and its place in the session."""

    ordinal: int
    """1-based position among the session's exchanges."""
    exchange: Exchange
    """The exchange as recorded."""
    ignore_headers: frozenset[str] = attrs.field(default=frozenset(), eq=False, repr=False)
    """Header names left out of the comparison."""

    @functools.cached_property
    def normalized(self) -> Normalized:
        """Its request, normalized (on first use: a replay whose every request is
        byte-identical to a recorded one never needs it)."""
        return normalize_exchange(self.exchange, self.ignore_headers)


def _scripted(exchange: Exchange) -> bool:
    """True for an exchange from a hand-written script (it matches any request)."""
    return (SCRIPT_MATCH_HEADER, SCRIPT_MATCH_ANY) in exchange.request.headers


def _sent_order(rec: Recorded) -> tuple[float, int]:
    """When the request was sent; a tape lists exchanges in the order they finished."""
    return (rec.exchange.at, rec.ordinal)


def _any_key(endpoint: str) -> str:
    return f"any {endpoint}"


class Matcher:
    """Serves the recorded exchanges of one session to incoming requests.

    Thread-safe: many concurrent requests may call ``take``.  ``strict``
    (default) raises on any miss; otherwise a diverged or exhausted request
    gets the nearest recorded response and the miss is kept in
    ``divergences``.  ``keep_going`` (with ``strict``) serves a diverged or
    exhausted request the nearest recording *not served yet* and keeps the
    miss in ``divergences``, so a harness runs on and every later request is
    seen; with no unserved recording of its endpoint left the miss is raised,
    so a harness never gets more answers than were recorded.  Recorded
    requests are normalized only once a request has no byte-identical
    recording left (until then they are served by exact digest, in recorded
    order); ``rewrite`` is applied to each recorded exchange then (scrub
    rules added after recording apply to the recorded side too).
    """

    def __init__(
        self,
        exchanges: Sequence[Exchange],
        *,
        session_id: str = "",
        strict: bool = True,
        keep_going: bool = False,
        ignore_headers: Iterable[str] = (),
        rewrite: Callable[[Exchange], Exchange] | None = None,
    ) -> None:
        self.session_id = session_id or "(unnamed)"
        self.strict = strict
        self.keep_going = keep_going
        self.rewrite = rewrite
        self.ignore_headers = frozenset(h.lower() for h in ignore_headers)
        self.recorded = tuple(
            Recorded(ordinal=i, exchange=e, ignore_headers=self.ignore_headers)
            for i, e in enumerate(exchanges, 1)
        )
        self._queues: dict[str, deque[Recorded]] = {}
        self._exact: dict[str, str] = {}
        """Exact key of each recorded request -> its normalized key (see ``take_exact``)."""
        self._lazy: dict[tuple[str, bytes], deque[Recorded]] | None = {}
        """Until a request misses: the recordings by their compared head's digest and
        their body bytes (a dict compares these in full), none normalized yet."""
        self._used: set[int] = set()
        self._count = 0
        self._lock = threading.RLock()
        self.divergences: list[Divergence] = []
        for rec in sorted(self.recorded, key=_sent_order):  # identical requests: send order
            if _scripted(rec.exchange):  # matched by endpoint: normalize from the start
                self._normalize()
                break
            r = rec.exchange.request
            head = exact_key(r.method, r.url, r.headers, b"", ignore_headers=self.ignore_headers)
            self._lazy.setdefault((head, r.body), deque()).append(rec)

    def _normalize(self) -> None:
        """Index the recordings not served yet by their normalized keys, once."""
        with self._lock:
            if self._lazy is None:
                return
            self._lazy = None
            if self.rewrite is not None:
                new, ignored = self.rewrite, self.ignore_headers
                self.recorded = tuple(
                    Recorded(ordinal=r.ordinal, exchange=new(r.exchange), ignore_headers=ignored)
                    for r in self.recorded
                )
            for rec in sorted(self.recorded, key=_sent_order):
                if _scripted(rec.exchange):
                    # A scripted reply answers the next request to its endpoint, whatever it says.
                    key = _any_key(rec.normalized.endpoint)
                    queue = self._queues.setdefault(key, deque())
                else:
                    queue = self._queues.setdefault(rec.normalized.key, deque())
                    r, ignored = rec.exchange.request, self.ignore_headers
                    exact = exact_key(r.method, r.url, r.headers, r.body, ignore_headers=ignored)
                    self._exact[exact] = rec.normalized.key
                if rec.ordinal not in self._used:
                    queue.append(rec)

    @property
    def tainted(self) -> bool:
        """True once anything was served that did not match exactly."""
        return bool(self.divergences)

    def take_exact(
        self, method: str, url: str, headers: Iterable[tuple[str, str]], body: bytes
    ) -> Recorded | None:
        """``take`` for a request byte-identical to a recorded one, else None.

        The fast path of a replay: no JSON is parsed.  A request with no
        byte-identical recording is not counted; pass it to ``take``.
        """
        with self._lock:
            if self._lazy is not None:  # byte-identical recordings, in recorded order
                head = exact_key(method, url, headers, b"", ignore_headers=self.ignore_headers)
                queue = self._lazy.get((head, bytes(body)))
            else:
                key = exact_key(method, url, headers, body, ignore_headers=self.ignore_headers)
                queue = self._queues.get(self._exact.get(key, ""))
            if not queue:
                return None
            self._count += 1
            rec = queue.popleft()
            self._used.add(rec.ordinal)
            return rec

    def take(
        self, method: str, url: str, headers: Iterable[tuple[str, str]], body: bytes
    ) -> Recorded:
        """The recorded exchange that answers this request (see class docs)."""
        rec = self.take_exact(method, url, headers, body)
        if rec is not None:
            return rec
        self._normalize()
        sent = normalize(method, url, headers, body, ignore_headers=self.ignore_headers)
        with self._lock:
            self._count += 1
            ordinal = self._count
            queue = self._queues.get(sent.key)
            if not queue:
                queue = self._queues.get(_any_key(sent.endpoint), queue)
            if queue:
                rec = queue.popleft()
                self._used.add(rec.ordinal)
                return rec
            try:
                self._miss(sent, ordinal, queue is not None)
            except (Diverged, Exhausted) as exc:
                if self.keep_going:
                    unserved = self._nearest_unserved(sent)
                    if unserved is None:
                        raise
                    rec = unserved
                elif self.strict:
                    raise
                else:
                    rec = self._nearest(sent, prefer_unused=True)
                if rec.ordinal not in self._used:
                    self._used.add(rec.ordinal)
                    for waiting in self._queues.values():
                        if rec in waiting:
                            waiting.remove(rec)
                self.divergences.append(
                    Divergence(ordinal=ordinal, served=rec.ordinal, message=str(exc), error=exc)
                )
                return rec
        raise AssertionError("unreachable")  # pragma: no cover

    def _nearest(self, sent: Normalized, *, prefer_unused: bool) -> Recorded:
        def score(rec: Recorded) -> tuple[bool, bool, float, int]:
            unused = rec.ordinal not in self._used
            same = rec.normalized.endpoint == sent.endpoint
            return (same, unused and prefer_unused, similarity(sent, rec.normalized), -rec.ordinal)

        return max(self.recorded, key=score)

    def _nearest_unserved(self, sent: Normalized) -> Recorded | None:
        """The most similar recording of the request's endpoint not served yet, if any."""
        left = [
            r
            for r in self.recorded
            if r.ordinal not in self._used and r.normalized.endpoint == sent.endpoint
        ]
        if not left:
            return None
        return max(left, key=lambda r: (similarity(sent, r.normalized), -r.ordinal))

    def _miss(self, sent: Normalized, ordinal: int, exhausted: bool) -> None:
        where = f"session {self.session_id}: request #{ordinal} of this replay ({sent.endpoint})"
        if not self.recorded:
            raise NoRecording(
                f"{where}: the session recorded no HTTP exchanges; record it first",
                session_id=self.session_id,
                ordinal=ordinal,
            )
        if exhausted:
            same = [
                r.ordinal
                for r in self.recorded
                if r.normalized.key == sent.key
                or (_scripted(r.exchange) and r.normalized.endpoint == sent.endpoint)
            ]
            raise Exhausted(
                f"{where} matches recorded request #{same[0]}, but all {len(same)} recorded "
                f"response(s) to it were already served (identical requests are served in "
                "recorded order; the harness now sends this request more often)",
                session_id=self.session_id,
                ordinal=ordinal,
                recorded=same[0],
            )
        if not any(r.normalized.endpoint == sent.endpoint for r in self.recorded):
            endpoints = sorted({r.normalized.endpoint for r in self.recorded})
            raise NoRecording(
                f"{where}: nothing was recorded for this endpoint; the session recorded "
                f"{', '.join(endpoints)}",
                session_id=self.session_id,
                ordinal=ordinal,
            )
        near = self._nearest(sent, prefer_unused=True)
        diff = first_difference(sent, near.normalized) or Difference(
            path="<request>", sent="?", recorded="?"
        )
        raise Diverged(
            f"{where} diverged from the tape at {diff.path}: sent {diff.sent}, recorded "
            f"{diff.recorded} (nearest recorded request: #{near.ordinal})",
            session_id=self.session_id,
            ordinal=ordinal,
            path=diff.path,
            sent=diff.sent,
            recorded=diff.recorded,
            nearest=near.ordinal,
        )

    def unused(self) -> tuple[Recorded, ...]:
        """Recorded exchanges not served yet, in recorded order."""
        with self._lock:
            return tuple(r for r in self.recorded if r.ordinal not in self._used)

    def finish(self) -> None:
        """Raise ``UnusedRecordings`` if recorded calls were never requested.

        In lenient mode the leftovers are added to ``divergences`` instead.
        """
        left = self.unused()
        if not left:
            return
        listed = ", ".join(f"#{r.ordinal} {r.normalized.endpoint}" for r in left)
        error = UnusedRecordings(
            f"session {self.session_id}: {len(left)} recorded call(s) were never requested: "
            f"{listed} (the harness now makes fewer calls than it did when recorded)",
            session_id=self.session_id,
            unused=tuple(r.ordinal for r in left),
        )
        if self.strict or self.keep_going:
            raise error
        with self._lock:
            self.divergences.append(Divergence(ordinal=0, served=0, message=str(error)))
