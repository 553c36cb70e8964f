"""A pydantic-ai Agent with one tool: evaltape agent = "pydantic_ai_agent:run"."""

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from evaltape.scoring import Task


def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


def run(task: Task) -> str:
    provider = OpenAIProvider(openai_client=task.openai(async_=True))
    agent = Agent(OpenAIChatModel(task.model, provider=provider), tools=[add])
    return agent.run_sync(task.prompt).output
