"""A session's request bodies parse as ``json.loads`` parses each one, however they change.

``BodyParser`` reads the usual body from its bytes, parsing only what changed
since the body before (``_reuse_quick``), and any other body the general way.
These tests drive it with sequences of bodies that grow, move, shrink and break
between requests, and compare every value with ``json.loads``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.recorder.apis.reuse._session import BodyParser

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False)
    | st.text(max_size=4)
    | st.sampled_from(["é", "\u2028", "\\", '"', "\ud83d\ude00", "messages"])
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2)
    ),
    max_leaves=5,
)
_NAMES = st.sampled_from(["model", "stream", "messages", "tools", "n", "é"])
_SPACES = st.sampled_from(["", " ", "\n  ", "\t"])


@st.composite
def _body(draw: st.DrawFn, items: list[str]) -> bytes:
    """A body holding ``items`` as its conversation, with members around it that may
    repeat the key, and whitespace that may differ from one body to the next."""
    sp = draw(_SPACES)
    head = draw(st.dictionaries(_NAMES, _JSON, max_size=2))
    tail = draw(st.dictionaries(_NAMES, _JSON, max_size=3))
    ascii_only = draw(st.booleans())

    def member(k: str, v: Any) -> str:
        name, value = (json.dumps(x, ensure_ascii=ascii_only) for x in (k, v))
        return f"{name}:{sp}{value}"

    key = f'"messages"{draw(_SPACES)}:{draw(_SPACES)}'
    array = "[" + f",{sp}".join(items) + draw(_SPACES) + "]"
    members = [member(k, v) for k, v in head.items()] + [key + array]
    members += [member(k, v) for k, v in tail.items()]
    ending = draw(st.sampled_from(["}", "} ", "}\n", "}x", "", ", }"]))
    return ("{" + f",{sp}".join(members) + ending).encode("utf-8", "surrogatepass")


@st.composite
def _sessions(draw: st.DrawFn) -> list[bytes]:
    items: list[str] = []
    bodies = []
    for _ in range(draw(st.integers(1, 6))):
        change = draw(st.sampled_from(["grow", "grow", "same", "edit", "shrink", "number"]))
        if change == "grow":
            for value in draw(st.lists(_JSON, min_size=1, max_size=2)):
                items.append(json.dumps(value, ensure_ascii=draw(st.booleans())))
        elif change == "edit" and items:
            items[draw(st.integers(0, len(items) - 1))] = json.dumps(draw(_JSON))
        elif change == "shrink" and items:
            del items[draw(st.integers(0, len(items) - 1)) :]
        elif change == "number":
            items.append(str(draw(st.integers(0, 99))))  # a number the next body may extend
        bodies.append(draw(_body(list(items))))
    return bodies


def _loads(body: bytes) -> tuple[Any, bool]:
    try:
        return json.loads(body), True
    except ValueError:
        return None, False


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(_sessions())
def test_every_body_of_a_session_parses_as_json_loads(bodies: list[bytes]) -> None:
    parser = BodyParser("messages")
    for body in bodies:
        value, problem = parser.load(body, "request body")
        expected, ok = _loads(body)
        assert (value, not problem) == (expected, ok), body


def _session_parses_as_json_loads(*bodies: bytes) -> None:
    """Each of ``bodies``, read in order by one parser, gives ``json.loads``'s value."""
    parser = BodyParser("messages")
    for body in bodies:
        assert parser.load(body, "b") == (json.loads(body), ""), body


def test_a_grown_number_is_parsed_again() -> None:
    _session_parses_as_json_loads(
        b'{"messages":[1]}', b'{"messages":[12]}', b'{"messages":[12, 3]}'
    )


