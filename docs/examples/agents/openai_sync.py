"""An agent on openai.OpenAI with one tool: evaltape agent = "openai_sync:run"."""

import json

from evaltape.scoring import Task

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]


def run(task: Task) -> str:
    client = task.openai()
    messages: list = [{"role": "user", "content": task.prompt}]
    for _ in range(5):
        reply = client.chat.completions.create(model=task.model, messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            result = str(args["a"] + args["b"])
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "gave up"
