"""A folded request body is called valid exactly when ``json.loads`` reads it, unparsed.

Folding a tape checks each request body against an earlier one instead of
parsing it (``_reuse_check``): a body the tape stores as a delta of the one
before is checked from the delta's new bytes alone and never built; any other
from its bytes.  These tests write request bodies through the real tape writer
(which picks the deltas), read them back and fold them, and compare every call
with the reference decoder, which parses every body with ``json.loads``; they
also show that the bodies really are left unbuilt, and that the lazy bodies
behave as bytes would.
"""

from __future__ import annotations

import json
import pickle
import threading
from pathlib import Path
from typing import Any

import attrs
import pytest
from _fold_reference import CallDecoder as ReferenceDecoder
from hypothesis import HealthCheck, given, settings
from test_request_reuse import _sessions as _body_sessions

from evaltape.recorder import (
    Chunk,
    Event,
    Exchange,
    Request,
    Response,
    SessionStarted,
    TapeReader,
    fold,
    open_session,
)
from evaltape.recorder._adapters._reuse import BodyParser
from evaltape.recorder._delta import DeltaDecoder
from evaltape.recorder._events import unbuilt_body

_URL = "http://127.0.0.1:9/v1/chat/completions"
_REPLY = json.dumps(
    {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}
).encode()


def _exchange(body: bytes, at: float) -> Exchange:
    return Exchange(
        at=at,
        duration=0.1,
        request=Request(method="POST", url=_URL, body=body),
        response=Response(
            status=200,
            headers=(("content-type", "application/json"),),
            chunks=(Chunk(at=0.0, data=_REPLY),),
        ),
    )


def _taped(tmp: Path, bodies: list[bytes], name: str = "s.tape") -> list[Event]:
    """The session of one exchange per body, written to a tape and read back."""
    path = tmp / name
    path.unlink(missing_ok=True)
    header = SessionStarted(session_id="00000000000000c1", started_at=0.0)
    with open_session(path, header) as writer:
        for n, body in enumerate(bodies):
            writer.append(_exchange(body, float(n)))
    (session,) = TapeReader(path).sessions()
    return list(session.events)


def _requests(events: list[Event]) -> list[Request]:
    return [e.request for e in events if isinstance(e, Exchange)]


def _reference(events: list[Event]) -> list[Any]:
    decoder = ReferenceDecoder()
    return [decoder.decode(e) for e in events if isinstance(e, Exchange)]


def _messages(n: int, extra: str = "") -> bytes:
    """A chat body of ``n`` messages, the last one's text followed by ``extra`` raw bytes
    inside its string, then the fields after the conversation."""
    items = [json.dumps({"role": "user", "content": f"message {i} " * 20}) for i in range(n)]
    items[-1] = items[-1][:-2] + extra + '"}'
    return (
        b'{"model":"m","messages":['
        + ",".join(items).encode("utf-8", "surrogatepass")
        + (b'],"tools":[{"type":"function","function":{"name":"t"}}],"stream":false}')
    )


def test_a_growing_conversation_is_folded_without_building_its_bodies(tmp_path: Path) -> None:
    events = _taped(tmp_path, [_messages(n) for n in range(1, 9)])
    requests = _requests(events)
    assert all(unbuilt_body(r) is not None for r in requests[1:])  # stored as deltas
    session = fold(events)
    assert all(not t.call.error for t in session.turns)
    assert all(unbuilt_body(r) is not None for r in requests[1:])  # still not built
    assert [t.call for t in session.turns] == _reference(events)  # reads every request side
    assert all(unbuilt_body(r) is None for r in requests)


_DAMAGE = {
    "invalid UTF-8": b"\xff",
    "a raw control character": b"\x01",
    "an unknown escape": b"\\q",
    "a lone surrogate escape (json.loads reads it)": b"\\ud800",
    "an encoded surrogate (json.loads reads it)": b"\xed\xa0\x80",
    "a quote that ends the string early": b'"',
    "a backslash before the closing quote": b"\\",
}


def _damaged(n: int, damage: bytes) -> bytes:
    """``_messages(n)`` with ``damage`` put at the end of its last message's text."""
    body = _messages(n)
    cut = body.rindex(b'"}]')
    return body[:cut] + damage + body[cut:]


def _valid(body: bytes) -> bool:
    try:
        json.loads(body)
    except (ValueError, RecursionError):  # (a huge integer, or nesting too deep)
        return False
    return True


def test_damage_in_the_new_bytes_of_a_delta_is_seen_as_json_loads_sees_it(
    tmp_path: Path,
) -> None:
    for what, damage in _DAMAGE.items():
        damaged = _damaged(3, damage)
        events = _taped(tmp_path, [_messages(1), _messages(2), damaged, _messages(4)])
        assert unbuilt_body(_requests(events)[2]) is not None, what  # a delta
        got = [t.call for t in fold(events).turns]
        assert got == _reference(events), what
        assert (got[2].error == "") == _valid(damaged), (what, got[2].error)
        assert not got[3].error, what


_NEW_ITEMS = {
    "a missing comma": b'{"role":"user","content":"a"} {"role":"user","content":"b"}',
    "a trailing comma": b'{"role":"user","content":"a"},',
    "NaN (json.loads reads it)": b'{"role":"user","content":"a","n":NaN}',
    "a number past the digit limit": b'{"role":"user","content":"a","n":' + b"7" * 5000 + b"}",
    "a number just within it": b'{"role":"user","content":"a","n":' + b"7" * 4300 + b"}",
    "nesting json.loads refuses": b"[" * 5000 + b"]" * 5000,
    "an unclosed object": b'{"role":"user","content":"a"',
    "nothing but whitespace": b"  ",
}


