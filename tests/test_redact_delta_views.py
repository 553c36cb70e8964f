"""Delta redaction with the built-in rules: secrets in every view, planted across the boundary.

A request body that repeats a recent one's first bytes is scanned only from
shortly before the end of what they share, in the raw bytes and in each
secret view (JSON escapes undone, event texts joined).  These tests plant
keys raw, JSON-escaped, split across two text fields and as known values, on
both sides of and across that boundary, and compare every body with
``Redactor.redact_bytes`` on the whole body; they count the bytes scanned.
"""

from __future__ import annotations

import json
import random

import pytest
from builders import recorded_bodies
from hypothesis import given, settings
from hypothesis import strategies as st
from test_redact_speed import NOISE, SECRETS

from evaltape.recorder.redact import default_redactor
from evaltape.recorder.redact._delta import SessionRedactor
from evaltape.recorder.redact._views import line_marks

VALUE = "zq8Lm2Vx9Pw4QaT7"
REDACTOR = default_redactor().extended(values=[VALUE])
KEYS = [  # as they sit in a JSON string: newlines escaped
    s.replace(b"\n", b"\\n") for s in SECRETS if b'"' not in s and b"\\" not in s
] + [VALUE.encode()]
LONG_KEY = b"sk-proj-" + b"".join(b"Ab9_" for _ in range(400))  # past the rule's 512 bound


def _mark(name: bytes) -> bytes:
    """A ``data:`` line in a field of its own, between two text fields: two of them
    make a body an event stream to the event text view (a ``data:`` inside a text
    field is not at the start of a line)."""
    return b'","note":"\ndata: ' + name + b'","content":"'


TRIGGER = _mark(b"one") + _mark(b"two")
"""Turns the event text view on."""


def _escaped(key: bytes, rng: random.Random) -> bytes:
    """``key`` with some of its characters written as JSON ``\\u00XX`` escapes."""
    return b"".join(b"\\u%04x" % c if rng.random() < 0.3 else bytes((c,)) for c in key)


def _split(key: bytes, at: int) -> bytes:
    """``key`` cut in two at ``at``, the halves in the text fields of two messages
    (never inside a ``\\n`` escape: a backslash would escape the closing quote)."""
    if key[at - 1 : at] == b"\\":
        at += 1
    return key[:at] + b'"},{"role":"assistant","content":"' + key[at:]


def _filler(rng: random.Random, words: int, views: bool) -> bytes:
    text = b"".join(rng.choice(NOISE) for _ in range(words)).replace(b'"', b"'")
    if views:  # two "data:" lines turn the event text view on; an escape, the other
        text = b"\\u001b[0m" + TRIGGER + text
    return b'{"messages":[{"role":"user","content":"' + text


def _forms(key: bytes, rng: random.Random) -> dict[str, bytes]:
    return {
        "raw": key,
        "escaped": _escaped(key, rng),
        "split": _split(key, rng.randrange(1, len(key))),
    }


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    key=st.sampled_from([*KEYS, LONG_KEY]),
    form=st.sampled_from(["raw", "escaped", "split"]),
    views=st.booleans(),
    data=st.data(),
)
def test_keys_planted_across_the_boundary_in_every_view_are_masked_as_whole_scans_mask(
    seed: int, key: bytes, form: str, views: bool, data: st.DataObject
) -> None:
    """A body ends inside (or around) a planted key, the next completes it, a third
    changes one byte at the cut: each is redacted as the whole-body scan redacts it."""
    rng = random.Random(seed)
    planted = _forms(key, rng)[form]
    if form == "split" and not views:
        views = True  # a split key is joined only in the event text view
    filler = _filler(rng, 2500, views)
    cut = data.draw(st.integers(-60, len(planted) + 60))
    end = b' and then more text"}],"tools":["t","t","t"]}'
    first = filler + (planted[:cut] if cut >= 0 else b"") + end
    second = filler + planted + end
    at = len(filler) + max(0, cut)
    third = second[:at] + b"X" + second[at:]
    session = SessionRedactor(REDACTOR)
    for body in (first, second, third, second, first):
        assert session.redact_body(body) == REDACTOR.redact_bytes(body)
    masked = session.redact_body(second)
    assert key[-6:] not in masked
    if form == "raw":
        assert masked.count(b"REDACTED") >= 1 and key not in masked


