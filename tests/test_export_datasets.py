"""Runs as Langfuse datasets and experiments: ``evaltape export --dataset`` keeps the suite's
cases as dataset items and links each exported attempt's trace to its item in a dataset
run named after the evaltape run, once, against the strict fake Langfuse on 127.0.0.1."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeapi import FakeAPI
from test_export_langfuse import FakeLangfuse, attrs_of, evaltape, make_project, script_run

from evaltape.scoring import read_record, resolve_run

pytestmark = pytest.mark.slow

LIVE = ("live", "--update-cassettes", "-m", "agent-1", "--source", "simulated", "--retries", "0")
CASES = ("find-word", "explodes", "flaky")
DATASET = "evaltape-basic"


@pytest.fixture
def langfuse() -> Iterator[FakeLangfuse]:
    with FakeLangfuse() as fake:
        yield fake


def roots_by_trace(langfuse: FakeLangfuse) -> dict[str, Any]:
    return {s.trace_id.hex(): s for s in langfuse.spans if not s.parent_span_id}


def runs_seen(langfuse: FakeLangfuse) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for item in langfuse.run_items:
        out.setdefault(item["datasetRunName"], []).append(item)
    return out


def test_export_with_a_dataset_links_each_attempt_to_its_case_once(
    tmp_path: Path, api: FakeAPI, langfuse: FakeLangfuse
) -> None:
    project = make_project(tmp_path, api)
    script_run(api)
    live = evaltape(project, *LIVE, langfuse=langfuse)
    assert live.returncode == 4, live.stderr  # "explodes" stays out of the cassettes
    record = read_record(resolve_run(project / ".evaltape" / "results"))

    done = evaltape(project, "export", "latest", "--dataset", DATASET, langfuse=langfuse)
    assert done.returncode == 0, done.stderr
    assert "nothing to export (3 already exported)" in done.stdout
    assert f"dataset {DATASET}: 3 item(s), 3 trace(s) linked (0 linked before)" in done.stdout
    assert langfuse.refused == []

    # the dataset, and one item per case: the prompt in, the expectations out
    assert list(langfuse.datasets) == [DATASET]
    items = {i["metadata"]["case"]: i for i in langfuse.items.values()}
    assert sorted(items) == sorted(CASES)
    cases = {
        json.loads(line)["id"]: json.loads(line)
        for line in (project / "evals" / "basic.jsonl").read_text().splitlines()
    }
    for case_id, item in items.items():
        assert item["input"] == cases[case_id]["prompt"]
        assert item["expectedOutput"]["expectMaxTurns"] == cases[case_id]["expectMaxTurns"]
        assert item["metadata"]["suite"] == "basic"
        assert uuid.UUID(item["id"])
    assert items["find-word"]["expectedOutput"]["rubric"] == "test"
    assert items["flaky"]["expectedOutput"]["expectTool"] == "read"

    # one dataset run, named after the evaltape run, linking each trace to its case's item
    (run_name,) = runs_seen(langfuse)
    assert run_name.startswith("live agent-1") and record.run_id in run_name
    roots = roots_by_trace(langfuse)
    linked = langfuse.run_items
    assert len(linked) == 3
    for link in linked:
        root = roots[link["traceId"]]
        assert link["observationId"] == root.span_id.hex()
        case = langfuse.items[link["datasetItemId"]]["metadata"]["case"]
        assert attrs_of(root)["langfuse.trace.name"] == f"basic/{case}"
    (run,) = langfuse.runs.values()
    assert run["metadata"]["run_id"] == record.run_id and run["metadata"]["kind"] == "live"

    # again: items updated in place, nothing linked twice
    ids_before = sorted(langfuse.items)
    again = evaltape(project, "export", "latest", "--dataset", DATASET, langfuse=langfuse)
    assert again.returncode == 0, again.stderr
    assert f"dataset {DATASET}: 3 item(s), 0 trace(s) linked (3 linked before)" in again.stdout
    assert sorted(langfuse.items) == ids_before
    assert len(langfuse.run_items) == 3 and len(langfuse.datasets) == 1
    assert langfuse.refused == []


def test_a_replay_run_is_a_second_labelled_run_of_the_same_dataset(
    tmp_path: Path, api: FakeAPI, langfuse: FakeLangfuse
) -> None:
    project = make_project(tmp_path, api)
    script_run(api)
    assert evaltape(project, *LIVE, langfuse=langfuse).returncode == 4  # "explodes" not in
    live_id = read_record(resolve_run(project / ".evaltape" / "results")).run_id
    first = evaltape(project, "export", "--dataset", DATASET, langfuse=langfuse)
    assert first.returncode == 0, first.stderr
    # The run's own tapes hold all three attempts (the cassettes keep no provider error).
    tapes = str(project / ".evaltape" / "results" / "tapes" / live_id)
    replay = evaltape(project, "replay", tapes, "--export", langfuse=langfuse)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    replay_id = read_record(resolve_run(project / ".evaltape" / "results")).run_id

    # the setting names the dataset when the flag is not given
    with (project / "evaltape.toml").open("a") as settings:
        settings.write(f'dataset = "{DATASET}"\n')
    second = evaltape(project, "export", "latest", langfuse=langfuse)
    assert second.returncode == 0, second.stderr
    assert f"dataset {DATASET}: 3 item(s), 3 trace(s) linked" in second.stdout

    runs = runs_seen(langfuse)
    assert len(runs) == 2 and len(langfuse.datasets) == 1 and len(langfuse.items) == 3
    (replay_run,) = (name for name in runs if name.startswith("replay agent-1"))
    assert replay_id in replay_run
    # both runs cover the same items, so Langfuse compares them case by case
    by_run = {name: {i["datasetItemId"] for i in items} for name, items in runs.items()}
    assert len(set(map(frozenset, by_run.values()))) == 1
    replay_traces = {i["traceId"] for i in runs[replay_run]}
    roots = roots_by_trace(langfuse)
    assert {attrs_of(roots[t])["langfuse.session.id"] for t in replay_traces} == {replay_id}

    # a rescore run is exported and linked the same way, labelled as one
    rescored = evaltape(project, "rescore", tapes, langfuse=langfuse)
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    third = evaltape(project, "export", "latest", langfuse=langfuse)
    assert third.returncode == 0, third.stderr
    assert "exported 3 of 3 attempt(s)" in third.stdout
    names = list(runs_seen(langfuse))
    assert len(names) == 3 and sum(n.startswith("rescore agent-1") for n in names) == 1
    assert langfuse.refused == []


def test_a_dataset_without_langfuse_is_refused_in_one_line(
    tmp_path: Path, api: FakeAPI, langfuse: FakeLangfuse
) -> None:
    project = make_project(tmp_path, api)
    script_run(api)
    assert evaltape(project, *LIVE, "--no-export", langfuse=langfuse).returncode == 4
    collector = {
        "LANGFUSE_HOST": "",
        "LANGFUSE_PUBLIC_KEY": "",
        "LANGFUSE_SECRET_KEY": "",
        "OTEL_EXPORTER_OTLP_ENDPOINT": langfuse.host,
    }
    done = evaltape(project, "export", "--dataset", DATASET, langfuse=langfuse, extra_env=collector)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"evaltape: error: dataset '{DATASET}': datasets are Langfuse's; set "
        "LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"
    ]
    assert langfuse.requests == []
