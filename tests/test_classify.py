"""What changed when a replayed request diverges: tool result, conversation, harness text.

The end-to-end tests run a two-turn tool-calling agent through the real
openai and anthropic SDKs against the 127.0.0.1 fake API twice: once as
recorded, once with one change planted.  The first request whose body
differs is the one a strict replay stops at; it is classified against the
recorded one.  The unit tests build bodies by hand for precedence, edit
keys and the edge cases.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import openai
import pytest
from fakeapi import FakeAPI, Reply, ToolUse

from evaltape.replay import ChangeKind, Classification, Finding, api_of, classify

NOTES = "line one\nline two\nline three"
READ = ToolUse("read", {"path": "notes.txt"})


@dataclasses.dataclass(frozen=True)
class Harness:
    """The knobs a change is planted in."""

    system: str = "You are a careful assistant."
    description: str = "Read a file."
    temperature: float = 0.0
    """Sent by the OpenAI agents (Anthropic's SDK no longer takes it)."""
    max_tokens: int = 256
    tool_output: str = NOTES
    send_results: bool = True


SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
PROMPT = "Summarize notes.txt"


def run_chat(client: openai.OpenAI, h: Harness) -> list[str]:
    tools: Any = [
        {
            "type": "function",
            "function": {"name": "read", "description": h.description, "parameters": SCHEMA},
        }
    ]
    messages: list[Any] = [
        {"role": "system", "content": h.system},
        {"role": "user", "content": PROMPT},
    ]
    first = client.chat.completions.create(
        model="gpt-test", messages=messages, tools=tools, temperature=h.temperature
    )
    message = first.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    ids = []
    for call in message.tool_calls or []:
        ids.append(call.id)
        if h.send_results:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": h.tool_output})
    client.chat.completions.create(
        model="gpt-test", messages=messages, tools=tools, temperature=h.temperature
    )
    return ids


def run_responses(client: openai.OpenAI, h: Harness) -> list[str]:
    tools: Any = [
        {"type": "function", "name": "read", "description": h.description, "parameters": SCHEMA}
    ]
    items: list[Any] = [{"role": "user", "content": PROMPT}]
    first = client.responses.create(
        model="gpt-test", instructions=h.system, input=items, tools=tools, temperature=h.temperature
    )
    ids = []
    for out in first.output:
        items.append(out.model_dump(exclude_none=True))
        if out.type == "function_call":
            ids.append(out.call_id)
            if h.send_results:
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": out.call_id,
                        "output": h.tool_output,
                    }
                )
    client.responses.create(
        model="gpt-test", instructions=h.system, input=items, tools=tools, temperature=h.temperature
    )
    return ids


def run_anthropic(client: anthropic.Anthropic, h: Harness) -> list[str]:
    tools: Any = [{"name": "read", "description": h.description, "input_schema": SCHEMA}]
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    first = client.messages.create(
        model="claude-test",
        max_tokens=h.max_tokens,
        system=h.system,
        messages=messages,
        tools=tools,
    )
    messages.append({"role": "assistant", "content": [b.model_dump() for b in first.content]})
    uses = [b for b in first.content if b.type == "tool_use"]
    if h.send_results:
        results = [
            {"type": "tool_result", "tool_use_id": b.id, "content": h.tool_output} for b in uses
        ]
        messages.append({"role": "user", "content": results})
    client.messages.create(
        model="claude-test",
        max_tokens=h.max_tokens,
        system=h.system,
        messages=messages,
        tools=tools,
    )
    return [b.id for b in uses]


Agent = Callable[[FakeAPI, Harness], list[str]]

AGENTS: dict[str, Agent] = {
    "openai.chat": lambda api, h: run_chat(openai.OpenAI(base_url=api.openai_url, api_key="k"), h),
    "openai.responses": lambda api, h: run_responses(
        openai.OpenAI(base_url=api.openai_url, api_key="k"), h
    ),
    "anthropic.messages": lambda api, h: run_anthropic(
        anthropic.Anthropic(base_url=api.base_url, api_key="k"), h
    ),
}


