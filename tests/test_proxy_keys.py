"""Each provider's endpoint refuses another provider's key wherever the request carries it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from evaltape.replay import RoutedProxies, agent_routes

OPENAI_KEY = "sk-openai-" + "a" * 32
ANTHROPIC_KEY = "sk-ant-api03-" + "b" * 32


class _Upstream:
    """Stands in for the APIs: answers 200 and keeps what reached it."""

    def __init__(self) -> None:
        self.seen: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.seen.append(request)
        return httpx.Response(200, json={"ok": True})


@pytest.fixture
def routed() -> Iterator[tuple[RoutedProxies, _Upstream]]:
    upstream = _Upstream()
    environ = {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    proxies = RoutedProxies(upstream, agent_routes(), environ=environ, replaying=False, timeout=30)
    with proxies:
        yield proxies, upstream


def _openai_base(proxies: RoutedProxies) -> str:
    return proxies.env()["OPENAI_BASE_URL"]


@pytest.mark.parametrize(
    ("how", "where"),
    [
        ({"params": {"key": ANTHROPIC_KEY}}, "its URL"),
        ({"query": "key=" + ANTHROPIC_KEY.replace("-", "%2D")}, "its URL"),
        ({"content": json.dumps({"model": "m", "api_key": ANTHROPIC_KEY})}, "its body"),
        ({"content": json.dumps({"extra": {"deep": [ANTHROPIC_KEY]}})}, "its body"),
        ({"headers": {"x-api-key": ANTHROPIC_KEY}}, "its x-api-key header"),
    ],
)
def test_another_providers_key_is_refused_in_the_query_body_or_headers(
    routed: tuple[RoutedProxies, _Upstream], how: dict[str, object], where: str
) -> None:
    proxies, upstream = routed
    url = _openai_base(proxies) + "/chat/completions"
    how = dict(how)
    if "query" in how:  # sent as written, percent-escapes and all
        url += "?" + str(how.pop("query"))
    with httpx.Client(timeout=30) as client:
        response = client.post(url, **how)  # type: ignore[arg-type]
    assert response.status_code == 421
    assert response.json()["error"]["type"] == "evaltape_misrouted_key"
    assert upstream.seen == []
    (refused,) = proxies.refused
    assert refused.startswith("refused a request to the openai endpoint carrying another ")
    assert where in refused
    assert ANTHROPIC_KEY not in refused


def test_a_request_with_its_own_key_anywhere_is_forwarded(
    routed: tuple[RoutedProxies, _Upstream],
) -> None:
    proxies, upstream = routed
    with httpx.Client(timeout=30) as client:
        response = client.post(
            _openai_base(proxies) + "/chat/completions",
            params={"note": "plain"},
            headers={"authorization": f"Bearer {OPENAI_KEY}"},
            content=json.dumps({"model": "m", "echo": OPENAI_KEY}),
        )
    assert response.status_code == 200
    assert len(upstream.seen) == 1
    assert proxies.refused == []
