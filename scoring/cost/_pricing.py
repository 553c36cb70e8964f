"""What model calls cost: a dated price table, a user override file, and one call's cost.

Prices are USD per million tokens for four buckets: uncached input, output,
cache reads and cache writes.  ``input_tokens`` already counts cached input
(see ``recorder.Usage``), so a call's uncached input is ``input - cache_read
- cache_write`` and each bucket is priced once: a cache read is a discount on
input, never a surcharge on top of it.  Reasoning tokens are part of
``output_tokens`` and priced as output.

Three rules keep the numbers honest:

* a cost the provider reports in the response (``Usage.reported_cost``, e.g.
  OpenRouter's ``usage.cost``) wins over the table;
* a model the table does not know prices as unknown (None, shown ``n/a``),
  never as $0.00, which would read as free;
* the figure is an estimate for comparing runs, not a bill: every display
  carries the table's vintage, ``PRICES_AS_OF``.

The override file (``~/.config/evaltape/pricing.json`` by default) is a JSON
object ``{"model-id": {"input": 0.3, "output": 1.2, "cache_read": 0.03}}``;
its entries replace built-in ones of the same (normalised) id.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path

import attrs

from evaltape.recorder import Usage

from .._config import display_path
from .._errors import ScoringError

PRICES_AS_OF = "2026-11"
"""Month the built-in prices were checked against the providers' pricing pages."""

PER_MILLION = 1_000_000.0

PRICING_ENV = "EVALTAPE_PRICING"
"""Environment variable naming a pricing override file."""

DEFAULT_PRICING = Path(".config", "evaltape", "pricing.json")
"""The override file read when present, relative to the home folder."""

FIELDS = ("input", "output", "cache_read", "cache_write")
"""The keys an override entry may hold; ``input`` and ``output`` are required."""


class PricingError(ScoringError):
    """The pricing override file could not be read or holds a bad entry."""


def _rate(value: float) -> float:
    return float(value)


@attrs.frozen(kw_only=True)
class Price:
    """One model's list prices, USD per million tokens.

    A provider with no separate cache price charges cached tokens as ordinary
    input, so ``cache_read`` and ``cache_write`` default to ``input`` when not
    given: no discount is assumed that the provider did not publish.
    """

    input: float = attrs.field(converter=_rate)
    """Uncached input (prompt) tokens."""
    output: float = attrs.field(converter=_rate)
    """Output tokens, reasoning tokens included."""
    cache_read: float = attrs.field(converter=_rate)
    """Input tokens served from the prompt cache (a cache hit)."""
    cache_write: float = attrs.field(converter=_rate)
    """Input tokens written to the prompt cache (for Anthropic: the 5-minute rate)."""

    @cache_read.default
    def _cache_read_default(self) -> float:
        return self.input

    @cache_write.default
    def _cache_write_default(self) -> float:
        return self.input


def _anthropic(input: float, output: float) -> Price:
    """Anthropic's published ratios: cache hits 0.1x input, 5-minute cache writes 1.25x."""
    return Price(input=input, output=output, cache_read=input / 10, cache_write=input * 1.25)