def _conversation(rng: random.Random, turns: int, views: bool) -> list[bytes]:
    """Request bodies of a chat growing a message a turn, keys planted in every form."""
    messages: list[bytes] = []
    out = []
    for turn in range(turns):
        words = [rng.choice(NOISE).replace(b'"', b"'") for _ in range(1500)]
        for _ in range(rng.randint(0, 2)):
            forms = _forms(rng.choice(KEYS), rng)
            choice = rng.choice(["raw", "escaped", "split"] if views else ["raw"])
            words.insert(rng.randrange(len(words) + 1), forms[choice])
        if views and turn % 3 == 0:
            words.insert(0, b"\\u001b[1m" + TRIGGER)
        messages.append(b"".join(words))
    bodies = b""
    tools = json.dumps(["t"] * 20).encode()
    for m in messages:
        bodies += (b"," if bodies else b"") + b'{"role":"user","content":"' + m + b'"}'
        out.append(b'{"messages":[' + bodies + b'],"tools":' + tools + b"}")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("views", [False, True])
def test_a_conversation_is_redacted_as_whole_scans_redact_it(views: bool) -> None:
    session = SessionRedactor(REDACTOR)
    for body in _conversation(random.Random(11), 12, views):
        assert session.redact_body(body) == REDACTOR.redact_bytes(body)


@pytest.mark.slow
def test_views_that_appear_mid_session_with_requests_that_differ_early() -> None:
    """The views turn on at turn 5 and every 4th request differs near its start (as
    a request without ``"stream": true`` does), so some bodies extend one that had
    no view, or the one before the last: each is still what a whole scan gives."""
    session = SessionRedactor(REDACTOR)
    rng = random.Random(9)
    messages: list[bytes] = []
    for turn in range(14):
        words = [rng.choice(NOISE).replace(b'"', b"'") for _ in range(1200)]
        words.insert(rng.randrange(len(words)), _forms(rng.choice(KEYS), rng)["escaped"])
        if turn == 5:
            words.insert(0, TRIGGER + _split(rng.choice(KEYS), 5))
        messages.append(b"".join(words))
        flag = b'"stream":false,' if turn % 4 == 3 else b'"stream":true,'
        joined = b",".join(b'{"role":"user","content":"' + m + b'"}' for m in messages)
        body = b"{" + flag + b'"messages":[' + joined + b"]}"
        assert session.redact_body(body) == REDACTOR.redact_bytes(body), turn


@pytest.mark.slow
@pytest.mark.parametrize("views", [False, True])
def test_each_body_costs_its_new_bytes_plus_an_edge_window_in_each_view(views: bool) -> None:
    """With the built-in rules: every track (raw, escapes undone, event texts) scans
    a body's new bytes plus twice the widest reach, not the body."""
    session = SessionRedactor(REDACTOR)
    assert session.reach is not None
    widest = max(session.reach)
    assert widest < 8192  # the built-in rules reach a few KB, not a PEM block's 131 KB
    tracks = 3 if views else 1
    bodies = _conversation(random.Random(5), 40, views)
    before = previous = total = 0
    for n, body in enumerate(bodies):
        session.redact_body(body)
        cost, before = session.scanned - before, session.scanned
        total += len(body)
        if n:
            new = len(body) - previous
            assert cost <= tracks * (new + 400 + 2 * widest), n
        previous = len(body)
    assert session.scanned * 2 < total  # scanning every body whole is quadratic


