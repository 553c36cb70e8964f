"""A response read from a tape behaves as the one written, however its chunks are asked for.

The reader keeps a response's joined body and builds its chunks on first use
(rescoring reads only the body); every way of looking at the response gives
what was recorded.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import attrs

from evaltape.recorder import (
    Chunk,
    Exchange,
    Request,
    Response,
    SessionStarted,
    TapeReader,
    open_session,
)

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
