"""A small support assistant: the agent you already have, written with the OpenAI SDK.

Nothing in it knows about evaltape; ``evaltape_agent.py`` hands it a client.
"""

from __future__ import annotations

import sys

from openai import OpenAI

SYSTEM = "You are the support assistant of Acme. Answer in one short sentence."


def answer(client: OpenAI, model: str, question: str) -> str:
    """Ask the model one question; return its reply."""
    reply = client.chat.completions.create(
        model=model,
        messages=[
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": question},
        ],
    )
    return reply.choices[0].message.content or ""


if __name__ == "__main__":
    print(answer(OpenAI(), "gpt-4o-mini", " ".join(sys.argv[1:])))
