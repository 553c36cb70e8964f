"""An agent streaming with anthropic's messages.stream: agent = "anthropic_stream:run"."""

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


def run(task: Task) -> str:
    client = task.anthropic()
    messages: list = [{"role": "user", "content": task.prompt}]
    for _ in range(5):
        with client.messages.stream(
            model=task.model, max_tokens=512, messages=messages, tools=TOOLS
        ) as stream:
            reply = stream.get_final_message()
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
