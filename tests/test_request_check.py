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
import re
import threading
from pathlib import Path
from typing import Any

import attrs
import pytest
from _fold_reference import CallDecoder as ReferenceDecoder
from builders import JSON_HEADERS, exchange
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_request_reuse import _sessions as _body_sessions

from evaltape.recorder import (
    Event,
    Exchange,
    Request,
    SessionStarted,
    TapeReader,
    fold,
    open_session,
)
from evaltape.recorder._events import body_source
from evaltape.recorder.apis.reuse._chain import Chain
from evaltape.recorder.apis.reuse._check import check, follow
from evaltape.recorder.apis.reuse._pieces import _pieces, _usual
from evaltape.recorder.apis.reuse._session import BodyParser
from evaltape.recorder.tape._delta import DeltaBody, DeltaDecoder

_URL = "http://127.0.0.1:9/v1/chat/completions"
_REPLY = json.dumps(
    {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]}
).encode()


def _taped(tmp: Path, bodies: list[bytes], name: str = "s.tape") -> list[Event]:
    """The session of one exchange per body, written to a tape and read back."""
    path = tmp / name
    path.unlink(missing_ok=True)
    header = SessionStarted(session_id="00000000000000c1", started_at=0.0)
    with open_session(path, header) as writer:
        for n, body in enumerate(bodies):
            writer.append(
                exchange(_URL, body, _REPLY, at=float(n), headers=JSON_HEADERS, chunk_at=0.0)
            )
    (session,) = TapeReader(path).sessions()
    return list(session.events)


def _unbuilt(request: Request) -> DeltaBody | None:
    """The delta that builds ``request.body``, while it has not been built; else None."""
    source = body_source(request)
    return source if isinstance(source, DeltaBody) and not source.is_built else None


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
    assert all(_unbuilt(r) is not None for r in requests[1:])  # stored as deltas
    session = fold(events)
    assert all(not t.call.error for t in session.turns)
    assert all(_unbuilt(r) is not None for r in requests[1:])  # still not built
    assert [t.call for t in session.turns] == _reference(events)  # reads every request side
    assert all(_unbuilt(r) is None for r in requests)


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
        assert _unbuilt(_requests(events)[2]) is not None, what  # a delta
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
    cases = [(what, b"," + items) for what, items in _NEW_ITEMS.items()]
    cases += [("an item with no comma before it", b' {"role":"user","content":"b"}')]
    cases += [("a number grown onto the last item", b"5")]
    for what, new in cases:
        bodies = [head + tail, head + new + tail, head + tail]
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


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_body_sessions())
def test_every_body_of_a_session_is_checked_as_json_loads_reads_it(bodies: list[bytes]) -> None:
    """The bodies of ``test_request_reuse`` (growing, edited, shrinking, numbers that
    grow, keys repeated around the conversation, broken endings), checked in order by
    one parser's chains: a body they call valid is a JSON object."""
    parser = BodyParser("messages")
    last: bytes | None = None
    for body in bodies:
        if parser.chains.checks(body, body, last):
            assert isinstance(json.loads(body), dict), body
        else:
            parser.load(body, "request body", body)
        last = body


def test_bodies_that_only_grow_are_all_checked_without_a_parse() -> None:
    parser = BodyParser("messages")
    bodies = [_messages(n) for n in range(1, 6)]
    assert all(parser.chains.checks(b, b) for b in bodies)


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


_TOOLS = (
    b'"tools":[{"type":"function","function":{"name":"t","description":"' + b"d" * 200 + b'"}}]'
)


def _item(n: int) -> bytes:
    return b'{"role":"user","content":"' + (b"message %d " % n) * 30 + b'"}'


def _toggling(n: int, head: bytes, tail: bytes) -> bytes:
    """A body of ``n`` items whose fields before and after them are ``head``/``tail``."""
    return head + b",".join(_item(i) for i in range(n)) + tail


_ON_HEAD, _OFF_HEAD = b'{"model":"m","stream":true,"messages":[', b'{"model":"m","messages":['
_MODEL = b'],"model":"' + b"m" * 80 + b'",'
_ON_TAIL, _OFF_TAIL = _MODEL + b'"stream":true,' + _TOOLS + b"}", _MODEL + _TOOLS + b"}"

_TOGGLES = {
    "the head": [(_ON_HEAD, _OFF_TAIL), (_OFF_HEAD, _OFF_TAIL)],
    "the tail": [(_OFF_HEAD, _ON_TAIL), (_OFF_HEAD, _OFF_TAIL)],
}
_TOGGLE_DAMAGE = {
    "none": (None, None),
    "a head member that is not JSON": (b'{"model":"m","stream":tru,"messages":[', None),
    "a head member with invalid UTF-8": (b'{"model":"m\xff","stream":true,"messages":[', None),
    "a head with the key twice": (b'{"messages":[],"stream":true,"messages":[', None),
    "a head member json.loads reads and msgspec does not": (
        b'{"model":"m","stream":NaN,"messages":[',
        None,
    ),
    "a tail that does not close": (None, _MODEL + b'"stream":true,' + _TOOLS),
    "a tail with the key again": (None, _MODEL + b'"stream":true,"messages":[],' + _TOOLS + b"}"),
    "a tail member with a number past the digit limit": (
        None,
        _MODEL + b'"seed":' + b"9" * 4400 + b"," + _TOOLS + b"}",
    ),
    "a tail member json.loads reads and msgspec does not": (
        None,
        _MODEL + b'"stream":Infinity,' + _TOOLS + b"}",
    ),
}


