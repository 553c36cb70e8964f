"""Langfuse semantics a real server depends on, against the strict fake Langfuse on
127.0.0.1: no score is lost when the scores API refuses one, every span carries the
environment and release, and the judge's tokens stay out of the agent's trace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeapi import FakeAPI
from test_export_langfuse import (
    FakeLangfuse,
    attrs_of,
    evaltape,
    make_project,
    recorded,
    script_run,
)

from evaltape.recorder import VERSION, decode_call
from evaltape.scoring import read_record, resolve_run
from evaltape.scoring.judge._judgement import judge_exchanges

pytestmark = pytest.mark.slow

LIVE = ("live", "--update-cassettes", "-m", "agent-1", "--source", "simulated", "--retries", "0")
CASES = ("find-word", "explodes", "flaky")
LIVE_EXIT = 4
"""``explodes`` (a provider 500) never goes into a cassette, so ``LIVE`` exits 4."""


@pytest.fixture
def langfuse() -> Iterator[FakeLangfuse]:
    with FakeLangfuse() as fake:
        yield fake


def live_run(project: Path, langfuse: FakeLangfuse, *extra: str) -> str:
    done = evaltape(project, *LIVE, *extra, langfuse=langfuse)
    assert done.returncode == LIVE_EXIT, done.stderr
    return done.stderr


def names_by_trace(langfuse: FakeLangfuse) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for score in langfuse.scores.values():
        out.setdefault(score["traceId"], set()).add(score["name"])
    return out


def test_a_refused_score_leaves_the_attempt_unexported_and_export_sends_only_the_missing(
    tmp_path: Path, api: FakeAPI, langfuse: FakeLangfuse
) -> None:
    project = make_project(tmp_path, api)
    script_run(api)
    langfuse.refuse = {"judge"}  # the judged attempt's "judge" score gets a 400
    stderr = live_run(project, langfuse)
    (warning,) = [line for line in stderr.splitlines() if "warning: export" in line]
    assert "HTTP 400" in warning and "score judge refused" in warning
    record = read_record(resolve_run(project / ".evaltape" / "results"))
    assert "basic/find-word/agent-1/0" not in record.exported
    (partial,) = record.export_partial
    key, sent = partial
    assert key == "basic/find-word/agent-1/0"
    assert "passed" in sent and "judge" not in sent
    traces_before = langfuse.trace_posts
    posted_before = len(langfuse.posted)
    spans_before = len(langfuse.spans)

    langfuse.refuse = set()
    done = evaltape(project, "export", record.run_id, langfuse=langfuse)
    assert done.returncode == 0, done.stderr
    after = read_record(resolve_run(project / ".evaltape" / "results"))
    assert sorted(after.exported) == sorted(f"basic/{c}/agent-1/0" for c in CASES)
    assert after.export_partial == ()
    # the attempt's spans are not sent twice; the other attempts (never reached after the
    # failure) are sent in full
    resent_keys = set(after.exported) - set(record.exported) - {key}
    assert langfuse.trace_posts == traces_before + len(resent_keys)
    find_word = next(
        s for s in langfuse.spans if attrs_of(s).get("langfuse.trace.name") == "basic/find-word"
    )
    assert sum(s.trace_id == find_word.trace_id for s in langfuse.spans) == sum(
        s.trace_id == find_word.trace_id for s in langfuse.spans[:spans_before]
    )
    # exactly the missing scores of the partial attempt were posted, each once
    mine = find_word.trace_id.hex()
    posted_now = [name for trace, name in langfuse.posted[posted_before:] if trace == mine]
    assert sorted(posted_now) == sorted(names_by_trace(langfuse)[mine] - set(sent))
    assert "judge" in posted_now and not set(posted_now) & set(sent)
    assert f"exported {1 + len(resent_keys)} of {1 + len(resent_keys)} attempt(s)" in done.stdout

    again = evaltape(project, "export", record.run_id, langfuse=langfuse)
    assert "nothing to export (3 already exported)" in again.stdout


def test_every_span_and_the_resource_carry_environment_release_and_session(
    tmp_path: Path, api: FakeAPI, langfuse: FakeLangfuse
) -> None:
    project = make_project(tmp_path, api)
    script_run(api)
    live_run(project, langfuse)
    run_id = read_record(resolve_run(project / ".evaltape" / "results")).run_id
    assert len(langfuse.spans) > 5
    for span, resource in zip(langfuse.spans, langfuse.resources, strict=True):
        a = attrs_of(span)
        assert a["langfuse.environment"] == "default", span.name
        assert a["langfuse.release"] == VERSION, span.name
        assert a["session.id"] == a["langfuse.session.id"]
        assert a["session.id"] in (run_id, run_id + "/grading")
        assert "langfuse.trace.name" in a and "langfuse.trace.tags" in a
        assert resource["deployment.environment.name"] == "default"
        assert resource["langfuse.environment"] == "default"
        assert resource["langfuse.release"] == VERSION
        assert resource["service.name"] == "evaltape"


def test_the_environment_names_every_span_and_score(
    tmp_path: Path, api: FakeAPI, langfuse: FakeLangfuse
) -> None:
    project = make_project(tmp_path, api)
    script_run(api)
    done = evaltape(
        project,
        *LIVE,
        langfuse=langfuse,
        extra_env={"LANGFUSE_TRACING_ENVIRONMENT": "ci", "EVALTAPE_EXPORT_USER": "release-bot"},
    )
    assert done.returncode == LIVE_EXIT, done.stderr
    assert {attrs_of(s)["langfuse.environment"] for s in langfuse.spans} == {"ci"}
    assert {attrs_of(s)["user.id"] for s in langfuse.spans} == {"release-bot"}
    assert {r["deployment.environment.name"] for r in langfuse.resources} == {"ci"}
    assert {s["environment"] for s in langfuse.scores.values()} == {"ci"}


def usage_total(spans: list[Any]) -> int:
    return sum(
        attrs_of(s).get("gen_ai.usage.input_tokens", 0)
        + attrs_of(s).get("gen_ai.usage.output_tokens", 0)
        for s in spans
    )


def test_the_judges_tokens_are_not_in_the_agent_traces_total(
    tmp_path: Path, api: FakeAPI, langfuse: FakeLangfuse
) -> None:
    project = make_project(tmp_path, api)
    script_run(api)
    live_run(project, langfuse)
    session = recorded(project, "find-word")
    (exchange,) = judge_exchanges(session)
    judge = decode_call(exchange)
    assert judge is not None and judge.usage.total_tokens > 0
    root = next(
        s for s in langfuse.spans if attrs_of(s).get("langfuse.trace.name") == "basic/find-word"
    )
    agent_trace = [s for s in langfuse.spans if s.trace_id == root.trace_id]
    # what a backend adds up over the trace is the agent's own usage, nothing more
    assert usage_total(agent_trace) == session.usage.input_tokens + session.usage.output_tokens
    assert all(s.name != "chat judge-1" for s in agent_trace)
    (grading,) = (s for s in langfuse.spans if s.name == "chat judge-1")
    assert grading.trace_id != root.trace_id
    assert usage_total([grading]) == judge.usage.input_tokens + judge.usage.output_tokens
    assert "cost" not in " ".join(attrs_of(root))
