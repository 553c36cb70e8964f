"""Cost of sessions: token buckets and their USD, per call, summed per attempt, case and run.

A ``CostBreakdown`` holds the tokens of some model calls in six buckets
(prompt, completion, cache read, cache write, uncached input, reasoning) and
what they cost.  Each call is priced on its own with ``call_cost``: the
provider's reported figure when it gave one, else the price table at the
model the call asked for.  One call that cannot be priced makes the total
unknown (None, shown ``n/a``) and names why; a partial sum is never shown
as if it were the whole.

The USD of each bucket is known only when every call was priced from the
table: a provider-reported cost comes as one number with no split.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from evaltape.recorder import ModelCall, Session, SessionStarted, Turn, Usage, decode_call

from ..judge._judgement import judge_exchanges
from ..stats._stats import wilson
from ._pricing import Prices, format_cost, table_cost, uncached_tokens


def _add(a: float | None, b: float | None) -> float | None:
    return a + b if a is not None and b is not None else None


def _merge(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*a, *b)))


@attrs.frozen(kw_only=True)
class CostBreakdown:
    """Tokens of some model calls by bucket, and their USD (None when unknown).

    ``CostBreakdown()`` is the cost of no calls: zero tokens, $0.  Breakdowns
    add (``a + b``, ``sum(parts, CostBreakdown())``) to give per-case and
    per-run totals.
    """

    usage: Usage = attrs.field(factory=Usage)
    """Token counts summed over the calls (``input_tokens`` includes cached input)."""
    calls: int = 0
    """How many model calls were priced."""
    cost: float | None = 0.0
    """USD of all the calls; None when any one could not be priced."""
    uncached_cost: float | None = 0.0
    """USD of input billed at the full input price; None unless every call was table-priced."""
    cache_read_cost: float | None = 0.0
    """USD of input tokens read from the prompt cache; None likewise."""
    cache_write_cost: float | None = 0.0
    """USD of input tokens written to the prompt cache; None likewise."""
    completion_cost: float | None = 0.0
    """USD of output tokens (reasoning included); None likewise."""
    reasoning_cost: float | None = 0.0
    """The part of ``completion_cost`` spent on reasoning tokens; None likewise."""
    provider_reported: int = 0
    """Calls whose cost is the provider's own figure rather than the table's."""
    unpriced: tuple[str, ...] = ()
    """Models with no price in the table (their calls made ``cost`` unknown)."""
    unreported: int = 0
    """Calls whose response reported no usage (their cost is unknown)."""

    @property
    def prompt_cost(self) -> float | None:
        """USD of all input tokens: uncached, cache reads and cache writes."""
        return _add(_add(self.uncached_cost, self.cache_read_cost), self.cache_write_cost)

    @property
    def uncached_tokens(self) -> int:
        """Input tokens neither read from nor written to a cache."""
        return uncached_tokens(self.usage)

    @property
    def why_unknown(self) -> str:
        """Why ``cost`` is None ("no price for m1", "2 calls reported no usage"); "" if known."""
        reasons = []
        if self.unpriced:
            reasons.append("no price for " + ", ".join(self.unpriced))
        if self.unreported:
            noun = "call" if self.unreported == 1 else "calls"
            reasons.append(f"{self.unreported} {noun} reported no usage")
        return "; ".join(reasons)

    def __add__(self, other: CostBreakdown) -> CostBreakdown:
        if not isinstance(other, CostBreakdown):
            return NotImplemented
        return CostBreakdown(
            usage=self.usage + other.usage,
            calls=self.calls + other.calls,
            cost=_add(self.cost, other.cost),
            uncached_cost=_add(self.uncached_cost, other.uncached_cost),
            cache_read_cost=_add(self.cache_read_cost, other.cache_read_cost),
            cache_write_cost=_add(self.cache_write_cost, other.cache_write_cost),
            completion_cost=_add(self.completion_cost, other.completion_cost),
            reasoning_cost=_add(self.reasoning_cost, other.reasoning_cost),
            provider_reported=self.provider_reported + other.provider_reported,
            unpriced=_merge(self.unpriced, other.unpriced),
            unreported=self.unreported + other.unreported,
        )


def call_breakdown(prices: Prices, model: str, usage: Usage) -> CostBreakdown:
    """The breakdown of one call that asked for ``model`` and reported ``usage``."""
    if usage.reported_cost is not None:
        return CostBreakdown(
            usage=usage,
            calls=1,
            cost=usage.reported_cost,
            uncached_cost=None,
            cache_read_cost=None,
            cache_write_cost=None,
            completion_cost=None,
            reasoning_cost=None,
            provider_reported=1,
        )
    price = prices.lookup(model) if usage.reported else None
    if price is None:
        return CostBreakdown(
            usage=usage,
            calls=1,
            cost=None,
            uncached_cost=None,
            cache_read_cost=None,
            cache_write_cost=None,
            completion_cost=None,
            reasoning_cost=None,
            unpriced=(model or "an unnamed model",) if usage.reported else (),
            unreported=0 if usage.reported else 1,
        )
    return CostBreakdown(
        usage=usage,
        calls=1,
        cost=table_cost(price, usage),
        uncached_cost=uncached_tokens(usage) * price.input / 1e6,
        cache_read_cost=usage.cache_read_tokens * price.cache_read / 1e6,
        cache_write_cost=usage.cache_write_tokens * price.cache_write / 1e6,
        completion_cost=usage.output_tokens * price.output / 1e6,
        reasoning_cost=usage.reasoning_tokens * price.output / 1e6,
    )


def total(parts: Iterable[CostBreakdown]) -> CostBreakdown:
    """The sum of ``parts`` (the cost of no calls when there are none)."""
    result = CostBreakdown()
    for part in parts:
        result += part
    return result


REPLAYED_TURNS = "replayed_turns"
"""The header metadata key of a session re-recorded from a turn (``rerecord --from-turn``):
how many of its first turns were served from the recording, not sent."""
REPLAYED_FROM = "replayed_from"
"""The header metadata key naming the recorded session those turns came from."""


def replayed_turns(header: SessionStarted) -> int:
    """How many leading turns of the session were served from a recording (0: none)."""
    value = dict(header.metadata).get(REPLAYED_TURNS, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def cost_of_session(prices: Prices, model: str, session: Session) -> CostBreakdown:
    """The agent's model calls in ``session``, each priced at the model it asked for.

    ``model`` (the model under test) prices a call whose request named none.
    A call the provider refused (HTTP 4xx/5xx) with no usage costs nothing;
    one whose response never came, or came without usage, costs unknown.
    Turns a re-record served from the recording (``replayed_turns``) were not
    sent and cost nothing.  The judge's calls are not included: see
    ``judge_cost_of_session``.
    """
    return cost_of_turns(prices, model, session.turns[replayed_turns(session.header) :])


def cost_of_turns(prices: Prices, model: str, turns: Iterable[Turn]) -> CostBreakdown:
    """The model calls of ``turns``, priced as ``cost_of_session`` prices them."""
    return total(_priced(prices, turn.call.model_requested or model, turn.call) for turn in turns)


def _priced(prices: Prices, model: str, call: ModelCall) -> CostBreakdown:
    """A refused call (HTTP 4xx/5xx) that reported no usage is not billed: $0, not unknown."""
    if call.status is not None and call.status >= 400 and not call.usage.reported:
        return CostBreakdown(calls=1)
    return call_breakdown(prices, model, call.usage)


def judge_cost_of_session(prices: Prices, session: Session) -> CostBreakdown:
    """The judge's calls in ``session``: grading cost, kept apart from the agent's."""
    parts = []
    for exchange in judge_exchanges(session):
        call = decode_call(exchange)
        if call is None:
            parts.append(call_breakdown(prices, "", Usage.unknown()))
        else:
            parts.append(_priced(prices, call.model_requested, call))
    return total(parts)


def money(cost: CostBreakdown, word: str = "estimated") -> str:
    """``$0.0061 estimated``, ``$0.0061 reported`` (every call's cost came from the
    provider), or ``n/a (no price for MODEL)``; never $0.00 for an unknown cost."""
    if cost.cost is None:
        return f"n/a ({cost.why_unknown})" if cost.why_unknown else "n/a"
    if cost.calls and cost.provider_reported == cost.calls:
        word = "reported"
    return f"{format_cost(cost.cost)} {word}"


def cost_line(cost: CostBreakdown, prices: Prices, word: str = "estimated") -> str:
    """``$0.0061 estimated · 20,540 tokens · prices as of 2026-11``: the table's vintage
    travels with every figure, because the figure is for comparison, not billing."""
    return f"{money(cost, word)} · {cost.usage.total_tokens:,} tokens · prices as of {prices.as_of}"


# -- summaries ---------------------------------------------------------------


@attrs.frozen(kw_only=True)
class CostRow:
    """One line of a cost summary: a model, or a case, with its attempts' totals."""

    label: str
    """The model or case id."""
    passed: int
    """Attempts that passed."""
    total: int
    """Attempts judged."""
    duration: float
    """Seconds the attempts took, summed."""
    cost: CostBreakdown
    """The attempts' calls, summed."""