@pytest.fixture
def api() -> Iterator[FakeAPI]:
    with FakeAPI() as server:
        yield server


def diverged(api: FakeAPI, agent: str, changed: Harness) -> tuple[Classification, list[str]]:
    """Run ``agent`` as recorded and with ``changed``; classify the first differing request."""
    runs = []
    for harness in (Harness(), changed):
        api.script(Reply(text="Let me read it.", tool_calls=(READ,)), Reply(text="Done."))
        start = len(api.requests)
        ids = AGENTS[agent](api, harness)
        runs.append((api.requests[start:], ids))
    (recorded, ids), (sent, _) = runs
    assert len(recorded) == len(sent) == 2
    for old, new in zip(recorded, sent, strict=True):
        assert api_of(new.path) == agent
        result = classify(agent, old.body, new.body)
        if result.primary is not None:
            return result, ids
    raise AssertionError("the planted change changed no request")


BY_API = pytest.mark.parametrize("agent", list(AGENTS))


def only(result: Classification) -> Finding:
    assert len(result.findings) == 1, result.findings
    return result.findings[0]


@pytest.mark.slow
@BY_API
def test_a_tool_returning_other_text_is_a_tool_result_change(api: FakeAPI, agent: str) -> None:
    now = "line one\nline 2\nline three"
    result, _ = diverged(api, agent, Harness(tool_output=now))
    finding = only(result)
    assert result.primary is ChangeKind.TOOL_RESULT
    assert result.summary == 'tool result changed: read {"path": "notes.txt"}'
    assert (finding.tool, finding.arguments) == ("read", '{"path": "notes.txt"}')
    assert "-line two" in finding.diff and "+line 2" in finding.diff
    assert " line one" in finding.diff


@pytest.mark.slow
@BY_API
def test_a_tool_result_no_longer_sent_is_a_conversation_change(api: FakeAPI, agent: str) -> None:
    result, ids = diverged(api, agent, Harness(send_results=False))
    finding = only(result)
    assert result.primary is ChangeKind.CONVERSATION
    assert result.summary == f"conversation changed: tool result for {ids[0]} (read) no longer sent"
    assert finding.tool == "read"
    assert "-line two" in finding.diff


SYSTEM_PATHS = {
    "openai.chat": "messages[0].content",
    "openai.responses": "instructions",
    "anthropic.messages": "system",
}


@BY_API
def test_a_system_prompt_word_changed_is_harness_text(api: FakeAPI, agent: str) -> None:
    result, _ = diverged(api, agent, Harness(system="You are a thorough assistant."))
    finding = only(result)
    assert result.primary is ChangeKind.HARNESS_TEXT
    assert result.summary == "system prompt changed"
    assert finding.aspect == "system prompt"
    assert finding.path == SYSTEM_PATHS[agent]
    assert "-You are a careful assistant." in finding.diff
    assert "+You are a thorough assistant." in finding.diff


DESCRIPTION_PATHS = {
    "openai.chat": "tools[0].function.description",
    "openai.responses": "tools[0].description",
    "anthropic.messages": "tools[0].description",
}


@BY_API
def test_a_tool_description_changed_is_harness_text(api: FakeAPI, agent: str) -> None:
    result, _ = diverged(api, agent, Harness(description="Read a text file."))
    finding = only(result)
    assert result.summary == "tool definitions changed: read"
    assert (finding.kind, finding.aspect, finding.tool) == (
        ChangeKind.HARNESS_TEXT,
        "tool definitions",
        "read",
    )
    assert finding.path == DESCRIPTION_PATHS[agent]
    assert finding.diff[-2:] == ("-Read a file.", "+Read a text file.")


