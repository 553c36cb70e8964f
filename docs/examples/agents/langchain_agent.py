"""A LangChain agent (create_agent + ChatOpenAI) with one tool: agent = "langchain_agent:run"."""

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from evaltape.scoring import Task


@tool
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


def run(task: Task) -> str:
    llm = ChatOpenAI(
        model=task.model,
        base_url=task.base_url,
        api_key=task.api_key("openai"),
        http_client=task.http_client(),
        http_async_client=task.http_client(async_=True),
    )
    agent = create_agent(llm, tools=[add])
    state = agent.invoke({"messages": [{"role": "user", "content": task.prompt}]})
    return str(state["messages"][-1].content)
