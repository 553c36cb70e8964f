"""The agent loop: ask the model for a step, run the tool, send the result back.

Two strategies (``Strategy``) share the loop:

- forced: each turn first forces the control function ``next_action``,
  whose one argument is an enum of the tool names plus "answer"; then, for a
  tool, forces that very tool so the model writes its arguments (the request
  names the real tool, so the traffic shows a real ``read``/``grep`` call);
  for "answer", a last request with ``tool_choice: "none"`` gets the reply
  as plain text.  Two model calls per tool step, plus two to finish.
- auto: every tool offered with ``tool_choice: "auto"``; a reply without tool
  calls is the answer.  One call per step.

Only real tool calls enter the conversation: an assistant message with
``content: ""`` (never null) and its ``tool_calls``, then one ``role: tool``
message per call.  ``next_action`` calls are never sent back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from evals.agent._api import Call, Reply, complete
from evals.agent._config import AgentConfig, Strategy
from evals.agent._prompts import ANSWER, NEXT_ACTION, next_action_description, system_prompt
from evals.agent._tools import TOOL_NAMES, TOOLS, Outcome, ToolResult, Workspace
from evaltape.scoring import Task

NEXT_ACTION_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": NEXT_ACTION,
        "description": next_action_description(),
        "parameters": {
            "type": "object",
            "properties": {"action": {"type": "string", "enum": [*TOOL_NAMES, ANSWER]}},
            "required": ["action"],
        },
    },
}
"""The control function of the forced strategy."""


def _forced(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


class _Conversation:
    """The messages so far and how to send them."""

    def __init__(
        self, task: Task, config: AgentConfig, system: str, sleep: Callable[[float], None]
    ) -> None:
        self._task = task
        self._config = config
        self._sleep = sleep
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": task.prompt},
        ]
        tools = [t.as_openai() for t in TOOLS]
        if config.strategy is Strategy.FORCED:
            tools.append(NEXT_ACTION_TOOL)
        self._tools = tools

    def ask(self, tool_choice: str | dict[str, Any]) -> Reply:
        body: dict[str, Any] = {
            "model": self._task.model,
            "messages": self.messages,
            "tools": self._tools,
            "tool_choice": tool_choice,
        }
        if self._config.max_tokens is not None:
            body["max_tokens"] = self._config.max_tokens
        if self._config.temperature is not None:
            body["temperature"] = self._config.temperature
        if self._task.seed is not None:
            body["seed"] = self._task.seed
        return complete(
            self._task.client,
            self._task.base_url,
            body,
            api_key=self._config.key_for(self._task.base_url),
            sleep=self._sleep,
        )

    def add_calls(self, text: str, calls: tuple[Call, ...]) -> None:
        self.messages.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in calls
                ],
            }
        )

    def add_result(self, call: Call, result: ToolResult) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": result.text})


def _choice(reply: Reply) -> str:
    """The action a ``next_action`` reply picked; "answer" when it picked nothing valid."""
    for call in reply.calls:
        if call.name != NEXT_ACTION:
            continue
        try:
            action = json.loads(call.arguments).get("action")
        except (ValueError, AttributeError):
            return ANSWER
        return action if action in TOOL_NAMES else ANSWER
    return ANSWER


class _Runner:
    def __init__(
        self,
        task: Task,
        config: AgentConfig,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
    ) -> None:
        self._task = task
        self._config = config
        self._clock = clock
        self._workspace = Workspace(
            task.workspace,
            mode=task.agent_mode,
            ask=task.ask,
            bash_timeout=config.bash_timeout,
            output_limit=config.output_limit,
            sandbox=task.sandbox,
        )
        system = system_prompt(self._workspace.mode, config.strategy)
        self._chat = _Conversation(task, config, system, sleep)

    def _execute(self, call: Call) -> ToolResult:
        started = self._clock()
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
        except ValueError as exc:
            result = ToolResult(
                text=f"error: the arguments are not valid JSON: {exc}", outcome=Outcome.ERROR
            )
        else:
            if isinstance(args, dict):
                result = self._workspace.run(call.name, args)
            else:
                result = ToolResult(
                    text="error: the arguments must be a JSON object", outcome=Outcome.ERROR
                )
        ms = round((self._clock() - started) * 1000, 3)
        self._task.log("tool", tool=call.name, ms=ms, outcome=result.outcome.value)
        return result

    def _act(self, text: str, calls: tuple[Call, ...]) -> None:
        self._chat.add_calls(text, calls)
        for call in calls:
            self._chat.add_result(call, self._execute(call))

    def _forced_turn(self) -> str | None:
        """One forced step; the reply text if the model chose to answer, else None."""
        action = _choice(self._chat.ask(_forced(NEXT_ACTION)))
        if action == ANSWER:
            return self._chat.ask("none").text
        reply = self._chat.ask(_forced(action))
        calls = tuple(c for c in reply.calls if c.name == action)[:1]
        if not calls:
            return reply.text
        self._act("", calls)
        return None

    def _auto_turn(self) -> str | None:
        reply = self._chat.ask("auto")
        if not reply.calls:
            return reply.text
        self._act(reply.text, reply.calls)
        return None

    def run(self) -> str | None:
        forced = self._config.strategy is Strategy.FORCED
        self._task.log(
            "agent",
            strategy=self._config.strategy.value,
            mode=self._workspace.mode,
            max_turns=self._config.max_turns,
            control_tool=NEXT_ACTION if forced else "",
        )
        for _ in range(self._config.max_turns):
            answer = self._forced_turn() if forced else self._auto_turn()
            if answer is not None:
                return answer
        self._task.log("stopped", reason="turn-limit", turns=self._config.max_turns)
        return None


def run_agent(
    task: Task,
    config: AgentConfig,
    *,
    clock: Callable[[], float] = time.perf_counter,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """Work on ``task`` until the model answers or the turn limit is reached.

    Returns the model's final reply, or None when the turn limit stopped the
    loop.  Model API failures raise ``ModelError``; tool failures do not
    raise, they are reported to the model.
    """
    return _Runner(task, config, clock, sleep).run()
