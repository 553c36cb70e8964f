"""The typed read of compact exchanges (``_typed``): from the frame or from what msgpack read.

Every frame below is read twice, by fresh readers that have seen the same frames
before it: once as the writer packed it (decoded straight from the frame) and
once with its two keys the other way round (read by msgpack, its ``x`` then
packed again for the same decoder).  Both give the same exchange, or both refuse it with the same
message, a ``ValueError`` or ``TapeError`` (what a tape reader reports as corrupt).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import attrs
import msgpack
import pytest
from builders import exchange

from evaltape.recorder import (
    Assembled,
    Exchange,
    Request,
    TapeError,
    TransportError,
)
from evaltape.recorder._events import with_assembled
from evaltape.recorder.tape._codec import to_plain
from evaltape.recorder.tape._pack import Packer, Unpacker
from evaltape.recorder.tape._typed import PREFIX


def _turn(n: int) -> Exchange:
    """The ``n``th of a run of streamed calls, each longer than the one before."""
    body = b'{"model":"m","messages":[%s]}' % b",".join(b'{"n":%d}' % i for i in range(n + 1))
    headers = (("content-type", "application/json"), ("x-turn", str(n)))
    sent = exchange(
        "http://127.0.0.1/v1",
        body,
        request_headers=headers,
        at=0.5 * n,
        duration=0.25,
        headers=headers,
        chunks=[b'data: {"t":"%d"}\n\n' % i for i in range(n + 2)],
        chunk_at=0.0,
        chunk_every=0.001,
        streamed=True,
    )
    if n % 2:  # every other one with its message assembled
        assert sent.response is not None
        assembled = Assembled(
            version=1,
            model="m",
            output_text="t" * n,
            tool_calls=(("c1", "read", '{"p": 1}'),),
            usage=(n, 2, 0, 0, 0, None),
        )
        sent = attrs.evolve(sent, response=with_assembled(sent.response, assembled))
    return sent


def _frames(count: int) -> list[bytes]:
    packer = Packer()
    return [packer.pack(to_plain(_turn(n))) for n in range(count)]


FRAMES = _frames(3)


def _read(frames: list[bytes], read: Callable[[Unpacker, bytes], Any]) -> Any:
    """The last frame read by a reader that read the ones before it as a tape reader does;
    its exchange, or the refusal's type and message."""
    unpacker = Unpacker()
    for frame in frames[:-1]:
        unpacker.unpack_event(frame)
    try:
        return read(unpacker, frames[-1])
    except (ValueError, TapeError) as exc:  # (compared, not swallowed)
        return type(exc).__name__, str(exc)


def _typed(unpacker: Unpacker, frame: bytes) -> Any:
    return unpacker.unpack_event(frame)


def _general(unpacker: Unpacker, frame: bytes) -> Any:
    """The frame's map with ``x`` before ``k``: msgpack reads it first."""
    if frame.startswith(PREFIX):
        stored = msgpack.unpackb(frame)
        frame = msgpack.packb({"x": stored["x"], "k": stored["k"]}, use_bin_type=True)
    assert not frame.startswith(PREFIX)
    return unpacker.unpack_event(frame)


def test_the_writers_exchanges_take_the_typed_read() -> None:
    assert all(frame.startswith(PREFIX) for frame in FRAMES)
    unpacker = Unpacker()
    assert [unpacker.unpack_event(frame) for frame in FRAMES] == [_turn(n) for n in range(3)]


VALUES = [
    None,
    True,
    False,
    0,
    1,
    -1,
    7,
    2**64 - 1,
    0.0,
    1.5,
    "s",
    "content-type",
    b"b",
    b"",
    [],
    [0],
    [0, 0],
    [1, 0, 0],
    [True, 0, 0],
    [0, 0, 0, 0],
    ["x", "y"],
    [3, "v"],
    {"a": 1},
    {"type": "ReadError", "message": "m", "after_chunks": 0, "after_bytes": 0},
    msgpack.ExtType(1, b"x"),
]
"""What a slot may hold instead: the usual types, their look-alikes, and others."""


def _slots(stored: dict[str, Any]) -> list[tuple[list[Any], int]]:
    """Every (container, index) of the stored exchange's ``x``, nested ones included."""
    x = stored["x"]
    out: list[tuple[list[Any], int]] = [(x, i) for i in range(5)]
    q, r = x[2], x[3]
    out += [(q, i) for i in range(5)]
    out += [(q[2], i) for i in range(len(q[2]))]
    if q[4] is not None:
        out += [(q[4], i) for i in range(len(q[4]))]
    if r is not None:
        out += [(r, i) for i in range(9)]
        out += [(r[1], i) for i in range(len(r[1]))]
        out += [(column, i) for column in r[4:8] for i in range(len(column))]
        if r[8] is not None:
            out += [(r[8], i) for i in range(9)]
            out += [(r[8][6][0], i) for i in range(3)] + [(r[8][7], i) for i in range(6)]
    return out


@pytest.mark.parametrize("which", range(len(FRAMES)))
def test_a_frame_with_any_slot_changed_reads_the_same_both_ways(which: int) -> None:
    """Each slot of the stored exchange in turn, nested ones included, holds each value."""
    stored = msgpack.unpackb(FRAMES[which])
    checked = 0
    for slot in range(len(_slots(stored))):
        for value in VALUES:
            changed = copy.deepcopy(stored)
            container, index = _slots(changed)[slot]
            container[index] = value
            frames = [*FRAMES[:which], msgpack.packb(changed, use_bin_type=True)]
            typed, general = _read(frames, _typed), _read(frames, _general)
            assert typed == general, (slot, value)
            checked += 1
    assert checked >= 30 * len(VALUES)


@pytest.mark.parametrize(
    "frame",
    [
        {"x": None, "k": "exchange4"},  # the keys the other way round
        {"k": "exchange4", "x": None, "y": 1},
        {"k": "exchange4"},
    ],
    ids=["keys swapped", "a third key", "no x"],
)
def test_maps_of_another_shape_are_read_the_general_way(frame: dict[str, Any]) -> None:
    x = msgpack.unpackb(FRAMES[0])["x"]
    stored = {k: (x if k == "x" else v) for k, v in frame.items()}
    packed = msgpack.packb(stored, use_bin_type=True)
    typed, general = _read([packed], _typed), _read([packed], _general)
    assert typed == general
    assert not packed.startswith(PREFIX) or len(stored) != 2


def test_a_transport_error_and_no_response_read_the_same_both_ways() -> None:
    failed = Exchange(
        at=1.0,
        duration=2.0,
        request=Request(method="POST", url="u", body=b"{}"),
        error=TransportError(type="ConnectError", message="refused"),
    )
    packed = Packer().pack(to_plain(failed))
    assert _read([packed], _typed) == _read([packed], _general) == failed
