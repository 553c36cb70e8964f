"""The exchanges of a recorded session as an Inspect AI ``.eval`` log, for size comparisons.

One sample per session; one ``ModelEvent`` per model call, holding what Inspect
records of it: the input messages, the tools offered, the generate config and the
model's output (text, tool calls, stop reason, usage) with its time.  The
messages are built once and shared between events, as in an Inspect run, so
``write_eval_log`` stores each distinct message once (its message pool).  Inspect
keeps no HTTP headers, no chunk boundaries and no chunk times.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evaltape.recorder import Exchange, Message, SessionStarted, ToolCall, fold


def _tools(exchange: Exchange) -> list[Any]:
    from inspect_ai.tool import ToolInfo, ToolParams

    body = json.loads(exchange.request.body)
    out = []
    for tool in body.get("tools", []):
        spec = tool.get("function", tool)
        params = spec.get("parameters", spec.get("input_schema", {}))
        out.append(
            ToolInfo(
                name=spec["name"],
                description=spec.get("description", ""),
                parameters=ToolParams.model_validate(params),
            )
        )
    return out


def _calls(calls: tuple[ToolCall, ...]) -> list[Any]:
    from inspect_ai.tool import ToolCall as InspectCall

    return [
        InspectCall(id=c.id, function=c.name, arguments=json.loads(c.arguments or "{}"))
        for c in calls
    ]


class _Messages:
    """Inspect messages, one object per distinct message of the conversation."""

    def __init__(self) -> None:
        self._made: dict[Message, Any] = {}

    def get(self, m: Message) -> Any:
        from inspect_ai.model import (
            ChatMessageAssistant,
            ChatMessageSystem,
            ChatMessageTool,
            ChatMessageUser,
        )

        made = self._made.get(m)
        if made is None:
            if m.role in ("system", "developer"):
                made = ChatMessageSystem(content=m.text)
            elif m.role == "assistant":
                made = ChatMessageAssistant(content=m.text, tool_calls=_calls(m.tool_calls) or None)
            elif m.role == "tool":
                made = ChatMessageTool(content=m.text, tool_call_id=m.tool_call_id)
            else:
                made = ChatMessageUser(content=m.text)
            self._made[m] = made
        return made


def eval_log(header: SessionStarted, exchanges: list[Exchange]) -> Any:
    """An ``EvalLog`` with one sample holding one ``ModelEvent`` per model call."""
    from inspect_ai.event import ModelEvent
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSample, EvalSpec
    from inspect_ai.model import (
        ChatCompletionChoice,
        ChatMessageAssistant,
        GenerateConfig,
        ModelOutput,
        ModelUsage,
    )

    session = fold([header, *exchanges])
    messages = _Messages()
    tools = _tools(exchanges[0]) if exchanges else []
    start = header.started_at
    events = []
    conversation: list[Any] = []
    for turn in session.turns:
        call = turn.call
        usage = call.usage
        output = ModelOutput(
            model=call.model_responded or call.model_requested,
            choices=[
                ChatCompletionChoice(
                    message=ChatMessageAssistant(
                        content=call.output_text, tool_calls=_calls(call.tool_calls) or None
                    ),
                    stop_reason="tool_calls" if call.tool_calls else "stop",
                )
            ],
            usage=ModelUsage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                total_tokens=usage.input_tokens + usage.output_tokens,
            ),
            time=turn.exchange.duration,
        )
        conversation = [messages.get(m) for m in call.input_messages]
        events.append(
            ModelEvent(
                timestamp=datetime.fromtimestamp(start + turn.exchange.at, UTC),
                model=call.model_requested,
                input=conversation,
                tools=tools,
                tool_choice="auto",
                config=GenerateConfig(),
                output=output,
                working_time=turn.exchange.duration,
            )
        )
    last = session.turns[-1].call if session.turns else None
    sample = EvalSample(
        id=header.case_id or header.session_id,
        epoch=1,
        input=next((m.text for m in conversation if m.role == "user"), ""),
        target="",
        messages=conversation,
        output=events[-1].output if events else ModelOutput(),
        events=events,
    )
    spec = EvalSpec(
        created=datetime.fromtimestamp(start, UTC).isoformat(),
        task=header.case_id or "session",
        dataset=EvalDataset(),
        model=last.model_requested if last else header.model,
        config=EvalConfig(),
    )
    return EvalLog(eval=spec, samples=[sample], status="success")


def eval_size(header: SessionStarted, exchanges: list[Exchange], folder: Path) -> int:
    """Bytes of the ``.eval`` file ``write_eval_log`` writes for these exchanges."""
    from inspect_ai.log import write_eval_log

    path = folder / "session.eval"
    path.unlink(missing_ok=True)
    write_eval_log(eval_log(header, exchanges), str(path))
    return path.stat().st_size
