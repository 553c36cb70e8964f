"""``evaltape ab`` as a user runs it: a real subprocess, a fake model server on
127.0.0.1, agents whose behaviour comes from their variant's environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fakeapi import FakeAPI

from evaltape.recorder import TapeReader, fold
from evaltape.scoring import AttemptResult, RunState, Verdict, read_record
from evaltape.scoring.cases._load import load_suites
from evaltape.scoring.cli.main import cli
from evaltape.scoring.run._ab import abba, plan_ab, variant_of
from evaltape.scoring.run._jobs import Job
from evaltape.scoring.verdicts._ab import (
    CaseVerdict,
    VariantError,
    case_verdict,
    case_verdicts,
    parse_variant,
    parse_variants,
    render_cases,
    smallest_p,
    trials_needed,
)

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).parent.parent
KEY = "sk-test-0123456789abcdefghijklmnop"

BASELINE = "env:AB_AGENT_TAG=A,AB_AGENT_TURNS=2,AB_UNUSED=zebra-7731"
CANDIDATE = "env:AB_AGENT_TAG=B,AB_AGENT_TURNS=1"


def case(case_id: str, **expect: object) -> str:
    return json.dumps(
        {
            "id": case_id,
            "prompt": f"work on {case_id}",
            "failureCategory": "ab",
            "whyModelBacked": "exercises the A/B runner against a fake model",
            **expect,
        }
    )


CASES = [
    case("one-turn", expectMaxTurns=1),  # two turns (baseline) fail, one (candidate) passes
    case("roomy", expectMaxTurns=3),  # both pass
    case("needs-grep", expectTool="grep"),  # nobody calls grep: both fail
]


def make_project(root: Path, agent: str, base_url: str) -> Path:
    (root / "evals").mkdir(parents=True)
    (root / "evals" / "basic.jsonl").write_text("\n".join(CASES) + "\n")
    settings = {"agent": agent, "base_url": base_url}
    (root / "evaltape.toml").write_text(
        "\n".join(f"{k} = {json.dumps(v)}" for k, v in settings.items()) + "\n"
    )
    cassette = root / "cassettes" / "basic" / "one-turn.tape"
    cassette.parent.mkdir(parents=True)
    cassette.write_bytes(b"recorded before the A/B")
    return root


def evaltape(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env = {k: v for k, v in env.items() if not k.startswith("AB_AGENT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(AGENTS), str(REPO)])
    env["OPENAI_API_KEY"] = KEY
    return subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def inside(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """This process set up as ``evaltape`` would be: the key set, no AB_AGENT_* set."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for name in [n for n in os.environ if n.startswith("AB_AGENT_")]:
        monkeypatch.delenv(name)
    monkeypatch.syspath_prepend(str(AGENTS))
    return monkeypatch


def run_inside(monkeypatch: pytest.MonkeyPatch, project: Path, *args: str) -> Result:
    """The CLI in this process (the same code path, without another interpreter start)."""
    monkeypatch.chdir(project)
    return CliRunner().invoke(cli, list(args))


def attempts_seen(api: FakeAPI) -> list[tuple[str, int, str]]:
    """(case, attempt, variant) of each attempt, in the order the server saw them."""
    order: list[tuple[str, int, str]] = []
    for received in api.requests:
        facts = json.loads(received.json()["messages"][0]["content"])
        if facts["turn"] == 0:
            order.append((facts["case"], facts["attempt"], facts["variant"]))
    return order


def verdicts(stdout: str) -> dict[str, list[str]]:
    """``case -> [baseline, candidate, p, verdict]`` from the per-case table."""
    rows = {}
    for line in stdout.splitlines():
        if line.startswith("basic/"):
            name, *rest = line.split()
            rows[name.removeprefix("basic/")] = rest
    return rows


