"""The report as one self-contained HTML page: inline CSS, one inline script, inline SVG.

Every string that comes from a run record or a tape goes through ``e``
(``html.escape`` with quotes), so a stranger's tape cannot add markup; the
page's content security policy (``_assets.csp``) also forbids any script but
ours and any network access.
"""

from __future__ import annotations

from html import escape

from ...cost._pricing import format_cost
from ._assets import CSS, JS, csp
from ._data import CaseRow
from ._model import Report, rate_text
from ._svg import move_plot, rate_plot


def e(text: object) -> str:
    """Escape text for HTML content and attribute values."""
    return escape(str(text), quote=True)


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def _header(r: Report) -> list[str]:
    d = r.decision
    out = [
        f"<h1>{e(r.title)}</h1>",
        *(f'<div class="meta">{e(m)}</div>' for m in r.meta),
        f'<section class="decision {"good" if d.good else "bad"}" id="decision">'
        f'<span class="word">{e(d.word)}</span><span class="line">{e(d.line)}</span></section>',
        '<ul class="counts" id="counts">',
        *(f'<li data-count="{e(name)}"><b>{n}</b>{e(name)}</li>' for name, n in r.counts),
        "</ul>",
    ]
    return out


def _rates(r: Report) -> list[str]:
    side = any(x.side for x in r.rates)
    head = "<th>side</th>" if side else ""
    out = [
        "<h2>Pass rates</h2>",
        '<p class="meta">Per suite and model: the mean of per-case pass rates with its 95% '
        "interval clustered by case (each case weighs the same; trials of one case are not "
        "independent evidence).</p>",
        f'<table id="rates"><thead><tr>{head}<th>suite</th><th>model</th><th>cases</th>'
        "<th>trials passed</th><th>pass rate</th><th>95% clustered interval</th></tr></thead>"
        "<tbody>",
    ]
    for x in r.rates:
        cell = f"<td>{e(x.side)}</td>" if side else ""
        out.append(
            f"<tr>{cell}<td>{e(x.suite)}</td><td>{e(x.model)}</td>"
            f'<td class="num">{x.cases}</td><td class="num">{x.passed}/{x.total}</td>'
            f'<td class="num">{rate_text(x.rate)}</td>'
            f'<td class="num">{_pct(x.low)}-{_pct(x.high)}</td></tr>'
        )
    out.append("</tbody></table>")
    base = r.labels[0]
    rows = [
        (
            " · ".join(p for p in (x.side, x.suite, x.model) if p),
            x.rate,
            x.low,
            x.high,
            bool(base) and x.side == base,
        )
        for x in r.rates
    ]
    if rows:
        out.append(rate_plot(rows))
    if base:
        out.append(
            f'<p class="legend"><span><i class="sw" style="background:var(--base)"></i>'
            f'{e(base)}</span><span><i class="sw" style="background:var(--cur)"></i>'
            f"{e(r.labels[1])}</span></p>"
        )
    return out


def _moves(r: Report) -> list[str]:
    if not r.labels[0]:
        return []
    out = ["<h2>Cases that moved</h2>"]
    if not r.moves:
        return [*out, "<p>No common case changed its pass rate.</p>"]
    out.append(
        '<table id="moves"><thead><tr><th>case</th><th>move</th><th>before</th><th>now</th>'
        "<th>adjusted p</th></tr></thead><tbody>"
    )
    for m in r.moves:
        out.append(
            f"<tr><td>{e(m.suite)}/{e(m.case_id)}</td><td>{e(m.kind)}</td>"
            f'<td class="num">{m.before[0]}/{m.before[1]}</td>'
            f'<td class="num">{m.now[0]}/{m.now[1]}</td>'
            f'<td class="num">{m.p_adjusted:.3g}</td></tr>'
        )
    out.append("</tbody></table>")
    out.append(
        move_plot(
            [
                (f"{m.suite}/{m.case_id}", m.before[0] / m.before[1], m.now[0] / m.now[1])
                for m in r.moves
                if m.before[1] and m.now[1]
            ]
        )
    )
    return out


def _case_row(c: CaseRow) -> str:
    key = f"{c.side} {c.suite}/{c.case_id} {c.model} {c.mark}".lower()
    boxes = "".join(
        f'<a class="v v-{e(v.value)}" href="#{t}" title="attempt {i + 1}: {e(v.value)}"></a>'
        for i, (v, t) in enumerate(zip(c.verdicts, c.traces, strict=True))
    )
    cost = format_cost(c.cost) if c.cost is not None else "—"
    side = f"<td>{e(c.side)}</td>" if c.side else ""
    return (
        f'<tr data-key="{e(key)}">{side}<td class="mark {c.mark}">{c.mark}</td>'
        f"<td>{e(c.suite)}/{e(c.case_id)}</td><td>{e(c.model)}</td><td>{boxes}</td>"
        f'<td class="num">{c.passed}/{c.total}</td>'
        f'<td class="num">{_pct(c.low)}-{_pct(c.high)}</td>'
        f"<td>{e(', '.join(dict.fromkeys(c.changes)))}</td>"
        f'<td class="num">{c.tokens:,}</td><td class="num">{e(cost)}</td>'
        f"<td>{e(c.reason)}</td></tr>"
    )


