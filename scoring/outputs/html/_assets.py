"""The report's inline stylesheet and script, and the page's content security policy.

The policy allows no network at all, inline styles, and exactly one script:
ours, by its hash.  Even if an escaping bug let markup from a tape through,
a script it carried would not run.
"""

from __future__ import annotations

import base64
import hashlib

CSS = """
:root{--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--ink:#1f2328;--mute:#656d76;--line:#d0d7de;
--base:#8250df;--cur:#0969da}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--ink);
margin:0 auto;max-width:1180px;padding:20px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;
border-bottom:1px solid var(--line);padding-bottom:4px}
.meta{color:var(--mute)}
.decision{display:flex;gap:16px;align-items:center;border:1px solid var(--line);
border-radius:8px;padding:12px 16px;margin:14px 0}
.decision .word{font-weight:700;font-size:22px;padding:2px 12px;border-radius:6px;color:#fff}
.good .word{background:var(--ok)}.bad .word{background:var(--bad)}
.counts{display:flex;flex-wrap:wrap;gap:8px;margin:0;padding:0;list-style:none}
.counts li{border:1px solid var(--line);border-radius:6px;padding:4px 10px}
.counts b{font-size:16px;margin-right:4px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:#f6f8fa;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.mark{font-weight:700;font-family:ui-monospace,monospace}
.PASS{color:var(--ok)}.FAIL{color:var(--bad)}.SPLIT{color:var(--warn)}.SKIP{color:var(--mute)}
.v{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:2px}
.v-passed{background:var(--ok)}.v-failed{background:var(--bad)}.v-error{background:var(--warn)}
.v-skipped{background:var(--line)}
svg.plot{max-width:100%;height:auto}svg .grid{stroke:var(--line)}
svg .tick{font-size:11px;fill:var(--mute);text-anchor:middle}
svg .label{font-size:12px;fill:var(--ink);text-anchor:end}
svg .ci{stroke-width:4;stroke-linecap:round;opacity:.45}
svg .cur{stroke:var(--cur);fill:var(--cur)}svg .base{stroke:var(--base);fill:var(--base)}
svg .move{stroke-width:2}svg .up{stroke:var(--ok)}svg .down{stroke:var(--bad)}
pre{background:#f6f8fa;border:1px solid var(--line);border-radius:6px;padding:10px;
overflow:auto;white-space:pre-wrap;word-break:break-word;font:12px/1.4 ui-monospace,monospace}
pre.diff .del{color:var(--bad)}pre.diff .add{color:var(--ok)}
details{border:1px solid var(--line);border-radius:6px;margin:6px 0;padding:4px 10px}
details[open]{background:#fff}summary{cursor:pointer;font-weight:600}
#filter{padding:4px 8px;width:320px;margin:4px 0 8px}
.legend span{margin-right:14px}.sw{display:inline-block;width:10px;height:10px;margin-right:4px}
"""

JS = """
(function () {
  function openHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    if (!id) { return; }
    var el = document.getElementById(id);
    if (el && el.tagName === "DETAILS") { el.open = true; el.scrollIntoView(); }
  }
  window.addEventListener("hashchange", openHash);
  openHash();
  var box = document.getElementById("filter");
  if (box) {
    box.addEventListener("input", function () {
      var q = box.value.toLowerCase();
      document.querySelectorAll("#cases tbody tr").forEach(function (row) {
        row.hidden = q !== "" && row.getAttribute("data-key").indexOf(q) < 0;
      });
    });
  }
})();
"""


def csp() -> str:
    """The content security policy: no network, inline styles, our script only."""
    digest = base64.b64encode(hashlib.sha256(JS.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )
