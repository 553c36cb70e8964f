"""The settings table: every setting's name, kind, default and help, in one place.

One table drives the config file parser, the ``Config`` value and the
command-line flags (``scoring/cli/_options.py``), so a new setting is one row.
"""

from __future__ import annotations

import enum

import attrs


class SettingKind(enum.Enum):
    """What values a setting takes, which decides how it is checked and resolved."""

    PATH = "path"
    """A file or folder; relative values resolve against the config file's folder."""
    TEXT = "text"
    """A non-empty string, used as given."""
    URL = "url"
    """An ``http://`` or ``https://`` URL with a host."""
    COUNT = "count"
    """A whole number from 1 to ``COUNT_MAX``."""
    SECONDS = "seconds"
    """A positive, finite number of seconds, at most ``SECONDS_MAX``."""
    SCORE = "score"
    """A judge score: a number from 0 to 5."""
    RULES = "rules"
    """A table of regular expression -> replacement (config file only, no flag)."""
    SWITCH = "switch"
    """true or false; the flag comes in a pair (``--sandbox/--no-sandbox``)."""
    UPSTREAMS = "upstreams"
    """A table of provider name -> base URL; the flag is repeated ``--upstream NAME=URL``."""
    PRICES = "prices"
    """A table of model -> ``"IN/OUT"`` USD per million tokens; the flag is repeated
    ``--price MODEL=IN/OUT``."""


COUNT_MAX = 10_000
"""The largest count a setting takes (trials per case, concurrency): past it a run would
plan more work than it can hold, so it is refused before anything runs."""
SECONDS_MAX = 30 * 24 * 3600.0
"""The longest time a setting takes: 30 days."""


@attrs.frozen(kw_only=True)
class Setting:
    """One row of the settings table."""

    name: str
    """The key in the config file and the ``Config`` field."""
    kind: SettingKind
    """How values are checked."""
    default: str | int | float | bool | None
    """Used when neither file nor flag sets it (paths relative to the config's folder)."""
    help: str
    """One line for ``--help`` and the documentation."""
    metavar: str = "TEXT"
    """What the flag's argument is called in ``--help``."""

    @property
    def flag(self) -> str:
        """The command-line flag: ``judge_model`` is ``--judge-model``."""
        return "--" + self.name.replace("_", "-")


