"""Exporting live attempts to Langfuse, as a user runs it: a real ``evaltape live`` in a
subprocess, a fake model server and a fake Langfuse on 127.0.0.1 that decodes the
OTLP protobuf and checks the scores API's rules."""

from __future__ import annotations

import base64
import datetime
import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fakeapi import FakeAPI, Reply, ToolUse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from evaltape.recorder import Session, TapeReader, fold
from evaltape.scoring import read_record, resolve_run
from evaltape.scoring.judge._judgement import judge_exchanges
from evaltape.scoring.outputs.export._config import ExportConfigError, export_config

pytestmark = pytest.mark.slow

REPO = Path(__file__).parent.parent
PUBLIC = "pk-lf-test-public"
SECRET = "sk-lf-test-secret-0123456789"
AGENT_KEY = "sk-agent-0123456789abcdefghijklmnop"
MARKERS = ("PROMPT-MARKER", "FILE-MARKER", "SYSTEM-MARKER", "RATIONALE-MARKER", "ANSWER-MARKER")

AGENT = """
import json, os, time

def run(task):
    key = os.environ["OPENAI_API_KEY"]
    messages = [
        {"role": "system", "content": "SYSTEM-MARKER be brief"},
        {"role": "user", "content": task.prompt},
    ]
    tools = [{"type": "function", "function": {"name": "read", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}}}}]
    for _ in range(4):
        response = task.client.post(
            task.base_url + "/chat/completions",
            json={"model": task.model, "messages": messages, "tools": tools, "max_tokens": 256},
            headers={"authorization": "Bearer " + key},
        )
        response.raise_for_status()
        message = response.json()["choices"][0]["message"]
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            return message["content"]
        for call in calls:
            started = time.monotonic()
            args = json.loads(call["function"]["arguments"])
            result = (task.workspace / args["path"]).read_text()
            time.sleep(0.03)
            ms = round((time.monotonic() - started) * 1000)
            task.log("tool", tool=call["function"]["name"], ms=ms)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return ""
"""

RUBRIC = "# Rubric: test\n\nGive 5 to a reply that names the code word.\n"


SDK_DATA = Path(__file__).parent / "data" / "langfuse_sdk"
SDK = {r["path"]: r for r in json.loads((SDK_DATA / "requests.json").read_text())["requests"]}
"""What the Langfuse SDK sent, by path (see tests/data/langfuse_sdk/README.md)."""
RUN_ITEM = json.loads((SDK_DATA / "run_item.json").read_text())
"""The public API's dataset run items, as the server defines them."""
SCORE_KEYS = {k for body in SDK["/api/public/scores"]["json"] for k in body}
DATASETS_PATH = next(p for p in SDK if p.endswith("/datasets"))
DATASET_KEYS = set(SDK[DATASETS_PATH]["json"])
ITEMS_PATH = next(p for p in SDK if p.endswith("/dataset-items"))
ITEM_KEYS = set(SDK[ITEMS_PATH]["json"])
SDK_SPANS = SDK["/api/public/otel/v1/traces"]["spans"]
EVERY_SPAN = {"langfuse.trace.name", "session.id", "langfuse.trace.tags"} & set.intersection(
    *(set(s["attributes"]) for s in SDK_SPANS)
)
"""Trace-level attributes the SDK put on every span of its trace."""
METADATA = "langfuse.trace.metadata."


