"""Redaction of the shapes a plain scan misses, of every event kind, and of undecodable bodies."""

from __future__ import annotations

import gzip

import pytest

from evaltape.recorder import (
    Chunk,
    Exchange,
    FactKind,
    FileEntry,
    HarnessEvent,
    Mode,
    Request,
    Response,
    RunnerFact,
    SessionEnded,
    SessionStarted,
    Status,
    WorkspaceSnapshot,
)
from evaltape.recorder.redact import default_redactor, secret_values

KEY = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2
REDACTOR = default_redactor()


@pytest.mark.parametrize(
    ("data", "secret"),
    [
        (b"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", b"wJalrXUtnFEMI"),
        (b'{"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}', b"bPxRf"),
        (b'{"k": "\\u0073k-proj-' + b"x9Y8z7W6v5U4t3S2r1Q0" * 2 + b'"}', b"x9Y8z7W6"),
        (b'{"k": "\\u0073\\u006b-' + b"x9Y8z7W6v5U4t3S2r1Q0" + b'"}', b"x9Y8z7W6"),
        (b"key: sk-ab12cd34 end", b"ab12cd34"),
        (b"postgres://user:hunter2pw@db:5432/app", b"hunter2pw"),
        (b"mysql+pymysql://root:Pa55word@localhost/x", b"Pa55word"),
    ],
)
def test_shapes_a_plain_scan_missed_are_masked(data: bytes, secret: bytes) -> None:
    red = REDACTOR.redact_bytes(data)
    assert secret not in red
    assert len(red) == len(data)
    assert b"REDACTED" in red


@pytest.mark.parametrize(
    "text", [b"sk-learn is a library", b"risk-2024 report", b"https://api.openai.com/v1/x"]
)
def test_ordinary_text_is_left_alone(text: bytes) -> None:
    assert REDACTOR.redact_bytes(text) is text


def test_a_key_split_across_two_sse_events_is_masked_in_both() -> None:
    body = (
        b'data: {"choices":[{"delta":{"content":"sk-proj-a1B2c3D4e5"}}]}\n\n'
        b'data: {"choices":[{"delta":{"content":"F6g7H8i9J0k1L2m3"}}]}\n\n'
    )
    response = Response(
        status=200,
        headers=(("content-type", "text/event-stream"),),
        chunks=(Chunk(at=0.0, data=body[:60]), Chunk(at=0.1, data=body[60:])),
    )
    red = b"".join(c.data for c in REDACTOR.redact_response(response).chunks)
    assert b"a1B2c3D4e5" not in red and b"F6g7H8i9J0k1L2m3" not in red
    assert len(red) == len(body)
    assert red.count(b"data: ") == 2  # the framing is untouched


def test_stacked_encodings_are_decoded_redacted_and_encoded_again() -> None:
    body = gzip.compress(gzip.compress(b'{"key": "' + KEY.encode() + b'"}'))
    response = Response(
        status=200,
        headers=(("content-encoding", "gzip, gzip"), ("content-length", str(len(body)))),
        chunks=(Chunk(at=0.0, data=body),),
    )
    red = REDACTOR.redact_response(response)
    data = gzip.decompress(gzip.decompress(b"".join(c.data for c in red.chunks)))
    assert KEY.encode() not in data and b"REDACTED" in data
    assert dict(red.headers)["content-length"] == str(sum(len(c.data) for c in red.chunks))


def test_an_undecodable_body_is_replaced_by_a_marker_never_written_raw() -> None:
    raw = b"\x1f\x8b not really gzip " + KEY.encode()
    response = Response(
        status=200,
        headers=(("content-encoding", "gzip"), ("content-length", str(len(raw)))),
        chunks=(Chunk(at=0.0, data=raw[:10]), Chunk(at=0.2, data=raw[10:])),
    )
    red = REDACTOR.redact_response(response)
    joined = b"".join(c.data for c in red.chunks)
    assert joined.startswith(b"[evaltape: body not recorded")
    assert len(red.chunks) == 2 and [c.at for c in red.chunks] == [0.0, 0.2]
    assert "content-encoding" not in dict(red.headers)
    assert dict(red.headers)["content-length"] == str(len(joined))


def test_known_values_are_masked_wherever_they_occur() -> None:
    env = {"SERVICE_TOKEN": "zq8Lm2Vx9Pw4", "HOME": "/home/me", "DB_PASSWORD": "short"}
    values = secret_values(env)
    assert values == ("zq8Lm2Vx9Pw4",)  # HOME is no secret; "short" is too short to mask
    red = REDACTOR.extended(values=values)
    assert red.redact_text("echo zq8Lm2Vx9Pw4 done") == "echo REDACTED**** done"
    escaped = b'{"t": "\\u007aq8Lm2Vx9Pw4"}'
    assert b"q8Lm2Vx9Pw4" not in red.redact_bytes(escaped)


def test_every_rule_has_a_bounded_longest_match() -> None:
    assert 0 < REDACTOR.longest < 1 << 20
    assert REDACTOR.extended(values=["x" * 5000]).longest >= 5000


def _header() -> SessionStarted:
    return SessionStarted(
        session_id="00000000000000c1",
        started_at=0.0,
        mode=Mode.LIVE,
        metadata=(("note", KEY),),
    )


@pytest.mark.parametrize(
    "event",
    [
        _header(),
        HarnessEvent(at=0.1, name="auth", fields=(("token", KEY), ("n", 3))),
        RunnerFact(at=0.2, fact=FactKind.INFRA_ERROR, message=f"refused {KEY}"),
        SessionEnded(at=0.3, status=Status.FAILED, reason=f"RuntimeError: {KEY}"),
        Exchange(
            at=0.0,
            duration=0.0,
            request=Request(method="GET", url=f"https://x/?key={KEY}", headers=(), body=b""),
        ),
    ],
)
def test_every_event_kind_is_redacted(event: object) -> None:
    red = REDACTOR.redact_event(event)  # type: ignore[arg-type]
    assert KEY not in repr(red)
    assert "REDACTED" in repr(red)
    assert type(red) is type(event)


def test_a_snapshot_names_the_files_it_masked() -> None:
    snapshot = WorkspaceSnapshot(
        at=1.0,
        files=(
            FileEntry(path=".env", data=f"OPENAI_API_KEY={KEY}\n".encode()),
            FileEntry(path="clean.txt", data=b"nothing here"),
        ),
    )
    red = REDACTOR.redact_event(snapshot)
    assert isinstance(red, WorkspaceSnapshot)
    assert red.redacted == (".env",)
    assert red.files[1] is snapshot.files[1]
    assert KEY.encode() not in red.files[0].data
    assert REDACTOR.redact_event(red) == red  # a second pass changes nothing