@pytest.mark.slow
def test_ab_interleaves_abba_and_gives_per_case_verdicts(tmp_path: Path, api: FakeAPI) -> None:
    project = make_project(tmp_path, "ab_agent:run", api.openai_url)
    cassettes_before = sorted(p.relative_to(project) for p in (project / "cassettes").rglob("*"))
    done = evaltape(
        project,
        "ab",
        "--baseline",
        BASELINE,
        "--candidate",
        CANDIDATE,
        "--trials",
        "4",
        "--concurrency",
        "1",
        "-m",
        "fake-1",
        "--source",
        "simulated",
    )
    assert done.returncode == 0, done.stderr

    expected = [
        (c, t, tag)
        for c in ("one-turn", "roomy", "needs-grep")
        for t in range(4)
        for tag in (("A", "B") if t % 2 == 0 else ("B", "A"))
    ]
    assert attempts_seen(api) == expected
    facts = [json.loads(r.json()["messages"][0]["content"]) for r in api.requests]
    assert {f["process_tag"] for f in facts} == {None}  # os.environ was never changed
    assert len(api.requests) == 3 * 4 * (2 + 1)  # baseline makes two calls, candidate one

    rows = verdicts(done.stdout)
    assert rows["one-turn"][0:2] == ["0/4", "4/4"]
    assert rows["one-turn"][3] == CaseVerdict.IMPROVED.value
    assert rows["roomy"][0:2] == ["4/4", "4/4"] and rows["roomy"][3] == "unchanged-pass"
    assert rows["needs-grep"][0:2] == ["0/4", "0/4"] and rows["needs-grep"][3] == "unchanged-fail"
    assert "verdicts: 1 improved, 0 regressed, 1 unchanged-pass, 1 unchanged-fail" in done.stdout
    assert "suite:" in done.stdout and "points (95% CI" in done.stdout
    assert "not a gate" in done.stdout

    # the cassettes are untouched, no history line, the run lives under <results>/ab/
    assert (project / "cassettes" / "basic" / "one-turn.tape").read_bytes() == (
        b"recorded before the A/B"
    )
    after = sorted(p.relative_to(project) for p in (project / "cassettes").rglob("*"))
    assert after == cassettes_before
    results = project / ".evaltape" / "results"
    assert not (results / "history.jsonl").exists()
    (run_dir,) = (results / "ab").iterdir()
    for side, tag, passed in (("baseline", "A", 4), ("candidate", "B", 8)):
        record = read_record(run_dir / f"{side}.json")
        assert record.state is RunState.COMPLETED
        assert len(record.attempts) == 12
        assert sum(a.verdict is Verdict.PASSED for a in record.attempts) == passed
        assert any(f"AB_AGENT_TAG={tag}" in note for note in record.notes)
        tape = run_dir / side / "basic" / "one-turn.tape"
        sessions = list(TapeReader(tape).sessions())
        assert [s.header.attempt for s in sessions] == [0, 1, 2, 3]
        assert all(len(fold(s.events).turns) == (2 if side == "baseline" else 1) for s in sessions)
        raw = b"".join(p.read_bytes() for p in (run_dir / side).rglob("*.tape"))
        assert KEY.encode() not in raw
        assert b"zebra-7731" not in raw  # an env value the agent never sent stays off the tape


def test_one_trial_makes_every_case_inconclusive_and_says_so(
    tmp_path: Path, api: FakeAPI, inside: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path, "ab_agent:run", api.openai_url)
    args = ("ab", "--baseline", BASELINE, "--candidate", CANDIDATE, "-m", "fake-1")
    done = run_inside(inside, project, *args)
    assert done.exit_code == 0, done.stderr
    assert "every case is inconclusive" in done.stdout
    rows = verdicts(done.stdout)
    assert rows["one-turn"][0:2] == ["0/1", "1/1"]  # a difference, and still no verdict
    assert {r[3] for r in rows.values()} == {"inconclusive"}
    assert len(attempts_seen(api)) == 6


@pytest.mark.slow
def test_command_agent_sees_its_variant_environment(
    tmp_path: Path, api: FakeAPI, inside: pytest.MonkeyPatch
) -> None:
    agent = f"cmd:{sys.executable} {AGENTS / 'ab_cmd_agent.py'}"
    project = make_project(tmp_path, agent, api.openai_url)
    done = run_inside(
        inside,
        project,
        "ab",
        "basic",
        "--cases",
        "roomy",
        "--baseline",
        "env:AB_AGENT_TAG=A",
        "--candidate",
        "env:AB_AGENT_TAG=B",
        "--trials",
        "2",
        "--concurrency",
        "1",
        "-m",
        "fake-1",
    )
    assert done.exit_code == 0, done.stderr
    assert attempts_seen(api) == [
        ("roomy", 0, "A"),
        ("roomy", 0, "B"),
        ("roomy", 1, "B"),
        ("roomy", 1, "A"),
    ]
    assert verdicts(done.stdout)["roomy"][0:2] == ["2/2", "2/2"]
    assert "no case can come out improved or regressed" in done.stdout


