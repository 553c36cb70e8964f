"""``--junit``, ``--json`` and the job summary, read back the way CI reads them.

A small project is recorded live against the chat server on 127.0.0.1, then
its harness is edited so that one replay holds every kind at once: a
regression (the harness now overwrites a file the case keeps immutable), a stale
recording (its system prompt changed for one case), a harness change (it
asks the model twice) and an unchanged case.  The JUnit file validates
against the vendored Jenkins schema and names each kind; the JSON document
has exactly the fields docs/json.md lists, with the run's values; the
Markdown summary lands in ``$GITHUB_STEP_SUMMARY`` with trace commands that
work when pasted.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import xmlschema
from agents.chat_server import ChatServer
from harness_project import MODEL, evaltape, make_project, plant

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = xmlschema.XMLSchema(Path(__file__).parent / "data" / "junit-10.xsd")
CASES = ["keep", "regress", "stale", "change"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The project with each case recorded once (live, passing); the server is gone after."""
    root = tmp_path_factory.mktemp("formats")
    with ChatServer() as server:
        project = make_project(root / "project", CASES, server.url)
        suite = project / "evals" / "basic.jsonl"
        lines = [json.loads(line) for line in suite.read_text().splitlines()]
        for line in lines:
            if line["id"] == "regress":
                line |= {"files": {"keep.txt": "keep me\n"}, "immutable": ["keep.txt"]}
        suite.write_text("".join(json.dumps(line) + "\n" for line in lines))
        live = evaltape(project, "live", "--update-cassettes", "-m", MODEL)
        assert live.returncode == 0, live.stdout + live.stderr
    yield project


@pytest.fixture
def project(recorded: Path, tmp_path: Path) -> Path:
    """A private copy of the recorded project, its harness edited three ways."""
    copy = Path(shutil.copytree(recorded, tmp_path / "project"))
    plant(
        copy,
        "    # edits\n",
        '    if task.case_id == "stale":\n'
        '        system += " Be polite."\n'
        '    if task.case_id == "change":\n'
        "        ask(task, system)\n",
    )
    plant(
        copy,
        "    return str(",
        '    if task.case_id == "regress":\n'
        '        (task.workspace / "keep.txt").write_text("the harness lost the file\\n")\n'
        "    return str(",
    )
    return copy


def documented(section: str) -> set[str]:
    """The field paths docs/json.md lists for every document plus ``section``."""
    text = (ROOT / "docs" / "json.md").read_text()
    fields: set[str] = set()
    for title in ("Every document", f"`{section}`"):
        body = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
        fields |= set(re.findall(r"^\| `([^`]+)` \|", body, re.MULTILINE))
    if section == "ab":  # "with the fields of compare's comparison"
        fields |= {f for f in documented("compare") if f.startswith("comparison.")}
    sides = {f for f in fields if ".SIDE." in f}
    for f in sides:
        fields |= {f.replace("SIDE", "baseline"), f.replace("SIDE", "current")}
    return fields - sides


