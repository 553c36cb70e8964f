"""A collector that is down, refuses, is briefly unwell or hangs never fails a run:
one warning line, retries only where they can help, and fast backoff in tests."""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from agents.chat_server import ChatServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource

from evaltape.scoring import read_record, resolve_run
from evaltape.scoring.outputs.export._config import Target
from evaltape.scoring.outputs.export._sdk_spans import sdk_spans
from evaltape.scoring.outputs.export._send import Backoff, ExportFailed, Sender
from evaltape.scoring.outputs.export._span_model import Span as SpanValue
from evaltape.scoring.outputs.export._span_model import SpanKind
from evaltape.scoring.outputs.export._traces_out import EXPORTER_LOGGERS, TraceSender

pytestmark = pytest.mark.slow

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).parent.parent


class Collector:
    """An OTLP/HTTP collector on 127.0.0.1 that answers from a script, then 200."""

    def __init__(self, *answers: tuple[int, dict[str, str]] | float) -> None:
        self.answers = list(answers)
        self.bodies: list[bytes] = []
        self.hanging = 0
        """Requests held unanswered right now."""
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Collector:
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with collector._lock:
                    collector.bodies.append(body)
                    answer = collector.answers.pop(0) if collector.answers else (200, {})
                if isinstance(answer, float):  # hang this long (or to the end), then give up
                    with collector._lock:
                        collector.hanging += 1
                    collector._done.wait(answer)
                    with collector._lock:
                        collector.hanging -= 1
                    return
                status, headers = answer
                data = b"{}" if status == 200 else b'{"message": "bad request: no spans"}'
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._done.set()
        self._server.shutdown()
        self._server.server_close()

    @property
    def spans(self) -> int:
        total = 0
        for body in self.bodies:
            request = ExportTraceServiceRequest.FromString(body)
            total += sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
        return total


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def project(root: Path, server: ChatServer) -> Path:
    cases = [
        {
            "id": case_id,
            "prompt": f"say {case_id}",
            "failureCategory": "runner",
            "whyModelBacked": "exercises export against a fake model",
            "expectMaxTurns": 3,
        }
        for case_id in ("one", "two")
    ]
    (root / "evals").mkdir()
    (root / "evals" / "basic.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    settings = {"agent": "chat_agent:run", "base_url": server.url, "concurrency": 1}
    (root / "evaltape.toml").write_text(
        "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
    )
    return root


def live(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "LANGFUSE_", "OTEL_", "EVALTAPE_"))
    }
    base |= {
        "PYTHONPATH": os.pathsep.join([str(AGENTS), str(REPO)]),
        "OPENAI_API_KEY": "sk-test-0123456789abcdefghijklmnop",
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "evaltape.scoring.cli",
            "live",
            "-m",
            "fake-1",
            "--source",
            "simulated",
        ],
        cwd=root,
        env=base | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def export_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "warning: export" in line]


OURS = ("evaltape: ", "export: ", "run ", "[", "tapes: ")
"""How every line evaltape itself writes to stderr during a run or an export begins."""


