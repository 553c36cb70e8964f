"""The benchmark's agent traffic is realistic and survives a tape round trip."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from evaltape.recorder import Exchange, SessionEnded, Status, TapeReader

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def traffic(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT))
    from evals.perf import traffic

    return traffic


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT))
    from evals.perf import bench_tape

    return bench_tape


def _events(exchange: Exchange) -> list[Any]:
    """The JSON events of a streamed response, without the final [DONE]."""
    assert exchange.response is not None
    datas = [c.data for c in exchange.response.chunks]
    assert all(d.startswith(b"data: ") and d.endswith(b"\n\n") for d in datas)
    assert datas[-1] == b"data: [DONE]\n\n"
    return [json.loads(d[len(b"data: ") :]) for d in datas[:-1]]


def test_three_turns_read_back_equal(traffic: ModuleType, tmp_path: Path) -> None:
    session = traffic.agent_session(3, seed=7)
    path = tmp_path / "agent.tape"
    traffic.write_session(path, session)

    [recorded] = list(TapeReader(path).sessions())

    assert recorded.complete
    assert recorded.events[0] == session.header
    assert recorded.events[1:-1] == session.exchanges
    end = recorded.events[-1]
    assert isinstance(end, SessionEnded)
    assert end.status is Status.COMPLETED


def test_each_request_repeats_the_conversation(traffic: ModuleType) -> None:
    session = traffic.agent_session(3, seed=7)
    bodies = [json.loads(e.request.body) for e in session.exchanges]

    assert [len(b["messages"]) for b in bodies] == [2, 4, 6]
    assert bodies[0]["messages"][0] == {"role": "system", "content": traffic.SYSTEM_PROMPT}
    assert all(len(b["tools"]) == 10 for b in bodies)
    for before, after, exchange in zip(bodies, bodies[1:], session.exchanges, strict=False):
        assert after["messages"][: len(before["messages"])] == before["messages"]
        # The new assistant message is what the previous response streamed.
        assistant, result = after["messages"][-2:]
        events = _events(exchange)
        deltas = [e["choices"][0]["delta"] for e in events if e["choices"]]
        arguments = "".join(
            d["tool_calls"][0]["function"]["arguments"] for d in deltas if "tool_calls" in d
        )
        call = assistant["tool_calls"][0]
        assert call["function"]["arguments"] == arguments
        assert json.loads(arguments)
        assert result == {"role": "tool", "tool_call_id": call["id"], "content": result["content"]}
        assert 20 < len(result["content"]) < 4000
    for exchange in session.exchanges:
        body = exchange.request.body
        assert body == traffic.dumps(json.loads(body))  # bytes as the SDK serializes them
        assert ("content-length", str(len(body))) in exchange.request.headers
        events = _events(exchange)
        assert events[0]["choices"][0]["delta"]["role"] == "assistant"
        assert events[-2]["choices"][0]["finish_reason"] == "tool_calls"
        assert events[-1]["choices"] == [] and events[-1]["usage"]["prompt_tokens"] > 0


def test_shorter_sessions_are_prefixes_of_longer_ones(traffic: ModuleType) -> None:
    short = traffic.agent_session(2, seed=3)
    longer = traffic.agent_session(3, seed=3)

    assert short.exchanges == longer.exchanges[:2]
    assert traffic.agent_session(2, seed=4).exchanges != short.exchanges


def test_doc_update_replaces_only_its_section(bench: ModuleType, tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    doc.write_text(
        "# Performance\n\nIntro.\n\n## Other benchmark\n\nkept\n\n"
        f"{bench.HEADING}\n\nold table\n\n## Later benchmark\n\nalso kept\n"
    )

    bench.update_doc(doc, f"{bench.HEADING}\n\nnew table\n")

    text = doc.read_text()
    assert "old table" not in text
    assert text.count(bench.HEADING) == 1
    assert text.index("kept") < text.index("new table") < text.index("also kept")
    assert text.startswith("# Performance\n\nIntro.\n")
