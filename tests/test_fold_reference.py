"""The fast fold decodes every exchange to the very call the reference decoder gives.

``tests/_fold_reference`` is a copy of the adapters as they were before the
typed stream paths, msgspec and the offset-free parse reuse.  Every shipped
tape, tapes recorded through the real OpenAI and Anthropic SDKs, the
benchmark traffic, the adapter edge cases and randomly damaged streams are
decoded both ways, one decoder per session as ``fold`` uses it.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _fold_reference import CallDecoder as ReferenceDecoder
from hypothesis import given, settings
from hypothesis import strategies as st
from test_adapters import CASES as EDGE_CASES

from evaltape.recorder import Chunk, Event, Exchange, Request, Response, TapeReader, fold

ROOT = Path(__file__).resolve().parents[1]


def _assert_same(events: Sequence[Event], where: str) -> int:
    """Both decoders give equal calls for every exchange; returns how many."""
    reference = ReferenceDecoder()
    expected = [
        call
        for e in events
        if isinstance(e, Exchange)
        and (call := reference.decode(e)) is not None
        and not any(name == "x-evaltape-role" for name, _ in e.request.headers)
    ]
    got = [turn.call for turn in fold(events).turns]
    assert got == expected, where
    return len(expected)


def _sessions(path: Path) -> Iterator[tuple[str, Sequence[Event]]]:
    for session in TapeReader(path).sessions():
        yield f"{path}:{session.header.session_id}", session.events


@pytest.mark.slow
def test_every_shipped_tape_folds_to_the_reference_calls() -> None:
    tapes = sorted((ROOT / "cassettes").rglob("*.tape"))
    assert tapes
    checked = sum(_assert_same(events, where) for t in tapes for where, events in _sessions(t))
    assert checked > 100


@pytest.fixture(scope="module")
def sdk_traffic() -> ModuleType:
    import sys

    sys.path.insert(0, str(ROOT))
    from evals.perf import sdk_traffic

    return sdk_traffic


@pytest.mark.slow
@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("kind", ["streamed", "mixed"])
def test_sdk_recorded_sessions_fold_to_the_reference_calls(
    sdk_traffic: ModuleType, tmp_path: Path, api: str, kind: str
) -> None:
    tape = tmp_path / "s.tape"
    with sdk_traffic.ModelServer() as server:
        sdk_traffic.record_session(server, tape, api, 3, 9, kind, "00000000000000a1")
    (where, events), *_ = _sessions(tape)
    assert _assert_same(events, where) == 9
    calls = [t.call for t in fold(events).turns]
    assert [c.streamed for c in calls] == [sdk_traffic.streamed_turn(n, kind) for n in range(9)]
    assert all(c.tool_calls and not c.error for c in calls)
    assert len(calls[4].tool_calls) >= 2  # the parallel calls of every fifth turn


def test_benchmark_traffic_folds_to_the_reference_calls(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(ROOT))
    from evals.perf.traffic import agent_session, write_session

    tape = tmp_path / "t.tape"
    write_session(tape, agent_session(12, seed=5))
    for where, events in _sessions(tape):
        assert _assert_same(events, where) == 12


@pytest.mark.parametrize(
    ("name", "exchange", "expected"), EDGE_CASES, ids=[c[0] for c in EDGE_CASES]
)
def test_adapter_edge_cases_decode_as_the_reference(
    name: str, exchange: Exchange, expected: dict[str, Any]
) -> None:
    assert fold([_header(), exchange]).turns[0].call == ReferenceDecoder().decode(exchange)


def _header() -> Event:
    from evaltape.recorder import SessionStarted

    return SessionStarted(session_id="00000000000000b2", started_at=0.0)


# -- the conversation moving inside the body ------------------------------------------------


def _chat(messages: list[dict[str, Any]], *, stream: bool) -> Exchange:
    body: dict[str, Any] = {"stream": True} if stream else {}
    body |= {
        "messages": messages,
        "model": "m",
        "tools": [{"type": "function", "function": {"name": "t"}}],
    }
    reply = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}
    data = json.dumps(reply).encode()
    return Exchange(
        at=0.0,
        duration=0.1,
        request=Request(
            method="POST",
            url="http://127.0.0.1:9/v1/chat/completions",
            body=json.dumps(body).encode(),
        ),
        response=Response(
            status=200,
            headers=(("content-type", "application/json"),),
            chunks=(Chunk(at=0.0, data=data),),
        ),
    )


def test_a_request_that_adds_or_drops_stream_reuses_the_parsed_conversation() -> None:
    """Message objects are shared only when the parse was reused (the memo keys parsed
    items by identity), so sharing shows that moving the array did not defeat it."""
    messages = [{"role": "system", "content": "be brief " * 50}, {"role": "user", "content": "hi"}]
    exchanges = [
        _chat(messages, stream=False),
        _chat([*messages, {"role": "assistant", "content": "ok"}], stream=True),
        _chat(
            [
                *messages,
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "and?"},
            ],
            stream=False,
        ),
    ]
    turns = fold([_header(), *exchanges]).turns
    first, second, third = (t.call.input_messages for t in turns)
    # The last item of a body is parsed again (the character after it changed).
    assert second[0] is first[0]
    assert third[0] is first[0] and third[1] is second[1]
    assert _assert_same([_header(), *exchanges], "moved") == 3


def test_the_previous_bodys_last_message_is_taken_over_not_parsed_again() -> None:
    """An object's text ends in its ``}``, so the character after it (``]``, now ``,``)
    does not matter: the last message of one request is the same object in the next."""
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]
    exchanges = [
        _chat(messages, stream=True),
        _chat([*messages, {"role": "user", "content": "go on"}], stream=True),
    ]
    first, second = (t.call.input_messages for t in fold([_header(), *exchanges]).turns)
    assert second[1] is first[1]
    assert _assert_same([_header(), *exchanges], "last kept") == 2


def test_a_conversation_ending_in_a_number_is_parsed_again_where_it_grows() -> None:
    """A number's parse depends on the character after it (``1`` then ``12``), so only
    items that close themselves are taken over where the common text ends."""
    from evaltape.recorder.apis.reuse._session import BodyParser

    parser = BodyParser("messages")
    bodies = [
        b'{"messages": [{"a": 1}, 1]}',
        b'{"messages": [{"a": 1}, 12]}',
        b'{"messages": [{"a": 1}, 12, "x"]}',
        b'{"messages": [{"a": 1}, 12, "xy"]}',
        b'{"messages": [{"a": 1}, 12, "xy", [1]]}',
        b'{"messages": [{"a": 1}, 12, "xy", [1], true]}',
        b'{"messages": [{"a": 1}, 12, "xy", [1], true, 1.5e3]}',
    ]
    for body in bodies:
        assert parser.load(body, "body") == (json.loads(body), "")


_TAILS = [
    ', "tools": [1, 2], "n": 1}',
    ', "tools": [1, 2], "n": 1}',
    ', "tools": [1, 2], "n": 12}',
    ', "n": 12, "tools": [1, 2], "n": 3}',
    ', "messages": [{"b": 2}], "tools": [1]}',
    ', "messages": [{"b": 2}], "tools": [1]}',
    ', "messages": 7, "tools": [1]}',
    ', "messages": 7, "tools": [1]}',
    "}",
    ', "tools": [1, 2], "n": 1}',
]


def test_values_after_the_conversation_parse_as_json_loads_however_the_tail_changes() -> None:
    """The values after the conversation array are taken over when the whole text after
    it recurs; repeated keys, a second conversation and numbers still read as json.loads."""
    from evaltape.recorder.apis.reuse._session import BodyParser

    parser = BodyParser("messages")
    items: list[str] = []
    for n, tail in enumerate(_TAILS):
        items.append(json.dumps({"role": "user", "content": f"turn {n}"}))
        for head in ('{"model": "m", "messages": [', '{"messages": ['):
            body = (head + ", ".join(items) + "]" + tail).encode()
            assert parser.load(body, "body") == (json.loads(body), ""), body


_SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3)
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2)
    ),
    max_leaves=4,
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    tails=st.lists(
        st.dictionaries(st.sampled_from(["a", "messages", "n"]), _JSON, max_size=3), max_size=6
    )
)
def test_any_sequence_of_tails_parses_as_json_loads(tails: list[dict[str, Any]]) -> None:
    from evaltape.recorder.apis.reuse._session import BodyParser

    parser = BodyParser("messages")
    items: list[str] = []
    for n, tail in enumerate(tails):
        items.append(json.dumps({"content": n}))
        rest = "".join(f", {json.dumps(k)}: {json.dumps(v)}" for k, v in tail.items())
        body = ('{"messages": [' + ", ".join(items) + "]" + rest + "}").encode()
        assert parser.load(body, "body") == (json.loads(body), "")


# -- damaged streams: the typed paths fall back exactly ------------------------------------

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(
        st.sampled_from(["name", "arguments", "text", "type", "index"]),
        st.text(max_size=3),
        max_size=2,
    ),
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*path, i))


def _put(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, *rest = path
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = _put(value[head], tuple(rest), new)
    return copy


def _recorded_streams(tmp_path: Path, api: str, sdk: ModuleType) -> list[Exchange]:
    tape = tmp_path / f"{api}.tape"
    with sdk.ModelServer() as server:
        sdk.record_session(server, tape, api, 1, 3, "streamed", "00000000000000c3")
    (_, events), *_ = _sessions(tape)
    return [e for e in events if isinstance(e, Exchange)]


@pytest.fixture(scope="module")
def streams(tmp_path_factory: pytest.TempPathFactory, sdk_traffic: ModuleType) -> list[Exchange]:
    folder = tmp_path_factory.mktemp("streams")
    return [
        e for api in ("openai", "anthropic") for e in _recorded_streams(folder, api, sdk_traffic)
    ]


def _events_of(exchange: Exchange) -> list[tuple[str, str]]:
    body = b"".join(c.data for c in exchange.response.chunks).decode()  # type: ignore[union-attr]
    out = []
    for block in body.split("\n\n")[:-1]:
        lines = block.split("\n")
        name = lines[0][7:] if lines[0].startswith("event: ") else ""
        out.append((name, lines[-1][6:]))
    return out


def _rebuilt(exchange: Exchange, events: list[tuple[str, str]]) -> Exchange:
    text = "".join((f"event: {n}\n" if n else "") + f"data: {d}\n\n" for n, d in events)
    response = exchange.response
    assert response is not None
    chunks = (Chunk(at=0.0, data=text.encode()),)
    import attrs

    return attrs.evolve(exchange, response=attrs.evolve(response, chunks=chunks))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_damaged_stream_events_decode_as_the_reference(
    streams: list[Exchange], data: st.DataObject
) -> None:
    exchange = streams[data.draw(st.integers(0, len(streams) - 1))]
    events = _events_of(exchange)
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    for _ in range(data.draw(st.integers(1, 3))):
        n = rng.randrange(len(events))
        name, payload = events[n]
        if payload.startswith("[DONE]"):
            continue
        value = json.loads(payload)
        path = rng.choice(list(_paths(value)))
        mutated = _put(value, path, data.draw(_VALUES))
        events[n] = (name, json.dumps(mutated))
    if data.draw(st.booleans()):
        events = events[: rng.randrange(1, len(events) + 1)]
    damaged = _rebuilt(exchange, events)
    assert fold([_header(), damaged]).turns[0].call == ReferenceDecoder().decode(damaged)


# -- damaged framing: the paths that cut events from the body's bytes fall back exactly ----

_PAYLOADS = [
    "",
    " ",
    "\t{}",
    "1",
    "[]",
    "{} {}",
    '{"a": 1} {"b": 2}',
    "[DONE]",
    "{" + '"id": ' + "9" * 4400 + "}",
    '{"error": {"message": "overloaded"}}',
    '{"type": "error", "error": {"type": "overloaded_error"}}',
    '{"type": "ping"}',
]
_LINES = ["", ": a comment", "id: 7", "retry: 10", "event: ping", "data: {}", "data"]


def _framing(body: bytes, rng: random.Random, payload: str, line: str) -> bytes:
    """``body`` with one event's payload replaced, a line put in, or its line ends changed."""
    events = body.split(b"\n\n")
    n = rng.randrange(len(events) - 1)
    lines = events[n].split(b"\n")
    match rng.randrange(5):
        case 0:  # another payload in place of one
            lines[-1] = b"data: " + payload.encode()
        case 1:  # a line that is not an event/data pair
            lines.insert(rng.randrange(len(lines) + 1), line.encode())
        case 2:  # CR line ends
            return body.replace(b"\n", b"\r\n", rng.randrange(1, 4))
        case 3:  # a byte that is not UTF-8, or a line end inside a payload
            at = rng.randrange(len(lines[-1]) + 1)
            lines[-1] = lines[-1][:at] + rng.choice([b"\xff", b"\n", b"\n\n"]) + lines[-1][at:]
        case _:  # the space after "data:" dropped or doubled, or the field name dropped
            lines[-1] = lines[-1].replace(b"data: ", rng.choice([b"data:", b"data:  ", b""]), 1)
    events[n] = b"\n".join(lines)
    return b"\n\n".join(events)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_damaged_stream_framing_decodes_as_the_reference(
    streams: list[Exchange], data: st.DataObject
) -> None:
    exchange = streams[data.draw(st.integers(0, len(streams) - 1))]
    assert exchange.response is not None
    body = exchange.response.body
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    for _ in range(data.draw(st.integers(1, 2))):
        body = _framing(body, rng, data.draw(st.sampled_from(_PAYLOADS)), rng.choice(_LINES))
    import attrs

    damaged = attrs.evolve(
        exchange, response=attrs.evolve(exchange.response, chunks=(Chunk(at=0.0, data=body),))
    )
    assert fold([_header(), damaged]).turns[0].call == ReferenceDecoder().decode(damaged)


