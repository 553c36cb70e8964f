"""Scrub rules proposed for volatile text: what differs between attempts, and today's date.

``propose_scrub_rules`` reads first request bodies as recorded.  Each rule is
checked by applying it (as a scrub rule would, to the JSON text) to both
bodies: afterwards they are equal, and nothing the harness did not vary is
touched.
"""

from __future__ import annotations

import datetime
import json
import re

from evaltape.recorder.redact import ScrubRule
from evaltape.replay._shared import FirstRequests, propose_scrub_rules

NOON = datetime.datetime(2026, 12, 3, 12, 0, tzinfo=datetime.UTC).timestamp()
"""When the attempts were recorded (an injected clock)."""


def body(system: str, user: str = "Fix the failing test.") -> bytes:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return json.dumps({"model": "m", "messages": messages}).encode()


def scrubbed(data: bytes, proposals: tuple[object, ...]) -> bytes:
    for p in proposals:
        rule = ScrubRule(pattern=p.pattern, replacement=p.replacement)  # type: ignore[attr-defined]
        data = rule.apply(data)
    return data


def test_text_that_differs_between_attempts_gets_one_anchored_rule_each() -> None:
    a = body("Session 8f3a2c11 started by pid 4411.\nBe brief.")
    b = body("Session 1b9e7700 started by pid 912.\nBe brief.")
    proposals = propose_scrub_rules([FirstRequests(label="fix", bodies=(a, b), started=(NOON,))])
    assert [(p.pattern, p.replacement) for p in proposals] == [
        ("(?<=Session )[0-9a-f]+", "<volatile>"),
        (r"(?<=started by pid )\d+", "<volatile>"),
    ]
    assert all(p.why == "differs between attempts of fix" for p in proposals)
    assert scrubbed(a, proposals) == scrubbed(b, proposals)
    assert b"Be brief." in scrubbed(a, proposals)


def test_a_date_of_the_recording_day_is_proposed_and_a_date_of_the_task_is_not() -> None:
    system = "Today's date is 2026-12-03. Current time: Thu Dec  3 11:58:02 UTC 2026."
    task = "Why did the 2024-01-15 backup fail?"
    proposals = propose_scrub_rules(
        [FirstRequests(label="c", bodies=(body(system, task),), started=(NOON,))]
    )
    assert {p.why: p.replacement for p in proposals} == {
        "ISO date": "<date>",
        "date(1) output": "<time>",
    }
    after = scrubbed(body(system, task), proposals).decode()
    assert "Today's date is <date>" in after and "Current time: <time>" in after
    assert "2024-01-15" in after
    # On another day the same prompt is not about that day: nothing proposed.
    later = NOON + 30 * 86400
    assert (
        propose_scrub_rules([FirstRequests(label="c", bodies=(body(system),), started=(later,))])
        == ()
    )


def test_a_proposal_is_a_line_the_config_reads_back() -> None:
    import tomllib

    (p,) = propose_scrub_rules(
        [FirstRequests(label="c", bodies=(body("It's December 3, 2026 now."),), started=(NOON,))]
    )
    assert tomllib.loads(p.toml) == {p.pattern: p.replacement}
    assert re.search(p.pattern, "It's December 3, 2026 now.")