def test_deltas_with_copies_are_checked_without_building_them_and_as_json_loads_reads_them(
    tmp_path: Path,
) -> None:
    """Requests that add or drop a field before or after the conversation (``stream``)
    are stored as deltas with copies from their base; the fold checks them from their
    pieces, the changed fields included, without building them."""
    for where, (on, off) in _TOGGLES.items():
        for what, (bad_head, bad_tail) in _TOGGLE_DAMAGE.items():
            shapes = [on, off, on, off, on, on, off]
            bodies = [_toggling(n + 1, *shape) for n, shape in enumerate(shapes)]
            if bad_head is not None or bad_tail is not None:
                bodies[4] = _toggling(5, bad_head or on[0], bad_tail or on[1])
            events = _taped(tmp_path, bodies)
            requests = _requests(events)
            copies = [
                r
                for r in requests
                if isinstance(lazy := body_source(r), DeltaBody) and len(lazy.ref) > 3
            ]
            assert copies, (where, what)  # the writer did store copies
            got = [t.call for t in fold(events).turns]
            if what == "none":
                assert all(_unbuilt(r) is not None for r in requests[1:]), where
            assert got == _reference(events), (where, what)
            assert [c.error == "" for c in got] == list(map(_valid, bodies)), (where, what)


# -- the lazy body --------------------------------------------------------------------


def test_a_lazy_body_equals_hashes_copies_and_pickles_as_its_bytes(tmp_path: Path) -> None:
    events = _taped(tmp_path, [_messages(n) for n in range(1, 4)])
    lazy = _requests(events)[2]
    assert _unbuilt(lazy) is not None
    built = Request(method=lazy.method, url=lazy.url, headers=lazy.headers, body=_messages(3))
    assert _unbuilt(pickle.loads(pickle.dumps(lazy))) is None
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


# -- any delta, as a damaged or forged tape may hold ----------------------------------


def _chain_fields(chain: Chain) -> tuple[Any, ...]:
    return (chain.head, chain.start, chain.kept, chain.tail, chain.length, chain.opening)


_BASES = (
    _toggling(3, _ON_HEAD, _ON_TAIL),
    _toggling(3, _ON_HEAD, b" \n " + _ON_TAIL),  # whitespace the chain does not keep
)
_BASE = _BASES[0]
_PIECES = [
    b"",
    b",",
    b" ",
    b"]",
    b"}",
    b'"',
    b"\xff",
    b'"stream":true,',
    b'"messages":[',
    b'{"messages":[',
    b"," + _item(7),
    b"," + _item(8)[:-2],
    _item(9),
    _MODEL,
    b"]," + _TOOLS + b"}",
    _TOOLS + b"}",
    b'"}',
]


@st.composite
def _deltas(draw: st.DrawFn) -> DeltaBody:
    """A delta of one of ``_BASES``: a prefix, copies from anywhere in it, new bytes
    between, a suffix, each cut where the draw says (mostly at the base's own seams)."""
    base = draw(st.sampled_from(_BASES))
    seams = sorted({0, len(base)} | {m.start() for m in re.finditer(rb'[\[\]{},"\s]', base)})
    offset = st.sampled_from(seams) | st.integers(0, len(base))
    prefix = draw(offset)
    suffix = len(base) - draw(st.sampled_from([s for s in seams if s >= prefix]))
    ref = [1, prefix, suffix]
    middle = b""
    for _ in range(draw(st.integers(1, 3))):
        literal = b"".join(draw(st.lists(st.sampled_from(_PIECES), max_size=3)))
        begin = draw(offset)
        end = draw(st.sampled_from([s for s in seams if s >= begin]) | st.just(len(base)))
        ref += [len(literal), begin, end - begin]
        middle += literal
    middle += b"".join(draw(st.lists(st.sampled_from(_PIECES), max_size=3)))
    size = prefix + len(middle) + suffix + sum(ref[5::3])
    return DeltaBody(base, ref, middle, size)