SETTINGS: tuple[Setting, ...] = (
    Setting(
        name="suites",
        kind=SettingKind.PATH,
        default="evals",
        metavar="DIR",
        help="Folder of suite files (*.jsonl).",
    ),
    Setting(
        name="rubrics",
        kind=SettingKind.PATH,
        default=None,
        metavar="DIR",
        help="Folder of judge rubrics (<name>.md).",
    ),
    Setting(
        name="cassettes",
        kind=SettingKind.PATH,
        default="cassettes",
        metavar="DIR",
        help="Folder of recorded tapes that replay serves.",
    ),
    Setting(
        name="results",
        kind=SettingKind.PATH,
        default=".evaltape/results",
        metavar="DIR",
        help="Folder where run records and history are written.",
    ),
    Setting(
        name="agent",
        kind=SettingKind.TEXT,
        default=None,
        metavar="SPEC",
        help='The agent under test: "module:function" or a command template.',
    ),
    Setting(name="model", kind=SettingKind.TEXT, default=None, help="Model under test."),
    Setting(
        name="base_url",
        kind=SettingKind.URL,
        default=None,
        metavar="URL",
        help="Base URL of the model API for the agent.",
    ),
    Setting(
        name="judge_model",
        kind=SettingKind.TEXT,
        default=None,
        help="Model that grades judged cases; must not be the model under test.",
    ),
    Setting(
        name="judge_base_url",
        kind=SettingKind.URL,
        default=None,
        metavar="URL",
        help="Base URL of the judge's model API.",
    ),
    Setting(
        name="judge_constrain",
        kind=SettingKind.TEXT,
        default=None,
        metavar="none|json|schema",
        help="Constrain the judge's answer at the provider: none (the prompt asks for JSON), "
        "json (JSON mode), schema (a 0-5 score by grammar, for local llama.cpp judges).",
    ),
    Setting(
        name="judge_mean_floor",
        kind=SettingKind.SCORE,
        default=3.5,
        metavar="SCORE",
        help="A judged case passes only if its trials' mean judge score (0-5) reaches this.",
    ),
    Setting(
        name="judge_trial_floor",
        kind=SettingKind.SCORE,
        default=2.0,
        metavar="SCORE",
        help="A judged trial scoring below this (0-5) fails, and fails its case.",
    ),
    Setting(
        name="concurrency",
        kind=SettingKind.COUNT,
        default=4,
        metavar="N",
        help="Attempts run at the same time.",
    ),
    Setting(
        name="executor",
        kind=SettingKind.TEXT,
        default="auto",
        metavar="auto|threads|ray",
        help="Where work runs. auto: live attempts in threads of this process, a replay of 32 "
        "attempts or more and a rescore's scoring in one process per core; threads: everything "
        "in this process; ray: Ray tasks (pip install evaltape[ray]); see docs/scale.md.",
    ),
    Setting(
        name="ray_address",
        kind=SettingKind.TEXT,
        default=None,
        metavar="ADDR",
        help="With executor ray: the cluster to use (default: a local Ray instance for the run).",
    ),
    Setting(
        name="ray_working_dir",
        kind=SettingKind.TEXT,
        default=None,
        metavar="PATH|off",
        help="With executor ray: the folder shipped to the workers, where they import the agent "
        "and custom scorers from (default: the project folder when --ray-address is not on this "
        "machine; off: ship nothing, the workers have them installed).",
    ),
    Setting(
        name="trials",
        kind=SettingKind.COUNT,
        default=1,
        metavar="N",
        help="Attempts per case.",
    ),
    Setting(
        name="hang_limit",
        kind=SettingKind.SECONDS,
        default=300.0,
        metavar="SECONDS",
        help="Seconds an attempt may run, and a model call may stay open, before it is a hang: "
        "the attempt stops as a timeout, and a recorded call open longer fails the hang check.",
    ),
    Setting(
        name="pricing",
        kind=SettingKind.PATH,
        default=None,
        metavar="FILE",
        help="JSON file of per-model prices that override the built-in table.",
    ),
    Setting(
        name="dataset",
        kind=SettingKind.TEXT,
        default=None,
        metavar="NAME",
        help="Langfuse dataset `evaltape export` keeps the suites' cases in and links each "
        "exported attempt to, as a dataset run named after the evaltape run.",
    ),
    Setting(
        name="scorers",
        kind=SettingKind.TEXT,
        default=None,
        metavar="MODULE:FUNCTION[,...]",
        help="Custom scorers every case gets, run after the outcome checks (module:function, "
        "comma-separated).",
    ),
    Setting(
        name="sandbox",
        kind=SettingKind.SWITCH,
        default=True,
        metavar="BOOL",
        help="Run verify commands and the reference agent's bash tool under bubblewrap "
        "(no network, the workspace the only writable path); false runs them unconfined.",
    ),
    Setting(
        name="scrub",
        kind=SettingKind.RULES,
        default=None,
        metavar="TABLE",
        help="Regular expression -> replacement, applied to request bodies before they are "
        "recorded or matched (text that differs on every run, such as timestamps).",
    ),
    Setting(
        name="upstream",
        kind=SettingKind.UPSTREAMS,
        default=None,
        metavar="NAME=URL",
        help="A provider's base URL for command agents (anthropic=URL, or a new NAME that "
        "gets its own NAME_BASE_URL endpoint); openai's is base_url.",
    ),
    Setting(
        name="price",
        kind=SettingKind.PRICES,
        default=None,
        metavar="MODEL=IN/OUT",
        help="USD per million input/output tokens for MODEL, over the price table and "
        "pricing file; 0/0 for a free model (a local server).",
    ),
)
"""Every setting, in documentation order."""