def foreign_lines(stderr: str) -> list[str]:
    """Lines on stderr that evaltape did not write (the OpenTelemetry exporter's own logging)."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith(OURS)]


def exported(root: Path) -> tuple[str, ...]:
    return read_record(resolve_run(root / ".evaltape" / "results")).exported


def test_a_dead_collector_costs_one_warning_line_and_the_run_exits_0(
    tmp_path: Path, server: ChatServer
) -> None:
    port = closed_port()
    done = live(project(tmp_path, server), OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}")
    assert done.returncode == 0, done.stderr
    (line,) = export_warnings(done.stderr)
    assert re.fullmatch(
        rf"evaltape: warning: export to 127\.0\.0\.1:{port} failed: cannot connect \(.+\); "
        r"the run is unaffected",
        line,
    ), line
    assert "Traceback" not in done.stderr
    assert foreign_lines(done.stderr) == []  # the exporter's retries and failure stay quiet
    assert "fake-1: 2/2 passed" in done.stdout
    assert exported(tmp_path) == ()


def test_a_4xx_is_one_line_and_never_retried(tmp_path: Path, server: ChatServer) -> None:
    with Collector((400, {})) as collector:
        done = live(project(tmp_path, server), OTEL_EXPORTER_OTLP_ENDPOINT=collector.url)
    assert done.returncode == 0, done.stderr
    (line,) = export_warnings(done.stderr)
    assert "failed: HTTP 400 " in line and "bad request: no spans" in line
    assert line.endswith("; the run is unaffected")
    assert len(collector.bodies) == 1  # no retry, and no more attempts after the refusal
    assert exported(tmp_path) == ()


def test_a_503_then_200_is_retried_and_delivered(tmp_path: Path, server: ChatServer) -> None:
    with Collector((503, {"retry-after": "0"})) as collector:
        done = live(
            project(tmp_path, server),
            OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=collector.url + "/v1/traces",
            OTEL_EXPORTER_OTLP_HEADERS="x-team=evals",
        )
    assert done.returncode == 0, done.stderr
    assert export_warnings(done.stderr) == []
    assert foreign_lines(done.stderr) == []  # no "Transient error ... retrying" either
    assert len(collector.bodies) == 3  # the first attempt twice, the second once
    assert collector.bodies[0] == collector.bodies[1]  # the retry resends the same spans
    assert collector.spans > 3
    assert sorted(exported(tmp_path)) == ["basic/one/fake-1/0", "basic/two/fake-1/0"]
    assert f"export: traces to {collector.url}/v1/traces (OTLP/HTTP)" in done.stderr


def test_a_collector_answering_503_costs_one_line_and_nothing_else_on_stderr(
    tmp_path: Path, server: ChatServer
) -> None:
    refusals = [(503, {"retry-after": "0"})] * 40  # more than the exporter ever tries
    with Collector(*refusals) as collector:
        done = live(project(tmp_path, server), OTEL_EXPORTER_OTLP_ENDPOINT=collector.url)
    assert done.returncode == 0, done.stderr
    (line,) = export_warnings(done.stderr)
    assert re.search(r"failed: HTTP 503 after \d+ tries; the run is unaffected$", line), line
    assert foreign_lines(done.stderr) == []
    assert len(collector.bodies) > 1  # retried, quietly
    assert exported(tmp_path) == ()


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_the_exporters_logging_is_off_while_it_sends_and_restored_after(tmp_path: Path) -> None:
    target = Target(url=f"http://127.0.0.1:{closed_port()}/v1/traces", timeout=0.5)
    kept = Kept()
    loggers = [logging.getLogger(n) for n in EXPORTER_LOGGERS]
    for logger in loggers:
        logger.addHandler(kept)
    try:
        for before in (False, True):
            for logger in loggers:
                logger.disabled = before
            sender = TraceSender(target)
            try:
                with pytest.raises(ExportFailed, match="cannot connect"):
                    sender.send(sdk_spans((one_span(),), Resource({})))
            finally:
                sender.close()
            assert kept.messages == []  # the exporter's "Transient error ..." went nowhere
            assert [logger.disabled for logger in loggers] == [before] * len(loggers)
        for logger in loggers:
            logger.disabled = False
            logger.warning("after the export")
        assert kept.messages == ["after the export"] * len(loggers)  # logging works again
    finally:
        for logger in loggers:
            logger.removeHandler(kept)
            logger.disabled = False


def one_span() -> SpanValue:
    return SpanValue(
        trace_id=b"\1" * 16,
        span_id=b"\2" * 8,
        parent_span_id=b"",
        name="invoke_agent test",
        kind=SpanKind.INTERNAL,
        start_ns=1_000,
        end_ns=2_000,
    )


def test_a_hanging_collector_times_out_in_one_line(tmp_path: Path, server: ChatServer) -> None:
    with Collector(60.0) as collector:  # holds the request until the test ends
        done = live(
            project(tmp_path, server),
            OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
            OTEL_EXPORTER_OTLP_TIMEOUT="300",
        )
        hanging = collector.hanging
    assert done.returncode == 0, done.stderr
    (line,) = export_warnings(done.stderr)
    assert "failed: timed out after 0.3 s; the run is unaffected" in line
    assert hanging == 1  # the run ended while the collector still held the export
    assert exported(tmp_path) == ()


def test_backoff_honours_retry_after_doubles_otherwise_and_is_bounded() -> None:
    slept: list[float] = []
    backoff = Backoff(attempts=4, base_delay=1.0, max_delay=5.0)
    with (
        Collector((503, {"retry-after": "3"}), (429, {}), (503, {"retry-after": "60"})) as c,
        httpx.Client() as client,
    ):
        sender = Sender(client, backoff=backoff, sleep=slept.append)
        sender.post(Target(url=c.url + "/v1/traces"), b"x", "application/x-protobuf")
    assert slept == [3.0, 2.0, 5.0]  # Retry-After, then 1 * 2**1, then capped at max_delay
    slept.clear()
    with (
        Collector((503, {}), (502, {}), (500, {}), (200, {})) as c,
        httpx.Client() as client,
    ):
        sender = Sender(client, backoff=Backoff(attempts=3), sleep=slept.append)
        with pytest.raises(ExportFailed, match=r"export to 127\.0\.0\.1:\d+ failed: HTTP 500"):
            sender.post(Target(url=c.url), b"x", "application/x-protobuf")
        assert len(c.bodies) == 3
    assert slept == [1.0, 2.0]


def test_export_command_reports_a_dead_collector_and_exits_1(
    tmp_path: Path, server: ChatServer
) -> None:
    root = project(tmp_path, server)
    assert live(root).returncode == 0
    port = closed_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LANGFUSE_"))}
    done = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "export"],
        cwd=root,
        env=base
        | {
            "PYTHONPATH": os.pathsep.join([str(AGENTS), str(REPO)]),
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("evaltape: error")]
    assert len(errors) == 1
    assert errors[0].startswith(f"evaltape: error: export to 127.0.0.1:{port} failed: ")
    assert "cannot connect" in errors[0] and "Traceback" not in done.stderr
    assert foreign_lines(done.stderr) == []
    assert exported(root) == ()
