"""The HTML report: one self-contained static page for a live, replay, rescore or A/B run.

``make_report(ReportRequest(...))`` reads the run records, traces every
attempt from its tape (the same lines as ``evaltape trace``) and writes one
HTML file with inline CSS, SVG and script: no CDN, no server.
"""

from ._data import CaseRow, ChangeRow, Decision, RateRow
from ._html import render_html
from ._make import ReportOutcome, ReportRequest, make_report
from ._model import Move, Report, Trace, build_report
from ._runs import Runs

__all__ = [
    "CaseRow",
    "ChangeRow",
    "Decision",
    "Move",
    "RateRow",
    "Report",
    "ReportOutcome",
    "ReportRequest",
    "Runs",
    "Trace",
    "build_report",
    "make_report",
    "render_html",
]
