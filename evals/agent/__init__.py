"""evals.agent: the project's reference coding agent.

A small, real harness over OpenAI-compatible Chat Completions (plain httpx,
no SDK) with the tools read, write, edit, grep, glob, ls and bash, confined
to the attempt's workspace.  The runner loads it as ``evals.agent:run``.
See docs/reference-agent.md.
"""

from __future__ import annotations

from evals.agent._api import ModelError
from evals.agent._config import AgentConfig, ConfigError, Strategy, config_from_env
from evals.agent._loop import NEXT_ACTION_TOOL, run_agent
from evals.agent._prompts import ANSWER, NEXT_ACTION
from evals.agent._tools import TOOL_NAMES, TOOLS, Outcome, ToolResult, ToolSpec, Workspace
from evaltape.scoring import Task


def run(task: Task) -> str | None:
    """Attempt ``task`` with the settings of its environment (docs/reference-agent.md).

    Settings come from ``task.environ``, not ``os.environ``: an A/B run gives
    each variant its own ``EVALTAPE_AGENT_*`` values in one process.
    """
    return run_agent(task, config_from_env(task.environ))


__all__ = [
    "ANSWER",
    "NEXT_ACTION",
    "NEXT_ACTION_TOOL",
    "TOOLS",
    "TOOL_NAMES",
    "AgentConfig",
    "ConfigError",
    "ModelError",
    "Outcome",
    "Strategy",
    "ToolResult",
    "ToolSpec",
    "Workspace",
    "config_from_env",
    "run",
    "run_agent",
]
