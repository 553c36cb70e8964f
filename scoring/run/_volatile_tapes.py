"""Volatile text in recorded sessions: scrub rules proposed from their first requests.

``live`` proposes rules from the attempts it just recorded and ``evaltape lint
--volatile`` from any tapes: the first model request of each live session,
grouped by case and model, goes to ``evaltape.replay.propose_scrub_rules``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from evaltape.recorder import Exchange, Mode, TapeError, TapeReader, role_of
from evaltape.recorder.redact import ScrubRule
from evaltape.replay._shared import FirstRequests, ScrubProposal, propose_scrub_rules


def first_requests(
    tapes: Iterable[Path], rules: Sequence[ScrubRule] = ()
) -> tuple[FirstRequests, ...]:
    """The first agent request body of every live session, grouped by case and model,
    with ``rules`` applied (what a replay would match).

    Tapes that cannot be read are left out (``evaltape replay`` and ``lint``
    report them); a session with no model call gives nothing.
    """
    bodies: dict[tuple[str, str], list[bytes]] = {}
    started: dict[tuple[str, str], list[float]] = {}
    for tape in tapes:
        try:
            sessions = list(TapeReader(tape, strict=False).sessions())
        except (TapeError, OSError):
            continue
        for session in sessions:
            header = session.header
            if header.mode is not Mode.LIVE:
                continue
            first = next(
                (e for e in session.events if isinstance(e, Exchange) and role_of(e) is None),
                None,
            )
            if first is None:
                continue
            key = (header.case_id, header.model)
            body = first.request.body
            for rule in rules:
                body = rule.apply(body)
            bodies.setdefault(key, []).append(body)
            started.setdefault(key, []).append(header.started_at)
    return tuple(
        FirstRequests(label=case, bodies=tuple(found), started=tuple(started[(case, model)]))
        for (case, model), found in bodies.items()
    )


def volatile_in_tapes(
    tapes: Iterable[Path], rules: Sequence[ScrubRule] = ()
) -> tuple[ScrubProposal, ...]:
    """Scrub rules for the text that differs between runs in these tapes' first requests
    (``rules``: the scrub rules already configured, applied first)."""
    return propose_scrub_rules(first_requests(tapes, rules))
