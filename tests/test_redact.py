"""Secrets are masked in headers, URLs and bodies, split chunks and gzip included."""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Callable

import pytest
from builders import exchange

from evaltape.recorder import Chunk, Exchange, Request, Response, TransportError
from evaltape.recorder.redact import RedactionError, Redactor, SecretRule, default_redactor

# Every secret kind the default rules know, as it would appear in a body.
SECRETS = {
    "OpenAI API key": "sk-proj-Ab3dEf9hIj2kLmN0pQrStUvWxYz12345_-abcdefG7",
    "OpenAI service account key": "sk-svcacct-9fJ2kQ8zLm3nP4rS5tU6vW7xY8zA1bC2dE3",
    "OpenAI legacy key": "sk-a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0",
    "Anthropic API key": "sk-ant-api03-Qw3rTy8uIo9pAs2dFg4hJk5lZx6cVb7nM1-_aa",
    "AWS access key id": "AKIAIOSFODNN7EXAMPL3",
    "GitHub token": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "GitHub fine-grained token": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    "Google API key": "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    "Slack token": "xoxb-123456789012-abcdefghijkl",
    "JWT": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0",
    "Langfuse public key": "pk-lf-1234abcd-12ab-34cd-56ef-1234567890ab",
    "Langfuse secret key": "sk-lf-9876fedc-12ab-34cd-56ef-1234567890ab",
}
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA75x3Vb2kq\n"
    "Zk9+Q0Rsd2x3eXZ0cHFycw==\n-----END RSA PRIVATE KEY-----"
)


def _json_body(text: str) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": f"use {text} please"}]}).encode()


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_secret_kind_is_masked_in_a_json_body(kind: str) -> None:
    secret = SECRETS[kind]
    body = _json_body(secret)
    red = default_redactor().redact_bytes(body)
    assert secret.encode() not in red
    assert len(red) == len(body)
    assert json.loads(red)["messages"][0]["content"].startswith("use REDACTED")


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_secret_kind_is_masked_in_a_header_value(kind: str) -> None:
    headers = (("x-custom-trace", f"v={SECRETS[kind]}"), ("accept", "application/json"))
    red = default_redactor().redact_headers(headers)
    assert SECRETS[kind] not in red[0][1]
    assert red[1] == ("accept", "application/json")


def test_pem_block_is_masked_raw_and_inside_json() -> None:
    r = default_redactor()
    assert b"MIIEp" not in r.redact_bytes(PEM.encode() + b"\nafter")
    assert r.redact_bytes(PEM.encode() + b"\nafter").endswith(b"\nafter")
    body = json.dumps({"file": PEM, "next": "kept"}).encode()
    red = r.redact_bytes(body)
    assert json.loads(red)["next"] == "kept"
    assert "PRIVATE" not in json.loads(red)["file"]


def test_secret_named_json_values_are_masked_whatever_their_shape() -> None:
    r = default_redactor()
    body = json.dumps(
        {"api_key": "q8Fz2LmP0xR7tN4vB6yK", "token": "Hello", "max_tokens": 100}
    ).encode()
    red = json.loads(r.redact_bytes(body))
    assert red["api_key"] != "q8Fz2LmP0xR7tN4vB6yK" and red["api_key"].startswith("REDACTED")
    assert red["token"] == "REDAC"  # a short, plain value too: the name says what it is
    assert red["max_tokens"] == 100
    nested = json.dumps({"arguments": json.dumps({"client_secret": "Zx9Yw8Vu7Ts6Rq5Po4Nm3"})})
    red_nested = r.redact_bytes(nested.encode())
    assert json.loads(json.loads(red_nested)["arguments"])["client_secret"].startswith("REDACTED")


def test_auth_headers_are_replaced_whole() -> None:
    headers = (
        ("authorization", "Bearer abc"),
        ("x-api-key", "anything"),
        ("cookie", "session=1"),
        ("set-cookie", "a=b; HttpOnly"),
        ("openai-organization", "org-123"),
        ("openai-project", "proj_1"),
        ("anthropic-admin-key", "x"),
        ("x-auth-token", "y"),
        ("x-ratelimit-remaining-tokens", "9000"),
        ("content-type", "application/json"),
    )
    red = dict(default_redactor().redact_headers(headers))
    assert {k for k, v in red.items() if v == "[REDACTED]"} == {
        "authorization",
        "x-api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "anthropic-admin-key",
        "x-auth-token",
    }
    assert red["x-ratelimit-remaining-tokens"] == "9000"


def test_url_query_keys_are_masked() -> None:
    r = default_redactor()
    url = "https://generativelanguage.googleapis.com/v1/m:stream?alt=sse&key=AbCd1234efgh5678&x=1"
    red = r.redact_text(url)
    assert "AbCd1234efgh5678" not in red
    assert red.endswith("&x=1") and "?alt=sse&key=REDACTED" in red
    assert "tok3n-value-123" not in r.redact_text("http://h/p?access_token=tok3n-value-123")
    assert "s3cr3tvalue" not in r.redact_text("http://h/p?api_key=s3cr3tvalue")


