"""The values a divergence classification is made of.

When a replayed request no longer matches its recording, what changed
decides what to do next: a tool that now returns different data is a
harness bug to fix (re-recording would enshrine it), a reshaped
conversation is a harness behaving differently, and an edited prompt or
parameter is a stale recording to re-record.  ``ChangeKind`` names the
three; a ``Finding`` is one change found; a ``Classification`` lists them
all, the most serious first.
"""

from __future__ import annotations

import enum

import attrs


class ChangeKind(enum.Enum):
    """What kind of change made a request differ from its recording.

    Listed most serious first: when several are found, the first one listed
    here is the primary one.
    """

    TOOL_RESULT = "tool result changed"
    """The request sends back the result of a tool call the model made in the
    recording, and the result differs: a tool now returns other data for the
    same call.  So does a user message sent after the model's first turn (a
    text/ReAct agent's observation).  Fix the tool; re-recording would record
    the bug as the truth."""
    CONVERSATION = "conversation changed"
    """Messages were added, dropped, reordered or altered by the harness (a
    tool result no longer sent back, an extra message): the harness now does
    something else with the same model answers."""
    HARNESS_TEXT = "harness text changed"
    """Only text the harness writes differs: the system prompt, the user
    prompt, tool names, descriptions or schemas, or request parameters
    (model, temperature, max tokens...).  The recording is stale; re-record."""

    @property
    def rank(self) -> int:
        """0 for the most serious kind; findings sort by it."""
        return list(ChangeKind).index(self)


ASPECTS = (
    "tool result",
    "observation",
    "conversation",
    "system prompt",
    "user prompt",
    "tool definitions",
    "parameters",
)
"""Every value of ``Finding.aspect``: ``tool result`` and ``observation`` (a user
message the harness sent after the model spoke: a text/ReAct agent's tool output)
go with ``TOOL_RESULT``, ``conversation`` with its own kind, the last four are the
sub-kinds of ``HARNESS_TEXT``."""


@attrs.frozen(kw_only=True)
class Finding:
    """One change between a recorded request body and the one sent now."""

    kind: ChangeKind
    """Which class of change this is."""
    aspect: str
    """Which part changed, one of ``ASPECTS``."""
    subject: str = ""
    """For tool results and tool definitions the tool's name; for parameters
    the parameter's key; for a conversation change what happened to it
    ("tool result for call_1 (read) no longer sent")."""
    path: str = ""
    """The first differing JSON path, in the body sent now (in the recorded
    body for something no longer sent)."""
    tool: str = ""
    """The tool's name, for tool results and tool definitions."""
    arguments: str = ""
    """For a tool result: the arguments of the call it answers, compact JSON."""
    diff: tuple[str, ...] = ()
    """A short unified diff, recorded (``-``) against now (``+``), of the
    changed text; long diffs end with a line saying how many lines were cut."""
    edit_key: str
    """A short hash of the kind, the part and its normalized before and after:
    the same edit in two sessions gets the same key, different edits differ."""

    @property
    def headline(self) -> str:
        """One line: ``tool result changed: read {"path": "a.txt"}``, ``system prompt changed``."""
        if self.aspect == "observation":
            return f"tool result changed: observation in {self.subject}"
        if self.kind is ChangeKind.TOOL_RESULT:
            return f"tool result changed: {self.tool} {self.arguments}".rstrip()
        if self.kind is ChangeKind.CONVERSATION:
            return f"conversation changed: {self.subject}"
        if self.aspect in ("tool definitions", "parameters"):
            return f"{self.aspect} changed: {self.subject}"
        return f"{self.aspect} changed"


@attrs.frozen(kw_only=True)
class Classification:
    """Everything that changed in one request, the most serious change first."""

    primary: ChangeKind | None
    """The kind of the first finding; None when the two bodies mean the same."""
    findings: tuple[Finding, ...]
    """Every change found, sorted by kind (``ChangeKind`` order), then by
    where it is in the request."""
    summary: str
    """One line for a report: the primary finding's headline, and how many
    more there are."""

    @classmethod
    def of(cls, findings: list[Finding]) -> Classification:
        """The classification of these findings (in request order)."""
        ordered = tuple(sorted(findings, key=lambda f: f.kind.rank))
        if not ordered:
            return cls(primary=None, findings=(), summary="request bodies are the same")
        more = len(ordered) - 1
        summary = ordered[0].headline + (f" (+{more} more)" if more else "")
        return cls(primary=ordered[0].kind, findings=ordered, summary=summary)
