"""A response read from a tape behaves as the one written, however its chunks are asked for.

The reader keeps a response's joined body and builds its chunks on first use
(rescoring reads only the body); every way of looking at the response gives
what was recorded.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import attrs
import pytest
import zstandard
from builders import OldPacker
from test_tape_roundtrip import _file_header

from evaltape.recorder import (
    Chunk,
    Exchange,
    Request,
    Response,
    SessionStarted,
    TapeReader,
    open_session,
)
from evaltape.recorder._shared import to_plain
from evaltape.recorder.tape._frames import FLAG_END, FLAG_START, frame

CHUNKS = (
    Chunk(at=0.001, data=b"data: {}\n\n"),
    Chunk(at=0.25, data=b""),
    Chunk(at=1.5, data=b"data: [DONE]\n\n"),
)
HUGE = (Chunk(at=2.0**53 / 1e6 * 3, data=b"late"),)  # past 2**53 microseconds


def _written(tmp_path: Path, chunks: tuple[Chunk, ...]) -> tuple[Response, Response]:
    """The response recorded and the same response read back."""
    response = Response(status=200, headers=(("content-type", "text/event-stream"),), chunks=chunks)
    request = Request(method="POST", url="http://127.0.0.1:9/v1/chat/completions", body=b"{}")
    path = tmp_path / f"{len(list(tmp_path.iterdir()))}.tape"
    header = SessionStarted(session_id="00000000000000d4", started_at=1.0)
    with open_session(path, header, clock=lambda: 0.0) as writer:
        writer.append(Exchange(at=0.0, duration=2.0, request=request, response=response))
    (session,) = TapeReader(path).sessions()
    (exchange,) = [e for e in session.events if isinstance(e, Exchange)]
    assert exchange.response is not None
    return response, exchange.response


def test_the_body_read_first_is_the_recorded_body_and_the_chunks_follow(tmp_path: Path) -> None:
    written, read = _written(tmp_path, CHUNKS)
    assert read.body == written.body == b"data: {}\n\ndata: [DONE]\n\n"
    assert read.chunks == CHUNKS
    assert read.chunks is read.chunks  # built once
    assert read.body == b"".join(c.data for c in read.chunks)


def test_equality_hash_repr_and_evolve_see_the_chunks(tmp_path: Path) -> None:
    written, read = _written(tmp_path, CHUNKS)
    assert read == written and hash(read) == hash(written)
    _, fresh = _written(tmp_path, CHUNKS)
    assert repr(fresh) == repr(written)
    _, fresh = _written(tmp_path, CHUNKS)
    assert attrs.evolve(fresh, status=201).chunks == CHUNKS
    _, fresh = _written(tmp_path, CHUNKS[:2])
    assert fresh != written


def test_a_read_response_pickles_to_an_equal_one(tmp_path: Path) -> None:
    written, read = _written(tmp_path, CHUNKS)
    copy = pickle.loads(pickle.dumps(read))
    assert copy == written and copy.body == written.body and copy.chunks == CHUNKS


def test_chunk_times_past_two_to_the_53_microseconds_read_back(tmp_path: Path) -> None:
    written, read = _written(tmp_path, HUGE)
    assert read.body == b"late"
    assert read.chunks == written.chunks


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        ([["host", 1]], "field 'headers' holds an item that is not [str, str]"),
        ([["host"]], "field 'headers' holds an item that is not [name, value]"),
        ("host", "field 'headers' holds str"),
        ([[b"host", "x"]], "field 'headers' holds an item that is not [str, str]"),
    ],
)
def test_malformed_headers_on_a_tape_are_named_as_before(
    tmp_path: Path, rows: object, problem: str
) -> None:
    """Headers are checked in C on the way in; what that refuses is worded as ever."""
    sid = "00000000000000d5"
    request = {"method": "POST", "url": "http://127.0.0.1:9/", "headers": rows, "body": b""}
    plains = [
        to_plain(SessionStarted(session_id=sid, started_at=1.0)),
        {"k": "exchange", "at": 0.0, "duration": 1.0, "request": request, "response": None},
        {"k": "session_ended", "at": 2.0, "status": "completed"},
    ]
    packer = OldPacker("exchange")  # format 1.0 exchanges: the headers as written
    zstd = zstandard.ZstdCompressor().compressobj()
    data = _file_header(1, 0, b"evaltape test")
    for seq, plain in enumerate(plains):
        raw = packer.pack(plain)
        last = seq == len(plains) - 1
        mode = zstandard.COMPRESSOBJ_FLUSH_FINISH if last else zstandard.COMPRESSOBJ_FLUSH_BLOCK
        flags = (FLAG_START if seq == 0 else 0) | (FLAG_END if last else 0)
        data += frame(
            flags, bytes.fromhex(sid), seq, len(raw), zstd.compress(raw) + zstd.flush(mode)
        )
    path = tmp_path / "bad.tape"
    path.write_bytes(data)
    reader = TapeReader(path, strict=False)
    (session,) = reader.sessions()
    assert not session.complete
    assert f"malformed 'exchange' event: {problem}" in session.problem
