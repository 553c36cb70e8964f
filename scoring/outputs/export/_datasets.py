"""A run as a Langfuse dataset run: the suites' cases as dataset items, each exported
attempt's trace linked to its case's item.

Langfuse compares *dataset runs* of one dataset side by side (its experiment
view).  ``link_run`` makes an evaltape run one of them, with the public REST API
as the Langfuse SDK calls it:

- ``POST /api/public/v2/datasets`` creates the dataset, or updates it (by name);
- ``POST /api/public/dataset-items`` upserts one item per case, by an id derived
  from the dataset, suite and case id (input: the prompt; expected output: the
  case's expectations; metadata: suite, case, failure category);
- ``POST /api/public/dataset-run-items`` links one attempt's trace (and its root
  observation) to its item, in the dataset run named after the evaltape run
  (``RunLabel``: kind, model, commit and run id).

Langfuse gives every run item posted a new id, so posting one twice would show
the attempt twice.  Before linking, ``GET /api/public/dataset-run-items`` lists
what the run already holds and only the traces not yet linked are posted: a
second export, or one after a stop halfway, links nothing twice.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, cast

import attrs

from ...cases._cases import Case
from ._config import LANGFUSE_SCORES_PATH, Target
from ._send import ExportFailed, Sender

DATASETS_PATH = "/api/public/v2/datasets"
"""Creates or updates a dataset, by name."""
ITEMS_PATH = "/api/public/dataset-items"
"""Creates or updates a dataset item, by id."""
RUN_ITEMS_PATH = "/api/public/dataset-run-items"
"""Links a trace to a dataset item in a dataset run (POST), lists a run's links (GET)."""
PAGE = 100
"""Run items asked for per page when listing a run."""

EXPECTATION_FIELDS = (
    "expect_first_tool_in",
    "expect_tool",
    "expect_no_tool",
    "expect_in_args",
    "expect_max_turns",
    "forbid_tools",
    "expect_bash_matches",
    "expect_answer",
    "verify",
    "immutable",
    "rubric",
)
"""The case fields that say what a good attempt does: its item's expected output."""


@attrs.frozen(kw_only=True)
class RunLabel:
    """What names one evaltape run (one model of it) as a Langfuse dataset run."""

    run_id: str
    """The evaltape run id."""
    kind: str
    """``live``, ``replay`` or ``rescore``."""
    model: str
    """The model under test."""
    commit: str = ""
    """The harness commit the run recorded ("" when unknown)."""

    @property
    def name(self) -> str:
        """``live agent-1 @ 3fa9c1d2e4b5 (20261129T231500.042Z-3fa9c1)``: unique per run and
        model, readable in Langfuse's list of runs."""
        at = f" @ {self.commit[:12]}" if self.commit else ""
        return f"{self.kind} {self.model}{at} ({self.run_id})"

    def metadata(self) -> dict[str, str]:
        """The run's metadata in Langfuse."""
        return {
            "run_id": self.run_id,
            "kind": self.kind,
            "model": self.model,
            "commit": self.commit,
        }


@attrs.frozen(kw_only=True)
class RunLink:
    """One exported attempt to link: its case and its trace."""

    suite: str
    """The case's suite."""
    case_id: str
    """The case's id."""
    label: RunLabel
    """The dataset run it goes in."""
    trace_id: str
    """The attempt's trace id (32 hex digits)."""
    observation_id: str
    """The attempt's root span id (16 hex digits)."""


@attrs.frozen(kw_only=True)
class DatasetOutcome:
    """What ``link_run`` did."""

    dataset: str
    """The dataset's name."""
    items: int
    """Items created or updated (one per case)."""
    linked: int
    """Traces linked now."""
    already: int
    """Traces that were linked before and were left alone."""
    unmatched: tuple[str, ...] = ()
    """``suite/case`` of attempts whose case is no longer in the suites (not linked)."""


def item_id(dataset: str, suite: str, case_id: str) -> str:
    """The item id of a case: stable for the dataset, suite and case id (Langfuse item ids
    are unique across a project, so the dataset's name is part of it)."""
    seed = "\0".join(("evaltape-dataset-item", dataset, suite, case_id)).encode("utf-8")
    return str(uuid.UUID(bytes=hashlib.sha256(seed).digest()[:16]))


