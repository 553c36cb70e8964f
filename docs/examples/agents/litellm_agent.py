"""A litellm agent with one tool, run as a command: agent = "cmd:python litellm_agent.py {prompt}".

litellm downloads its model price map when imported; a command agent gets
the proxy's OPENAI_BASE_URL, and in replay no network at all, so the local
copy is used.
"""

import json
import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402

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


def main() -> None:
    messages: list = [{"role": "user", "content": sys.argv[1]}]
    for _ in range(5):
        reply = litellm.completion(
            model="openai/" + os.environ["EVALTAPE_MODEL"],
            api_base=os.environ["OPENAI_BASE_URL"],
            messages=messages,
            tools=TOOLS,
        )
        message = reply.choices[0].message
        if not message.tool_calls:
            print(message.content)
            return
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            result = str(args["a"] + args["b"])
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    print("gave up")


if __name__ == "__main__":
    main()