@pytest.mark.parametrize(
    ("agent", "change", "key", "diff"),
    [
        ("openai.chat", Harness(temperature=0.5), "temperature", ("-0", "+0.5")),
        ("openai.responses", Harness(temperature=0.5), "temperature", ("-0", "+0.5")),
        ("anthropic.messages", Harness(max_tokens=512), "max_tokens", ("-256", "+512")),
    ],
)
def test_a_changed_parameter_is_harness_text_naming_the_key(
    api: FakeAPI, agent: str, change: Harness, key: str, diff: tuple[str, str]
) -> None:
    result, _ = diverged(api, agent, change)
    finding = only(result)
    assert result.summary == f"parameters changed: {key}"
    assert (finding.kind, finding.aspect, finding.subject, finding.path) == (
        ChangeKind.HARNESS_TEXT,
        "parameters",
        key,
        key,
    )
    assert finding.diff[-2:] == diff


@pytest.mark.slow
@BY_API
def test_the_same_planted_edit_gets_the_same_key_on_every_api_run(api: FakeAPI, agent: str) -> None:
    edit = Harness(system="You are a thorough assistant.")
    first, _ = diverged(api, agent, edit)
    again, _ = diverged(api, agent, edit)
    other, _ = diverged(api, agent, Harness(system="You are a hasty assistant."))
    assert first.findings[0].edit_key == again.findings[0].edit_key
    assert first.findings[0].edit_key != other.findings[0].edit_key


# -- hand-built bodies --------------------------------------------------------


def chat_body(
    *,
    task: str = "notes.txt",
    call_id: str = "call_1",
    system: str = "You are a careful agent.",
    output: str = NOTES,
    temperature: float = 0,
    results: bool = True,
) -> dict[str, Any]:
    messages: list[Any] = [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Please summarize {task}"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "read", "arguments": json.dumps({"path": task})},
                }
            ],
        },
    ]
    if results:
        messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
    return {"model": "m", "temperature": temperature, "messages": messages}


def kinds(result: Classification) -> list[ChangeKind]:
    return [f.kind for f in result.findings]


def test_a_tool_result_change_outranks_prompt_and_parameter_changes() -> None:
    sent = chat_body(output="line one\nchanged\nline three", system="You are brief.", temperature=1)
    result = classify("openai.chat", chat_body(), sent)
    assert result.primary is ChangeKind.TOOL_RESULT
    assert kinds(result) == [
        ChangeKind.TOOL_RESULT,
        ChangeKind.HARNESS_TEXT,
        ChangeKind.HARNESS_TEXT,
    ]
    assert [f.aspect for f in result.findings] == ["tool result", "system prompt", "parameters"]
    assert result.summary == 'tool result changed: read {"path": "notes.txt"} (+2 more)'


def test_a_conversation_change_outranks_a_system_prompt_change() -> None:
    result = classify("openai.chat", chat_body(), chat_body(results=False, system="Be brief."))
    assert kinds(result) == [ChangeKind.CONVERSATION, ChangeKind.HARNESS_TEXT]
    assert result.findings[0].subject == "tool result for call_1 (read) no longer sent"
    assert result.findings[0].path == "messages[3]"


def test_bodies_that_mean_the_same_have_no_finding() -> None:
    body = chat_body()
    reordered = json.dumps(dict(reversed(list(body.items())))).replace(
        '"temperature": 0', '"temperature": 0.0'
    )
    result = classify("openai.chat", json.dumps(body).encode(), reordered.encode())
    assert (result.primary, result.findings) == (None, ())
    assert result.summary == "request bodies are the same"


def test_the_same_system_prompt_edit_in_two_conversations_has_one_key() -> None:
    keys = {
        classify(
            "openai.chat",
            chat_body(task=task, call_id=cid),
            chat_body(task=task, call_id=cid, system="You are a thorough agent."),
        )
        .findings[0]
        .edit_key
        for task, cid in (("notes.txt", "call_1"), ("todo.md", "call_abc"))
    }
    other = classify("openai.chat", chat_body(), chat_body(system="You are a lazy agent."))
    assert len(keys) == 1
    assert other.findings[0].edit_key not in keys


