"""Pricing: the dated table, the override file, provider-reported cost and cost buckets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from evaltape.recorder import (
    ROLE_HEADER,
    Chunk,
    Exchange,
    Request,
    Response,
    SessionEnded,
    SessionStarted,
    Status,
    TransportError,
    Usage,
    decode_call,
    fold,
)
from evaltape.scoring.cost._costs import (
    CostBreakdown,
    CostRow,
    case_lines,
    cost_line,
    cost_of_session,
    judge_cost_of_session,
    total,
    usage_block,
)
from evaltape.scoring.cost._pricing import (
    PRICES_AS_OF,
    Price,
    PricingError,
    call_cost,
    format_cost,
    load_prices,
    resolve_prices,
)
from evaltape.scoring.judge._judgement import JUDGE_ROLE

JSON = (("content-type", "application/json"),)


def _chat(model: str, usage: dict[str, Any], *, judge: bool = False) -> Exchange:
    request = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    reply = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}}],
        "usage": usage,
    }
    headers = (*JSON, (ROLE_HEADER, JUDGE_ROLE)) if judge else JSON
    return Exchange(
        at=1.0,
        duration=0.1,
        request=Request(
            method="POST",
            url="http://127.0.0.1:1/v1/chat/completions",
            headers=headers,
            body=json.dumps(request).encode(),
        ),
        response=Response(
            status=200, headers=JSON, chunks=(Chunk(at=0.0, data=json.dumps(reply).encode()),)
        ),
    )


def _session(*exchanges: Exchange) -> Any:
    header = SessionStarted(session_id="s1", started_at=0.0, case_id="c", model="m")
    return fold([header, *exchanges, SessionEnded(at=2.0, status=Status.COMPLETED)])


def _override(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "pricing.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


# -- the table -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "listed"),
    [
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("openai/gpt-4o-mini", "gpt-4o-mini"),
        ("GPT-4.1", "gpt-4.1"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
    ],
)
def test_lookup_ignores_provider_prefixes_and_date_snapshots(given: str, listed: str) -> None:
    prices = load_prices()
    assert prices.lookup(given) is not None
    assert prices.lookup(given) == prices.lookup(listed)


def test_a_model_that_is_not_in_the_table_has_no_price() -> None:
    prices = load_prices()
    assert prices.lookup("mystery-1") is None
    assert prices.lookup("gpt-4o-mini-extra") is None
    assert prices.lookup("") is None


def test_the_table_carries_its_vintage() -> None:
    assert load_prices().as_of == PRICES_AS_OF
    year, month = PRICES_AS_OF.split("-")
    assert len(year) == 4 and 1 <= int(month) <= 12


def test_cache_prices_default_to_the_input_price_when_a_provider_has_none() -> None:
    price = Price(input=2.0, output=8.0)
    assert (price.cache_read, price.cache_write) == (2.0, 2.0)
    assert Price(input=2.0, output=8.0, cache_read=0.5).cache_write == 2.0


# -- what a call costs -----------------------------------------------------------


def test_a_cache_read_is_a_discount_on_input_not_a_surcharge() -> None:
    price = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    prices = load_prices()
    prices = type(prices)(as_of=prices.as_of, entries={"m": price})
    usage = Usage(input_tokens=10_000, output_tokens=1_000, cache_read_tokens=4_000)
    # by hand: 6,000 uncached x $3 + 4,000 cached x $0.30 + 1,000 out x $15, per million
    assert call_cost(prices, "m", usage) == pytest.approx((18_000 + 1_200 + 15_000) / 1e6)
    written = Usage(input_tokens=1_000, output_tokens=0, cache_write_tokens=1_000)
    assert call_cost(prices, "m", written) == pytest.approx(1_000 * 3.75 / 1e6)


def test_reasoning_tokens_are_priced_once_as_output() -> None:
    prices = load_prices()
    plain = Usage(input_tokens=100, output_tokens=500)
    thinking = Usage(input_tokens=100, output_tokens=500, reasoning_tokens=400)
    assert call_cost(prices, "gpt-5", plain) == call_cost(prices, "gpt-5", thinking)


def test_a_cost_the_provider_reports_wins_over_the_table() -> None:
    prices = load_prices()
    usage = Usage(input_tokens=1_000_000, output_tokens=0, reported_cost=0.0123)
    assert call_cost(prices, "gpt-4o", usage) == 0.0123
    assert call_cost(prices, "mystery-1", usage) == 0.0123


def test_an_unknown_model_or_unreported_usage_costs_unknown_and_shows_na() -> None:
    prices = load_prices()
    assert call_cost(prices, "mystery-1", Usage(input_tokens=10, output_tokens=5)) is None
    assert call_cost(prices, "gpt-4o", Usage.unknown()) is None
    assert format_cost(None) == "n/a"
    assert format_cost(0.0) == "$0.0000"
    assert format_cost(0.00612) == "$0.0061"
    assert format_cost(0.00002) == "$0.000020"


def test_a_sum_of_a_reported_and_an_unreported_cost_is_not_reported() -> None:
    a = Usage(input_tokens=1, reported_cost=0.5)
    b = Usage(input_tokens=2, reported_cost=0.25)
    assert (a + b).reported_cost == 0.75
    assert (a + Usage(input_tokens=3)).reported_cost is None


def test_openrouter_usage_cost_is_decoded_as_the_reported_cost() -> None:
    usage = {
        "prompt_tokens": 194,
        "completion_tokens": 2,
        "total_tokens": 196,
        "cost": 0.95,
        "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 100},
    }
    call = decode_call(_chat("openai/gpt-4o", usage))
    assert call is not None
    assert call.usage.reported_cost == 0.95
    assert call.usage.cache_write_tokens == 100
    plain = decode_call(_chat("gpt-4o", {"prompt_tokens": 1, "completion_tokens": 1}))
    assert plain is not None and plain.usage.reported_cost is None
    bad = decode_call(_chat("gpt-4o", {"prompt_tokens": 1, "cost": "free"}))
    assert bad is not None and bad.usage.reported_cost is None


# -- the override file -------------------------------------------------------------


def test_an_override_adds_models_and_replaces_built_in_prices(tmp_path: Path) -> None:
    path = _override(
        tmp_path,
        {
            "minimax/MiniMax-M3": {"input": 0.3, "output": 1.2, "cache_read": 0.03},
            "gpt-4o": {"input": 1, "output": 2},
        },
    )
    prices = load_prices(path)
    assert prices.lookup("MiniMax-M3") == Price(input=0.3, output=1.2, cache_read=0.03)
    assert prices.lookup("openai/gpt-4o-2024-08-06") == Price(input=1.0, output=2.0)
    assert prices.lookup("gpt-4o-mini") == load_prices().lookup("gpt-4o-mini")
    assert prices.as_of == PRICES_AS_OF


def test_a_missing_default_override_is_fine_but_a_named_one_is_not(tmp_path: Path) -> None:
    absent = tmp_path / "nope.json"
    assert load_prices(absent) == load_prices()
    assert resolve_prices(None, {}, home=tmp_path) == load_prices()
    with pytest.raises(PricingError, match=r"nope\.json: no such pricing file"):
        resolve_prices(absent, {}, home=tmp_path)
    with pytest.raises(PricingError, match=r"nope\.json: no such pricing file"):
        resolve_prices(None, {"EVALTAPE_PRICING": str(absent)}, home=tmp_path)


def test_the_override_is_found_by_setting_then_variable_then_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".config" / "evaltape").mkdir(parents=True)
    (home / ".config" / "evaltape" / "pricing.json").write_text('{"a": {"input": 1, "output": 1}}')
    named = _override(tmp_path, {"b": {"input": 1, "output": 1}})
    from_home = resolve_prices(None, {}, home=home)
    assert from_home.lookup("a") is not None and from_home.lookup("b") is None
    from_env = resolve_prices(None, {"EVALTAPE_PRICING": str(named)}, home=home)
    assert from_env.lookup("b") is not None and from_env.lookup("a") is None
    from_setting = resolve_prices(named, {"EVALTAPE_PRICING": "/nowhere.json"}, home=home)
    assert from_setting.lookup("b") is not None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"m": {"input": -1, "output": 1}}, '"m": field "input": expected a number >= 0'),
        ({"m": {"input": "0.3", "output": 1}}, '"m": field "input": expected a number >= 0'),
        ({"m": {"input": 1, "output": True}}, '"m": field "output": expected a number >= 0'),
        ({"m": {"input": 1}}, '"m": field "output" is missing'),
        ({"m": {"input": 1, "output": 1, "cacheRead": 1}}, '"m": unknown field "cacheRead"'),
        ({"m": [1, 2]}, '"m": expected an object of prices per million tokens'),
        ([1], "expected a JSON object of model ids to prices"),
        ('{"m": {"input": 1,}}', "pricing.json:1: not valid JSON"),
    ],
)
def test_a_bad_override_entry_names_the_file_and_the_field(
    tmp_path: Path, data: object, message: str
) -> None:
    path = _override(tmp_path, data)
    with pytest.raises(PricingError) as caught:
        load_prices(path)
    text = str(caught.value)
    assert "pricing.json" in text and message in text
    assert "\n" not in text


# -- buckets ------------------------------------------------------------------------


def test_a_session_sums_its_calls_by_bucket_and_keeps_the_judge_apart() -> None:
    prices = load_prices()
    price = prices.lookup("gpt-4o-mini")
    judge_price = prices.lookup("gpt-4.1")
    assert price is not None and judge_price is not None
    one = {
        "prompt_tokens": 1_000,
        "completion_tokens": 200,
        "prompt_tokens_details": {"cached_tokens": 600},
        "completion_tokens_details": {"reasoning_tokens": 50},
    }
    session = _session(
        _chat("gpt-4o-mini", one),
        _chat("gpt-4o-mini", one),
        _chat("gpt-4.1", {"prompt_tokens": 300, "completion_tokens": 30}, judge=True),
    )
    cost = cost_of_session(prices, "gpt-4o-mini", session)
    assert cost.calls == 2
    assert (cost.usage.input_tokens, cost.usage.cache_read_tokens) == (2_000, 1_200)
    assert cost.uncached_tokens == 800
    assert cost.uncached_cost == pytest.approx(800 * price.input / 1e6)
    assert cost.cache_read_cost == pytest.approx(1_200 * price.cache_read / 1e6)
    assert cost.completion_cost == pytest.approx(400 * price.output / 1e6)
    assert cost.reasoning_cost == pytest.approx(100 * price.output / 1e6)
    assert cost.prompt_cost == pytest.approx(cost.uncached_cost + cost.cache_read_cost)
    assert cost.cost == pytest.approx(cost.prompt_cost + cost.completion_cost)
    judged = judge_cost_of_session(prices, session)
    assert judged.calls == 1
    assert judged.cost == pytest.approx((300 * judge_price.input + 30 * judge_price.output) / 1e6)


def test_one_unpriced_call_makes_the_total_unknown_and_says_why() -> None:
    prices = load_prices()
    usage = {"prompt_tokens": 10, "completion_tokens": 5}
    session = _session(_chat("gpt-4o", usage), _chat("mystery-1", usage))
    cost = cost_of_session(prices, "gpt-4o", session)
    assert cost.cost is None and cost.usage.total_tokens == 30
    assert cost.why_unknown == "no price for mystery-1"
    line = cost_line(cost, prices)
    assert line == f"n/a (no price for mystery-1) · 30 tokens · prices as of {PRICES_AS_OF}"
    assert "$0.00" not in "\n".join([line, *usage_block(cost, prices)])


def test_a_reported_cost_has_no_bucket_split_but_a_known_total() -> None:
    prices = load_prices()
    reported = {"prompt_tokens": 10, "completion_tokens": 5, "cost": 0.002}
    session = _session(_chat("routed-1", reported), _chat("routed-1", reported))
    cost = cost_of_session(prices, "routed-1", session)
    assert cost.cost == pytest.approx(0.004)
    assert cost.provider_reported == 2 and cost.uncached_cost is None
    assert cost_line(cost, prices).startswith("$0.0040 reported · 30 tokens")
    plain = {"prompt_tokens": 10, "completion_tokens": 5}
    mixed = cost + cost_of_session(prices, "gpt-4o", _session(_chat("gpt-4o", plain)))
    assert mixed.cost is not None and mixed.uncached_cost is None
    assert " estimated · 45 tokens · " in cost_line(mixed, prices)


def test_breakdowns_add_up_per_case_and_per_run() -> None:
    prices = load_prices()
    usage = {"prompt_tokens": 100, "completion_tokens": 10}
    a = cost_of_session(prices, "gpt-4o", _session(_chat("gpt-4o", usage)))
    b = cost_of_session(prices, "gpt-4o", _session(_chat("gpt-4o", usage), _chat("gpt-4o", usage)))
    run = total([a, b])
    assert run.calls == 3 and run.usage.total_tokens == 330
    assert run.cost == pytest.approx(3 * (a.cost or 0))
    assert total([]) == CostBreakdown() and CostBreakdown().cost == 0.0


def test_a_refused_call_costs_nothing_but_a_lost_response_costs_unknown() -> None:
    prices = load_prices()
    ok = _chat("gpt-4o", {"prompt_tokens": 100, "completion_tokens": 10})
    refused = attrs.evolve(
        ok,
        response=Response(
            status=500,
            headers=JSON,
            chunks=(Chunk(at=0.0, data=b'{"error": {"message": "overloaded"}}'),),
        ),
    )
    lost = attrs.evolve(ok, response=None, error=TransportError(type="ReadTimeout", message="x"))
    fine = cost_of_session(prices, "gpt-4o", _session(ok))
    with_refusal = cost_of_session(prices, "gpt-4o", _session(ok, refused))
    assert with_refusal.calls == 2 and with_refusal.cost == fine.cost
    with_loss = cost_of_session(prices, "gpt-4o", _session(ok, lost))
    assert with_loss.cost is None and with_loss.why_unknown == "1 call reported no usage"


def test_case_lines_mark_a_split_apart_from_a_pass_and_a_fail() -> None:
    rows = [
        CostRow(label=label, passed=p, total=3, duration=1.5, cost=CostBreakdown())
        for label, p in (("steady", 3), ("flaky", 2), ("broken", 0))
    ]
    marks = [line.split()[0] for line in case_lines(rows)]
    assert marks == ["PASS", "SPLIT", "FAIL"]
    assert "(2/3 passed (Wilson 95% 21%-94%), 1.5s" in case_lines(rows)[1]