@pytest.mark.parametrize(
    ("baseline", "candidate", "message"),
    [
        ("AB_AGENT_TAG=A", "env:AB_AGENT_TAG=B", '--baseline "AB_AGENT_TAG=A": expected env:'),
        ("env:AB_AGENT_TAG=A", "env:1X=2", '--candidate "env:1X=2": item 1: "1X" is not'),
        ("env:AB_AGENT_TAG=A", "env:AB_AGENT_TAG", 'item 1 has no "="'),
        ("env:X=1,Y=2", "env:Y=2,X=1", "set the same environment"),
    ],
)
def test_bad_variant_is_one_line_and_exit_2_before_any_model_call(
    tmp_path: Path,
    api: FakeAPI,
    inside: pytest.MonkeyPatch,
    baseline: str,
    candidate: str,
    message: str,
) -> None:
    project = make_project(tmp_path, "ab_agent:run", api.openai_url)
    args = ("ab", "--baseline", baseline, "--candidate", candidate, "-m", "m")
    done = run_inside(inside, project, *args)
    assert done.exit_code == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr
    assert "Traceback" not in done.stderr
    assert api.requests == []


def test_unknown_suite_is_refused_before_any_model_call(
    tmp_path: Path, api: FakeAPI, inside: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path, "ab_agent:run", api.openai_url)
    args = ("ab", "nosuch", "--baseline", BASELINE, "--candidate", CANDIDATE, "-m", "m")
    done = run_inside(inside, project, *args)
    assert done.exit_code == 2 and "nosuch" in done.stderr
    assert api.requests == []


# -- the library parts -------------------------------------------------------


def attempts(case_id: str, passed: int, total: int, tainted: int = 0) -> list[AttemptResult]:
    return [
        AttemptResult(
            case_id=case_id,
            suite="s",
            model="m",
            attempt=i,
            verdict=Verdict.PASSED if i < passed else Verdict.FAILED,
            tainted=i >= total,
        )
        for i in range(total + tainted)
    ]


def test_case_verdicts_follow_fishers_exact_test() -> None:
    baseline = attempts("worse", 5, 5) + attempts("mixed", 3, 5) + attempts("short", 1, 1, 3)
    candidate = attempts("worse", 0, 5) + attempts("mixed", 4, 5) + attempts("short", 0, 4)
    rows = {r.case_id: r for r in case_verdicts(baseline, candidate, alpha=0.05)}
    assert rows["worse"].verdict is CaseVerdict.REGRESSED
    assert rows["worse"].p_value == pytest.approx(2 / 252)  # 2 of C(10,5) tables as extreme
    assert rows["mixed"].verdict is CaseVerdict.INCONCLUSIVE and rows["mixed"].p_value == 1.0
    # tainted attempts are not counted: one counted baseline trial is too few
    assert (rows["short"].baseline_total, rows["short"].verdict) == (1, CaseVerdict.INCONCLUSIVE)
    assert rows["short"].p_value is None
    assert case_verdict(3, 3, 3, 3, alpha=0.05)[0] is CaseVerdict.UNCHANGED_PASS
    assert case_verdict(0, 4, 4, 4, alpha=0.01)[0] is CaseVerdict.INCONCLUSIVE


def test_the_trials_a_verdict_needs_are_computed_not_assumed() -> None:
    assert smallest_p(3) == pytest.approx(0.1)  # 3/3 against 0/3: 2 of C(6,3) tables
    assert smallest_p(4) == pytest.approx(2 / 70)
    assert trials_needed(0.05) == 4
    lines = render_cases(
        case_verdicts(attempts("c", 2, 2), attempts("c", 0, 2)), trials=2, alpha=0.05
    )
    assert "run --trials 4 or more" in lines[0]


def test_plan_is_abba_per_case_and_keeps_variants_apart(tmp_path: Path) -> None:
    (tmp_path / "basic.jsonl").write_text("\n".join(CASES[:2]) + "\n")
    suites = load_suites([str(tmp_path / "basic.jsonl")], rubrics_dir=tmp_path)
    a, b = parse_variants("env:V=a", "env:V=b")
    jobs: tuple[Job, ...] = plan_ab(suites, "m", 3, tmp_path / "results", "RUN", a, b)
    order = [(j.case.id, j.attempt, variant_of(j.tape_label)) for j in jobs]
    assert order[:6] == [
        ("one-turn", 0, "baseline"),
        ("one-turn", 0, "candidate"),
        ("one-turn", 1, "candidate"),
        ("one-turn", 1, "baseline"),
        ("one-turn", 2, "baseline"),
        ("one-turn", 2, "candidate"),
    ]
    assert [dict(j.environ)["V"] for j in jobs[:2]] == ["a", "b"]
    assert (
        jobs[1].tape
        == tmp_path / "results" / "ab" / "RUN" / "candidate" / "basic" / "one-turn.tape"
    )
    assert abba(1, a, b) == (b, a)


def test_variant_spec_parsing() -> None:
    v = parse_variant("baseline", "env:A=1,B=,C=x=y")
    assert v.overrides == (("A", "1"), ("B", ""), ("C", "x=y"))
    for bad in ("env:", "env:A=1,A=2", "A=1"):
        with pytest.raises(VariantError):
            parse_variant("baseline", bad)
