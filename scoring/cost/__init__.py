"""What model calls cost: the price table and token buckets.

``evaltape.scoring`` re-exports ``cost_of_session`` and ``CostBreakdown``; the
price table and the judge's share are public here.
"""

from ._costs import CostBreakdown, cost_of_session, judge_cost_of_session
from ._pricing import (
    Price,
    Prices,
    PricingError,
    built_in_prices,
    call_cost,
    load_prices,
)

__all__ = [
    "CostBreakdown",
    "Price",
    "Prices",
    "PricingError",
    "built_in_prices",
    "call_cost",
    "cost_of_session",
    "judge_cost_of_session",
    "load_prices",
]