# Checked against developers.openai.com/api/docs/pricing and
# platform.claude.com/docs/en/about-claude/pricing (standard tier, no batch,
# prompts under each provider's long-context threshold).  A model whose price
# could not be checked is left out: it prices as unknown until an override adds it.
_BUILT_IN: dict[str, Price] = {
    "gpt-4o": Price(input=2.50, output=10.00, cache_read=1.25),
    "gpt-4o-mini": Price(input=0.15, output=0.60, cache_read=0.075),
    "gpt-4.1": Price(input=2.00, output=8.00, cache_read=0.50),
    "gpt-4.1-mini": Price(input=0.40, output=1.60, cache_read=0.10),
    "gpt-5": Price(input=1.25, output=10.00, cache_read=0.125),
    "gpt-5-mini": Price(input=0.25, output=2.00, cache_read=0.025),
    "gpt-5.1": Price(input=1.25, output=10.00, cache_read=0.125),
    "gpt-5.2": Price(input=1.75, output=14.00, cache_read=0.175),
    "gpt-5.4": Price(input=2.50, output=15.00, cache_read=0.25),
    "gpt-5.4-mini": Price(input=0.75, output=4.50, cache_read=0.075),
    "claude-opus-4-5": _anthropic(5.00, 25.00),
    "claude-opus-4-6": _anthropic(5.00, 25.00),
    "claude-opus-4-1": _anthropic(15.00, 75.00),
    "claude-opus-4": _anthropic(15.00, 75.00),
    "claude-sonnet-4-6": _anthropic(3.00, 15.00),
    "claude-sonnet-4-5": _anthropic(3.00, 15.00),
    "claude-sonnet-4": _anthropic(3.00, 15.00),
    "claude-haiku-4-5": _anthropic(1.00, 5.00),
    "claude-3-5-haiku": Price(input=0.80, output=4.00, cache_read=0.08, cache_write=1.00),
}

_DATE_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8})$")
_ALIAS_SUFFIX = re.compile(r"-latest$")


def normalise_model(model: str) -> str:
    """The id prices are keyed by: lower case, no provider prefix, no date snapshot.

    ``openai/gpt-4o-2024-08-06`` and ``GPT-4o`` are both ``gpt-4o``;
    ``anthropic/claude-sonnet-4.5`` and ``claude-sonnet-4-5-20250929`` are both
    ``claude-sonnet-4-5`` (Anthropic's dotted and dashed spellings meet).
    """
    name = model.strip().lower()
    name = name.rsplit("/", 1)[-1]
    name = _DATE_SUFFIX.sub("", name)
    name = _ALIAS_SUFFIX.sub("", name)
    if name.startswith("claude-"):
        name = name.replace(".", "-")
    return name


@attrs.frozen(kw_only=True)
class Prices:
    """A price table: built-in entries, possibly overridden by the user's file."""

    as_of: str = PRICES_AS_OF
    """The built-in table's vintage, shown on every display of a cost."""
    entries: Mapping[str, Price] = attrs.field(factory=dict)
    """Prices by normalised model id."""
    override: str = ""
    """The override file that was merged in, as given; "" for none."""

    def lookup(self, model: str) -> Price | None:
        """The price of ``model`` (provider prefix and date snapshot ignored), or None."""
        if not model:
            return None
        return self.entries.get(normalise_model(model))


def built_in_prices() -> Prices:
    """The table evaltape ships, dated ``PRICES_AS_OF``."""
    return Prices(entries={normalise_model(k): v for k, v in _BUILT_IN.items()})


def _entry(name: str, raw: object, where: str) -> Price:
    if not isinstance(raw, dict):
        raise PricingError(f'{where}: "{name}": expected an object of prices per million tokens')
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        allowed = ", ".join(FIELDS)
        raise PricingError(f'{where}: "{name}": unknown field "{unknown[0]}" (allowed: {allowed})')
    values: dict[str, float] = {}
    for field in FIELDS:
        if field not in raw:
            if field in ("input", "output"):
                raise PricingError(f'{where}: "{name}": field "{field}" is missing')
            continue
        value = raw[field]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            raise PricingError(f'{where}: "{name}": field "{field}": expected a number >= 0')
        values[field] = float(value)
    return Price(**values)


