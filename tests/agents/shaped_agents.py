"""Agents of the shapes users write, each with changes a test plants through the environment.

- ``openai_tools`` / ``anthropic_tools``: tool-call agents on the real SDKs with one tool,
  ``read_file``; its result goes back as a tool message (a ``tool_result`` block).
- ``react``: a text (ReAct) agent: the model writes ``Action: <command>``, the harness runs
  it in the workspace and replies with ``Observation (exit N):`` and the output as the
  next *user* message; each command is logged as a ``tool_call`` harness event.
- ``dated``: a command-line-style agent whose system prompt carries today's date, its
  project folder as a dash-mangled path, and the machine's kernel release.

What a test plants, read from ``task.environ`` (so live and replay differ only there):

- ``AGENT_PROMPT``: text appended to the system prompt (a prompt edit);
- ``AGENT_BUG``: ``tool`` (read_file drops the file's last line), ``rc`` (an observation
  loses its exit code), ``cwd`` (commands run in another, empty folder), ``own_client``
  (the agent builds its own client, which no tape answers), ``stop_after_2`` (the loop
  gives up after two model calls);
- ``AGENT_TODAY`` (``dated``): the date its prompt carries, an injected clock;
- ``AGENT_UNAME`` (``dated``): the kernel release its prompt carries.
"""

from __future__ import annotations

import datetime
import json
import platform
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from evaltape.scoring import Task

SYSTEM = "You are a careful assistant. Use the tools to answer, then reply in one line."
REACT_SYSTEM = (
    "Solve the task with shell commands. Reply 'Action: <command>' to run one command, "
    "or 'Final Answer: <answer>' when you know the answer."
)
READ_FILE = {
    "name": "read_file",
    "description": "Read a text file of the project.",
    "schema": {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
}
MAX_CALLS = 10


def _bug(task: Task) -> str:
    return task.environ.get("AGENT_BUG", "")


def _system(task: Task, base: str = SYSTEM) -> str:
    return base + task.environ.get("AGENT_PROMPT", "")


def _give_up(task: Task, calls: int) -> bool:
    return _bug(task) == "stop_after_2" and calls == 2


def read_file(task: Task, arguments: dict[str, Any]) -> str:
    """The tool: a file of the workspace (the planted bug drops its last line)."""
    text = Path(task.workspace, str(arguments.get("path", ""))).read_text(encoding="utf-8")
    if _bug(task) == "tool":
        text = "".join(text.splitlines(keepends=True)[:-1])
    return text


def openai_tools(task: Task) -> str:
    """A tool-call agent on the OpenAI SDK: read_file until the model answers."""
    if _bug(task) == "own_client":
        from openai import OpenAI

        client: Any = OpenAI(base_url=task.base_url, api_key="sk-not-used", max_retries=0)
    else:
        client = task.openai(max_retries=0)
    tools = [
        {
            "type": "function",
            "function": {
                "name": READ_FILE["name"],
                "description": READ_FILE["description"],
                "parameters": READ_FILE["schema"],
            },
        }
    ]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": _system(task)},
        {"role": "user", "content": task.prompt},
    ]
    for calls in range(MAX_CALLS):
        if _give_up(task, calls):
            return "I gave up."
        reply = client.chat.completions.create(model=task.model, messages=messages, tools=tools)
        message = reply.choices[0].message
        if not message.tool_calls:
            return str(message.content or "")
        messages.append(
            {
                "role": "assistant",
                "content": message.content,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in message.tool_calls
                ],
            }
        )
        for c in message.tool_calls:
            result = read_file(task, json.loads(c.function.arguments))
            messages.append({"role": "tool", "tool_call_id": c.id, "content": result})
    return "too many calls"


def anthropic_tools(task: Task) -> str:
    """The same agent on the Anthropic SDK: tool results travel as ``tool_result`` blocks."""
    client = task.anthropic(max_retries=0)
    tools = [
        {
            "name": READ_FILE["name"],
            "description": READ_FILE["description"],
            "input_schema": READ_FILE["schema"],
        }
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": task.prompt}]
    for calls in range(MAX_CALLS):
        if _give_up(task, calls):
            return "I gave up."
        reply = client.messages.create(
            model=task.model, max_tokens=512, system=_system(task), tools=tools, messages=messages
        )
        uses = [b for b in reply.content if b.type == "tool_use"]
        text = "".join(b.text for b in reply.content if b.type == "text")
        if not uses:
            return text
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += [
            {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input} for b in uses
        ]
        messages.append({"role": "assistant", "content": content})
        results = [
            {"type": "tool_result", "tool_use_id": b.id, "content": read_file(task, dict(b.input))}
            for b in uses
        ]
        messages.append({"role": "user", "content": results})
    return "too many calls"


def _run(task: Task, command: str) -> tuple[int, str]:
    """Run the model's command (no shell) in the workspace, or in another folder (bug)."""
    elsewhere = tempfile.mkdtemp(prefix="shaped-agent-") if _bug(task) == "cwd" else None
    try:
        done = subprocess.run(
            shlex.split(command),
            cwd=elsewhere or task.workspace,
            capture_output=True,
            text=True,
            timeout=30,
        )
        return done.returncode, done.stdout + done.stderr
    except (OSError, ValueError) as exc:
        return 127, f"{exc}\n"
    finally:
        if elsewhere is not None:
            shutil.rmtree(elsewhere, ignore_errors=True)


def react(task: Task) -> str:
    """A text agent: commands in the model's text, their output back as a user message."""
    client = task.openai(max_retries=0)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": _system(task, REACT_SYSTEM)},
        {"role": "user", "content": task.prompt},
    ]
    for calls in range(MAX_CALLS):
        if _give_up(task, calls):
            return "I gave up."
        reply = client.chat.completions.create(model=task.model, messages=messages)
        text = str(reply.choices[0].message.content or "")
        messages.append({"role": "assistant", "content": text})
        final = re.search(r"Final Answer:\s*(.*)", text, re.DOTALL)
        if final:
            return final.group(1).strip()
        action = re.search(r"Action:\s*(.+)", text)
        if action is None:
            messages.append({"role": "user", "content": "Reply with Action: or Final Answer:"})
            continue
        command = action.group(1).strip()
        code, output = _run(task, command)
        task.log("tool_call", tool="bash", command=command, exit=code)
        head = "Observation:" if _bug(task) == "rc" else f"Observation (exit {code}):"
        messages.append({"role": "user", "content": f"{head}\n{output}"})
    return "too many calls"


def dated(task: Task) -> str:
    """A command-line-style agent whose prompt carries a date, a mangled path and a kernel."""
    today = task.environ.get("AGENT_TODAY") or datetime.date.today().isoformat()
    project = re.sub(r"[^A-Za-z0-9]", "-", str(task.workspace))
    kernel = task.environ.get("AGENT_UNAME") or platform.release()
    system = (
        f"You are a coding agent working in {task.workspace}.\n"
        f"Today's date is {today}.\n"
        f"Your notes live in ~/.agent/projects/{project}/notes.md\n"
        f"Platform: Linux {kernel}"
    )
    client = task.openai(max_retries=0)
    reply = client.chat.completions.create(
        model=task.model,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": task.prompt}],
    )
    return str(reply.choices[0].message.content or "")