def paths(value: object, prefix: str = "") -> set[str]:
    """Every field path of a JSON value, lists as ``name[]`` (the run record is one field)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{prefix}.{key}" if prefix else key
            found.add(path)
            if path != "record":
                found |= paths(item, path)
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                found |= paths(item, prefix + "[]")
    return found


def assert_documented(document: dict[str, object], section: str) -> None:
    listed = documented(section)
    written = paths(document)
    assert written - listed == set(), f"fields missing from docs/json.md: {written - listed}"
    top = {f for f in listed if "." not in f and "[" not in f}
    assert top == set(document), f"top-level fields differ: {top ^ set(document)}"


def junit_cases(xml: Path) -> dict[str, ET.Element]:
    SCHEMA.validate(str(xml))
    return {c.attrib["name"]: c for c in ET.parse(xml).getroot().iter("testcase")}


def test_a_replay_with_every_kind_writes_valid_junit_json_and_a_summary(
    project: Path, tmp_path: Path
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    result = evaltape(
        project, "replay", "--junit", "out/replay.xml", "--json", "out/replay.json",
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    decision = result.stdout.splitlines()[-1]
    assert decision.startswith("FAIL: 1 regression, 1 conversation changed")

    cases = junit_cases(project / "out" / "replay.xml")
    assert set(cases) == {f"{c} [{MODEL}]" for c in CASES}
    kinds = {
        name.split()[0]: [
            (child.tag, child.get("type")) for child in case if child.tag != "system-out"
        ]
        for name, case in cases.items()
    }
    assert kinds == {
        "keep": [],
        "regress": [("failure", "regression")],
        "stale": [("error", "stale")],
        "change": [("failure", "harness-changed")],
    }
    regress = cases[f"regress [{MODEL}]"].find("failure")
    assert regress is not None and "keep.txt was modified" in regress.get("message", "")
    stale = cases[f"stale [{MODEL}]"].find("error")
    assert stale is not None and stale.get("message") == "system prompt changed"
    root = ET.parse(project / "out" / "replay.xml").getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "2", "1")
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["evaltape.decision"] == decision
    assert props[f"stale [{MODEL}] #1"] == "stale: system prompt changed"
    assert props[f"keep [{MODEL}] #1"].startswith("passed: unchanged, pass as recorded")

    document = json.loads((project / "out" / "replay.json").read_text())
    assert_documented(document, "replay")
    assert document["exit_code"] == 1 and document["decision"] == decision
    assert {k: n for k, n in document["counts"].items() if n} == {
        "regression": 1, "stale": 1, "changed": 1, "passed": 1,
    }  # fmt: skip
    by_case = {c["case"]: c for c in document["changes"]}
    assert by_case["stale"]["harness"]["what"] == "system prompt"
    assert by_case["change"]["harness"]["what"] == "conversation"
    assert by_case["regress"]["rescored"]["passed"] is True
    assert by_case["regress"]["replayed"]["passed"] is False
    record = document["record"]
    assert record["run_id"] == document["run_id"]
    assert {a["case"]: a["change"] for a in record["attempts"]} == {
        "keep": "unchanged", "regress": "regression", "stale": "stale", "change": "changed",
    }  # fmt: skip

    text = summary.read_text()
    headline = decision.removesuffix(" (see above)")
    assert text.startswith(f"earlier step\n### ❌ evaltape replay: {headline}\n")
    assert "| regression | 1 |" in text and "| stale | 1 |" in text
    commands = re.findall(r"inspect: `([^`]+)`", text)
    assert len(commands) == 3
    assert commands[0] == f"evaltape trace {document['run_id']} --cases change -m {MODEL}"
    shown = evaltape(project, *shlex.split(commands[1])[1:])
    assert shown.returncode == 0, shown.stderr
    assert f"basic/regress · {MODEL} · attempt 1" in shown.stdout


def test_json_to_stdout_sends_the_report_to_stderr_and_no_summary_without_the_variable(
    project: Path,
) -> None:
    result = evaltape(project, "replay", "--cases", "keep", "--json", "-")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["decision"] == "OK: 1 attempt replayed, harness unchanged"
    assert result.stderr.splitlines()[-2] == document["decision"]
    assert not list(project.rglob("*.md"))


def test_live_ab_rescore_and_compare_write_valid_junit_and_documented_json(
    recorded: Path, tmp_path: Path
) -> None:
    project = Path(shutil.copytree(recorded, tmp_path / "project"))
    with ChatServer() as server:
        live = evaltape(
            project, "live", "-m", MODEL, "--trials", "2", "--base-url", server.url,
            "--junit", "live.xml", "--json", "live.json",
        )  # fmt: skip
        ab = evaltape(
            project, "ab", "--baseline", "env:SIDE=a", "--candidate", "env:SIDE=b", "-m", MODEL,
            "--trials", "2", "--base-url", server.url, "--junit", "ab.xml", "--json", "ab.json",
        )  # fmt: skip
    assert ab.returncode == 0, ab.stderr
    assert set(junit_cases(project / "ab.xml")) == {f"{c} [{MODEL}]" for c in CASES}
    compared_ab = json.loads((project / "ab.json").read_text())
    assert_documented(compared_ab, "ab")
    assert {v["verdict"] for v in compared_ab["verdicts"]} == {"unchanged-pass"}
    assert live.returncode == 0, live.stderr
    cases = junit_cases(project / "live.xml")
    assert set(cases) == {f"{c} [{MODEL}]" for c in CASES}
    assert all(not [c for c in case if c.tag != "system-out"] for case in cases.values())
    document = json.loads((project / "live.json").read_text())
    assert_documented(document, "live")
    assert document["counts"]["passed"] == 4 and document["trials"] == 2
    assert [a["attempt"] for a in document["cases"][0]["attempts"]] == [0, 1]

    first = document["run_id"]
    rescore = evaltape(
        project, "rescore", first, "--junit", "rescore.xml", "--json", "rescore.json"
    )
    assert rescore.returncode == 0, rescore.stderr
    assert set(junit_cases(project / "rescore.xml")) == {f"{c} [{MODEL}]" for c in CASES}
    rescored = json.loads((project / "rescore.json").read_text())
    assert_documented(rescored, "rescore")
    assert len(rescored["record"]["attempts"]) == 8

    compare = evaltape(
        project, "compare", first, "latest", "--junit", "compare.xml", "--json", "compare.json"
    )
    assert compare.returncode == 0, compare.stderr
    assert set(junit_cases(project / "compare.xml")) == {f"{c} [{MODEL}]" for c in CASES}
    compared = json.loads((project / "compare.json").read_text())
    assert_documented(compared, "compare")
    assert compared["comparison"]["current"]["passed"] == 8