def test_a_user_prompt_template_edit_groups_across_tasks() -> None:
    def edited(task: str, word: str) -> Finding:
        before = chat_body(task=task)
        after = chat_body(task=task)
        after["messages"][1]["content"] = f"{word} summarize {task}"
        return only(classify("openai.chat", before, after))

    a, b, c = edited("notes.txt", "Kindly"), edited("todo.md", "Kindly"), edited("a.txt", "Now")
    assert a.aspect == "user prompt"
    assert a.path == "messages[1].content"
    assert a.diff[-2:] == ("-Please summarize notes.txt", "+Kindly summarize notes.txt")
    assert a.edit_key == b.edit_key != c.edit_key


def test_a_dropped_tool_result_has_one_key_whatever_the_call_id() -> None:
    first = classify("openai.chat", chat_body(), chat_body(results=False))
    second = classify(
        "openai.chat",
        chat_body(task="b.txt", call_id="call_9"),
        chat_body(task="b.txt", call_id="call_9", results=False),
    )
    added = classify("openai.chat", chat_body(results=False), chat_body())
    assert first.findings[0].edit_key == second.findings[0].edit_key
    assert added.summary == "conversation changed: tool result for call_1 (read) added"
    assert added.findings[0].edit_key != first.findings[0].edit_key


def test_an_extra_message_is_added_not_a_changed_prompt() -> None:
    sent = chat_body()
    sent["messages"].insert(2, {"role": "user", "content": "Remember: be brief."})
    result = classify("openai.chat", chat_body(), sent)
    finding = only(result)
    assert result.summary == "conversation changed: message 3 (user) added"
    assert finding.diff[-1] == "+Remember: be brief."


def test_swapped_messages_are_reported_as_moved() -> None:
    recorded = chat_body()
    recorded["messages"].insert(2, {"role": "user", "content": "Second note."})
    sent = json.loads(json.dumps(recorded))
    sent["messages"][1], sent["messages"][2] = sent["messages"][2], sent["messages"][1]
    result = classify("openai.chat", recorded, sent)
    assert result.primary is ChangeKind.CONVERSATION
    assert "moved to message" in result.summary


def test_a_tool_result_matched_by_position_when_the_harness_renames_ids() -> None:
    sent = chat_body(call_id="call_new", output="line one\nline 2\nline three")
    result = classify("openai.chat", chat_body(), sent)
    assert result.primary is ChangeKind.TOOL_RESULT
    assert ChangeKind.CONVERSATION in kinds(result)  # the assistant message's id changed too


def test_an_anthropic_tool_result_turned_error_is_a_tool_result_change() -> None:
    def body(error: bool) -> dict[str, Any]:
        use = {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"dir": "."}}
        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}
        return {
            "model": "c",
            "max_tokens": 10,
            "messages": [
                {"role": "user", "content": "list"},
                {"role": "assistant", "content": [use]},
                {"role": "user", "content": [{**result, "is_error": error}]},
            ],
        }

    finding = only(classify("anthropic.messages", body(False), body(True)))
    assert (finding.kind, finding.tool, finding.arguments) == (
        ChangeKind.TOOL_RESULT,
        "ls",
        '{"dir": "."}',
    )
    assert finding.path == "messages[2].content[0].is_error"
    assert finding.diff[-2:] == ("-false", "+true")


def test_a_long_diff_is_cut_with_a_count() -> None:
    before = "\n".join(f"row {i}" for i in range(40))
    after = "\n".join(f"row {i}" if i % 2 else f"ROW {i}" for i in range(40))
    finding = only(classify("openai.chat", chat_body(output=before), chat_body(output=after)))
    assert len(finding.diff) == 13
    cut = finding.diff[-1]
    assert cut.startswith("… ") and cut.endswith(" more diff lines cut")
    assert int(cut.split()[1]) + 12 > 40


def test_a_long_line_is_cut_around_its_change() -> None:
    before = "x" * 500 + " careful " + "y" * 500
    finding = only(
        classify(
            "openai.chat",
            chat_body(system=before),
            chat_body(system=before.replace("careful", "sloppy")),
        )
    )
    removed, added = finding.diff[-2:]
    assert "careful" in removed and "sloppy" in added
    assert len(removed) < 200 and len(added) < 200