def item_body(dataset: str, case: Case) -> dict[str, object]:
    """The dataset item of ``case``."""
    expected = {
        _camel(name): _plain(getattr(case, name))
        for name in EXPECTATION_FIELDS
        if getattr(case, name) not in (None, (), False)
    }
    return {
        "id": item_id(dataset, case.suite, case.id),
        "datasetName": dataset,
        "input": case.prompt,
        "expectedOutput": expected,
        "metadata": {
            "suite": case.suite,
            "case": case.id,
            "failure_category": case.failure_category,
            "kind": case.kind.value,
        },
    }


def link_run(
    sender: Sender,
    scores: Target,
    dataset: str,
    cases: Iterable[Case],
    links: Iterable[RunLink],
) -> DatasetOutcome:
    """Create or update ``dataset`` with ``cases`` and link ``links`` to their items.

    ``scores`` is the Langfuse scores target (its host and keys serve every other
    endpoint).  Raises ``ExportFailed``.
    """
    chosen = list(cases)
    ids = {(c.suite, c.id) for c in chosen}
    answer = sender.post(
        _at(scores, DATASETS_PATH),
        _json({"name": dataset, "description": "evaltape cases", "metadata": {"by": "evaltape"}}),
        "application/json",
    )
    dataset_id = _field(answer.text, "id", scores.host)
    for case in chosen:
        sender.post(_at(scores, ITEMS_PATH), _json(item_body(dataset, case)), "application/json")
    linked = already = 0
    unmatched: list[str] = []
    known: dict[str, set[str]] = {}
    for link in links:
        if (link.suite, link.case_id) not in ids:
            unmatched.append(f"{link.suite}/{link.case_id}")
            continue
        run = link.label.name
        if run not in known:
            known[run] = _linked_traces(sender, scores, dataset_id, run)
        if link.trace_id in known[run]:
            already += 1
            continue
        body = {
            "runName": run,
            "runDescription": f"evaltape {link.label.kind} run {link.label.run_id}",
            "metadata": link.label.metadata(),
            "datasetItemId": item_id(dataset, link.suite, link.case_id),
            "traceId": link.trace_id,
            "observationId": link.observation_id,
        }
        sender.post(_at(scores, RUN_ITEMS_PATH), _json(body), "application/json")
        known[run].add(link.trace_id)
        linked += 1
    return DatasetOutcome(
        dataset=dataset,
        items=len(chosen),
        linked=linked,
        already=already,
        unmatched=tuple(dict.fromkeys(unmatched)),
    )


def _linked_traces(sender: Sender, scores: Target, dataset_id: str, run: str) -> set[str]:
    """Trace ids the dataset run ``run`` already links (none when the run does not exist)."""
    found: set[str] = set()
    page = 1
    while True:
        params: dict[str, str | int] = {
            "datasetId": dataset_id,
            "runName": run,
            "page": page,
            "limit": PAGE,
        }
        answer = sender.get(_at(scores, RUN_ITEMS_PATH), params)
        if answer.status_code == 404:
            return found
        try:
            listed = json.loads(answer.text)
            found.update(str(item["traceId"]) for item in listed["data"])
            pages = int(listed["meta"]["totalPages"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ExportFailed(scores.host, f"unexpected run items answer ({exc})") from exc
        if page >= pages:
            return found
        page += 1


def _at(scores: Target, path: str) -> Target:
    base = scores.url.removesuffix(LANGFUSE_SCORES_PATH)
    return attrs.evolve(scores, url=base + path)


def _json(body: Mapping[str, object]) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def _field(text: str, name: str, host: str) -> str:
    try:
        value = json.loads(text)[name]
    except (ValueError, KeyError, TypeError) as exc:
        raise ExportFailed(host, f"the dataset answer has no {name}") from exc
    return str(value)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _plain(value: object) -> object:
    """A case field as plain JSON (the frozen maps, tuples and values cases hold)."""
    if attrs.has(type(value)):
        names = (f.name for f in attrs.fields(cast(Any, type(value))))
        return {_camel(n): _plain(getattr(value, n)) for n in names}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(getattr(value, "value", value))
