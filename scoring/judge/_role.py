"""The judge's role tag: how the judge's calls are told apart on an attempt's tape.

The judge grades an attempt on the attempt's own tape, tagging each call
``x-evaltape-role: judge`` (``recorder.ROLE_HEADER``).  The recorder keeps
every tagged call out of the agent's turns and usage, and replay never serves
one to the agent; these helpers pick the judge's calls out of the tagged ones.
"""

from __future__ import annotations

from evaltape.recorder import Exchange, Session, role_of

JUDGE_ROLE = "judge"
"""``recorder.ROLE_HEADER`` value of the judge's calls."""


def is_judge_exchange(exchange: Exchange) -> bool:
    """True if the request is tagged ``x-evaltape-role: judge``."""
    return role_of(exchange) == JUDGE_ROLE


def judge_exchanges(session: Session) -> tuple[Exchange, ...]:
    """The session's judge calls, in order; never turns, tool calls or usage."""
    return tuple(e for e in session.tagged_exchanges if is_judge_exchange(e))