def test_the_key_repeated_after_the_conversation_keeps_the_last_value() -> None:
    _session_parses_as_json_loads(
        b'{"model":"m","messages":[{"a":1}],"tools":[]}',
        b'{"model":"m","messages":[{"a":1},{"b":2}],"messages":[7]}',
        b'{"model":"m","messages":[{"a":1},{"b":2}],"tools":[],"messages":"x"}',
        b'{"messages":[],"model":"m","messages":[{"a":1}]}',
    )


def test_a_member_before_the_conversation_needs_its_comma() -> None:
    parser = BodyParser("messages")
    parser.load(b'{"n":{"a":1},"messages":[{"a":1}]}', "b")
    for body in (b'{"n":{"a":1}"messages":[{"a":1}]}', b'{"a":1}"messages":[{"a":1}]}'):
        value, problem = parser.load(body, "b")
        assert value is None and "not valid JSON" in problem, body


def test_the_key_repeated_in_a_tail_that_recurs_keeps_the_last_value() -> None:
    """The tail is taken over when it recurs; if it repeats the key, its value wins
    even though the conversation before it grew."""
    _session_parses_as_json_loads(
        b'{"messages":[1],"messages":[1]}',
        b'{"messages":[1,2],"messages":[1]}',
        b'{"messages":[1,2,3],"messages":[1]}',
    )


def test_a_trailing_comma_after_the_conversation_is_not_json() -> None:
    parser = BodyParser("messages")
    parser.load(b'{"messages":[{"a":1}],"n":1}', "b")
    value, problem = parser.load(b'{"messages":[{"a":1}, ],"n":1}', "b")
    assert value is None and "not valid JSON" in problem


def test_items_that_recur_are_the_same_objects_in_the_next_body() -> None:
    """The reuse is what makes a session's fold linear: the conversation items of the
    body before come back as the very same objects, whatever moved around them."""
    parser = BodyParser("messages")
    a, _ = parser.load(b'{"model":"m","stream":true,"messages":[{"a":1}],"n":1}', "b")
    b, _ = parser.load(b'{"model":"m","messages":[{"a":1},{"b":[2]}],"o":2}', "b")
    c, _ = parser.load(b'{"model":"m","messages":[{"a":1},{"b":[2]},3],"o":2}', "b")
    assert b["messages"][0] is a["messages"][0]
    assert c["messages"][1] is b["messages"][1]
    assert c == json.loads(b'{"model":"m","messages":[{"a":1},{"b":[2]},3],"o":2}')
    d, _ = parser.load(b'{"messages":[{"a":1}],"tools":[{"t":1}],"s":true}', "b")
    e, _ = parser.load(b'{"messages":[{"a":1},{"c":3}],"tools":[{"t":1}]}', "b")
    assert e["tools"] is d["tools"] and e["messages"][0] is d["messages"][0]


def test_a_session_that_alternates_streaming_takes_over_both_tails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Asking with and without streaming alternates the fields after the conversation;
    each recurring tail is taken over (parsed once, its values the same objects), and
    every body still parses as json.loads."""
    from evaltape.recorder.apis.reuse import _quick as _reuse_quick

    parses: list[int] = []

    class Counting:
        def decode(self, text: bytes) -> Any:
            parses.append(len(text))
            return members.decode(text)

    members = _reuse_quick._MEMBERS
    monkeypatch.setattr(_reuse_quick, "_MEMBERS", Counting())
    parser = BodyParser("messages")
    tails = [b',"stream":true,"tools":[{"t":1}]}', b',"tools":[{"t":1}]}']
    items: list[bytes] = []
    seen: dict[bytes, Any] = {}
    for n in range(8):
        items.append(b'{"n":%d}' % n)
        tail = tails[n % 3 == 2]
        body = b'{"model":"m","messages":[' + b",".join(items) + b"]" + tail
        value, problem = parser.load(body, "b")
        assert (value, problem) == (json.loads(body), ""), body
        if tail in seen:
            assert value["tools"] is seen[tail]
        seen.setdefault(tail, value["tools"])
    assert len(parses) == 2  # the first body, and the first without streaming
