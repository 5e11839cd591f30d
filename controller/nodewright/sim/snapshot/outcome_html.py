"""The report's section on what the controllers would do to a snapshotted cluster: the
fleet before and after side by side, the disruptions, the evicted pods, the pending pods
and what was held back (and the same for the `--compare` NodePools)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from nodewright.sim.durations import format_offset
from nodewright.sim.snapshot.outcome import NodeLine, WhatItWouldDo


def section(outcome: WhatItWouldDo, title: str = "What it would do to this cluster") -> str:
    before, after = outcome.cost(outcome.before), outcome.cost(outcome.after)
    parts = [f"<h2>{escape(title)}</h2>",
             f"<p>Hourly cost now <b>${before:.4f}</b>, after <b>${after:.4f}</b>: saving "
             f"<b>${before - after:.4f}/hour</b> (${(before - after) * 730:.2f}/month)"
             f"{'' if outcome.settled else ' &mdash; the run did not settle'}.</p>",
             "<h3>Fleet before and after</h3>", _fleets(outcome.before, outcome.after)]
    parts.append("<h3>Disruptions</h3>")
    parts.append(_table(("time", "reason", "decision", "node", "replacements", "saving/h"), (
        (format_offset(d.at), d.reason or d.method, d.decision or "disrupt", d.node,
         ", ".join(d.replacements) or "-", f"${d.savings:.4f}" if d.savings else "-")
        for d in outcome.disruptions)) if outcome.disruptions else "<p>None.</p>")
    parts.append("<h3>Pods evicted and where they go</h3>")
    parts.append(_table(("time", "pod", "owner", "from", "to"), (
        (format_offset(m.at), m.pod, m.owner or "-", m.node, m.to or "(pending)")
        for m in outcome.moves)) if outcome.moves else "<p>None.</p>")
    parts.append(f"<h3>Pending at the end ({outcome.pending_total})</h3>")
    parts.append(_table(("pod", "why (nodewright explain)"), outcome.pending)
                 if outcome.pending else "<p>None.</p>")
    parts.append("<h3>Held back by budgets and PodDisruptionBudgets</h3>")
    refused = (f"<p>{outcome.refused_evictions} eviction(s) refused by "
               "PodDisruptionBudgets.</p>" if outcome.refused_evictions else "")
    parts.append((_table(("node", "cause", "message"), (
        (h.node, h.cause, h.message) for h in outcome.held_back))
        if outcome.held_back else "<p>Nothing.</p>") + refused)
    return "\n".join(parts)


def _fleets(before: Sequence[NodeLine], after: Sequence[NodeLine]) -> str:
    names = sorted({n.name for n in before} | {n.name for n in after})
    was = {n.name: n for n in before}
    now = {n.name: n for n in after}

    def cell(node: NodeLine | None) -> str:
        if node is None:
            return "-"
        return (f"{node.instance_type} {node.capacity_type} {node.zone} "
                f"${node.price:.4f}/h")

    rows = [(name, (was.get(name) or now[name]).nodepool or "(unmanaged)",
             cell(was.get(name)), cell(now.get(name))) for name in names]
    return _table(("node", "NodePool", "before", "after"), rows)


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in header)
    body = "\n".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>"
                     for row in rows)
    return f"<table>\n<tr>{head}</tr>\n{body}\n</table>"
