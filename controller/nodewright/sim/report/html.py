"""`--report`: one self-contained HTML file (styles and SVG charts inline, no scripts, no
network) that tells the story of a run: the scenario and its result, charts over virtual
time, the expectations, the fleet at the end, why each node was disrupted, the violations,
the what-if comparison and the whole timeline."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from nodewright.sim.compare import Comparison
from nodewright.sim.durations import format_offset
from nodewright.sim.report import charts
from nodewright.sim.result import RunResult
from nodewright.sim.timeline import DecisionRecord

_STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2rem auto;
       max-width: 1000px; color: #222; line-height: 1.4; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
.badge { display: inline-block; padding: 0.1rem 0.6rem; border-radius: 0.8rem;
         font-weight: bold; color: white; }
.pass { background: #2e7d32; } .fail { background: #c62828; }
.muted { color: #666; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #e5e5e5; padding: 0.25rem 0.7rem; text-align: left;
         vertical-align: top; }
th { background: #f5f5f5; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.chart svg { width: 100%; height: auto; }
pre { background: #f7f7f7; padding: 0.8rem; overflow-x: auto; font-size: 0.8rem; }
.ok { color: #2e7d32; } .bad { color: #c62828; font-weight: bold; }
"""


def render_report(result: RunResult, comparison: Comparison | None = None,
                  extra: Sequence[str] = ()) -> str:
    """`extra`: sections of HTML shown after the result (what a run from a cluster's
    snapshot would do to it)."""
    parts = [
        _header(result),
        _summary(result),
        *extra,
        _charts(result),
        _expectations(result),
        _fleet(result),
        _decisions(result.decisions),
        _violations(result),
    ]
    if comparison is not None:
        parts.append(_comparison(comparison))
    parts.append(_timeline(result))
    body = "\n".join(part for part in parts if part)
    title = escape(f"nodewright simulate: {result.scenario.name}")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{title}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n{body}\n"
        "</body>\n</html>\n"
    )


def _header(result: RunResult) -> str:
    info = result.scenario
    badge = ('<span class="badge pass">every expectation held</span>' if result.passed
             else '<span class="badge fail">expectations failed</span>')
    description = f"<p>{escape(info.description)}</p>" if info.description else ""
    return (
        f"<h1>{escape(info.name)}</h1>\n<p class=\"muted\">{escape(info.file)} &middot; "
        f"region {escape(info.region)} ({escape(', '.join(info.zones))}) &middot; "
        f"seed {info.seed} &middot; start {escape(info.start)}</p>\n{description}\n"
        f"<p>{badge}</p>"
    )


def _summary(result: RunResult) -> str:
    summary = result.summary
    by_type = ", ".join(f"{count} &times; {escape(name)}" for name, count in sorted(
        summary.nodes_by_type.items())) or "none"
    disruptions = ", ".join(f"{escape(reason)}: {count}" for reason, count in sorted(
        summary.disruptions.items()) if count) or "none"
    rows = [
        ("virtual time", format_offset(summary.duration)),
        ("nodes at the end", f"{summary.nodes} ({by_type})"),
        ("peak nodes", str(summary.peak_nodes)),
        ("NodeClaims launched", str(summary.launched)),
        ("hourly cost at the end", f"${summary.hourly_cost:.4f}"),
        ("node-hours", f"{summary.node_hours:.2f}"),
        ("dollars spent", f"${summary.dollars_spent:.4f}"),
        ("pending pod-seconds", f"{summary.pending_pod_seconds:.0f}"),
        ("disruptions", disruptions),
        ("pods evicted", str(summary.pods_evicted)),
        ("violations", str(summary.violations)),
    ]
    cells = "\n".join(f"<tr><th>{label}</th><td>{value}</td></tr>" for label, value in rows)
    return f"<h2>Result</h2>\n<table>\n{cells}\n</table>"


def _charts(result: RunResult) -> str:
    svgs = [charts.nodes_chart(result), charts.cost_chart(result), charts.pending_chart(result)]
    figures = "\n".join(f'<div class="chart">{svg}</div>' for svg in svgs)
    note = ("<p>A node leaves the nodes chart when its drain starts; the cost chart pays "
            "for its instance until the instance has terminated, as EC2 bills it.</p>")
    return f"<h2>Over virtual time</h2>\n{note}\n{figures}"


