"""An agent on anthropic.AsyncAnthropic with one tool: evaltape agent = "anthropic_async:run"."""

import asyncio

from evaltape.scoring import Task

TOOLS = [
    {
        "name": "add",
        "description": "Add two integers.",
        "input_schema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    }
]


async def solve(task: Task) -> str:
    client = task.anthropic(async_=True)
    messages: list = [{"role": "user", "content": task.prompt}]
    for _ in range(5):
        reply = await client.messages.create(
            model=task.model, max_tokens=512, messages=messages, tools=TOOLS
        )
        calls = [block for block in reply.content if block.type == "tool_use"]
        if not calls:
            return "".join(block.text for block in reply.content if block.type == "text")
        messages.append({"role": "assistant", "content": reply.content})
        results = [
            {"type": "tool_result", "tool_use_id": c.id, "content": str(c.input["a"] + c.input["b"])}
            for c in calls
        ]
        messages.append({"role": "user", "content": results})
    return "gave up"


def run(task: Task) -> str:
    return asyncio.run(solve(task))
