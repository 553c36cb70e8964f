"""Machine-readable results for CI: JUnit XML, ``--json`` outcomes and the job summary.

Every format is written from one value, ``RunResults`` (one ``CaseResult``
per case and model), built from an entry point's outcome by ``from_replay``,
``from_live``, ``from_rescore``, ``from_comparison`` or ``from_ab``.
"""

from ._coverage_json import COVERAGE_SCHEMA, coverage_json
from ._from_runs import (
    from_ab,
    from_comparison,
    from_live,
    from_replay,
    from_rescore,
    trace_command,
)
from ._json_outcome import (
    SCHEMA,
    ab_json,
    compare_json,
    comparison_json,
    live_json,
    replay_json,
    rescore_json,
    results_json,
)
from ._junit import junit_xml
from ._results import AttemptLine, CaseResult, Kind, RunResults
from ._step_summary import append_step_summary, step_summary

__all__ = [
    "COVERAGE_SCHEMA",
    "SCHEMA",
    "AttemptLine",
    "CaseResult",
    "Kind",
    "RunResults",
    "ab_json",
    "append_step_summary",
    "compare_json",
    "comparison_json",
    "coverage_json",
    "from_ab",
    "from_comparison",
    "from_live",
    "from_replay",
    "from_rescore",
    "junit_xml",
    "live_json",
    "replay_json",
    "rescore_json",
    "results_json",
    "step_summary",
    "trace_command",
]
