"""``evaltape report``: one self-contained HTML page, checked in a real headless Chromium.

Two cases of a local suite are recorded live with a copy of the reference
agent against a 127.0.0.1 server that plays a competent model; its reply to
one of them carries markup that would run script if it reached the page
unescaped.  A tool bug is planted and the cassettes replayed (a harness
change), then the report of that replay is opened in Chromium: it loads with
no console error and no network request, shows the run record's counts, runs
no script from the tape, and a click on an attempt opens its trace.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents.forced_chat_server import ForcedChatServer
from test_replay_harness_changes import copy_agent, evaltape

REPO = Path(__file__).parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from evals.report_screenshot import chromium, open_page  # noqa: E402

pytestmark = pytest.mark.slow

AGENT = "agent_under_test"
MODEL = "fake-model"
INJECTED = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
CASES = [
    {
        "id": "read-notes",
        "prompt": "What is on the second line of notes.txt?",
        "files": {"notes.txt": "alpha\nbeta\ngamma\n"},
        "plan": [["read", {"path": "notes.txt"}]],
        "answer": "beta",
    },
    {
        "id": "list-files",
        "prompt": "Which files are in the project folder?",
        "files": {"a.txt": "1\n", "b.txt": "2\n"},
        "plan": [["ls", {"path": "."}]],
        "answer": f"a.txt and b.txt {INJECTED}",
    },
]

needs_chromium = pytest.mark.skipif(
    chromium() is None, reason="chromium is not installed (apt-get install -y chromium)"
)


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project recorded live, then replayed with a planted tool bug (exit 1)."""
    root = tmp_path_factory.mktemp("report")
    copy_agent(root)
    (root / "suites").mkdir()
    lines = [
        json.dumps(
            {
                "id": c["id"],
                "prompt": c["prompt"],
                "failureCategory": "harness",
                "whyModelBacked": "the model picks the tool",
                "files": c["files"],
                "expectMaxTurns": 6,
            }
        )
        for c in CASES
    ]
    (root / "suites" / "harness.jsonl").write_text("\n".join(lines) + "\n")
    (root / "evaltape.toml").write_text(
        f'suites = "suites"\ncassettes = "cassettes"\nresults = "results"\nagent = "{AGENT}:run"\n'
    )
    for case in CASES:
        plan = [(name, args) for name, args in case["plan"]]  # type: ignore[attr-defined]
        with ForcedChatServer(plan, str(case["answer"])) as server:
            live = evaltape(
                root, "live", "--update-cassettes", "-m", MODEL, "--base-url", server.url,
                "--cases", str(case["id"]), "--source", "simulated",
            )  # fmt: skip
        assert live.returncode == 0, live.stdout + live.stderr
    tools = root / AGENT / "_tools.py"
    source = tools.read_text()
    intact = 'text = "".join(lines[start - 1 : end])'
    assert source.count(intact) == 1
    tools.write_text(source.replace(intact, 'text = "".join(lines[start:end])'))
    replay = evaltape(root, "replay")
    assert replay.returncode == 1, replay.stdout + replay.stderr
    yield root


def latest_record(project: Path) -> dict[str, object]:
    runs = sorted((project / "results" / "runs").glob("*.json"))
    data: dict[str, object] = json.loads(runs[-1].read_text())
    return data


def test_the_report_escapes_what_came_from_a_tape(replayed: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    done = evaltape(replayed, "report", "latest", "-o", str(page))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("FAIL: replay: 1 unchanged, 1 changed")
    html = page.read_text()
    assert "window.pwned" in html  # the reply is on the page (in the trace) ...
    assert "<script>window.pwned" not in html and "<img src=x" not in html  # ... as text
    assert html.count("<script") == 1  # ours, allowed by hash in the page's policy
    assert "http://" not in html.split("</head>")[0] and "https://" not in html


def test_a_replay_records_the_diff_the_report_shows(replayed: Path) -> None:
    (changed,) = [a for a in latest_record(replayed)["attempts"] if a["change"] == "changed"]  # type: ignore[union-attr, index]
    assert changed["case"] == "read-notes"
    assert any(line.strip().startswith("-alpha") for line in changed["change_diff"])


def test_an_unknown_run_is_one_line_and_exit_2(replayed: Path, tmp_path: Path) -> None:
    done = evaltape(replayed, "report", "no-such-run", "-o", str(tmp_path / "r.html"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f'evaltape: error: no run "no-such-run" in {replayed / "results" / "runs"}'
    ]
    assert not (tmp_path / "r.html").exists()


@needs_chromium
def test_the_report_in_chromium(replayed: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    done = evaltape(replayed, "report", "latest", "-o", str(page))
    assert done.returncode == 0, done.stdout + done.stderr
    record = latest_record(replayed)
    attempts: list[dict[str, object]] = record["attempts"]  # type: ignore[assignment]
    with open_page(page) as (tab, errors):
        assert tab.locator("#decision .word").inner_text() == "FAIL"
        shown = {
            li.get_attribute("data-count"): int(li.locator("b").inner_text())
            for li in tab.locator("#counts li").all()
        }
        verdicts = [str(a["verdict"]) for a in attempts]
        changes = [str(a["change"]) for a in attempts]
        expected = {"attempts": len(attempts)}
        expected |= {v: verdicts.count(v) for v in set(verdicts)}
        expected |= {c: changes.count(c) for c in set(changes)}
        assert shown == expected
        assert tab.locator("#cases tbody tr").count() == len(CASES)
        assert tab.locator("#rates tbody tr").count() == 1
        assert tab.locator("svg.plot circle").count() == 1
        assert "-alpha" in tab.locator("#changes pre.diff").inner_text()
        assert tab.evaluate("typeof window.pwned") == "undefined"

        row = tab.locator("#cases tbody tr", has_text="list-files")
        square = row.locator("a.v").first
        target = str(square.get_attribute("href"))[1:]
        trace = tab.locator(f"details#{target}")
        assert trace.evaluate("d => d.open") is False
        square.click()
        assert trace.evaluate("d => d.open") is True
        text = trace.locator("pre").inner_text()
        assert "--- turn 1" in text and "call ls" in text
        assert INJECTED in text  # shown as the text the model wrote, not as markup

        tab.fill("#filter", "read-notes")
        assert tab.locator("#cases tbody tr:visible").count() == 1

        shot = tmp_path / "report.png"
        tab.screenshot(path=str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert errors == []


@needs_chromium
def test_a_comparison_shows_both_sides_and_the_movement(replayed: Path, tmp_path: Path) -> None:
    runs = sorted((replayed / "results" / "runs").glob("*.json"))
    first = json.loads(runs[0].read_text())["run_id"]
    page = tmp_path / "compare.html"
    done = evaltape(replayed, "report", "latest", "--base", first, "-o", str(page))
    assert done.returncode == 0, done.stdout + done.stderr
    with open_page(page) as (tab, errors):
        sides = {r.locator("td").first.inner_text() for r in tab.locator("#rates tbody tr").all()}
        assert sides == {f"base {first}", f"run {json.loads(runs[-1].read_text())['run_id']}"}
        assert tab.locator("h2", has_text="Cases that moved").count() == 1
    assert errors == []
