"""Rewriting a tape as today's writer writes it (``evals/migrate_tapes.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest
from builders import CHAT_URL, OldPacker, exchange

from evaltape.recorder import Exchange, SessionStarted, TapeError, TapeReader, open_session
from evaltape.recorder._migrate import migrate_tape

SID = "00000000000000f1"


def _stream() -> list[bytes]:
    events = [
        {"id": "c1", "model": "gpt-x", "choices": [{"index": 0, "delta": {"content": w}}]}
        for w in ("Hello", " there")
    ]
    return [b"data: " + json.dumps(e).encode() + b"\n\n" for e in events] + [b"data: [DONE]\n\n"]


def _old_tape(path: Path, *, end: bool = True) -> Exchange:
    """A format 2.0 tape (``exchange3``) of one streamed call with a provider's headers."""
    sent = exchange(
        CHAT_URL,
        {"model": "gpt-x", "stream": True},
        headers=(
            ("content-type", "text/event-stream"),
            ("x-request-id", "req_1"),
            ("x-ratelimit-remaining-tokens", "99"),
        ),
        chunks=_stream(),
        chunk_every=0.0123456,
    )
    tape = open_session(path, SessionStarted(session_id=SID, started_at=5.0, model="gpt-x"))
    tape._packer = OldPacker("exchange3")  # type: ignore[assignment]
    tape.append(sent)
    if end:
        tape.end()
    return sent


def test_a_migrated_tape_keeps_its_sessions_and_takes_what_a_recording_keeps_today(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.tape"
    sent = _old_tape(path)
    (before,) = TapeReader(path).sessions()
    assert migrate_tape(path) == 1
    (after,) = TapeReader(path).sessions()
    assert after.header == before.header and after.events[-1] == before.events[-1]
    (old,), (new,) = ([e for e in s.events if isinstance(e, Exchange)] for s in (before, after))
    assert new.response is not None and sent.response is not None
    assert new.response.headers == (("content-type", "text/event-stream"),)
    assert new.response.chunks == sent.response.chunks  # byte for byte, times to the ms
    assert new.response.assembled is not None
    assert new.response.assembled.output_text == "Hello there"
    assert new == attrs.evolve(
        old, response=attrs.evolve(old.response, headers=new.response.headers)
    )
    assert migrate_tape(path) == 1 and list(TapeReader(path).sessions()) == [after]


def test_a_tape_with_an_unfinished_session_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "t.tape"
    _old_tape(path, end=False)
    data = path.read_bytes()
    with pytest.raises(TapeError, match=f"session {SID} is not complete"):
        migrate_tape(path)
    assert path.read_bytes() == data and sorted(p.name for p in tmp_path.iterdir()) == ["t.tape"]
