"""Settings resolve as defaults < config file < flags; bad config is one line per problem."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import attrs
import click
import pytest
from click.testing import CliRunner

from evaltape.scoring import SETTINGS, Config, ConfigError, load_config
from evaltape.scoring.cli._options import config_options


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository root (holding .git, so the upward search stops here) as cwd."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_defaults_apply_without_a_file(repo: Path) -> None:
    config = load_config(repo)
    assert config.source is None
    assert config.suites == repo / "evals"
    assert config.rubrics == repo / "evals" / "rubrics"
    assert config.cassettes == repo / "cassettes"
    assert config.results == repo / ".evaltape" / "results"
    assert (config.concurrency, config.trials, config.hang_limit) == (4, 1, 300.0)
    assert (config.agent, config.model, config.judge_model, config.pricing) == (None,) * 4


def test_file_overrides_defaults_and_flags_override_the_file(repo: Path) -> None:
    (repo / "evaltape.toml").write_text(
        'suites = "cases"\nmodel = "from-file"\nconcurrency = 8\nhang_limit = 60\n'
    )
    from_file = load_config(repo)
    assert from_file.source == repo / "evaltape.toml"
    assert from_file.suites == repo / "cases"
    assert from_file.rubrics == repo / "cases" / "rubrics"  # follows suites
    assert (from_file.model, from_file.concurrency, from_file.hang_limit) == ("from-file", 8, 60.0)
    flags = load_config(repo, {"model": "from-flag", "concurrency": None, "trials": 3})
    assert (flags.model, flags.concurrency, flags.trials) == ("from-flag", 8, 3)


def test_paths_resolve_against_the_config_folder_and_flags_against_cwd(repo: Path) -> None:
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.evaltape]\nsuites = "qa/evals"\npricing = "prices.json"\n'
    )
    sub = repo / "src" / "pkg"
    sub.mkdir(parents=True)
    config = load_config(sub)
    assert config.source == repo / "pyproject.toml"
    assert config.suites == repo / "qa" / "evals"
    assert config.pricing == repo / "prices.json"
    flagged = load_config(sub, {"suites": "local"})
    assert flagged.suites == sub / "local"
    assert flagged.rubrics == sub / "local" / "rubrics"


def test_evaltape_toml_nearer_than_pyproject_wins(repo: Path) -> None:
    (repo / "pyproject.toml").write_text('[tool.evaltape]\nmodel = "outer"\n')
    inner = repo / "inner"
    inner.mkdir()
    (inner / "evaltape.toml").write_text('model = "inner"\n')
    assert load_config(inner).model == "inner"
    assert load_config(repo).model == "outer"


def test_a_pyproject_without_the_section_is_passed_over(repo: Path) -> None:
    (repo / "evaltape.toml").write_text("trials = 5\n")
    inner = repo / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "inner"\n')
    assert load_config(inner).trials == 5


def test_the_search_stops_at_the_repository_root(repo: Path) -> None:
    (repo / "evaltape.toml").write_text("trials = 5\n")
    nested = repo / "vendor" / "lib"
    (nested / ".git").mkdir(parents=True)
    assert load_config(nested).source is None


def test_both_files_in_one_folder_is_refused(repo: Path) -> None:
    (repo / "evaltape.toml").write_text("trials = 5\n")
    (repo / "pyproject.toml").write_text("[tool.evaltape]\ntrials = 2\n")
    with pytest.raises(ConfigError, match="both configure evaltape; keep one"):
        load_config(repo)


def test_an_explicit_config_file_skips_the_search(repo: Path) -> None:
    (repo / "evaltape.toml").write_text("trials = 5\n")
    other = repo / "ci"
    other.mkdir()
    (other / "ci.toml").write_text('trials = 3\nresults = "out"\n')
    config = load_config(repo, config_file=other / "ci.toml")
    assert (config.trials, config.results) == (3, other / "out")
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(repo, config_file=repo / "missing.toml")


def test_unknown_settings_and_wrong_types_are_named(repo: Path) -> None:
    (repo / "pyproject.toml").write_text(
        '[tool.evaltape]\nsuite = "x"\nconcurrency = "4"\ntrials = 0\n'
        'model = ""\nhang_limit = true\n'
    )
    with pytest.raises(ConfigError) as info:
        load_config(repo)
    label = "pyproject.toml: [tool.evaltape]"
    assert info.value.problems == (
        f'{label}: unknown setting "suite" (did you mean "suites"?)',
        f'{label}: setting "concurrency": expected a whole number, got string',
        f'{label}: setting "trials": must be at least 1, got 0',
        f'{label}: setting "model": must not be empty',
        f'{label}: setting "hang_limit": expected a number of seconds, got boolean',
    )


def test_bad_overrides_name_their_flag(repo: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(repo, {"concurency": 2, "trials": "3"})
    assert info.value.problems == (
        'unknown setting "concurency" (did you mean "concurrency"?)',
        "--trials: expected a whole number, got string",
    )


def test_invalid_toml_names_the_file(repo: Path) -> None:
    (repo / "evaltape.toml").write_text("suites = \n")
    with pytest.raises(ConfigError, match=r"^evaltape.toml: invalid TOML: .*line 1"):
        load_config(repo)


def test_one_table_drives_the_value_and_the_flags(repo: Path) -> None:
    fields = [f.name for f in attrs.fields(Config)]
    assert fields == [s.name for s in SETTINGS] + ["source"]
    seen: list[Config] = []

    @click.command()
    @config_options(*(s.name for s in SETTINGS))
    def probe(config: Config) -> None:
        seen.append(config)

    flags = {p.opts[0] for p in probe.params}
    assert flags == {s.flag for s in SETTINGS} | {"--config"}
    result = CliRunner().invoke(
        probe,
        ["--judge-model", "judge", "--hang-limit", "12.5", "--base-url", "http://127.0.0.1:1"],
    )
    assert result.exit_code == 0, result.output
    assert (seen[0].judge_model, seen[0].hang_limit, seen[0].base_url) == (
        "judge",
        12.5,
        "http://127.0.0.1:1",
    )


@pytest.mark.slow
def test_a_refused_config_exits_2_with_one_line_per_problem(repo: Path) -> None:
    (repo / "pyproject.toml").write_text('[tool.evaltape]\nsuite = "x"\n')
    done = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "validate"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == (
        'evaltape: error: pyproject.toml: [tool.evaltape]: unknown setting "suite" '
        '(did you mean "suites"?)\n'
    )


@pytest.mark.slow
def test_a_config_file_that_is_not_text_is_one_line_and_exit_2(repo: Path) -> None:
    (repo / "bad.toml").write_bytes(b"\x00\x01\xff")
    done = subprocess.run(
        [sys.executable, "-m", "evaltape.scoring.cli", "validate", "--config", "bad.toml"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == "evaltape: error: bad.toml: not UTF-8 text (byte 3); not a TOML file\n"
