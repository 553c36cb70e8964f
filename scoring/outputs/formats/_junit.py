"""``--junit FILE``: a run as JUnit XML, the dialect GitHub, GitLab and Jenkins read.

Valid against the Jenkins ``junit-10.xsd``: ``<testsuites>`` holds one
``<testsuite>`` per suite, one ``<testcase>`` per case and model
(``classname`` the suite, ``name`` ``case [model]``).  What each kind becomes:

| kind | element |
|---|---|
| passed, improvement | no child (an improvement says so in ``system-out``) |
| failed | ``<failure type="failed">`` |
| regression | ``<failure type="regression">`` |
| changed | ``<failure type="harness-changed">`` |
| stale | ``<error type="stale">`` |
| untested | ``<error type="untested">`` |
| error | ``<error type="error">`` |
| excluded | ``<skipped type="quarantined">`` or ``type="known-gap"`` |

``message`` is the one-line reason.  The schema allows ``<properties>`` only
on a suite, so each attempt is a suite property (``case [model] #N`` =
``kind: detail``) and also a line of its testcase's ``system-out``, which
every reader shows.
"""

from __future__ import annotations

import re

from ._results import CaseResult, Kind, RunResults

ELEMENTS: dict[Kind, tuple[str, str]] = {
    Kind.FAILED: ("failure", "failed"),
    Kind.REGRESSION: ("failure", "regression"),
    Kind.CHANGED: ("failure", "harness-changed"),
    Kind.STALE: ("error", "stale"),
    Kind.UNTESTED: ("error", "untested"),
    Kind.ERROR: ("error", "error"),
}
"""The child element and ``type`` of each kind that is not a pass."""

UNTESTED_SUITE = "evaltape"
"""The suite that holds what could not be tested outside any case."""


_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (they become U+FFFD)."""
    return _NOT_XML.sub("\ufffd", text)


def _name(c: CaseResult) -> str:
    return f"{c.case_id} [{c.model}]" if c.model else c.case_id


def junit_xml(results: RunResults) -> str:
    """The JUnit XML document of ``results``, UTF-8 text with its declaration."""
    from xml.etree import ElementTree as ET  # only a command asked for JUnit pays for it

    root = ET.Element("testsuites", name=f"evaltape {results.command}")
    by_suite: dict[str, list[CaseResult]] = {}
    for c in results.cases:
        by_suite.setdefault(c.suite, []).append(c)
    totals = {"tests": 0, "failures": 0, "errors": 0}
    seconds = 0.0
    for suite, cases in by_suite.items():
        counts = {"failures": 0, "errors": 0, "skipped": 0}
        node = ET.SubElement(root, "testsuite", name=suite)
        props = ET.SubElement(node, "properties")
        for key, value in (
            ("evaltape.command", results.command),
            ("evaltape.run_id", results.run_id),
            ("evaltape.decision", results.decision),
        ):
            ET.SubElement(props, "property", name=key, value=value)
        for c in cases:
            for a in c.attempts:
                value = f"{a.kind.value}: {a.detail}" if a.detail else a.kind.value
                ET.SubElement(props, "property", name=f"{_name(c)} #{a.attempt + 1}", value=value)
        for c in cases:
            case = ET.SubElement(
                node, "testcase", name=_name(c), classname=c.suite, time=f"{c.seconds:.3f}"
            )
            kind = c.kind
            if kind is Kind.EXCLUDED:
                ET.SubElement(
                    case, "skipped", type=c.excluded.replace(" ", "-"), message=c.excluded
                )
                counts["skipped"] += 1
            elif kind in ELEMENTS:
                tag, type_ = ELEMENTS[kind]
                child = ET.SubElement(case, tag, type=type_, message=c.reason)
                child.text = "\n".join(
                    f"attempt {a.attempt + 1}: {a.kind.value}: {a.detail}"
                    for a in c.attempts
                    if a.kind is kind
                )
                counts["failures" if tag == "failure" else "errors"] += 1
            lines = [f"attempt {a.attempt + 1}: {a.kind.value}: {a.detail}" for a in c.attempts]
            if c.trace:
                lines.append(f"inspect: {c.trace}")
            ET.SubElement(case, "system-out").text = "\n".join(lines)
            seconds += c.seconds
        node.set("tests", str(len(cases)))
        for key, n in counts.items():
            node.set(key, str(n))
        node.set("time", f"{sum(c.seconds for c in cases):.3f}")
        totals["tests"] += len(cases)
        totals["failures"] += counts["failures"]
        totals["errors"] += counts["errors"]
    if results.untested:
        node = ET.SubElement(
            root,
            "testsuite",
            name=UNTESTED_SUITE,
            tests=str(len(results.untested)),
            failures="0",
            errors=str(len(results.untested)),
            skipped="0",
        )
        for i, line in enumerate(results.untested, 1):
            case = ET.SubElement(
                node, "testcase", name=f"untested {i}", classname=UNTESTED_SUITE, time="0"
            )
            ET.SubElement(case, "error", type="untested", message=line).text = line
        totals["tests"] += len(results.untested)
        totals["errors"] += len(results.untested)
    for key, n in totals.items():
        root.set(key, str(n))
    root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    return _clean(ET.tostring(root, encoding="unicode", xml_declaration=True)) + "\n"