@pytest.mark.slow
def test_the_framing_test_reaches_both_the_byte_paths_and_the_general_one(
    streams: list[Exchange],
) -> None:
    """Undamaged recorded streams take the paths that cut events from the bytes; the
    damage above sends a body to ``parse_sse`` (shown for one of each kind)."""
    from evaltape.recorder.apis import _anthropic, _openai_chat
    from evaltape.recorder.apis._model import ModelCall

    for exchange in streams:
        assert exchange.response is not None
        body = exchange.response.body
        api = _anthropic if body.startswith(b"event: ") else _openai_chat
        assert api.read_stream_bytes(ModelCall(api=api.API), body) is not None
        damaged = body.replace(b"\n\n", b"\n\n: a comment\n", 1)
        assert api.read_stream_bytes(ModelCall(api=api.API), damaged) is None


@pytest.mark.parametrize(
    "swaps",
    [
        {1: b"data: {} {}", 2: b"data:  "},  # two values on a line, none on another
        {1: b"data: {} {}", 2: b"data: "},
        {1: b"data: 1", 2: b"data: [DONE]"},
    ],
)
def test_lines_that_give_two_values_and_none_are_not_taken_for_two_events(
    streams: list[Exchange], swaps: dict[int, bytes]
) -> None:
    import attrs

    for exchange in streams:
        assert exchange.response is not None
        events = exchange.response.body.split(b"\n\n")
        for n, line in swaps.items():
            events[n] = b"\n".join([*events[n].split(b"\n")[:-1], line])
        damaged = attrs.evolve(
            exchange,
            response=attrs.evolve(
                exchange.response, chunks=(Chunk(at=0.0, data=b"\n\n".join(events)),)
            ),
        )
        call = fold([_header(), damaged]).turns[0].call
        assert call == ReferenceDecoder().decode(damaged)
        assert call.error  # the damage is seen, not read past