def _seconds(seconds: float) -> str:
    return f"{seconds * 1000:.0f}ms" if seconds < 1 else f"{seconds:.1f}s"


def case_lines(rows: Iterable[CostRow], word: str = "estimated") -> list[str]:
    """``  PASS case (2/2 passed, 1.2s, 20,540 tokens, $0.0061 estimated)`` per case.

    With more than one attempt the pass count carries its Wilson 95% interval.

    A case whose attempts disagree is marked ``SPLIT``: an instability signal,
    not a partial pass.
    """
    lines = []
    for row in rows:
        if row.total and row.passed == row.total:
            mark = "PASS"
        elif 0 < row.passed < row.total:
            mark = "SPLIT"
        else:
            mark = "FAIL"
        interval = ""
        if row.total > 1:
            low, high = wilson(row.passed, row.total)
            interval = f" (Wilson 95% {low * 100:.0f}%-{high * 100:.0f}%)"
        lines.append(
            f"  {mark} {row.label} ({row.passed}/{row.total} passed{interval}, "
            f"{_seconds(row.duration)}, "
            f"{row.cost.usage.total_tokens:,} tokens, {money(row.cost, word)})"
        )
    return lines


def usage_block(cost: CostBreakdown, prices: Prices, word: str = "estimated") -> list[str]:
    """The ``Usage:`` block: every token bucket, then the total cost with the table's vintage."""
    u = cost.usage

    def bucket(name: str, tokens: int, usd: float | None) -> str:
        return f"    {name}: {tokens:,}" + (f" ({format_cost(usd)})" if usd is not None else "")

    lines = [
        "Usage:",
        f"  Total tokens: {u.total_tokens:,}",
        bucket("Prompt", u.input_tokens, cost.prompt_cost),
        bucket("Completion", u.output_tokens, cost.completion_cost),
        bucket("Cache read", u.cache_read_tokens, cost.cache_read_cost),
        bucket("Cache write", u.cache_write_tokens, cost.cache_write_cost),
        bucket("Uncached", cost.uncached_tokens, cost.uncached_cost),
        bucket("Reasoning", u.reasoning_tokens, cost.reasoning_cost),
        f"  Total cost: {money(cost, word)} · prices as of {prices.as_of}",
    ]
    if not u.reported:
        lines.insert(2, "    (some calls reported no usage: counts are a lower bound)")
    return lines


def compare_table(rows: Iterable[CostRow], prices: Prices, word: str = "estimated") -> list[str]:
    """One row per model: passed/total, duration, tokens, cost; then the table's vintage."""
    cells = [("model", "passed", "duration", "tokens", "cost")]
    for row in rows:
        cells.append(
            (
                row.label,
                f"{row.passed}/{row.total}",
                _seconds(row.duration),
                f"{row.cost.usage.total_tokens:,}",
                money(row.cost, word),
            )
        )
    widths = [max(len(c[i]) for c in cells) for i in range(4)]
    lines = []
    for c in cells:
        left = f"{c[0]:<{widths[0]}}  {c[1]:>{widths[1]}}  {c[2]:>{widths[2]}}"
        lines.append(f"  {left}  {c[3]:>{widths[3]}}  {c[4]}".rstrip())
    lines.append(f"  prices as of {prices.as_of} (an estimate for comparison, not a bill)")
    return lines
