"""Recording redacts a request body by what changed, with the whole-body scan's result.

Each new request body that repeats an earlier one's conversation is scanned
only from shortly before the end of the shared prefix (``reach`` bytes, the
longest a rule's match can be).  These tests plant secrets on both sides of
and across that boundary and compare with ``Redactor.redact_bytes`` on the
whole body; they count the bytes scanned rather than time them.
"""

from __future__ import annotations

import json
import random
import re

import attrs
import pytest
from builders import recorded_bodies
from hypothesis import given, settings
from hypothesis import strategies as st
from test_redact_speed import NOISE, SECRETS

from evaltape.recorder.redact import Redactor, SecretRule
from evaltape.recorder.redact._delta import SessionRedactor, reach, rule_reach
from evaltape.recorder.redact._rules import DEFAULT_RULES

LIMIT = 120


def _bounded(rule: SecretRule) -> SecretRule:
    """``rule`` with every open repetition (``*``, ``+``, ``{n,}``) capped at ``LIMIT``."""
    out: list[str] = []
    p = rule.pattern
    i, in_class = 0, False
    while i < len(p):
        c = p[i]
        if c == "\\":
            out.append(p[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if p[i + 1 : i + 2] == "]":  # a "]" first in a class is a literal
                out.append("[]")
                i += 2
                continue
        elif c in "*+":
            c = f"{{{0 if c == '*' else 1},{LIMIT}}}"
        elif c == "{" and (m := re.match(r"\{(\d+),\}", p[i:])):
            out.append(f"{{{m.group(1)},{LIMIT}}}")
            i += m.end()
            continue
        out.append(c)
        i += 1
    return attrs.evolve(rule, pattern="".join(out))


BOUNDED = tuple(b for r in DEFAULT_RULES if rule_reach(b := _bounded(r)) is not None)
EXTRA = (
    SecretRule(kind="ticket", pattern=r"(?<![a-z])tkt_[a-z0-9]{6,30}(?![a-z0-9])"),
    SecretRule(kind="named", pattern=r"pin=(?P<s>[0-9]{4,12})\b"),
)
REDACTOR = Redactor(rules=BOUNDED + EXTRA)


def test_the_bounded_rules_have_a_reach_and_open_ones_do_not() -> None:
    assert len(BOUNDED) == len(DEFAULT_RULES)
    assert reach(REDACTOR.rules) is not None
    assert rule_reach(SecretRule(kind="x", pattern=r"sk-[a-z]{20,}")) is None
    assert rule_reach(SecretRule(kind="x", pattern=r"ab(?=cd)")) == 4  # the lookahead reads 2
    assert reach((SecretRule(kind="x", pattern=r"a{2,9}"),)) == (10,)
    # Every planted secret is still found by the bounded rules.
    for secret in SECRETS:
        assert REDACTOR.redact_bytes(secret) != secret, secret


def _conversation(rng: random.Random, turns: int, filler: int) -> list[bytes]:
    """Request bodies of a chat that grows by one message a turn, with secrets planted."""
    messages: list[str] = []
    out = []
    for _ in range(turns):
        words = [rng.choice(NOISE).decode() for _ in range(filler)]
        for _ in range(rng.randint(0, 2)):
            words.insert(rng.randrange(len(words) + 1), rng.choice(SECRETS).decode())
        words.insert(
            rng.randrange(len(words) + 1),
            f"tkt_{rng.randrange(10**8):08d}x pin={rng.randrange(10**6)}",
        )
        messages.append("".join(words))
        body = {"messages": [{"role": "user", "content": m} for m in messages], "tools": ["t"] * 20}
        out.append(json.dumps(body).encode())
    return out


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), filler=st.integers(200, 1500))
def test_partial_scans_give_what_whole_scans_give(seed: int, filler: int) -> None:
    session = SessionRedactor(REDACTOR)
    for body in _conversation(random.Random(seed), 6, filler):
        assert session.redact_body(body) == REDACTOR.redact_bytes(body)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_secrets_planted_across_the_shared_prefix_are_masked_whole(data: st.DataObject) -> None:
    """A body that ends inside (or just after) a secret, then one that completes it:
    the second shares a prefix ending anywhere in or around the secret."""
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    filler = "".join(rng.choice(NOISE).decode() for _ in range(2000)).encode()
    secret = data.draw(st.sampled_from(SECRETS))
    cut = data.draw(st.integers(-40, len(secret) + 40))
    tail = b" and then " + rng.choice(SECRETS) + b" more text " * 10
    first = filler + (secret[:cut] if cut >= 0 else b"")
    second = filler + secret + tail
    third = second[: len(filler) + max(0, cut)] + b"X" + second[len(filler) + max(0, cut) :]
    session = SessionRedactor(REDACTOR)
    for body in (first, second, third, second):
        assert session.redact_body(body) == REDACTOR.redact_bytes(body)
    assert secret not in session.redact_body(second)


@pytest.mark.slow
def test_each_body_costs_its_new_bytes_plus_an_edge_window() -> None:
    redactor = Redactor(rules=tuple(r for r in REDACTOR.rules if "PRIVATE" not in r.pattern))
    session = SessionRedactor(redactor)
    assert session.reach is not None
    widest = max(session.reach)
    bodies = _conversation(random.Random(7), 40, 2000)
    before = previous = 0
    total = 0
    for n, body in enumerate(bodies):
        session.redact_body(body)
        cost, before = session.scanned - before, session.scanned
        total += len(body)
        if n and len(body) > 4 * widest:
            new = len(body) - previous
            # the new message, the unchanged tail after it, and twice the longest reach
            assert cost <= new + 400 + 2 * widest, n
        previous = len(body)
    assert session.scanned * 3 < total  # a whole scan of every body is quadratic


def test_open_ended_rules_scan_every_body_whole() -> None:
    from builders import CHAT_URL, exchange

    redactor = Redactor(rules=(SecretRule(kind="x", pattern=r"sk-[a-z0-9]{20,}"),))
    session = SessionRedactor(redactor)
    assert session.reach is None
    body = {"messages": [{"role": "user", "content": "sk-" + "a1" * 400}]}
    recorded = exchange(CHAT_URL, body, {"ok": True})
    assert session.redact_exchange(recorded) == redactor.redact_exchange(recorded)


def test_recording_masks_a_key_split_across_two_requests(tmp_path: pytest.TempPathFactory) -> None:
    """Through ``recording_client``: the first request ends in the start of a key, the
    second completes it; the tape holds neither part."""
    key = "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0"
    history = "lorem ipsum dolor " * 400

    texts = [(history + k).encode() for k in (key[:12], key + " done", key + " more")]
    tape = tmp_path / "t.tape"  # type: ignore[operator]
    bodies = recorded_bodies(tape, texts, REDACTOR, session_id="00000000000000d4")
    assert bodies == [REDACTOR.redact_bytes(t) for t in texts]
    assert all(b"Zx9Yw8Vu7Ts6" not in b for b in bodies)
    assert b"REDACTED" in bodies[1] and b"REDACTED" in bodies[2]
