"""The public names of ``evaltape.scoring``, imported when one is first used.

``evaltape.scoring`` re-exports everything here; keeping the imports in this
module lets ``evaltape --help`` and the CLI's other modules load without them.
"""

from __future__ import annotations

from ._config import Config, ConfigError, load_config
from ._errors import ScoringError
from ._settings import SETTINGS
from .cases._cases import Case, CaseError, CaseKind, SelectionError, Suite, select
from .cases._load import load_suites
from .checks._score import Check, Score, Scorer
from .checks._scorers import make_scorer, score_session
from .cost._costs import CostBreakdown
from .judge._floors import judge_floors
from .judge._judgement import Floors, JudgeError, Judgement
from .judge._reuse import rejudge_offline
from .outputs.console._compare import render_comparison
from .results._history import RunLog, read_history
from .results._record_files import read_record, resolve_run
from .results._records import (
    AttemptResult,
    RecordError,
    RunKind,
    RunRecord,
    RunState,
    Verdict,
)
from .run._ab import ABOutcome, ABRequest, run_ab
from .run._bisect import BisectOutcome, BisectRequest, BisectStep, run_bisect
from .run._coverage import CoverageOutcome, CoverageRequest, run_coverage
from .run._finished import Attempt, PoolOutcome
from .run._host import Host, Reporter
from .run._live import LiveOutcome, LiveRequest, run_live
from .run._recover import (
    RecoveredSession,
    RecoverOutcome,
    RecoverRefused,
    RecoverRequest,
    recover_run,
)
from .run._replay import ReplayOutcome, ReplayRequest, run_replay
from .run._rerecord import RerecordOutcome, RerecordRequest, run_rerecord
from .run._rescore import RescoreOutcome, RescoreRequest, run_rescore
from .run._setup import RunRefused
from .run._stop import StopKind
from .run.attempt._task import Answer, Question, QuestionKind, Task, answer_headlessly
from .run.rescore._tapes import rescore_tapes
from .verdicts._compare import Comparison, compare
from .verdicts._gate import GateDecision, GateState, decide_gate

__all__: list[str] = [
    "SETTINGS",
    "ABOutcome",
    "ABRequest",
    "Answer",
    "Attempt",
    "AttemptResult",
    "BisectOutcome",
    "BisectRequest",
    "BisectStep",
    "Case",
    "CaseError",
    "CaseKind",
    "Check",
    "Comparison",
    "Config",
    "ConfigError",
    "CostBreakdown",
    "CoverageOutcome",
    "CoverageRequest",
    "Floors",
    "GateDecision",
    "GateState",
    "Host",
    "JudgeError",
    "Judgement",
    "LiveOutcome",
    "LiveRequest",
    "PoolOutcome",
    "Question",
    "QuestionKind",
    "RecordError",
    "RecoverOutcome",
    "RecoverRefused",
    "RecoverRequest",
    "RecoveredSession",
    "ReplayOutcome",
    "ReplayRequest",
    "Reporter",
    "RerecordOutcome",
    "RerecordRequest",
    "RescoreOutcome",
    "RescoreRequest",
    "RunKind",
    "RunLog",
    "RunRecord",
    "RunRefused",
    "RunState",
    "Score",
    "Scorer",
    "ScoringError",
    "SelectionError",
    "StopKind",
    "Suite",
    "Task",
    "Verdict",
    "answer_headlessly",
    "compare",
    "decide_gate",
    "judge_floors",
    "load_config",
    "load_suites",
    "make_scorer",
    "read_history",
    "read_record",
    "recover_run",
    "rejudge_offline",
    "render_comparison",
    "rescore_tapes",
    "resolve_run",
    "run_ab",
    "run_bisect",
    "run_coverage",
    "run_live",
    "run_replay",
    "run_rerecord",
    "run_rescore",
    "score_session",
    "select",
]
