"""The words the agent says to the model: the system prompt and the step hints."""

from __future__ import annotations

from evals.agent._config import Strategy
from evals.agent._tools import TOOLS

ANSWER = "answer"
"""The ``next_action`` choice that ends the loop with a reply."""

NEXT_ACTION = "next_action"
"""The control function the forced strategy uses to let the model pick a step."""

_MODE_RULES = {
    "plan": "Plan mode: you may read and search; do not change files or run commands.",
    "read-only": "Read-only mode: you may read and search; writes and commands are refused.",
    "edit": "Edit mode: you may read, search, write and edit files; commands are refused.",
    "build": "Build mode: you may read, search, write and edit files and run commands.",
    "danger": "Danger mode: every tool is allowed.",
}


def system_prompt(mode: str, strategy: Strategy) -> str:
    """The system message: role, tools, the mode's rules, how to finish."""
    tools = "\n".join(f"- {t.name}: {t.description}" for t in TOOLS)
    finish = (
        f'When you know the answer, choose "{ANSWER}" and then reply in plain text.'
        if strategy is Strategy.FORCED
        else "When you know the answer, reply in plain text without calling a tool."
    )
    return "\n".join(
        [
            "You are a coding assistant working in a project folder.",
            "Use the tools to look at the files before you answer questions about them.",
            "Paths are relative to the project folder. Tools:",
            tools,
            _MODE_RULES.get(mode, _MODE_RULES["build"]),
            "Answer general questions (not about these files) directly, without tools.",
            finish,
            "Keep the reply short.",
        ]
    )


def next_action_description() -> str:
    """What the ``next_action`` control function asks of the model."""
    return f'Pick the next step: one tool to call, or "{ANSWER}" to reply to the user.'
