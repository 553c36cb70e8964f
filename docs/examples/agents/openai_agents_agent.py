"""An openai-agents Agent with one tool: evaltape agent = "openai_agents_agent:run"."""

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool

from evaltape.scoring import Task


@function_tool
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


def run(task: Task) -> str:
    model = OpenAIChatCompletionsModel(model=task.model, openai_client=task.openai(async_=True))
    agent = Agent(name="adder", instructions="Use the add tool.", tools=[add], model=model)
    # Tracing would upload spans to OpenAI; the tape already holds every call.
    result = Runner.run_sync(agent, task.prompt, run_config=RunConfig(tracing_disabled=True))
    return str(result.final_output)