def test_new_items_are_valid_exactly_when_json_loads_reads_the_body(tmp_path: Path) -> None:
    head = b'{"model":"m","messages":[{"role":"user","content":"' + b"x" * 300 + b'"}'
    tail = b'],"tools":[{"type":"function","function":{"name":"t"}}]}'
    for what, items in _NEW_ITEMS.items():
        bodies = [head + tail, head + b"," + items + tail, head + tail]
        events = _taped(tmp_path, bodies)
        got = [t.call for t in fold(events).turns]
        assert got == _reference(events), what
        assert (got[1].error == "") == _valid(bodies[1]), (what, got[1].error)
        assert not got[2].error, what


_TAILS = {
    "invalid UTF-8": b'],"tools":[{"name":"t\xff"}]}',
    "NaN (json.loads reads it)": b'],"temperature":NaN}',
    "a number past the digit limit": b'],"seed":' + b"1" * 5000 + b"}",
    "no closing brace": b'],"tools":[]',
    "text after the body": b'],"tools":[]}x',
    "the conversation key again": b'],"messages":[]}',
    "a plain new tail": b'],"tools":[],"stream":true}',
}


def test_a_new_tail_is_valid_exactly_when_json_loads_reads_the_body(tmp_path: Path) -> None:
    head = b'{"model":"m","messages":[{"role":"user","content":"' + b"x" * 300 + b'"}'
    tail = b'],"tools":[{"type":"function","function":{"name":"t"}}]}'
    item = b',{"role":"user","content":"' + b"y" * 300 + b'"}'
    for what, new in _TAILS.items():
        for bodies in ([head + new], [head + tail, head + item + new, head + item + tail]):
            events = _taped(tmp_path, bodies)
            got = [t.call for t in fold(events).turns]
            assert got == _reference(events), what
            assert [c.error == "" for c in got] == list(map(_valid, bodies)), what


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_body_sessions())
def test_every_body_of_a_session_is_checked_as_json_loads_reads_it(bodies: list[bytes]) -> None:
    """The bodies of ``test_request_reuse`` (growing, edited, shrinking, numbers that
    grow, keys repeated around the conversation, broken endings), checked in order by
    one parser: a body it calls valid is a JSON object, and the plain grown ones it
    calls valid without a parse."""
    parser = BodyParser("messages")
    last: bytes | None = None
    for body in bodies:
        if parser.checks(body, body, last):
            assert isinstance(json.loads(body), dict), body
        else:
            parser.load(body, "request body", body)
        last = body


def test_bodies_that_only_grow_are_all_checked_without_a_parse() -> None:
    parser = BodyParser("messages")
    bodies = [_messages(n) for n in range(1, 6)]
    assert all(parser.checks(b, b) for b in bodies)


def test_the_fold_of_sessions_that_toggle_streaming_checks_every_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests that add or drop ``"stream": true`` are stored as deltas with copies,
    which are built and checked from their bytes (against a tail seen lately)."""
    bodies = []
    for n in range(1, 10):
        body = json.loads(_messages(n))
        body["stream"] = n % 3 != 0
        bodies.append(json.dumps(body).encode())
    events = _taped(tmp_path, bodies)
    loads: list[bytes] = []
    load = BodyParser.load

    def counting(self: BodyParser, data: bytes, *args: Any) -> tuple[Any, str]:
        loads.append(data)
        return load(self, data, *args)

    monkeypatch.setattr(BodyParser, "load", counting)
    session = fold(events)
    assert loads == []
    assert [t.call for t in session.turns] == _reference(events)  # (loads them now)
    assert len(loads) == len(bodies)


# -- the lazy body --------------------------------------------------------------------


def test_a_lazy_body_equals_hashes_copies_and_pickles_as_its_bytes(tmp_path: Path) -> None:
    events = _taped(tmp_path, [_messages(n) for n in range(1, 4)])
    lazy = _requests(events)[2]
    assert unbuilt_body(lazy) is not None
    built = Request(method=lazy.method, url=lazy.url, headers=lazy.headers, body=_messages(3))
    assert unbuilt_body(pickle.loads(pickle.dumps(lazy))) is None
    assert lazy == built and hash(lazy) == hash(built)
    assert attrs.evolve(lazy, url="x").body == _messages(3)
    assert pickle.loads(pickle.dumps(events)) == events
    assert repr(lazy) == repr(built)


def test_threads_asking_for_one_lazy_body_all_get_it(tmp_path: Path) -> None:
    got: list[bytes] = []
    for _ in range(20):
        request = _requests(_taped(tmp_path, [_messages(n) for n in range(1, 6)]))[-1]
        barrier = threading.Barrier(4)

        def read(request: Request = request, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            got.append(request.body)

        threads = [threading.Thread(target=read) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert got == [_messages(5)] * 4
        got.clear()


def test_a_long_chain_of_unbuilt_deltas_builds_without_recursion() -> None:
    decoder = DeltaDecoder()
    body = decoder.decode_lazy(None, b"x" * 200)
    expected = b"x" * 200
    for n in range(5000):
        body = decoder.decode_lazy([1, 100, 100], b"%d" % n)
        expected = expected[:100] + b"%d" % n + expected[len(expected) - 100 :]
    assert not isinstance(body, bytes)
    assert body.built() == expected