def test_a_key_longer_than_its_rule_is_masked_to_its_end() -> None:
    """A rule's run carries its match on past the pattern's bound: the whole key is
    masked, in one body and when the key straddles two bodies' boundary."""
    pem = (
        b"-----BEGIN RSA PRIVATE KEY-----\\n"
        + b"\\n".join(b"MIIEowIBAAKCAQEA1b2c3" * 3 for _ in range(4000))
        + b"\\n-----END RSA PRIVATE KEY-----"
    )
    jwt = b"eyJhbGciOiJSUzI1NiJ9.eyJ" + b"c3ViIjoiMTIzNDU2Nzg5MCJ9" * 800 + b".sig_" + b"Q" * 600
    for key in (LONG_KEY, pem, jwt):
        body = b'{"content":"see ' + key + b' ok"}'
        red = REDACTOR.redact_bytes(body)
        assert red == b'{"content":"see ' + red[16 : 16 + len(key)] + b' ok"}'
        assert red[16 : 16 + len(key)].strip(b"*") == b"REDACTED", key[:20]
        session = SessionRedactor(REDACTOR)
        history = b'{"content":"' + b"lorem ipsum " * 800
        half = history + key[: len(key) // 2]
        assert session.redact_body(half) == REDACTOR.redact_bytes(half)
        whole = history + key + b' ok"}'
        masked = session.redact_body(whole)
        assert masked == REDACTOR.redact_bytes(whole)
        assert masked.endswith(b"*" * 32 + b' ok"}')


def test_recording_masks_escaped_split_and_known_keys_in_request_bodies(
    tmp_path: pytest.TempPathFactory,
) -> None:
    """Through ``recording_client`` with the built-in rules and a known value: each
    request completes a key the previous one began, in every form; the tape holds
    what whole scans give and none of the keys."""
    key = b"sk-proj-" + b"Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0"
    rng = random.Random(3)
    history = b'{"messages":[{"role":"user","content":"' + TRIGGER + b"lorem ipsum " * 500
    texts = [history + b"start"]
    for planted in (*_forms(key, rng).values(), _escaped(VALUE.encode(), rng)):
        texts.append(history + b" " + planted[:9] + b'"}]}')  # the key begins ...
        texts.append(history + b" " + planted + b' done"}]}')  # ... and is completed

    tape = tmp_path / "t.tape"  # type: ignore[operator]
    bodies = recorded_bodies(tape, texts, REDACTOR, session_id="00000000000000d5")
    assert bodies == [REDACTOR.redact_bytes(t) for t in texts]
    for body in bodies[2::2]:
        assert REDACTOR.scan_bytes(body) == ()  # nothing secret-shaped is left
        assert b"Gf0" not in body and b"QaT7" not in body


@pytest.mark.slow
def test_a_view_that_turns_on_is_carried_on_from_the_body_that_has_it() -> None:
    """A body that extends one without the event-text view (``a``) while a later
    body (``b``, which diverged from ``a`` and turned the view on) shares its first
    bytes too: the new body's view is grown from ``b``'s, not built whole again,
    and every body is still what a whole scan gives."""
    session = SessionRedactor(REDACTOR)
    rng = random.Random(4)

    def words(n: int) -> bytes:
        text = b"".join(rng.choice(NOISE).replace(b'"', b"'") for _ in range(n))
        return text + _forms(rng.choice(KEYS), rng)[rng.choice(["raw", "escaped", "split"])]

    def body(texts: list[bytes]) -> bytes:
        joined = b",".join(b'{"role":"user","content":"' + t + b'"}' for t in texts)
        return b'{"messages":[' + joined + b"]}"

    head = [_mark(b"one") + words(2000)] + [words(2000) for _ in range(39)]
    more = [words(2000) for _ in range(3)]
    a = body(head + more)  # one "data:" line: no event-text view
    b = body([*head, _mark(b"two") + words(2000)])  # the second "data:" line turns it on
    c = body([*head, *more, words(300), _mark(b"three") + words(300)])
    before = {}
    for name, body in (("a", a), ("b", b), ("c", c)):
        scanned = session.scanned
        assert session.redact_body(body) == REDACTOR.redact_bytes(body), name
        before[name] = session.scanned - scanned
    assert before["b"] > len(b)  # the view turned on: built and scanned whole once
    assert before["c"] < len(c) // 2  # raw bytes carried on from a, the view from b


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"])
def test_a_key_streamed_across_two_events_is_masked_with_any_line_ending(eol: bytes) -> None:
    """An event stream framed with LF, CR or CRLF lines: its event texts are joined,
    so a key the model streams in two pieces is masked in both."""
    key = b"sk-proj-" + b"Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0"
    events = [
        b'data: {"delta":{"text":"the key is ' + key[:12] + b'"}}',
        b'data: {"delta":{"text":"' + key[12:] + b' ok"}}',
    ]
    stream = (eol + eol).join(events) + eol + eol
    masked = REDACTOR.redact_bytes(stream)
    assert key[:12] not in masked and key[12:] not in masked
    assert masked.count(b"data: ") == 2 and len(masked) == len(stream)


def test_data_inside_a_json_string_is_not_an_event_stream() -> None:
    """``data:`` twice inside a request's message text does not join the messages'
    texts: no reader joins them, and the body costs one scan, not two."""
    session = SessionRedactor(REDACTOR)
    history = b'{"messages":[{"role":"user","content":"data: a \\ndata: b ' + b"lorem ipsum " * 4000
    halves = b'sk-pr"},{"role":"assistant","content":"oj-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0 ok"}]}'
    first, second = history + b'"}]}', history + b'"},{"role":"user","content":"' + halves
    assert session.redact_body(first) == REDACTOR.redact_bytes(first) == first
    scanned = session.scanned
    assert session.redact_body(second) == REDACTOR.redact_bytes(second) == second
    assert session.scanned - scanned < len(second) // 2  # raw bytes only, from the edge


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(
        st.sampled_from([b"data:", b"\n", b"\r", b"\r\n", b"x", b"d", b":"]), max_size=30
    ).map(b"".join),
    at=st.integers(0, 40),
    want=st.integers(1, 3),
)
def test_data_lines_are_found_where_a_line_starts(data: bytes, at: int, want: int) -> None:
    """``line_marks`` against its definition, byte by byte."""
    expected = [
        p
        for p in range(min(at, len(data) + 1), len(data))
        if data.startswith(b"data:", p) and (p == 0 or data[p - 1] in b"\r\n")
    ][:want]
    assert line_marks(data, at, want) == expected
