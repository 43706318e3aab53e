"""The self-contained HTML report: one file, inline CSS, no script, no external asset, every
value escaped (answers are model text)."""

from __future__ import annotations

from jinja2 import Environment

from harness.evals.summary import Report
from harness.evals.tables import HEADERS, row

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>harness eval: {{ report.model }}</title>
<style>
body{font:14px system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px}
th{background:#f3f3f3;text-align:left}.fail{color:#b00020}.pass{color:#0a7a2f}
pre{white-space:pre-wrap;background:#f8f8f8;padding:6px;max-width:70em}
</style></head><body>
<h1>harness eval: {{ report.model }}</h1>
<p>Started {{ report.started }}; each case {{ report.repeat }} time(s).</p>
<table><tr>{% for h in headers %}<th>{{ h }}</th>{% endfor %}</tr>
{% for cells in rows %}<tr>{% for c in cells %}<td>{{ c }}</td>{% endfor %}</tr>{% endfor %}
</table>
<h2>Attempts</h2>
{% for a in report.attempts %}
<details><summary class="{{ 'pass' if a.passed else 'fail' }}">{{ a.suite }}/{{ a.case }}
#{{ a.repeat }}: {{ 'pass' if a.passed else 'fail' }}</summary>
{% if a.error %}<p class="fail">{{ a.error }}</p>{% endif %}
<ul>{% for g in a.grades %}<li class="{{ 'pass' if g.passed else 'fail' }}">{{ g.grader }}
{% if g.detail %}: {{ g.detail }}{% endif %}</li>{% endfor %}</ul>
<p>Tool calls:</p><ul>{% for c in a.transcript.tool_calls %}<li><code>{{ c.name }}
{{ c.arguments | tojson }}</code></li>{% endfor %}</ul>
<p>Answer:</p><pre>{{ a.transcript.answer }}</pre></details>
{% endfor %}
</body></html>
"""


def render_html(report: Report) -> str:
    """The report as one HTML page."""
    template = Environment(autoescape=True).from_string(_TEMPLATE)
    rows = [row(s) for s in report.cases] + [row(report.total)]
    return template.render(report=report, headers=HEADERS, rows=rows)