def parse_prices(text: str, where: str, base: Prices) -> Prices:
    """``base`` with the entries of an override file's text merged over it."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PricingError(f"{where}:{exc.lineno}: not valid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise PricingError(f"{where}: expected a JSON object of model ids to prices")
    entries = dict(base.entries)
    for name, raw in data.items():
        if not name.strip():
            raise PricingError(f"{where}: an empty model id")
        entries[normalise_model(name)] = _entry(name, raw, where)
    return attrs.evolve(base, entries=entries, override=where)


def load_prices(override: Path | None = None, *, required: bool = False) -> Prices:
    """The built-in table, with ``override`` (a pricing JSON file) merged over it.

    A missing override file is not an error unless ``required`` (the default
    path need not exist; a file the user named must).  An unreadable or
    malformed one raises ``PricingError`` naming the file and the entry.
    """
    base = built_in_prices()
    if override is None:
        return base
    shown = display_path(override)
    try:
        text = override.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        if required:
            raise PricingError(f"{shown}: no such pricing file") from exc
        return base
    except (OSError, UnicodeDecodeError) as exc:
        raise PricingError(f"{shown}: cannot read: {exc}") from exc
    return parse_prices(text, shown, base)


def _per_million(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def parse_price_flag(text: str) -> tuple[str, Price]:
    """``MODEL=IN/OUT`` (USD per million input / output tokens; ``0/0`` is free) as a
    model id and its price; cache reads and writes cost ``IN``.  Raises ``PricingError``."""
    model, sep, rates = text.rpartition("=")
    given_in, slash, given_out = rates.partition("/")
    rate_in, rate_out = _per_million(given_in), _per_million(given_out)
    if not sep or not model.strip() or not slash or rate_in is None or rate_out is None:
        raise PricingError(
            f'--price "{text}": expected MODEL=IN/OUT, USD per million input and output '
            "tokens as numbers >= 0 (e.g. --price my-model=0/0 for a free local model)"
        )
    return model.strip(), Price(input=rate_in, output=rate_out)


def with_price_flags(prices: Prices, given: tuple[str, ...]) -> Prices:
    """``prices`` with each ``--price MODEL=IN/OUT`` merged over it (the last one of a
    model wins)."""
    if not given:
        return prices
    entries = dict(prices.entries)
    for text in given:
        model, price = parse_price_flag(text)
        entries[normalise_model(model)] = price
    shown = ", ".join(filter(None, (prices.override, "--price")))
    return attrs.evolve(prices, entries=entries, override=shown)


def resolve_prices(
    configured: Path | None, environ: Mapping[str, str], home: Path | None = None
) -> Prices:
    """The prices a command uses: the ``pricing`` setting, else ``$EVALTAPE_PRICING``,
    else ``~/.config/evaltape/pricing.json`` if it exists, merged over the built-in table.

    A file named by the setting or the variable must exist; the default may not.
    """
    if configured is not None:
        return load_prices(configured, required=True)
    named = environ.get(PRICING_ENV, "").strip()
    if named:
        return load_prices(Path(named).expanduser(), required=True)
    return load_prices((home or Path.home()) / DEFAULT_PRICING)


def uncached_tokens(usage: Usage) -> int:
    """Input tokens billed at the full input price: neither read from nor written to a cache."""
    return max(0, usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens)


def table_cost(price: Price, usage: Usage) -> float:
    """USD of ``usage`` at ``price``, each input token in exactly one bucket."""
    return (
        uncached_tokens(usage) * price.input
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
        + usage.output_tokens * price.output
    ) / PER_MILLION


def call_cost(prices: Prices, model: str, usage: Usage) -> float | None:
    """USD one call cost: the provider's own figure if it reported one, else the table's.

    None when the cost cannot be known: the model has no price, or the
    response reported no usage to price.
    """
    if usage.reported_cost is not None:
        return usage.reported_cost
    if not usage.reported:
        return None
    price = prices.lookup(model)
    if price is None:
        return None
    return table_cost(price, usage)


def format_cost(cost: float | None) -> str:
    """``$0.0061`` (four decimals, more for tiny non-zero sums), or ``n/a``; never a fake $0.00."""
    if cost is None:
        return "n/a"
    if cost == 0 or cost >= 0.0001:
        return f"${cost:,.4f}"
    digits = 1 - math.floor(math.log10(cost))  # two significant figures, never "$0.0000"
    return f"${cost:.{digits}f}"
