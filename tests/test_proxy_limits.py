"""The proxy serves only its run's programs, within bounds: token, body size, read time, threads."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.parse
from pathlib import Path

import httpx
import pytest
from fakeapi import FakeAPI

from evaltape.recorder import Exchange, SessionStarted, TapeReader, open_session
from evaltape.recorder.tape import new_session_id
from evaltape.replay import TOKEN_HEADER, ProxyLimits, ReplayTransport, TapeProxy, Upstreams

BODY = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'


def _header() -> SessionStarted:
    return SessionStarted(session_id=new_session_id(), started_at=time.time())


def _exchanges(tape: Path) -> list[Exchange]:
    (session,) = TapeReader(tape).sessions()
    return [e for e in session.events if isinstance(e, Exchange)]


def _post(
    proxy: TapeProxy, path: str, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, object]]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("POST", path, body, {"content-type": "application/json", **(headers or {})})
    response = conn.getresponse()
    status, payload = response.status, json.loads(response.read() or b"{}")
    conn.close()
    return status, payload


def _base(proxy: TapeProxy) -> str:
    return urllib.parse.urlsplit(proxy.url).path


def test_requests_without_the_runs_token_are_refused_and_not_recorded(
    api: FakeAPI, tmp_path: Path
) -> None:
    tape = tmp_path / "token.tape"
    with (
        open_session(tape, _header()) as writer,
        TapeProxy.recording(writer, upstreams=Upstreams.single(api.base_url)) as proxy,
    ):
        bare = _post(proxy, "/v1/chat/completions", BODY)
        wrong = _post(proxy, "/evaltape-guess/v1/chat/completions", BODY)
        wrong_header = _post(proxy, "/v1/chat/completions", BODY, {TOKEN_HEADER: "guess"})
        by_path = _post(proxy, _base(proxy) + "/v1/chat/completions", BODY)
        by_header = _post(proxy, "/v1/chat/completions", BODY, {TOKEN_HEADER: proxy.token})
        base_url = f"http://127.0.0.1:{proxy.port}{_base(proxy)}/v1"
        assert proxy.env()["OPENAI_BASE_URL"] == base_url
    for status, payload in (bare, wrong, wrong_header):
        assert status == 403
        assert payload["error"] == {
            "type": "evaltape_forbidden",
            "message": "missing or wrong proxy token",
        }
    assert by_path[0] == by_header[0] == 200
    recorded = _exchanges(tape)
    assert len(recorded) == 2  # only the two admitted requests
    for exchange in recorded:
        assert proxy.token not in exchange.request.url
        assert all(name != TOKEN_HEADER for name, _ in exchange.request.headers)
    assert len(proxy.token) >= 20
    other = TapeProxy.replaying([])
    assert other.token != proxy.token


def test_an_over_limit_body_gets_a_413_without_being_read(api: FakeAPI, tmp_path: Path) -> None:
    tape = tmp_path / "big.tape"
    limits = ProxyLimits(max_body=1024)
    with open_session(tape, _header()) as writer:
        real = TapeProxy.recording(writer, upstreams=Upstreams.single(api.base_url))
        with TapeProxy(real.transport, upstreams=real.upstreams, limits=limits) as proxy:
            path = _base(proxy) + "/v1/chat/completions"
            status, payload = _post(proxy, path, b" " * 2048)
            sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
            sock.sendall(
                b"POST %s HTTP/1.1\r\nhost: x\r\ncontent-length: 50000000000\r\n\r\n"
                % path.encode()
            )
            reply = sock.makefile("rb").read()
            sock.close()
            fits = _post(proxy, path, BODY)
    assert status == 413
    assert payload["error"]["type"] == "evaltape_request_too_large"  # type: ignore[index]
    assert reply.split()[1] == b"413"
    assert b"50000000000 bytes is over the proxy's 1024-byte limit" in reply
    assert fits[0] == 200
    assert len(_exchanges(tape)) == 1


def test_a_chunked_body_past_the_limit_gets_a_413() -> None:
    with TapeProxy(ReplayTransport([]), limits=ProxyLimits(max_body=100)) as proxy:
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        chunk = b"%x\r\n%s\r\n" % (80, b"x" * 80)
        sock.sendall(
            b"POST %s HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n%s%s"
            % ((_base(proxy) + "/v1/chat/completions").encode(), chunk, chunk)
        )
        reply = sock.makefile("rb").read()
        sock.close()
    assert reply.split()[1] == b"413"


def test_a_negative_or_signed_chunk_size_is_a_bad_request_not_an_unbounded_read() -> None:
    with TapeProxy(ReplayTransport([]), limits=ProxyLimits(max_body=100)) as proxy:
        for size in (b"-1", b"+50", b"0x40"):
            sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
            sock.sendall(
                b"POST %s HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n%s\r\n%s"
                % ((_base(proxy) + "/v1/chat/completions").encode(), size, b"x" * 500)
            )
            sock.shutdown(socket.SHUT_WR)  # were the size taken, read(-1) would end here
            reply = sock.makefile("rb").read()
            sock.close()
            assert reply.split()[1] == b"400", reply
            assert b"malformed chunk size" in reply


def _closed(sock: socket.socket) -> bool:
    """True once the proxy has closed the connection (recv sees the end, or a reset)."""
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True


def test_a_silent_client_is_dropped_after_its_read_timeout() -> None:
    limits = ProxyLimits(read_timeout=0.2, request_timeout=60.0)
    with TapeProxy(ReplayTransport([]), limits=limits) as proxy:
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n")  # head never ends
        assert _closed(sock)
        sock.close()


@pytest.mark.slow
def test_a_slowloris_client_is_dropped_at_its_request_deadline() -> None:
    """A client sending one byte at a time, never idle for long, still hits the deadline."""
    limits = ProxyLimits(read_timeout=5.0, request_timeout=0.3)
    with TapeProxy(ReplayTransport([]), limits=limits) as proxy:
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        sock.settimeout(0.05)
        dropped = False
        sent = 0
        for byte in b"POST /v1/chat/completions HTTP/1.1\r\nx-slow: " + b"a" * 4000:
            try:
                sock.sendall(bytes((byte,)))
                sent += 1
                dropped = sock.recv(1) == b""
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                dropped = True
            if dropped:
                break
        sock.close()
    assert dropped, f"still connected after {sent} bytes"


def _plain_request(proxy: TapeProxy) -> bytes:
    """One whole request that presents the token, the way a program's SDK sends it."""
    path = urllib.parse.urlsplit(proxy.url).path + "/v1/models"
    return f"GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".encode()


