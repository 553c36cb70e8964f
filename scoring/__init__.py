"""evaltape.scoring: cases, scorers, statistics, results and gates."""

from scoring._cases import (
    AgentMode,
    Case,
    CaseError,
    CaseKind,
    FrozenMap,
    JsonValue,
    KnownGap,
    Problem,
    SelectionError,
    Suite,
    load_suites,
    select,
)
from scoring._config import SETTINGS, Config, ConfigError, Setting, SettingKind, load_config
from scoring._errors import ScoringError

__all__: list[str] = [
    "SETTINGS",
    "AgentMode",
    "Case",
    "CaseError",
    "CaseKind",
    "Config",
    "ConfigError",
    "FrozenMap",
    "JsonValue",
    "KnownGap",
    "Problem",
    "ScoringError",
    "SelectionError",
    "Setting",
    "SettingKind",
    "Suite",
    "load_config",
    "load_suites",
    "select",
]