def _expectations(result: RunResult) -> str:
    if not result.expectations and not result.errors and not result.controller_errors:
        return ""
    rows = []
    for outcome in result.expectations:
        verdict = ('<span class="ok">ok</span>' if outcome.held else
                   f'<span class="bad">failed</span>: {escape("; ".join(outcome.differences))}')
        rows.append((str(outcome.step), str(outcome.line), format_offset(outcome.at), verdict))
    table = _table(("step", "line", "time", "result"), rows, raw_last=True)
    errors = "".join(f'<p class="bad">{escape(error)}</p>' for error in result.errors)
    errors += "".join(f'<p class="bad">controller error (retried): {escape(error.describe())}</p>'
                      for error in result.controller_errors)
    return f"<h2>Expectations</h2>\n{table}\n{errors}"


def _fleet(result: RunResult) -> str:
    if not result.fleet:
        return "<h2>Fleet at the end</h2>\n<p>No managed nodes.</p>"
    rows = [
        (node.name, node.nodepool, node.instance_type, node.capacity_type, node.zone,
         f"${node.price:.4f}", str(node.pods), format_offset(node.age))
        for node in result.fleet
    ]
    return "<h2>Fleet at the end</h2>\n" + _table(
        ("node", "NodePool", "instance type", "capacity", "zone", "$/hour", "pods", "age"),
        rows)


def _decisions(decisions: Sequence[DecisionRecord]) -> str:
    acted = [d for d in decisions if d.outcome in ("disrupted", "rejected")]
    other = [d for d in decisions if d.outcome not in ("disrupted", "rejected")]
    if not decisions:
        return "<h2>Disruption decisions</h2>\n<p>No node was disrupted.</p>"
    parts = ["<h2>Disruption decisions</h2>"]
    if acted:
        parts.append(_decision_table(acted))
    else:
        parts.append("<p>No node was disrupted.</p>")
    if other:
        parts.append(f"<details><summary>{len(other)} node(s) looked at and kept or blocked"
                     f"</summary>\n{_decision_table(other)}\n</details>")
    return "\n".join(parts)


def _decision_table(decisions: Iterable[DecisionRecord]) -> str:
    rows = []
    for decision in decisions:
        why = decision.message
        if decision.replacements:
            why += f" (replacements: {', '.join(decision.replacements)})"
        if decision.savings and "savings" not in why:  # the controller's message says it
            why += f"; saves ${decision.savings:.4f}/hour"
        rows.append((format_offset(decision.at), decision.node, decision.nodepool,
                     decision.method, decision.outcome, decision.reason or decision.cause, why))
    return _table(("time", "node", "NodePool", "method", "outcome", "reason", "explanation"),
                  rows)


def _violations(result: RunResult) -> str:
    if not result.violations:
        return "<h2>Violations</h2>\n<p>None: no PDB broken, no budget exceeded, no instance " \
               "outlived its NodeClaim, no node drained before its replacement was ready.</p>"
    rows = [(format_offset(v.at), v.kind, v.message) for v in result.violations]
    return "<h2>Violations</h2>\n" + _table(("time", "kind", "what happened"), rows)


def _comparison(comparison: Comparison) -> str:
    header = ("", comparison.base.label, comparison.variant.label, "change")
    table = _table(header, comparison.rows())
    notes = "".join(f"<p class=\"muted\">{escape(note)}</p>" for note in comparison.notes)
    svgs = charts.comparison_charts(comparison.base, comparison.variant)
    figures = "\n".join(f'<div class="chart">{svg}</div>' for svg in svgs)
    manifests = escape(", ".join(comparison.manifests))
    return (f"<h2>What-if: {manifests}</h2>\n{notes}\n{table}\n{figures}")


def _timeline(result: RunResult) -> str:
    lines = "\n".join(escape(event.format()) for event in result.timeline)
    return (f"<h2>Timeline</h2>\n<details><summary>{len(result.timeline)} events</summary>\n"
            f"<pre>{lines}</pre>\n</details>")


def _table(
    header: Sequence[str], rows: Iterable[Sequence[str]], *, raw_last: bool = False
) -> str:
    head = "".join(f"<th>{escape(cell)}</th>" for cell in header)
    body = []
    for row in rows:
        cells = []
        for index, cell in enumerate(row):
            text = cell if raw_last and index == len(row) - 1 else escape(cell)
            numeric = cell[:1].isdigit() or cell.startswith(("$", "+", "-", "="))
            cells.append(f"<td class=\"num\">{text}</td>" if numeric and index else
                         f"<td>{text}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table>\n<tr>{head}</tr>\n" + "\n".join(body) + "\n</table>"
