"""Times on a tape: exchange times as whole microseconds stored as ints (since format
1.2), chunk times as whole milliseconds stored as steps (since format 2.1)."""

from __future__ import annotations

import math
from pathlib import Path

import msgpack
import pytest
from builders import exchange, stored_tape
from hypothesis import given
from hypothesis import strategies as st

from evaltape.recorder import (
    Chunk,
    Exchange,
    Request,
    Response,
    SessionStarted,
    TapeReader,
    open_session,
)
from evaltape.recorder.tape._codec import to_plain
from evaltape.recorder.tape._frames import parse_file_header
from evaltape.recorder.tape._pack import Packer, Unpacker

SID = "00000000000000d1"


def _stored_times(plain: dict[str, object]) -> tuple[object, object, object]:
    packed = Packer().pack(plain)
    stored = msgpack.unpackb(packed)
    back = Unpacker().unpack(packed)
    assert stored["k"] == "exchange4"
    return stored["x"][0], stored["x"][1], (back["at"], back["duration"])


@given(
    st.floats(min_value=-1e6, max_value=1e9, allow_nan=False),
    st.floats(min_value=0, max_value=1e5, allow_nan=False),
)
def test_a_recorded_time_is_stored_as_whole_microseconds_and_reads_back_equal(
    at: float, duration: float
) -> None:
    sent = exchange("u", b"{}", at=at, duration=duration)
    assert sent.at == round(at, 6)  # the precision a tape keeps, as for chunk times
    stored_at, stored_duration, back = _stored_times(to_plain(sent))
    assert type(stored_at) is int and type(stored_duration) is int
    assert back == (sent.at, sent.duration)


@pytest.mark.parametrize("value", [0.1234567, 1e300, -1e300, math.inf, 2.0**60, -0.0])
def test_a_time_that_is_not_whole_microseconds_is_stored_as_the_float_it_is(value: float) -> None:
    plain = to_plain(exchange("u", b"{}", duration=0.0))
    plain["at"] = value
    stored_at, stored_duration, back = _stored_times(plain)
    assert type(stored_at) is float and math.copysign(1.0, stored_at) == math.copysign(1.0, value)
    assert stored_at == value
    # Read back, it is what an ``Exchange`` holds: whole microseconds, -0.0 as 0.0.
    assert back[0] == round(value, 6)
    assert math.copysign(1.0, back[0]) == (1.0 if value == 0 else math.copysign(1.0, value))
    assert stored_duration == 0 and back[1] == 0.0


def test_nan_is_kept_as_a_float() -> None:
    plain = to_plain(exchange("u", b"{}", duration=0.0))
    plain["duration"] = math.nan
    _, stored_duration, back = _stored_times(plain)
    assert type(stored_duration) is float and math.isnan(back[1])


@pytest.mark.parametrize(
    ("kind", "at", "duration", "read"),
    [
        ("exchange4", 1_500_000, 250, (1.5, 0.00025)),  # ints count microseconds
        ("exchange4", 1.25, 0.5, (1.25, 0.5)),  # floats count seconds
        ("exchange3", 1_500_000, 250, (1.5, 0.00025)),  # format 1.2 to 2.0: as exchange4
        ("exchange3", 1.25, 0.5, (1.25, 0.5)),  # floats count seconds
        ("exchange2", 3, 2, (3, 2)),  # format 1.1: ints count seconds, as the plain map's
    ],
)
def test_each_compact_kind_reads_its_times_in_its_own_unit(
    tmp_path: Path, kind: str, at: object, duration: object, read: tuple[float, float]
) -> None:
    path = tmp_path / "t.tape"
    q = ["POST", "u", [], b"{}", None]
    stored_tape(path, SID, [{"k": kind, "x": [at, duration, q, None, None]}])
    (session,) = TapeReader(path).sessions()
    (read_back,) = [e for e in session.events if isinstance(e, Exchange)]
    assert (read_back.at, read_back.duration) == read


def test_a_written_tape_says_format_2_1_and_its_exchanges_are_exchange4(tmp_path: Path) -> None:
    path = tmp_path / "t.tape"
    sent = exchange("u", b"{}", at=12.345678, duration=0.5)
    with open_session(path, SessionStarted(session_id=SID, started_at=0.0)) as tape:
        tape.append(sent)
    header = parse_file_header(path.read_bytes())
    assert header is not None and (header.major, header.minor) == (2, 1)
    (session,) = TapeReader(path).sessions()
    assert session.events[1] == sent


def test_chunk_times_are_kept_to_the_millisecond_and_stored_as_steps() -> None:
    chunks = tuple(Chunk(at=at, data=b"x") for at in (0.0123456, 0.0129, 0.0131, 1.5004, 1.4))
    assert [c.at for c in chunks] == [0.012, 0.013, 0.013, 1.5, 1.4]
    sent = Exchange(
        at=0.0,
        duration=2.0,
        request=Request(method="POST", url="u"),
        response=Response(status=200, chunks=chunks),
    )
    packed = Packer().pack(to_plain(sent))
    # the steps from one chunk time to the next, in milliseconds (one may be negative)
    assert msgpack.unpackb(packed)["x"][3][7] == [12, 1, 0, 1487, -100]
    back = Unpacker().unpack_event(packed)
    assert back == sent and [c.at for c in back.response.chunks] == [c.at for c in chunks]


def test_chunk_times_of_a_format_2_0_tape_read_to_the_millisecond(tmp_path: Path) -> None:
    path = tmp_path / "t.tape"
    q = ["POST", "u", [], b"{}", None]
    r = [200, [], True, b"abc", [0, 0, 0], [0, 0, 0], [1, 1, 1], [1_499, 2, 1_000_500]]
    stored_tape(path, SID, [{"k": "exchange3", "x": [0, 2_000_000, q, r, None]}])
    (session,) = TapeReader(path).sessions()
    (read_back,) = [e for e in session.events if isinstance(e, Exchange)]
    assert read_back.response is not None and read_back.response.assembled is None
    assert [(c.at, c.data) for c in read_back.response.chunks] == [
        (0.001, b"a"),
        (0.002, b"b"),
        (1.002, b"c"),
    ]