def _cases(r: Report) -> list[str]:
    side = "<th>side</th>" if any(c.side for c in r.cases) else ""
    return [
        "<h2>Cases</h2>",
        '<p class="meta">SPLIT: the attempts disagree (an instability signal, not a partial '
        "pass). SKIP: no attempt counts (skipped, or its evidence is unreliable). Each square "
        "is one attempt; click it for its trace.</p>",
        '<input id="filter" type="search" placeholder="filter cases (id, model, PASS, SPLIT…)">',
        f'<table id="cases"><thead><tr>{side}<th>mark</th><th>case</th><th>model</th>'
        "<th>attempts</th><th>passed</th><th>Wilson 95%</th><th>replay</th><th>tokens</th>"
        "<th>cost</th><th>first reason</th></tr></thead><tbody>",
        *(_case_row(c) for c in r.cases),
        "</tbody></table>",
    ]


def _cost(r: Report) -> list[str]:
    out = [
        "<h2>Cost and tokens</h2>",
        '<table id="cost"><thead><tr><th>side</th><th>tokens</th><th>cost</th></tr></thead><tbody>',
    ]
    for label, tokens, usd in r.tokens:
        shown = format_cost(usd) if usd is not None else "unknown"
        out.append(
            f'<tr><td>{e(label)}</td><td class="num">{tokens:,}</td>'
            f'<td class="num">{e(shown)}</td></tr>'
        )
    return [*out, "</tbody></table>"]


def _diff_line(line: str) -> str:
    cls = "del" if line.startswith("-") else "add" if line.startswith("+") else ""
    return f'<span class="{cls}">{e(line)}</span>' if cls else e(line)


def _changes(r: Report) -> list[str]:
    if not r.changes:
        return []
    out = ["<h2>Replay changes</h2>", '<div id="changes">']
    for c in r.changes:
        diff = "\n".join(_diff_line(d) for d in c.diff)
        out.append(
            f'<div class="change"><p><b>{e(c.change)}</b> {e(c.where)} — {e(c.detail)} '
            f'(<a href="#{c.trace}">trace</a>)</p>'
            + (f'<pre class="diff">{diff}</pre>' if diff else "")
            + "</div>"
        )
    return [*out, "</div>"]


def _traces(r: Report) -> list[str]:
    out = [
        "<h2>Traces</h2>",
        '<p class="meta">Each attempt turn by turn, as <code>evaltape trace</code> shows it, '
        "with its verdict scored now.</p>",
        '<div id="traces">',
    ]
    for t in r.traces:
        out.append(
            f'<details id="{t.anchor}" class="trace"><summary>{e(t.title)} · '
            f'<span class="{e(t.verdict)}">{e(t.verdict)}</span></summary>'
            f"<pre>{e(chr(10).join(t.lines))}</pre></details>"
        )
    return [*out, "</div>"]


def _coverage(r: Report) -> list[str]:
    if r.coverage is None or not r.coverage.suites:
        return []
    out = [
        '<h2 id="coverage">Coverage</h2>',
        '<p class="meta">What the replayed recordings can catch, per suite and tool: a '
        "side-effect bug in a tool can become a REGRESSION only where passing attempts of "
        "cases with an outcome check call it; a tool whose results no later request carries "
        "cannot show a changed result (see docs/coverage.md).</p>",
    ]
    for s in r.coverage.suites:
        out += [
            f'<p class="verdict" data-suite="{e(s.suite)}">{e(s.verdict)}</p>',
            f'<table class="coverage" data-suite="{e(s.suite)}"><thead><tr><th>tool</th>'
            "<th>calls</th><th>passing</th><th>unchecked</th><th>failing</th>"
            "<th>unseen</th><th>state</th></tr></thead><tbody>",
        ]
        for t in s.tools:
            out.append(
                f'<tr data-tool="{e(t.tool)}" title="{e(t.line)}"><td>{e(t.tool)}</td>'
                f'<td class="num">{t.calls}</td><td class="num">{t.passing}</td>'
                f'<td class="num">{t.unchecked}</td><td class="num">{t.failing}</td>'
                f'<td class="num">{t.unseen}</td><td>{e(t.state.value)}</td></tr>'
            )
        out.append("</tbody></table>")
    return out


def render_html(report: Report) -> str:
    """The page, as one string."""
    notes = (
        ["<h2>Notes</h2><ul>", *(f"<li>{e(n)}</li>" for n in report.notes), "</ul>"]
        if report.notes
        else []
    )
    body = [
        *_header(report),
        *_rates(report),
        *_moves(report),
        *_cases(report),
        *_cost(report),
        *_changes(report),
        *_coverage(report),
        *_traces(report),
        *notes,
    ]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{e(csp())}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{e(report.title)}</title><style>{CSS}</style></head><body>",
            *body,
            f"<script>{JS}</script>",
            "</body></html>",
            "",
        ]
    )