def test_an_unknown_api_with_only_a_parameter_changed_is_harness_text() -> None:
    before = {"prompt": "hi", "max_new_tokens": 10}
    result = classify("json", before, {**before, "max_new_tokens": 20})
    assert result.summary == "parameters changed: max_new_tokens"
    assert only(result).kind is ChangeKind.HARNESS_TEXT


def test_an_unknown_api_with_its_messages_changed_is_a_conversation_change() -> None:
    before = {"prompt": ["hi", "there"], "max_new_tokens": 10}
    after = {"prompt": ["hi", "you"], "max_new_tokens": 20}
    finding = only(classify("json", before, after))
    assert finding.kind is ChangeKind.CONVERSATION
    assert finding.path == "prompt[1]"


def test_a_body_that_is_not_json_is_a_conversation_change() -> None:
    result = classify("openai.chat", b"not json", json.dumps(chat_body()).encode())
    assert result.primary is ChangeKind.CONVERSATION
    assert result.summary == "conversation changed: request body is not JSON"
    assert classify("json", b"\x00raw", b"\x00raw").primary is None


def test_responses_input_as_a_string_is_the_user_prompt() -> None:
    result = classify(
        "openai.responses",
        {"model": "m", "input": "Summarize notes.txt"},
        {"model": "m", "input": "Summarize todo.txt"},
    )
    finding = only(result)
    assert (finding.aspect, finding.path) == ("user prompt", "input")
    assert finding.diff[-2:] == ("-Summarize notes.txt", "+Summarize todo.txt")


def react_body(observation: str, *, opening: str = "What is in notes.txt?") -> dict[str, Any]:
    """A text agent's third request: its command and the observation came back as user text."""
    return {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Reply 'Action: <command>' or 'Final Answer: ...'."},
            {"role": "user", "content": opening},
            {"role": "assistant", "content": "Thought: look.\nAction: cat notes.txt"},
            {"role": "user", "content": observation},
        ],
    }


def test_a_user_message_after_the_model_spoke_is_an_observation_not_a_prompt() -> None:
    before = react_body("Observation (exit 0):\nalpha")
    found = only(classify("openai.chat", before, react_body("Observation:\nalpha")))
    assert (found.kind, found.aspect) == (ChangeKind.TOOL_RESULT, "observation")
    assert found.headline == (
        'tool result changed: observation in message 4 (user), after "Action: cat notes.txt"'
    )
    assert "-Observation (exit 0):" in found.diff and "+Observation:" in found.diff
    # The opening user message, before the model's first turn, is still the prompt.
    same = before["messages"][3]["content"]
    opening = only(classify("openai.chat", before, react_body(same, opening="What is in x?")))
    assert (opening.kind, opening.aspect) == (ChangeKind.HARNESS_TEXT, "user prompt")


def test_an_anthropic_text_observation_is_an_observation_too() -> None:
    def body(observation: str) -> dict[str, Any]:
        return {
            "model": "m",
            "max_tokens": 64,
            "system": "Use Action: lines.",
            "messages": [
                {"role": "user", "content": "List the files."},
                {"role": "assistant", "content": [{"type": "text", "text": "Action: ls"}]},
                {"role": "user", "content": [{"type": "text", "text": observation}]},
            ],
        }

    found = only(classify("anthropic.messages", body("a.txt\nb.txt"), body("a.txt")))
    assert (found.kind, found.aspect) == (ChangeKind.TOOL_RESULT, "observation")
    assert 'after "Action: ls"' in found.subject


@pytest.mark.parametrize("added", [True, False])
def test_a_parameter_added_or_removed_is_harness_text_at_its_own_path(added: bool) -> None:
    without = chat_body()
    without.pop("temperature", None)
    with_it = {**without, "top_p": 0.5}
    before, after = (without, with_it) if added else (with_it, without)
    result = classify("openai.chat", before, after)
    assert result.summary == "parameters changed: top_p"
    assert only(result).kind is ChangeKind.HARNESS_TEXT
    assert only(result).path == "top_p"