def _stream_exchange(chunks: list[bytes], headers: tuple[tuple[str, str], ...] = ()) -> Exchange:
    """A streamed call whose URL, authorization header and body each carry a secret."""
    return exchange(
        "https://api.example.test/v1/chat/completions?api_key=zzzzzz99999",
        _json_body(SECRETS["Anthropic API key"]),
        request_headers=(("authorization", f"Bearer {SECRETS['OpenAI API key']}"),),
        at=1.0,
        duration=2.0,
        headers=(("content-type", "text/event-stream"), *headers),
        chunks=chunks,
        chunk_at=0.1,
        chunk_every=0.1,
        streamed=True,
    )


def test_key_split_across_sse_chunks_is_masked_and_timing_kept() -> None:
    key = SECRETS["OpenAI API key"]
    event = b'data: {"choices":[{"delta":{"content":"your key is ' + key.encode() + b'"}}]}\n\n'
    cut1 = event.index(b"sk-") + 5
    cut2 = cut1 + 17
    pieces = [b"data: {}\n\n", event[:cut1], event[cut1:cut2], event[cut2:], b"data: [DONE]\n\n"]
    exchange = _stream_exchange(pieces)
    red = default_redactor().redact_exchange(exchange)
    assert red.response is not None and exchange.response is not None
    assert key.encode() not in red.response.body
    for before, after in zip(exchange.response.chunks, red.response.chunks, strict=True):
        assert (before.at, len(before.data)) == (after.at, len(after.data))
    assert not any(b"sk-proj" in c.data for c in red.response.chunks)
    data = red.response.body.split(b"\n\n")[1].removeprefix(b"data: ")
    assert json.loads(data)["choices"][0]["delta"]["content"].startswith("your key is REDACTED")
    assert red.request.headers == (("authorization", "[REDACTED]"),)
    assert "zzzzzz99999" not in red.request.url
    assert SECRETS["Anthropic API key"].encode() not in red.request.body
    json.loads(red.request.body)
    assert (red.at, red.duration) == (exchange.at, exchange.duration)


def test_gzip_body_is_decoded_redacted_reencoded_and_length_fixed() -> None:
    key = SECRETS["GitHub token"]
    plain = json.dumps({"id": "x", "content": f"token {key} here"}).encode()
    packed = gzip.compress(plain)
    pieces = [packed[:10], packed[10:25], packed[25:]]
    exchange = _stream_exchange(
        pieces, (("content-encoding", "gzip"), ("content-length", str(len(packed))))
    )
    red = default_redactor().redact_exchange(exchange)
    assert red.response is not None
    assert len(red.response.chunks) == 3
    assert exchange.response is not None
    assert [c.at for c in red.response.chunks] == [c.at for c in exchange.response.chunks]
    decoded = gzip.decompress(red.response.body)
    assert key.encode() not in decoded
    assert json.loads(decoded)["id"] == "x"
    assert dict(red.response.headers)["content-length"] == str(len(red.response.body))


def test_clean_exchange_is_returned_unchanged() -> None:
    exchange = Exchange(
        at=0.0,
        duration=0.1,
        request=Request(method="POST", url="https://api.openai.com/v1/responses", body=b"{}"),
        response=Response(status=200, chunks=(Chunk(at=0.0, data=b'{"ok":true}'),)),
        error=TransportError(type="ReadTimeout", message="timed out"),
    )
    assert default_redactor().redact_exchange(exchange) == exchange


def test_masks_are_not_found_again() -> None:
    r = default_redactor()
    body = _json_body(" and ".join(SECRETS.values()) + " Bearer abcdefghijklmnop1234567")
    once = r.redact_bytes(body)
    assert r.scan_bytes(once) == ()
    assert r.redact_bytes(once) == once


def test_extra_rules_and_allow_list() -> None:
    r = default_redactor().extended(
        headers=["x-internal-pass"],
        patterns=[r"corp-[0-9]{6}", SecretRule(kind="ticket", pattern=r"TKT-[A-Z]{4}")],
        allow=[r"sk-proj-Ab3dEf9hIj2kLmN0pQrStUvWxYz12345_-abcdefG7"],
    )
    body = b"corp-123456 TKT-ABCD " + SECRETS["OpenAI API key"].encode()
    red = r.redact_bytes(body)
    assert red.startswith(b"REDACTED*** REDACTED ")
    assert red.endswith(SECRETS["OpenAI API key"].encode())
    assert r.redact_headers((("X-Internal-Pass", "p"),)) == (("X-Internal-Pass", "[REDACTED]"),)
    assert [f.kind for f in r.scan_bytes(body)] == ["custom pattern", "ticket"]


def test_bad_extra_pattern_is_refused() -> None:
    with pytest.raises(RedactionError, match="bad pattern"):
        Redactor().extended(patterns=["(unclosed"])


def _calls(work: Callable[[], object]) -> int:
    """Python and C function calls made while ``work`` runs (a machine-independent cost)."""
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def test_redaction_is_linear_on_large_bodies() -> None:
    # Wall-clock timing of the same bodies: evals/perf/bench_redact.py.
    r = default_redactor()
    filler = json.dumps({"content": "word " * 20000, "token": "x" * 50}).encode()
    small, big = filler * 2, filler * 20
    r.redact_bytes(filler)  # compiled patterns and caches warm
    calls_small = _calls(lambda: r.redact_bytes(small))
    calls_big = _calls(lambda: r.redact_bytes(big))
    assert calls_big < 10 * 1.5 * calls_small, (calls_small, calls_big)
