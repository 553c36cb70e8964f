"""``evaltape quarantine-report``: proposals from run records written by the real writer,
read back through the history; the suite files are never touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from evaltape.scoring import (
    AttemptResult,
    Case,
    RunKind,
    RunLog,
    RunRecord,
    RunState,
    Verdict,
    load_suites,
)
from evaltape.scoring.cli.main import cli
from evaltape.scoring.stats import wilson
from evaltape.scoring.verdicts._quarantine import Standing, history_records, quarantine_report

REPO = Path(__file__).parent.parent
P, F, E = Verdict.PASSED, Verdict.FAILED, Verdict.ERROR


def _case(case_id: str, **extra: object) -> dict[str, object]:
    return {
        "id": case_id,
        "prompt": f"do {case_id}",
        "failureCategory": "quarantine",
        "whyModelBacked": "pass rates come from real attempts",
        "expectMaxTurns": 3,
        **extra,
    }


GAP = {"notes": "the agent reads the wrong file", "target": "it reads config.toml first"}
CASES = [
    _case("flaky"),
    _case("fixed", quarantined=True),
    _case("broken"),
    _case("gap", knownGap=GAP),
    _case("steady"),
    _case("shaky", quarantined=True),
]


def _write_suite(project: Path, cases: list[dict[str, object]]) -> dict[str, Case]:
    (project / "evals").mkdir(parents=True, exist_ok=True)
    suite = project / "evals" / "basic.jsonl"
    suite.write_text("".join(json.dumps(c) + "\n" for c in cases))
    (project / "evaltape.toml").write_text('suites = "evals"\n')
    (loaded,) = load_suites([suite], rubrics_dir=project / "evals" / "rubrics")
    return {c.id: c for c in loaded.cases}


class History:
    """Writes finished runs through ``RunLog`` with a fake clock, as a real run would."""

    def __init__(self, results: Path) -> None:
        self.results = results
        self.now = 1_796_000_000.0
        self.count = 0

    def tick(self) -> float:
        self.now += 1.0
        return self.now

    def run(
        self,
        attempts: list[tuple[Case, str, Verdict]],
        *,
        kind: RunKind = RunKind.LIVE,
        fingerprint: str | None = None,
        tainted: bool = False,
    ) -> str:
        self.count += 1
        run_id = f"20261129T{100000 + self.count:06d}.000Z-{self.count:06x}"
        log = RunLog(
            self.results,
            RunRecord(
                run_id=run_id,
                kind=kind,
                state=RunState.RUNNING,
                started_at=self.now,
                models=tuple(dict.fromkeys(m for _, m, _ in attempts)),
                suites=("basic",),
                total=len(attempts),
            ),
            clock=self.tick,
        )
        log.start()
        for index, (case, model, verdict) in enumerate(attempts):
            log.add(
                AttemptResult(
                    case_id=case.id,
                    suite=case.suite,
                    model=model,
                    attempt=index,
                    verdict=verdict,
                    mode=kind,
                    quarantined=case.quarantined,
                    known_gap=case.known_gap is not None,
                    tainted=tainted or verdict is E,
                    fingerprint=case.fingerprint if fingerprint is None else fingerprint,
                )
            )
        log.finish(RunState.COMPLETED)
        return run_id


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three live runs, a replay run that must not count, and pre-fix runs of ``fixed``."""
    project = tmp_path / "proj"
    cases = _write_suite(project, CASES)
    h = History(project / ".evaltape" / "results")
    flaky, fixed, broken, gap, steady, shaky = (cases[c["id"]] for c in CASES)  # type: ignore[index]
    h.run([(fixed, "m1", F), (fixed, "m1", F)], fingerprint="0" * 64)  # before the fix
    for outcome in (P, F, P):
        h.run(
            [
                (flaky, "m1", outcome),
                (flaky, "m2", P),
                (fixed, "m1", P),
                (broken, "m1", F),
                (gap, "m1", F),
                (steady, "m1", P),
                (shaky, "m1", outcome),
                (steady, "m1", E),  # could not be judged: not a sample
            ]
        )
    h.run([(steady, "m1", F), (steady, "m1", F)], kind=RunKind.REPLAY)
    monkeypatch.chdir(project)
    return project


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["quarantine-report", *args])