def test_a_data_line_in_place_of_the_blank_line_after_an_event_is_read_as_its_own() -> None:
    from evaltape.recorder.apis import _anthropic
    from evaltape.recorder.apis._bodies import parse_sse
    from evaltape.recorder.apis._model import ModelCall

    body = (
        b'event: message_start\ndata: {"type": "message_start", "message": {"id": "m"}}\n'
        b'data: {"type": "message_stop"}\n'
        b'event: message_stop\ndata: {"type": "message_stop"}\n\n'
    )
    call = ModelCall(api=_anthropic.API)
    assert _anthropic.read_stream_bytes(call, body) is None
    assert _anthropic.read_stream(call, parse_sse(body)).error


def test_an_event_whose_data_line_lost_its_field_name_is_read_as_the_reference(
    streams: list[Exchange],
) -> None:
    """A line of bare JSON is a field named by its text, not data: the event it was
    in has no data, which the byte paths must not read as one."""
    import attrs

    checked = 0
    for exchange in streams:
        assert exchange.response is not None
        body = exchange.response.body
        at = body.find(b"\ndata: {", len(body) // 2)  # an event in the middle, not the first
        if at < 0:
            continue
        damaged_body = body[: at + 1] + body[at + len(b"\ndata: ") :]
        damaged = attrs.evolve(
            exchange,
            response=attrs.evolve(exchange.response, chunks=(Chunk(at=0.0, data=damaged_body),)),
        )
        assert fold([_header(), damaged]).turns[0].call == ReferenceDecoder().decode(damaged)
        checked += 1
    assert checked >= 2


def _messages_stream(body: bytes) -> list[Event]:
    """A session of one Anthropic Messages exchange whose streamed response is ``body``."""
    request = {"model": "c", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    exchange = Exchange(
        at=0.0,
        duration=0.1,
        request=Request(
            method="POST",
            url="http://127.0.0.1:9/v1/messages",
            headers=(("anthropic-version", "2023-06-01"),),
            body=json.dumps(request).encode(),
        ),
        response=Response(
            status=200,
            headers=(("content-type", "text/event-stream"),),
            chunks=(Chunk(at=0.0, data=body),),
            streamed=True,
        ),
    )
    return [_header(), exchange]


def _event(kind: str, **fields: object) -> bytes:
    """One Anthropic Messages event whose data's type is its name."""
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()


def _delta(index: int, kind: str, **fields: object) -> bytes:
    return _event("content_block_delta", index=index, delta={"type": kind, **fields})


def _read_every_way(body: bytes, what: str) -> Any:
    """The call the byte path reads from an Anthropic stream ``body``, checked against
    the general walk's and the reference decoder's."""
    from evaltape.recorder.apis import _anthropic
    from evaltape.recorder.apis._bodies import parse_sse
    from evaltape.recorder.apis._model import ModelCall

    call = ModelCall(api=_anthropic.API)
    quick = _anthropic.read_stream_bytes(call, body)
    assert quick is not None, what
    assert quick == _anthropic.read_stream(call, parse_sse(body), batch=False), what
    assert _assert_same(_messages_stream(body), what) == 1
    return quick


def test_a_block_started_again_drops_the_deltas_before_it_as_the_reference_does() -> None:
    body = b"".join(
        [
            _event("message_start", message={"id": "m", "model": "c", "usage": {}}),
            _event("content_block_start", index=0, content_block={"type": "text", "text": "a"}),
            _delta(0, "text_delta", text="b"),
            _delta(1, "thinking_delta", thinking="t"),
            _event("content_block_start", index=0, content_block={"type": "text", "text": 5}),
            _delta(0, "text_delta", text="d"),
            _delta(0, "text_delta", text="e"),
            _event("content_block_start", index=1, content_block={"type": "thinking"}),
            _delta(1, "thinking_delta", thinking="u"),
            _event("message_stop"),
        ]
    )
    quick = _read_every_way(body, "restarted blocks")
    assert (quick.output_text, quick.thinking) == ("de", "u")


def test_blocks_with_their_own_text_and_deltas_join_as_the_reference_joins_them() -> None:
    """A block's own text or thinking comes before its deltas; thinking blocks that end
    up empty are left out; a tool's input deltas replace its input only if they join
    to some text."""

    def start(index: int, **block: object) -> bytes:
        return _event("content_block_start", index=index, content_block=block)

    body = b"".join(
        [
            _event("message_start", message={"id": "m", "model": "c", "usage": {}}),
            start(0, type="thinking", thinking="first"),
            start(1, type="thinking", thinking=""),
            start(2, type="thinking", thinking="then"),
            _delta(2, "thinking_delta", thinking=" more"),
            start(3, type="text", text="Hello"),
            _delta(3, "text_delta", text=", "),
            _delta(3, "text_delta", text="world"),
            start(4, type="tool_use", id="t1", name="a", input={"k": 1}),
            start(5, type="tool_use", id="t2", name="b", input={}),
            _delta(5, "input_json_delta", partial_json='{"p": '),
            _delta(5, "input_json_delta", partial_json="2}"),
            start(6, type="tool_use", id="t3", name="c", input={"q": 3}),
            _delta(6, "input_json_delta", partial_json=""),
            _event("message_stop"),
        ]
    )
    quick = _read_every_way(body, "own text and deltas")
    assert (quick.output_text, quick.thinking) == ("Hello, world", "first\nthen more")
    assert [(c.id, c.arguments) for c in quick.tool_calls] == [
        ("t1", '{"k":1}'),  # (an input is written compact)
        ("t2", '{"p": 2}'),
        ("t3", '{"q":3}'),
    ]


def test_pings_and_events_named_error_on_the_byte_path_read_as_the_general_walk() -> None:
    """A ping is skipped unparsed by the general walk: the byte path skips it too (a ping
    whose data would stop the stream stops nothing), and leaves a body whose ping does
    not parse to the general walk.  An event named ``error`` is an error only where its
    data has no type of its own, on both paths; an event without a type is read by its
    name, by the general walk."""
    from evaltape.recorder.apis import _anthropic
    from evaltape.recorder.apis._bodies import parse_sse
    from evaltape.recorder.apis._model import ModelCall

    def event(name: str, data: str) -> bytes:
        return f"event: {name}\ndata: {data}\n\n".encode()

    start = event("message_start", '{"type": "message_start", "message": {"id": "m"}}')
    text = event(
        "content_block_delta",
        '{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", '
        '"text": "hi"}}',
    )
    stop = event("message_stop", '{"type": "message_stop"}')
    cases = {
        "a ping": ([start, event("ping", '{"type": "ping"}'), text, stop], True, ""),
        "a ping that says stop": (
            [start, text, event("ping", '{"type": "message_stop"}')],
            True,
            "stream cut short: it ended before message_stop",
        ),
        "a ping that does not parse": ([start, event("ping", "not json"), text, stop], False, ""),
        "an event named error with a type": (
            [
                start,
                event(
                    "error",
                    '{"type": "content_block_delta", "index": 0, '
                    '"delta": {"type": "text_delta", "text": "!"}}',
                ),
                stop,
            ],
            True,
            "",
        ),
        "an error event": (
            [start, event("error", '{"error": {"type": "overloaded_error"}}'), stop],
            False,
            "stream error: overloaded_error",
        ),
        "a stop read by its name": ([start, text, event("message_stop", "{}")], False, ""),
        "a stop whose type is empty": (
            [start, text, event("message_stop", '{"type": ""}')],
            False,
            "",
        ),
        "a ping with no type": ([start, event("ping", "{}"), text, stop], False, ""),
    }
    call = ModelCall(api=_anthropic.API)
    for what, (parts, quick, error) in cases.items():
        body = b"".join(parts)
        general = _anthropic.read_stream(call, parse_sse(body), batch=False)
        got = _anthropic.read_stream_bytes(call, body)
        assert (got is not None) == quick, what
        assert got is None or got == general, what
        assert general.error == error, what
        assert _assert_same(_messages_stream(body), what) == 1


def test_a_message_start_of_any_shape_reads_as_the_general_walk() -> None:
    """The byte path reads only the id, model and usage of ``message_start``'s message
    (and skips the rest unbuilt); whatever the message holds, the call is the general
    walk's, or the body is left to it."""
    from evaltape.recorder.apis import _anthropic
    from evaltape.recorder.apis._bodies import parse_sse
    from evaltape.recorder.apis._model import ModelCall

    stop = b'event: message_stop\ndata: {"type": "message_stop"}\n\n'
    messages = [
        "null",
        "{}",
        '{"id": "m", "model": "c", "usage": {"input_tokens": 3, "output_tokens": 1}}',
        '{"id": 7, "model": ["c"], "usage": {"input_tokens": "3"}}',
        '{"id": "a", "id": "b", "model": null, "model": "d", "usage": {}, "usage": {"x": 1}}',
        '{"usage": [1, 2]}',
        '{"usage": "ab"}',
        '{"usage": 5}',
        '{"usage": null, "content": [{"type": "text", "text": "x"}], "extra": {"id": 1}}',
        '"a string"',
        "[1]",
        "5",
    ]
    call = ModelCall(api=_anthropic.API)
    quick = 0
    for message in messages:
        start = f'event: message_start\ndata: {{"type": "message_start", "message": {message}}}'
        body = start.encode() + b"\n\n" + stop
        general = _anthropic.read_stream(call, parse_sse(body), batch=False)
        got = _anthropic.read_stream_bytes(call, body)
        assert got is None or got == general, message
        quick += got is not None
    assert quick >= 9  # (only a message that is not an object or null leaves the path)


def test_tool_call_fragments_that_name_the_call_late_or_come_two_at_once() -> None:
    """A call begun without its id or name takes them from a later fragment, and a chunk
    with fragments of two calls adds to both: as the general walk reads them."""
    from evaltape.recorder.apis import _openai_chat
    from evaltape.recorder.apis._bodies import parse_sse
    from evaltape.recorder.apis._model import ModelCall

    def chunk(*fragments: dict[str, Any]) -> bytes:
        delta = {"tool_calls": list(fragments)}
        body = {"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta}]}
        return b"data: " + json.dumps(body).encode() + b"\n\n"

    body = b"".join(
        [
            chunk({"index": 0, "function": {"arguments": '{"a"'}}),
            chunk({"index": 1, "id": "call_b", "function": {"name": "b", "arguments": ""}}),
            chunk({"index": 0, "id": "call_a", "function": {"arguments": ": 1"}}),
            chunk({"index": 0, "function": {"name": "a", "arguments": ""}}),
            chunk(
                {"index": 1, "function": {"arguments": '{"b": '}},
                {"index": 0, "function": {"arguments": "}"}},
            ),
            chunk({"index": 1, "function": {"arguments": "2}"}}),
            b"data: [DONE]\n\n",
        ]
    )
    call = ModelCall(api=_openai_chat.API)
    quick = _openai_chat.read_stream_bytes(call, body)
    assert quick is not None
    assert quick == _openai_chat.read_stream(call, parse_sse(body), batch=False)
    assert [(t.id, t.name, t.arguments) for t in quick.tool_calls] == [
        ("call_a", "a", '{"a": 1}'),
        ("call_b", "b", '{"b": 2}'),
    ]
