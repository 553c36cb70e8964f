"""A command agent that asks two providers in one session, through their own SDKs.

Run as ``python two_providers_agent.py PROMPT``: one chat completion with the
``openai`` SDK and one message with the ``anthropic`` SDK, each configured only
by the environment (``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``,
``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY``).  ``--cross`` sends the
OpenAI request with Anthropic's key instead (a misconfigured agent).  Writes
both answers to ``reply.txt`` and prints them.
"""

from __future__ import annotations

import os
import sys

import anthropic
import openai


def main() -> int:
    prompt = sys.argv[1]
    model = os.environ["EVALTAPE_MODEL"]
    key = os.environ["ANTHROPIC_API_KEY"] if "--cross" in sys.argv else None
    gpt = openai.OpenAI(api_key=key, max_retries=0)
    first = gpt.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}])
    claude = anthropic.Anthropic(max_retries=0)
    second = claude.messages.create(
        model=model, max_tokens=64, messages=[{"role": "user", "content": prompt + " again"}]
    )
    text = f"{first.choices[0].message.content} | {second.content[0].text}"
    with open("reply.txt", "w", encoding="utf-8") as handle:
        handle.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