def _status(sock: socket.socket) -> bytes:
    reply = sock.makefile("rb").read()
    return reply.split()[1] if reply else b""


class _Holding:
    """A transport that keeps every request until ``release`` is set, counting arrivals."""

    def __init__(self) -> None:
        self.arrived = threading.Semaphore(0)
        self.release = threading.Event()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.arrived.release()
        self.release.wait(30)
        return httpx.Response(200, json={})


def test_connections_past_the_bound_get_a_503_at_once() -> None:
    holding = _Holding()
    with TapeProxy(holding, limits=ProxyLimits(max_connections=2)) as proxy:
        held = [socket.create_connection(("127.0.0.1", proxy.port), timeout=30) for _ in range(2)]
        for sock in held:  # each presented the token and holds a slot while it is served
            sock.sendall(_plain_request(proxy))
        assert holding.arrived.acquire(timeout=30) and holding.arrived.acquire(timeout=30)
        extra = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        extra.sendall(_plain_request(proxy))
        status = _status(extra)
        extra.close()
        holding.release.set()
        served = [_status(sock) for sock in held]
        for sock in held:
            sock.close()
    assert status == b"503"
    assert served == [b"200", b"200"]


@pytest.mark.slow
def test_connections_that_never_present_the_token_hold_no_slot() -> None:
    limits = ProxyLimits(max_connections=2, max_pending=64)
    with TapeProxy(ReplayTransport([]), limits=limits) as proxy:
        idle = [socket.create_connection(("127.0.0.1", proxy.port), timeout=30) for _ in range(8)]
        dripping = [
            socket.create_connection(("127.0.0.1", proxy.port), timeout=30) for _ in range(8)
        ]
        for sock in dripping:  # a request line, then nothing more
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\n")
        own = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        own.sendall(_plain_request(proxy))
        status = _status(own)
        own.close()
        for sock in idle + dripping:
            sock.close()
    # The program's own request is answered (a replay miss: 599), not refused as busy.
    assert status == b"599"


def test_a_wrong_token_is_answered_403_and_the_connection_closed() -> None:
    with TapeProxy(ReplayTransport([]), limits=ProxyLimits(max_connections=1)) as proxy:
        stranger = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        stranger.sendall(b"GET /evaltape-wrong/v1/models HTTP/1.1\r\nhost: x\r\n\r\n")
        reply = stranger.makefile("rb").read()  # returns only once the proxy closed it
        stranger.close()
        own = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        own.sendall(_plain_request(proxy))
        status = _status(own)
        own.close()
    assert reply.split()[1] == b"403"
    assert status == b"599"


def test_the_oldest_pending_connection_is_closed_past_the_pending_bound() -> None:
    limits = ProxyLimits(max_connections=2, max_pending=3)
    with TapeProxy(ReplayTransport([]), limits=limits) as proxy:
        first = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        later = [socket.create_connection(("127.0.0.1", proxy.port), timeout=30) for _ in range(3)]
        closed = first.recv(1)  # b"": the proxy shut it down to make room
        for sock in [first, *later]:
            sock.close()
    assert closed == b""