class FakeLangfuse:
    """Langfuse's OTLP traces endpoint, scores API and datasets API, strict about what it
    accepts: request paths, body keys and value shapes are the ones the Langfuse SDK sent
    (``tests/data/langfuse_sdk``); anything else is refused and noted in ``refused``."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.trace_posts = 0
        self.scores: dict[str, dict[str, Any]] = {}
        self.score_posts = 0
        self.refused: list[str] = []
        self.posted: list[tuple[str, str]] = []
        """(trace id, score name) of every accepted score post, in order."""
        self.refuse: set[str] = set()
        """Score names answered with a 400, as a scores API refusing a body would."""
        self.resources: list[dict[str, Any]] = []
        """Each span's resource attributes, in the order of ``spans``."""
        self.headers: list[dict[str, str]] = []
        self.datasets: dict[str, dict[str, Any]] = {}
        """Datasets by name."""
        self.items: dict[str, dict[str, Any]] = {}
        """Dataset items by id."""
        self.runs: dict[tuple[str, str], dict[str, Any]] = {}
        """Dataset runs by (dataset id, run name)."""
        self.run_items: list[dict[str, Any]] = []
        """Every dataset run item created, in order (each post creates one, as Langfuse does)."""
        self.requests: list[tuple[str, str]] = []
        """(method, path) of every request, in order."""
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def host(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeLangfuse:
        fake = self
        expected = "Basic " + base64.b64encode(f"{PUBLIC}:{SECRET}".encode()).decode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                with fake._lock:
                    fake.requests.append(("GET", url.path))
                if self.headers.get("authorization") != expected:
                    return self._answer(401, "unauthorized")
                if url.path != RUN_ITEM["list"]["path"]:
                    return self._answer(404, "no route")
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if not set(query) <= set(RUN_ITEM["list"]["query"]):
                    return self._refuse(400, f"unknown query {sorted(query)}")
                with fake._lock:
                    answer = fake.list_run_items(query)
                return self._answer(*answer)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with fake._lock:
                    fake.headers.append(headers)
                    fake.requests.append(("POST", self.path))
                if headers.get("authorization") != expected:
                    return self._answer(401, "unauthorized")
                if self.path == "/api/public/otel/v1/traces":
                    if headers.get("x-langfuse-ingestion-version") != "4":
                        return self._answer(400, "missing x-langfuse-ingestion-version")
                    if headers.get("content-type") != "application/x-protobuf":
                        return self._answer(415, "protobuf only")
                    request = ExportTraceServiceRequest.FromString(body)
                    with fake._lock:
                        fake.trace_posts += 1
                        for rs in request.resource_spans:
                            res = {kv.key: value(kv.value) for kv in rs.resource.attributes}
                            for ss in rs.scope_spans:
                                fake.spans.extend(ss.spans)
                                fake.resources.extend(res for _ in ss.spans)
                                fake.refused.extend(check_spans(list(ss.spans)))
                    return self._answer(200, "{}")
                if headers.get("content-type") != "application/json":
                    return self._refuse(415, "json only")
                if self.path == "/api/public/scores":
                    score = json.loads(body)
                    problem = fake.check_score(score)
                    if score.get("name") in fake.refuse:
                        problem = f"score {score['name']} refused"
                    if problem:
                        return self._refuse(400, problem)
                    with fake._lock:
                        fake.score_posts += 1
                        fake.posted.append((score["traceId"], score["name"]))
                        fake.scores[score["id"]] = score
                    return self._answer(200, json.dumps({"id": score["id"]}))
                if self.path in (DATASETS_PATH, ITEMS_PATH, RUN_ITEM["path"]):
                    with fake._lock:
                        status, text = fake.datasets_api(self.path, json.loads(body))
                    if status >= 400:
                        return self._refuse(status, text)
                    return self._answer(status, text)
                return self._answer(404, "no route")

            def _refuse(self, status: int, problem: str) -> None:
                with fake._lock:
                    fake.refused.append(problem)
                self._answer(status, problem)

            def _answer(self, status: int, text: str) -> None:
                data = text.encode()
                self.send_response(status)
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
        self._server.shutdown()
        self._server.server_close()

    @staticmethod
    def check_score(score: dict[str, Any]) -> str:
        if not isinstance(score.get("name"), str) or "id" not in score:
            return "a score needs an id and a name"
        if not set(score) <= SCORE_KEYS:
            return f"score keys the SDK never sends: {sorted(set(score) - SCORE_KEYS)}"
        if score.get("observationId") and not score.get("traceId"):
            return "observationId only together with traceId"
        if score["dataType"] == "BOOLEAN" and score["value"] not in (0, 1):
            return "BOOLEAN takes 0 or 1"
        if score["dataType"] == "NUMERIC" and not isinstance(score["value"], int | float):
            return "NUMERIC takes a number"
        if score["dataType"] == "CATEGORICAL" and not isinstance(score["value"], str):
            return "CATEGORICAL takes a string"
        if "timestamp" in score:
            try:
                datetime.datetime.fromisoformat(score["timestamp"])
            except ValueError:
                return "timestamp is not ISO 8601"
        return ""

    def datasets_api(self, path: str, body: dict[str, Any]) -> tuple[int, str]:
        """Datasets upserted by name, items by id, and one new run item per post."""
        if path == DATASETS_PATH:
            if not set(body) <= DATASET_KEYS or not isinstance(body.get("name"), str):
                return 400, f"dataset body {sorted(body)}"
            known = self.datasets.get(body["name"], {"id": f"ds-{len(self.datasets) + 1}"})
            self.datasets[body["name"]] = known | body
            return 200, json.dumps(self.datasets[body["name"]])
        if path == ITEMS_PATH:
            if not set(body) <= ITEM_KEYS or not isinstance(body.get("id"), str):
                return 400, f"item body {sorted(body)}"
            dataset = self.datasets.get(body["datasetName"])
            if dataset is None:
                return 404, "dataset not found"
            before = self.items.get(body["id"])
            if before is not None and before["datasetId"] != dataset["id"]:
                return 400, "an item id cannot move to another dataset"
            self.items[body["id"]] = body | {"datasetId": dataset["id"], "status": "ACTIVE"}
            return 200, json.dumps(self.items[body["id"]])
        missing = [k for k in RUN_ITEM["required"] if not body.get(k)]
        if not set(body) <= set(RUN_ITEM["keys"]) or missing:
            return 400, f"run item body {sorted(body)}"
        item = self.items.get(body["datasetItemId"])
        if item is None:
            return 404, "Dataset item not found"
        if not body.get("traceId"):
            return 404, "Trace not found"
        key = (item["datasetId"], body["runName"])
        run = self.runs.setdefault(key, {"id": f"run-{len(self.runs) + 1}", "name": key[1]})
        run["metadata"] = body.get("metadata")
        made = {
            "id": str(uuid.uuid4()),  # Langfuse accepts no id of ours: a repost is a new item
            "datasetRunId": run["id"],
            "datasetRunName": run["name"],
            "datasetItemId": item["id"],
            "traceId": body["traceId"],
            "observationId": body.get("observationId"),
        }
        self.run_items.append(made)
        return 200, json.dumps(made)

    def list_run_items(self, query: dict[str, str]) -> tuple[int, str]:
        run = self.runs.get((query.get("datasetId", ""), query.get("runName", "")))
        if run is None:
            return 404, json.dumps({"message": "Dataset run not found"})
        page, limit = int(query.get("page", "1")), int(query.get("limit", "50"))
        mine = [r for r in self.run_items if r["datasetRunId"] == run["id"]]
        pages = -(-len(mine) // limit)
        data = mine[(page - 1) * limit : page * limit]
        meta = {"page": page, "limit": limit, "totalItems": len(mine), "totalPages": pages}
        return 200, json.dumps({"data": data, "meta": meta})


def check_spans(spans: list[Span]) -> list[str]:
    """What the SDK puts on every span of a trace that these spans lack: the trace-level
    attributes, and the trace's metadata (JSON-encoded) on each of its observations."""
    problems = []
    keys: dict[bytes, set[frozenset[str]]] = {}
    for span in spans:
        meta = frozenset(k for k in attrs_of(span) if k.startswith(METADATA))
        keys.setdefault(span.trace_id, set()).add(meta)
    problems += [
        f"trace {t.hex()}: metadata differs by span" for t, k in keys.items() if len(k) > 1
    ]
    for span in spans:
        a = attrs_of(span)
        missing = EVERY_SPAN - set(a)
        if missing:
            problems.append(f"{span.name}: no {sorted(missing)}")
        for key, raw in a.items():
            if key.startswith(METADATA):
                try:
                    json.loads(raw)
                except (TypeError, ValueError):
                    problems.append(f"{span.name}: {key} is not JSON, as the SDK sends it")
    return problems


def value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return tuple(value(x) for x in v.array_value.values)
    return getattr(v, kind) if kind else None


def attrs_of(span: Span) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in span.attributes}


def metadata_of(span: Span) -> dict[str, Any]:
    """The trace metadata a span carries, each value decoded from its JSON as Langfuse reads it."""
    prefix = "langfuse.trace.metadata."
    return {
        k[len(prefix) :]: json.loads(v) for k, v in attrs_of(span).items() if k.startswith(prefix)
    }


def every_text(spans: list[Span], scores: list[dict[str, Any]]) -> str:
    parts = [s.name for s in spans]
    for s in spans:
        parts += [str(v) for v in attrs_of(s).values()]
        parts.append(s.status.message)
        for e in s.events:
            parts += [str(value(kv.value)) for kv in e.attributes]
    parts += [json.dumps(score) for score in scores]
    return "\n".join(parts)


@pytest.fixture
def model() -> Iterator[FakeAPI]:
    with FakeAPI() as api:
        yield api


@pytest.fixture
def langfuse() -> Iterator[FakeLangfuse]:
    with FakeLangfuse() as fake:
        yield fake


def make_project(root: Path, api: FakeAPI) -> Path:
    evals = root / "evals"
    (evals / "rubrics").mkdir(parents=True)
    (evals / "rubrics" / "test.md").write_text(RUBRIC)
    cases = [
        {
            "id": "find-word",
            "prompt": "PROMPT-MARKER what is the code word in notes.txt?",
            "failureCategory": "answer-quality",
            "whyModelBacked": "reading the file is the model's choice",
            "rubric": "test",
            "expectMaxTurns": 4,
            "files": {"notes.txt": "FILE-MARKER the code word is PELICAN"},
        },
        {
            "id": "explodes",
            "prompt": "the provider fails",
            "failureCategory": "runner",
            "whyModelBacked": "a provider failure",
            "expectMaxTurns": 2,
        },
        {
            "id": "flaky",
            "prompt": "a quarantined case that fails",
            "failureCategory": "runner",
            "whyModelBacked": "a quarantined failure",
            "expectMaxTurns": 2,
            "expectTool": "read",
            "quarantined": True,
        },
    ]
    (evals / "basic.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (root / "tool_agent.py").write_text(AGENT)
    settings = {
        "suites": "evals",
        "agent": "tool_agent:run",
        "base_url": api.openai_url,
        "judge_base_url": api.openai_url,
        "judge_model": "judge-1",
        "concurrency": 1,
    }
    (root / "evaltape.toml").write_text(
        "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
    )
    return root


def script_run(api: FakeAPI) -> None:
    api.script(
        Reply(text="", tool_calls=(ToolUse("read", {"path": "notes.txt"}),)),
        Reply(text="ANSWER-MARKER PELICAN"),
        Reply(text='{"score": 4, "rationale": "RATIONALE-MARKER named it"}'),
        Reply(status=500),
        Reply(text="something else"),
    )


def evaltape(
    project: Path, *args: str, langfuse: FakeLangfuse, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "LANGFUSE_", "OTEL_", "EVALTAPE_"))
    }
    env |= {
        "PYTHONPATH": str(REPO),
        "OPENAI_API_KEY": AGENT_KEY,
        "EVALTAPE_JUDGE_API_KEY": "sk-judge-0123456789abcdefghijklmnop",
        "LANGFUSE_HOST": langfuse.host,
        "LANGFUSE_PUBLIC_KEY": PUBLIC,
        "LANGFUSE_SECRET_KEY": SECRET,
        **(extra_env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def recorded(project: Path, case: str) -> Session:
    (session,) = TapeReader(project / "cassettes" / "basic" / f"{case}.tape").sessions()
    return fold(session.events)


def ns(started_at: float, at: float) -> int:
    return round((started_at + at) * 1e9)


def close(a: int, b: int) -> bool:
    return abs(a - b) <= 2_000  # the tape keeps microseconds


def test_a_live_run_exports_one_linked_trace_per_attempt_and_scores_on_its_root(
    tmp_path: Path, model: FakeAPI, langfuse: FakeLangfuse
) -> None:
    project = make_project(tmp_path, model)
    script_run(model)
    done = evaltape(
        project,
        "live",
        "--update-cassettes",
        "-m",
        "agent-1",
        "--source",
        "simulated",
        "--retries",
        "0",
        langfuse=langfuse,
    )
    # The provider's failure is exported, but it never goes into a cassette (exit 4).
    assert done.returncode == 4, done.stderr
    assert "did not record explodes [agent-1] (attempt 1) into its cassette" in done.stderr
    endpoint = f"export: traces to {langfuse.host}/api/public/otel/v1/traces"
    assert sum(endpoint in line for line in done.stderr.splitlines()) == 1
    assert SECRET not in done.stderr + done.stdout and PUBLIC not in done.stderr
    assert "warning: export" not in done.stderr
    assert langfuse.refused == []

    record = read_record(resolve_run(project / ".evaltape" / "results"))
    assert sorted(record.exported) == sorted(
        f"basic/{c}/agent-1/0" for c in ("find-word", "explodes", "flaky")
    )
    every_root = {
        attrs_of(s)["langfuse.trace.name"]: s for s in langfuse.spans if not s.parent_span_id
    }
    assert set(every_root) == {
        "basic/find-word",
        "basic/explodes",
        "basic/flaky",
        "grade basic/find-word",
    }
    roots = {k: v for k, v in every_root.items() if not k.startswith("grade ")}

    # the tool-using, judged attempt: root, two model calls, one tool call, the judge
    root = roots["basic/find-word"]
    spans = [s for s in langfuse.spans if s.trace_id == root.trace_id]
    children = [s for s in spans if s is not root]
    assert all(s.parent_span_id == root.span_id for s in children)
    assert sorted(s.name for s in children) == ["chat agent-1", "chat agent-1", "execute_tool read"]
    a = attrs_of(root)
    assert root.name == "invoke_agent tool_agent:run"
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.agent.name"] == "tool_agent:run"
    assert a["gen_ai.provider.name"] == "openai"
    assert a["gen_ai.request.model"] == "agent-1"
    assert a["langfuse.session.id"] == record.run_id
    assert a["langfuse.environment"] == "default"
    meta = metadata_of(root)
    assert meta["case"] == "find-word" and meta["suite"] == "basic"
    assert meta["attempt"] == 1  # as the command line counts attempts
    assert meta["verdict"] == "passed" and meta["mode"] == "live"
    # the trace's metadata is on every observation, as the Langfuse SDK propagates it
    assert all(metadata_of(s) == meta for s in children)
    assert "basic" in a["langfuse.trace.tags"] and "passed" in a["langfuse.trace.tags"]
    assert root.status.code == Status.STATUS_CODE_UNSET

    session = recorded(project, "find-word")
    started = session.header.started_at
    # the root carries no total (backends add a trace's spans up): its children carry it
    assert not any(k.startswith("gen_ai.usage.") or "cost" in k for k in a)
    chat_input = sum(attrs_of(s)["gen_ai.usage.input_tokens"] for s in children if "chat" in s.name)
    assert chat_input == session.usage.input_tokens
    assert close(root.start_time_unix_nano, ns(started, 0.0))
    chats = sorted(
        (s for s in children if s.name.startswith("chat")), key=lambda s: s.start_time_unix_nano
    )
    for span, turn in zip(chats, session.turns, strict=True):
        c = attrs_of(span)
        assert span.kind == Span.SPAN_KIND_CLIENT
        assert close(span.start_time_unix_nano, ns(started, turn.exchange.at))
        assert close(
            span.end_time_unix_nano, ns(started, turn.exchange.at + turn.exchange.duration)
        )
        assert c["gen_ai.response.id"] == turn.call.response_id
        assert c["gen_ai.request.max_tokens"] == 256
        assert c["gen_ai.response.model"] == turn.call.model_responded
        assert c["gen_ai.response.finish_reasons"] == (turn.call.finish_reason,)
        assert c["gen_ai.usage.input_tokens"] == turn.call.usage.input_tokens
        assert c["gen_ai.usage.output_tokens"] == turn.call.usage.output_tokens
        assert "gen_ai.usage.cache_read.input_tokens" in c
    (tool,) = (s for s in children if s.name == "execute_tool read")
    (logged,) = (e for e in session.harness if e.name == "tool")
    fields = dict(logged.fields)
    assert attrs_of(tool)["gen_ai.tool.name"] == "read"
    assert attrs_of(tool)["gen_ai.tool.call.id"] == session.tool_calls[0].call.id
    assert close(tool.end_time_unix_nano, ns(started, logged.at))
    assert close(tool.start_time_unix_nano, ns(started, logged.at - float(fields["ms"]) / 1000))
    # the judge's call is a trace of its own, linked to the attempt it graded
    judge = every_root["grade basic/find-word"]
    assert [s for s in langfuse.spans if s.trace_id == judge.trace_id] == [judge]
    j = attrs_of(judge)
    assert judge.name == "chat judge-1" and judge.kind == Span.SPAN_KIND_CLIENT
    assert j["langfuse.observation.type"] == "evaluator"
    assert j["gen_ai.provider.name"] == "openai"
    (link,) = judge.links
    assert (link.trace_id, link.span_id) == (root.trace_id, root.span_id)
    assert j["langfuse.session.id"] == j["session.id"] == record.run_id + "/grading"
    (exchange,) = judge_exchanges(session)
    assert close(judge.start_time_unix_nano, ns(started, exchange.at))
    assert j["gen_ai.usage.input_tokens"] > 0

    evaluations = {
        attrs_of_event(e)["gen_ai.evaluation.name"]: attrs_of_event(e)
        for e in root.events
        if e.name == "gen_ai.evaluation.result"
    }
    assert evaluations["passed"]["gen_ai.evaluation.score.value"] == 1.0
    assert evaluations["judge"]["gen_ai.evaluation.score.value"] == 4.0

    # scores: every one targets its trace's root span
    scores = list(langfuse.scores.values())
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for score in scores:
        by_trace.setdefault(score["traceId"], []).append(score)
        trace_roots = [r for r in roots.values() if r.trace_id.hex() == score["traceId"]]
        assert len(trace_roots) == 1
        assert score["observationId"] == trace_roots[0].span_id.hex()
    mine = {s["name"]: s for s in by_trace[root.trace_id.hex()]}
    assert set(by_trace) == {r.trace_id.hex() for r in roots.values()}  # none on the grading
    assert mine["judge"]["metadata"] == {"grading_trace_id": judge.trace_id.hex()}
    assert all(
        datetime.datetime.fromisoformat(s["timestamp"]).timestamp() * 1e9
        == pytest.approx(root.end_time_unix_nano, abs=2_000)
        for s in mine.values()
    )
    assert mine["passed"]["dataType"] == "BOOLEAN" and mine["passed"]["value"] == 1
    assert mine["judge"]["dataType"] == "NUMERIC" and mine["judge"]["value"] == 4
    assert mine["verdict"]["dataType"] == "CATEGORICAL" and mine["verdict"]["value"] == "passed"
    assert "replay.change" not in mine  # a live attempt has no replay decision
    assert evaluations["verdict"]["gen_ai.evaluation.score.label"] == "passed"
    checks = [n for n in mine if n.startswith("check.")]
    assert checks and all(mine[n]["dataType"] == "BOOLEAN" for n in checks)
    assert set(evaluations) == set(mine)

    # a crashed attempt is an error; a quarantined case's failure is not
    broken = roots["basic/explodes"]
    assert broken.status.code == Status.STATUS_CODE_ERROR
    assert metadata_of(broken)["verdict"] == "error"
    assert (
        by_trace[broken.trace_id.hex()]
        and {s["name"]: s["value"] for s in by_trace[broken.trace_id.hex()]}["verdict"] == "error"
    )
    flaky = roots["basic/flaky"]
    assert metadata_of(flaky)["verdict"] == "failed"
    assert metadata_of(flaky)["quarantined"] is True
    assert flaky.status.code == Status.STATUS_CODE_UNSET

    # nothing the model, agent or user wrote left the machine
    text = every_text(langfuse.spans, scores)
    for marker in (*MARKERS, AGENT_KEY, "PELICAN"):
        assert marker not in text
    assert all(h.get("authorization", "").startswith("Basic ") for h in langfuse.headers)

    # exported once: a later export sends nothing; --again resends the same ids
    before_ids = sorted((s.trace_id, s.span_id) for s in langfuse.spans)
    before_posts = langfuse.trace_posts
    again = evaltape(project, "export", record.run_id, langfuse=langfuse)
    assert again.returncode == 0, again.stderr
    assert "nothing to export (3 already exported)" in again.stdout
    assert langfuse.trace_posts == before_posts
    forced = evaltape(project, "export", record.run_id, "--again", langfuse=langfuse)
    assert forced.returncode == 0, forced.stderr
    assert "exported 3 of 3 attempt(s)" in forced.stdout
    assert langfuse.trace_posts == 2 * before_posts
    assert sorted((s.trace_id, s.span_id) for s in langfuse.spans) == sorted(before_ids * 2)
    assert len(langfuse.scores) == len(scores)  # same score ids: overwritten, not added
    assert langfuse.score_posts == 2 * len(scores)
    assert langfuse.refused == []


def attrs_of_event(event: Span.Event) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in event.attributes}


def test_export_content_is_opt_in_with_one_switch(
    tmp_path: Path, model: FakeAPI, langfuse: FakeLangfuse
) -> None:
    project = make_project(tmp_path, model)
    script_run(model)
    done = evaltape(
        project,
        "live",
        "--update-cassettes",
        "-m",
        "agent-1",
        "--source",
        "simulated",
        "--retries",
        "0",
        "--export-content",
        langfuse=langfuse,
    )
    assert done.returncode == 4, done.stderr  # "explodes" stays out of the cassettes
    text = every_text(langfuse.spans, list(langfuse.scores.values()))
    for marker in MARKERS:
        assert marker in text
    assert AGENT_KEY not in text and SECRET not in text
    tool = next(s for s in langfuse.spans if s.name == "execute_tool read")
    assert attrs_of(tool)["gen_ai.tool.call.result"] == "FILE-MARKER the code word is PELICAN"
    # Langfuse shows an observation's input and output from langfuse.observation.*
    t = attrs_of(tool)
    assert t["langfuse.observation.output"] == "FILE-MARKER the code word is PELICAN"
    assert json.loads(t["langfuse.observation.input"]) == {"path": "notes.txt"}
    root = next(
        s
        for s in langfuse.spans
        if not s.parent_span_id and attrs_of(s)["langfuse.trace.name"] == "basic/find-word"
    )
    r = attrs_of(root)
    assert r["langfuse.observation.input"] == "PROMPT-MARKER what is the code word in notes.txt?"
    assert r["langfuse.observation.output"] == "ANSWER-MARKER PELICAN"
    chats = [
        attrs_of(s)
        for s in langfuse.spans
        if s.trace_id == root.trace_id and s.name.startswith("chat")
    ]
    assert all("PROMPT-MARKER" in c["langfuse.observation.input"] for c in chats)
    assert any("ANSWER-MARKER" in c["langfuse.observation.output"] for c in chats)
    judge = next(s for s in langfuse.scores.values() if s["name"] == "judge")
    assert judge["comment"] == "RATIONALE-MARKER named it"


def test_no_export_turns_exporting_off_and_replays_export_only_when_asked(
    tmp_path: Path, model: FakeAPI, langfuse: FakeLangfuse
) -> None:
    project = make_project(tmp_path, model)
    script_run(model)
    done = evaltape(
        project,
        "live",
        "--update-cassettes",
        "-m",
        "agent-1",
        "--source",
        "simulated",
        "--retries",
        "0",
        "--no-export",
        langfuse=langfuse,
    )
    assert done.returncode == 4, done.stderr  # "explodes" stays out of the cassettes
    assert "export:" not in done.stderr
    assert langfuse.headers == []
    live = read_record(resolve_run(project / ".evaltape" / "results"))
    assert live.exported == ()

    # replays never export unless asked (the run's own tapes hold all three attempts)
    tapes = str(project / ".evaltape" / "results" / "tapes" / live.run_id)
    quiet = evaltape(project, "replay", tapes, langfuse=langfuse)
    assert quiet.returncode == 0, quiet.stdout + quiet.stderr
    assert langfuse.headers == [] and "export:" not in quiet.stderr
    asked = evaltape(project, "replay", tapes, "--export", langfuse=langfuse)
    assert asked.returncode == 0, asked.stdout + asked.stderr
    replay_run = read_record(resolve_run(project / ".evaltape" / "results"))
    assert replay_run.kind.value == "replay" and len(replay_run.exported) == 3
    roots = [s for s in langfuse.spans if not s.parent_span_id]
    assert {attrs_of(r)["langfuse.session.id"] for r in roots} == {replay_run.run_id}
    assert {metadata_of(r)["mode"] for r in roots} == {"replay"}
    changes = [s for s in langfuse.scores.values() if s["name"] == "replay.change"]
    assert len(changes) == 3 and all(s["dataType"] == "CATEGORICAL" for s in changes)
    assert {s["value"] for s in changes} <= {"unchanged", "regression", "improvement"}
    assert {s["traceId"] for s in changes} == {r.trace_id.hex() for r in roots}


def test_the_standard_variables_pick_the_endpoint_headers_and_timeout() -> None:
    generic = export_config(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%3Db,x-team = evals ",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-team=core",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
        }
    )
    assert generic is not None and not generic.langfuse
    assert generic.traces.url == "http://127.0.0.1:4318/v1/traces"
    # as the SDK reads them: the traces-specific variable replaces the generic one
    assert dict(generic.traces.headers) == {"x-team": "core"}
    assert generic.traces.timeout == 2.5
    only_generic = export_config(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%3Db,x-team = evals ",
            "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
            "OTEL_SERVICE_NAME": "checkout-evals",
            "OTEL_RESOURCE_ATTRIBUTES": "service.name=ignored,team=a%2Cb,service.namespace=ai",
        }
    )
    assert only_generic is not None
    assert dict(only_generic.traces.headers) == {"api-key": "a=b", "x-team": "evals"}
    assert "a=b" not in repr(only_generic) and "a=b" not in only_generic.describe()
    assert only_generic.traces.compression == "gzip"
    assert only_generic.resource == (
        ("service.name", "checkout-evals"),
        ("team", "a,b"),
        ("service.namespace", "ai"),
    )
    with pytest.raises(ExportConfigError, match="OTEL_RESOURCE_ATTRIBUTES: entry 2"):
        export_config(
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_RESOURCE_ATTRIBUTES": "a=1,b"}
        )
    specific = export_config(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:9999/custom/path",
        }
    )
    assert specific is not None and specific.traces.url == "http://127.0.0.1:9999/custom/path"
    lf = export_config(
        {
            "LANGFUSE_HOST": "http://127.0.0.1:3000/",
            "LANGFUSE_PUBLIC_KEY": PUBLIC,
            "LANGFUSE_SECRET_KEY": SECRET,
        }
    )
    assert lf is not None and lf.scores is not None
    assert lf.traces.url == "http://127.0.0.1:3000/api/public/otel/v1/traces"
    assert lf.scores.url == "http://127.0.0.1:3000/api/public/scores"
    headers = dict(lf.traces.headers)
    assert headers["x-langfuse-ingestion-version"] == "4"
    assert base64.b64decode(headers["authorization"].split()[1]).decode() == f"{PUBLIC}:{SECRET}"
    assert SECRET not in lf.describe() and SECRET not in repr(lf)
    both = export_config(
        {
            "LANGFUSE_BASE_URL": "http://127.0.0.1:3001",
            "LANGFUSE_HOST": "http://127.0.0.1:3000",
            "LANGFUSE_PUBLIC_KEY": PUBLIC,
            "LANGFUSE_SECRET_KEY": SECRET,
        }
    )
    assert both is not None and both.scores is not None  # LANGFUSE_HOST is the deprecated name
    assert both.scores.url == "http://127.0.0.1:3001/api/public/scores"
    assert export_config({}) is None
    with_userinfo = export_config({"OTEL_EXPORTER_OTLP_ENDPOINT": "https://u:hunter2@otel.example"})
    assert with_userinfo is not None
    assert with_userinfo.describe() == "traces to https://otel.example/v1/traces (OTLP/HTTP)"
    with pytest.raises(ExportConfigError, match="LANGFUSE_SECRET_KEY is not set"):
        export_config({"LANGFUSE_PUBLIC_KEY": PUBLIC})
    with pytest.raises(ExportConfigError, match="OTEL_EXPORTER_OTLP_HEADERS: entry 2"):
        export_config(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x",
                "OTEL_EXPORTER_OTLP_HEADERS": "a=1,secretvalue",
            }
        )
