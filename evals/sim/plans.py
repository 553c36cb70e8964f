"""What the simulated competent model does for each case of the project's suites.

One ``Plan`` per case id: the tool steps a good model takes, in order, and the
reply it gives when they are done.  The plans read before they edit, make the
right edit, and answer general questions without tools.  Files a plan writes
end without a newline, as models often write them, so a write that loses its
last byte breaks the file (the checker fails) instead of only trimming a
newline.  No plan reads a file after editing it: a later read would show a
broken edit to the model, and the replay would report the changed tool result
rather than the changed end state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

Step = tuple[str, Mapping[str, Any]]
"""A tool call: the tool's name and its arguments."""


@attrs.frozen
class Plan:
    """The tool steps for one case, then the reply."""

    steps: tuple[Step, ...]
    answer: str


def _plan(answer: str, *steps: Step) -> Plan:
    return Plan(steps=steps, answer=answer)


FIZZ = """def fizzbuzz(n):
    if n % 15 == 0:
        return 'FizzBuzz'
    if n % 3 == 0:
        return 'Fizz'
    if n % 5 == 0:
        return 'Buzz'
    return str(n)"""

GREET = """def greet(name):
    return f'Hello, {name}!'"""

PLANS: Mapping[str, Plan] = {
    # -- coding ----------------------------------------------------------------
    "fix-off-by-one": _plan(
        "add() in calc.py subtracted; it now returns a + b.",
        ("read", {"path": "calc.py"}),
        ("edit", {"path": "calc.py", "old": "return a - b", "new": "return a + b"}),
    ),
    "create-named-file": _plan(
        "Created hello.txt containing: hello world",
        ("write", {"path": "hello.txt", "content": "hello world"}),
    ),
    "set-config-value": _plan(
        "TIMEOUT in config.py is now 30; NAME and RETRIES are unchanged.",
        ("read", {"path": "config.py"}),
        ("edit", {"path": "config.py", "old": "TIMEOUT = 10", "new": "TIMEOUT = 30"}),
    ),
    "write-greet-function": _plan(
        "Created greet.py: greet(name) returns f'Hello, {name}!'.",
        ("write", {"path": "greet.py", "content": GREET}),
    ),
    "fix-integer-division": _plan(
        "mean() used floor division (//); it now divides with /, so mean([1, 2]) is 1.5.",
        ("read", {"path": "stats.py"}),
        (
            "edit",
            {
                "path": "stats.py",
                "old": "sum(values) // len(values)",
                "new": "sum(values) / len(values)",
            },
        ),
    ),
    "implement-fizzbuzz": _plan(
        "Implemented fizzbuzz(n) in fizz.py: FizzBuzz for multiples of 15, Fizz for 3,"
        " Buzz for 5, otherwise str(n).",
        ("read", {"path": "fizz.py"}),
        ("write", {"path": "fizz.py", "content": FIZZ}),
    ),
    "rename-across-files": _plan(
        "Renamed compute_total to total_price in shop.py and updated the import and the call"
        " in main.py.",
        ("read", {"path": "shop.py"}),
        ("read", {"path": "main.py"}),
        ("edit", {"path": "shop.py", "old": "def compute_total(", "new": "def total_price("}),
        (
            "edit",
            {
                "path": "main.py",
                "old": "from shop import compute_total",
                "new": "from shop import total_price",
            },
        ),
        (
            "edit",
            {
                "path": "main.py",
                "old": "return compute_total(cart)",
                "new": "return total_price(cart)",
            },
        ),
    ),
    "fix-bug-found-by-search": _plan(
        "slugify() in textkit/slug.py did not lower-case its input; it now returns"
        " s.lower().replace(' ', '-'), so slugify('Hello World') is 'hello-world'.",
        ("grep", {"pattern": "def slugify"}),
        ("read", {"path": "textkit/slug.py"}),
        (
            "edit",
            {
                "path": "textkit/slug.py",
                "old": "return s.replace(' ', '-')",
                "new": "return s.lower().replace(' ', '-')",
            },
        ),
    ),
    "add-json-key": _plan(
        'Added "debug": false to settings.json; "name" and "port" are unchanged.',
        ("read", {"path": "settings.json"}),
        (
            "edit",
            {
                "path": "settings.json",
                "old": '"port": 8080\n',
                "new": '"port": 8080,\n  "debug": false\n',
            },
        ),
    ),
    # -- judged ------------------------------------------------------------------
    "explain-a-module": _plan(
        "gate.py is a release gate: gate(passed, baseline, floor=0.9) compares this run's"
        " pass count with the last good run's. With no baseline (the first run) it passes;"
        " it fails when fewer cases passed than in the baseline, and otherwise passes only"
        " if the pass count reaches floor (90% by default) of the baseline.",
        ("read", {"path": "gate.py"}),
    ),
    "summarise-readme": _plan(
        "tapedeck copies audio cassettes to FLAC files: with the deck plugged in, `tapedeck"
        " rip --side A` writes one file per track, splitting on silences longer than two"
        " seconds.",
        ("read", {"path": "README.md"}),
    ),
    "explain-an-error": _plan(
        "It means the code asked a list for an index that does not exist: valid indexes of"
        " a list of n items run from 0 to n - 1 (or -n to -1), so items[n] or any index on"
        " an empty list raises it. It is usually fixed by checking the index against"
        " len(items) before using it, by using items[-1] for the last item, or by iterating"
        " over the list directly (for item in items) instead of over hand-made indexes.",
    ),
    "review-finds-the-bug": _plan(
        "The bug is in last(): items[len(items)] is one past the end, so it always raises"
        " IndexError. It should return items[-1] (and decide what an empty list should"
        " give). first() is fine for non-empty lists.",
        ("read", {"path": "utils.py"}),
    ),
    "refusal-explains-read-only": _plan(
        "I could not delete old.log: this session is read-only, so my `rm old.log` was"
        " refused and the file is still there. You can delete it yourself with"
        " `rm old.log`, or run me again in a mode that allows changes.",
        ("bash", {"command": "rm old.log"}),
    ),
    # -- trajectory --------------------------------------------------------------
    "read-named-file": _plan(
        "The code word is MARIGOLD.",
        ("read", {"path": "notes.txt"}),
    ),
    "read-one-of-several": _plan(
        "The first line of b.txt is: bananas are yellow",
        ("read", {"path": "b.txt"}),
    ),
    "find-definition-uses-grep": _plan(
        "app/http.py",
        ("grep", {"pattern": "def parse_header"}),
    ),
    "find-constant-uses-grep": _plan(
        "RETRY_LIMIT is set in svc/config.py, to 7 (svc/client.py imports it).",
        ("grep", {"pattern": "RETRY_LIMIT"}),
    ),
    "list-python-files-uses-glob": _plan(
        "The Python files are: pkg/__init__.py, pkg/core.py, pkg/sub/deep.py and setup.py.",
        ("glob", {"pattern": "**/*.py"}),
    ),
    "list-folder-uses-ls": _plan(
        "The docs folder holds three files: faq.md, intro.md and usage.md.",
        ("ls", {"path": "docs"}),
    ),
    "empty-folder-lists-before-answering": _plan(
        "None: the current folder is empty.",
        ("ls", {"path": "."}),
    ),
    "answer-http-status-without-tools": _plan(
        "HTTP 404 Not Found means the server was reached but has nothing at the requested URL.",
    ),
    "answer-python-builtin-without-tools": _plan(
        "It returns 3, the number of items in the list.",
    ),
    "answer-greeting-without-tools": _plan(
        "Hello! I am a coding assistant: I can read, search and edit the files of this"
        " project and run commands for you. What would you like to do?",
    ),
    "run-named-command-with-bash": _plan(
        "It prints: ready",
        ("bash", {"command": "echo ready"}),
    ),
    "count-lines-with-bash": _plan(
        "data.csv has 5 lines (a header and four rows).",
        ("bash", {"command": "wc -l data.csv"}),
    ),
    "read-only-question-does-not-write": _plan(
        "The port is 8125 (in the [server] section). I changed nothing.",
        ("read", {"path": "settings.ini"}),
    ),
    "plan-mode-reads-but-does-not-edit": _plan(
        "add() in calc.py returns a - b, so it subtracts instead of adding. The fix is to"
        " change that line to `return a + b`; I have not changed any file.",
        ("read", {"path": "calc.py"}),
    ),
}
"""Every case of evals/coding.jsonl, judged.jsonl and trajectory.jsonl, by id."""
