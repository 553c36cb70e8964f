"""Python agents on the real SDKs, through the clients their ``Task`` hands them.

Each writes its answer to ``reply.txt`` in the workspace and returns it.
``SDK_AGENT_VARIANT`` in the task's environment changes the prompt (a
harness change that makes a replay diverge).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from evaltape.scoring import Task


def _prompt(task: Task) -> str:
    return task.prompt + task.environ.get("SDK_AGENT_VARIANT", "")


def _done(task: Task, text: str) -> str:
    Path(task.workspace, "reply.txt").write_text(text, encoding="utf-8")
    return text


def async_openai(task: Task) -> str:
    """``AsyncOpenAI``: one completion, then one streamed completion."""

    async def main() -> str:
        client = task.openai(async_=True, max_retries=0)
        messages = [{"role": "user", "content": _prompt(task)}]
        first = await client.chat.completions.create(model=task.model, messages=messages)
        stream = await client.chat.completions.create(
            model=task.model, messages=[{"role": "user", "content": "stream it"}], stream=True
        )
        parts = [c.choices[0].delta.content or "" async for c in stream if c.choices]
        return f"{first.choices[0].message.content} / {''.join(parts)}"

    return _done(task, asyncio.run(main()))


def gather_openai(task: Task) -> str:
    """Three identical ``AsyncOpenAI`` calls at once; the answers in the order they were sent."""

    async def main() -> str:
        client = task.openai(async_=True, max_retries=0)
        # The SDK's first call looks up the platform in a worker thread; after it,
        # calls reach the transport in the order they are made.
        warm = [{"role": "user", "content": "warm up"}]
        await client.chat.completions.create(model=task.model, messages=warm)
        messages = [{"role": "user", "content": _prompt(task)}]
        calls = [
            client.chat.completions.create(model=task.model, messages=messages) for _ in range(3)
        ]
        answers = await asyncio.gather(*calls)
        return " | ".join(str(a.choices[0].message.content) for a in answers)

    return _done(task, asyncio.run(main()))


def anthropic_sync(task: Task) -> str:
    """``anthropic.Anthropic``: one message."""
    client = task.anthropic()
    message = client.messages.create(
        model=task.model, max_tokens=64, messages=[{"role": "user", "content": _prompt(task)}]
    )
    block = message.content[0]
    return _done(task, block.text if block.type == "text" else "")


def anthropic_async(task: Task) -> str:
    """``anthropic.AsyncAnthropic``: one message, then one streamed with ``messages.stream``."""

    async def main() -> str:
        client = task.anthropic(async_=True)
        messages = [{"role": "user", "content": _prompt(task)}]
        first = await client.messages.create(model=task.model, max_tokens=64, messages=messages)
        again = [{"role": "user", "content": "stream it"}]
        async with client.messages.stream(
            model=task.model, max_tokens=64, messages=again
        ) as stream:
            streamed = await stream.get_final_text()
        block = first.content[0]
        return f"{block.text if block.type == 'text' else ''} / {streamed}"

    return _done(task, asyncio.run(main()))