def test_the_report_proposes_from_live_history_only(project: Path) -> None:
    done = invoke()
    assert done.exit_code == 0, done.output
    out = done.stdout
    lines = out.splitlines()
    assert "4 live run(s)" in lines[0] and "replay and rescore runs are not counted" in lines[0]

    def section(title: str) -> list[str]:
        start = next(i for i, line in enumerate(lines) if line.startswith(title))
        rest = lines[start + 1 :]
        end = next((i for i, line in enumerate(rest) if not line.startswith("  ")), len(rest))
        return rest[:end]

    low, high = wilson(2, 3)
    assert section("propose quarantine") == [
        f"  basic/flaky [m1]: 2/3 passed in 3 run(s), 95% CI {100 * low:.0f}%-{100 * high:.0f}%"
    ]
    released = section("propose release from quarantine")
    assert len(released) == 1 and released[0].startswith("  basic/fixed [m1]: 3/3 passed in 3")
    assert [line.split(":")[0] for line in section("never passed")] == ["  basic/broken [m1]"]
    gaps = section("known gaps")
    assert gaps[0].startswith("  basic/gap [m1]: 0/3 passed")
    assert f"    today:  {GAP['notes']}" in gaps and f"    target: {GAP['target']}" in gaps
    assert "older definition: 2 attempt(s) left out" in out
    table = {line.split()[0]: line for line in lines if line.startswith("basic/")}
    assert "stable" in table["basic/steady"] and "3/3" in table["basic/steady"]  # not 3/5
    assert "flaky, quarantined" in lines[next(i for i, x in enumerate(lines) if "shaky" in x)]
    assert "basic/gap" not in table  # kept out of the rates
    assert out.rstrip().endswith("proposals only: no suite file was changed")


def test_the_report_never_edits_a_file(project: Path) -> None:
    files = sorted(p for p in project.rglob("*") if p.is_file())
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}
    assert invoke().exit_code == 0
    assert invoke("--json").exit_code == 0
    assert sorted(p for p in project.rglob("*") if p.is_file()) == files
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == before


def test_json_and_the_model_filter(project: Path) -> None:
    done = invoke("--json", "--model", "m2")
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert [(c["case"], c["passed"], c["total"], c["status"]) for c in report["cases"]] == [
        ("flaky", 3, 3, "stable")
    ]
    assert report["proposals"] == {"quarantine": [], "release": [], "never_passed": []}
    assert report["kinds"] == ["live"]

    everyone = json.loads(invoke("--json").stdout)
    flaky = next(c for c in everyone["cases"] if c["case"] == "flaky" and c["model"] == "m1")
    assert (flaky["low"], flaky["high"]) == pytest.approx(wilson(2, 3))
    assert [p["case"] for p in everyone["proposals"]["quarantine"]] == ["flaky"]
    assert everyone["known_gaps"][0]["notes"] == GAP["notes"]
    steady = next(c for c in everyone["cases"] if c["case"] == "steady")
    assert steady["not_judged"] == 3 and steady["total"] == 3


def test_since_counts_only_that_run_and_later_ones(project: Path) -> None:
    results = project / ".evaltape" / "results"
    ids = [r.run_id for r in history_records(results)]
    done = invoke("--since", ids[-1][:17], "--json")  # a unique prefix of the last live run
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["runs"] == [ids[-1]]
    flaky = next(c for c in report["cases"] if c["case"] == "flaky" and c["model"] == "m1")
    assert (flaky["passed"], flaky["total"]) == (1, 1)


def test_an_edited_case_is_not_poisoned_by_its_old_runs(project: Path) -> None:
    """Editing ``broken`` gives it a new fingerprint: its failures become 'older definition'."""
    edited = [_case("broken", expectMaxTurns=5) if c["id"] == "broken" else c for c in CASES]
    cases = _write_suite(project, edited)
    records = history_records(project / ".evaltape" / "results")
    report = quarantine_report(
        load_suites([project / "evals"], rubrics_dir=project / "evals" / "rubrics"), records
    )
    assert [r.case_id for r in report.with_standing(Standing.NEVER_PASSED)] == []
    broken = next(r for r in report.rates if r.case_id == "broken")
    assert (broken.total, broken.older, broken.standing) == (0, 3, Standing.NO_DATA)
    assert report.older == 2 + 3
    assert cases["broken"].fingerprint not in {
        a.fingerprint for r in records for a in r.attempts if a.case_id == "broken"
    }


def test_an_empty_history_reports_nothing_and_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_suite(tmp_path, CASES)
    monkeypatch.chdir(tmp_path)
    done = invoke()
    assert done.exit_code == 0, done.output
    assert "0 live run(s)" in done.stdout
    assert "no attempt of a loaded case in the runs read" in done.stdout


def _cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "quarantine-report", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
def test_bad_input_is_one_line_and_exit_2(project: Path) -> None:
    results = project / ".evaltape" / "results"
    unknown = _cli(project, "--since", "19990101")
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == (
        'evaltape: error: --since 19990101: no run "19990101" in the history'
    )

    record = sorted((results / "runs").glob("*.json"))[1]
    data = json.loads(record.read_text())
    data["attempts"][0]["verdict"] = "maybe"
    record.write_text(json.dumps(data))
    damaged = _cli(project)
    assert damaged.returncode == 2
    (line,) = damaged.stderr.splitlines()
    assert str(record) in line and "attempts[0]" in line and "verdict" in line
    assert "Traceback" not in damaged.stderr

    record.unlink()
    with (results / "history.jsonl").open("a") as history:
        history.write('{"schema": 1, "run_id": \n')
    torn = _cli(project)
    assert torn.returncode == 2
    (line,) = torn.stderr.splitlines()
    assert "history.jsonl:6:" in line and "invalid JSON" in line
