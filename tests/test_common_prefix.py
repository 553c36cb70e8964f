"""``common_prefix``: exact on every pair, and its remembered results never leak to
other objects."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from evaltape.recorder.tape._delta import _REMEMBER, common_prefix


def _naive(a: bytes, b: bytes) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@settings(max_examples=60, deadline=None)
@given(
    shared=st.integers(0, 3 * _REMEMBER),
    tail_a=st.binary(max_size=40),
    tail_b=st.binary(max_size=40),
)
def test_long_and_short_pairs_agree_with_a_byte_by_byte_count(
    shared: int, tail_a: bytes, tail_b: bytes
) -> None:
    head = os.urandom(shared)
    a, b = head + tail_a, head + tail_b
    expected = shared + _naive(tail_a, tail_b)
    assert common_prefix(a, b) == expected
    assert common_prefix(a, b) == expected  # remembered for long bodies: the same
    assert common_prefix(b, a) == expected


def test_a_remembered_result_is_only_given_for_the_same_two_objects() -> None:
    a = b"x" * (2 * _REMEMBER)
    b = a[:-1] + b"y"
    c = bytearray(a)
    c[_REMEMBER] = ord("z")
    equal_to_b = bytes(bytearray(b))  # same bytes as b, another object
    assert common_prefix(a, b) == len(a) - 1
    assert common_prefix(a, bytes(c)) == _REMEMBER
    assert common_prefix(a, equal_to_b) == len(a) - 1
    assert common_prefix(a, b) == len(a) - 1