def _followed_as_checked(body: DeltaBody) -> bool:
    """Whether ``follow`` took ``body`` (a delta of bytes); asserts that it did so only for
    a body ``json.loads`` reads as an object, with the pieces where ``check`` finds them."""
    key = BodyParser("messages")._quick_key
    assert isinstance(body.base, bytes)
    chain = check(key, body.base, body.base, None)
    assert chain is not None
    found = follow(key, chain, body)
    data = body.built()
    if found is not None:
        assert isinstance(json.loads(data), dict), data
        again = check(key, data, data, None)
        assert again is not None and _chain_fields(found) == _chain_fields(again), data
    return found is not None


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_deltas())
def test_a_delta_with_copies_is_followed_only_where_its_body_is_valid(body: DeltaBody) -> None:
    """Whatever a delta's pieces, ``follow`` calls its body valid only if ``json.loads``
    reads it as an object, and then places its pieces where ``check`` finds them in the
    built bytes."""
    _followed_as_checked(body)


def test_forged_deltas_are_followed_or_refused_as_their_bytes_say() -> None:
    """Deltas the property above may rarely draw, each aimed at one thing ``follow`` must
    not take from the base without having kept it."""
    base, spaced = _BASES
    start, kept = base.index(b"["), base.index(b"]," + _MODEL[2:])
    tail = len(base) - kept
    grown = [1, 14, tail, 0, 28, kept - 28]  # the head's stream flag dropped
    assert _followed_as_checked(DeltaBody(base, grown, b"," + _item(3), 0))
    # The last item's closing bytes replaced by two others.
    cut = DeltaBody(base, [*grown[:5], kept - 30], b"XY," + _item(3), 0)
    assert not _followed_as_checked(cut) and not _valid(cut.built())
    # A new item copied from the base's second one (the chain keeps only the last bytes).
    second = base.index(b"},") + 1  # its comma
    copied = [*grown, 0, second, base.index(b"},", second) + 1 - second]
    assert _valid(DeltaBody(base, copied, b"", 0).built())
    assert not _followed_as_checked(DeltaBody(base, copied, b"", 0))
    # A piece of the items put before the conversation.
    moved = [1, 14, tail, 0, start + 5, 10, *grown[3:]]
    assert not _followed_as_checked(DeltaBody(base, moved, b"", 0))
    # The whitespace between the last item and "]", which the chain does not keep.
    spaced_tail = len(spaced) - spaced.index(b"]," + _MODEL[2:])
    whole = [1, len(spaced) - spaced_tail, spaced_tail, 0, 0, 0]
    assert not _followed_as_checked(DeltaBody(spaced, whole, b"", 0))


@pytest.mark.slow
def test_the_usual_toggle_deltas_are_read_as_the_general_piece_walk_reads_them() -> None:
    """``_usual`` reads the one-copy deltas of sessions that toggle a field before or after
    the conversation with less work than ``_pieces``; over every such delta of the two
    bases, cut at each offset near their seams (opening, last item, whitespace, tail), it
    gives exactly what ``_pieces`` gives, or leaves the delta to it."""
    key = BodyParser("messages")._quick_key
    taken = 0
    for base in _BASES:
        chain = check(key, base, base, None)
        assert chain is not None
        near = {
            n + d
            for n in (0, chain.start, chain.kept, chain.tail, len(base), 13, 14, 28)
            for d in (-2, -1, 0, 1, 2)
            if 0 <= n + d <= len(base)
        }
        for prefix in sorted(near):
            for begin in sorted(near):
                for end in sorted(n for n in near if n >= begin):
                    for after in sorted(n for n in near if n >= prefix):
                        for literal, rest in ((b"", b"," + _item(5)), (b'"stream":true,', b"")):
                            ref = [1, prefix, len(base) - after, len(literal), begin, end - begin]
                            middle = literal + rest
                            fast = _usual(key, chain, ref, middle)
                            if fast is not None:
                                taken += 1
                                assert fast == _pieces(key, chain, ref, middle), (base, ref)
    assert taken > 100  # (the grid does reach the usual shapes)


def test_forged_one_copy_deltas_are_refused_where_the_chain_lacks_their_bytes() -> None:
    """One-copy deltas of the usual shape that reach into bytes the chain does not keep,
    or that cut the opening, are not followed."""
    base, spaced = _BASES
    kept = base.index(b"]," + _MODEL[2:])
    tail = len(base) - kept
    # The opening cut: the body starts inside the base's head, and is not JSON.
    cut_head = DeltaBody(base, [1, 0, tail, 0, 1, kept - 1], b"," + _item(3), 0)
    assert not _followed_as_checked(cut_head) and not _valid(cut_head.built())
    # A copy that runs past the last item into the tail: followed, and placed right.
    past = DeltaBody(base, [1, 0, tail - 2, 0, 0, kept + 2], b"", 0)
    assert _followed_as_checked(past) and _valid(past.built())
    # The whitespace between the spaced base's last item and "]", copied or in the suffix.
    s_kept, s_tail = spaced.index(b" \n "), spaced.index(b"]," + _MODEL[2:])
    for ref in (
        [1, s_kept, len(spaced) - s_tail, 1, s_kept, 2],  # a copy of the whitespace
        [1, s_kept, len(spaced) - s_tail + 2, 1, s_tail, 0],  # a suffix with whitespace
    ):
        forged = DeltaBody(spaced, ref, b",", 0)
        assert not _followed_as_checked(forged), ref
