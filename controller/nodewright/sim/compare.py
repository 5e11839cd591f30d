"""The what-if comparison: the scenario as written beside the scenario with some manifests
replaced, on the numbers a platform team decides by."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nodewright.sim.result import RunResult, Summary


@dataclass(frozen=True)
class Metric:
    label: str
    key: str
    value: Callable[[Summary], float]
    text: Callable[[float], str]


def _disruption_total(summary: Summary) -> float:
    return float(sum(summary.disruptions.values()))


METRICS: tuple[Metric, ...] = (
    Metric("dollars spent", "dollarsSpent", lambda s: s.dollars_spent, lambda v: f"${v:.4f}"),
    Metric("node-hours", "nodeHours", lambda s: s.node_hours, lambda v: f"{v:.2f}"),
    Metric("peak nodes", "peakNodes", lambda s: float(s.peak_nodes), lambda v: f"{v:.0f}"),
    Metric("pending pod-seconds", "pendingPodSeconds", lambda s: s.pending_pod_seconds,
           lambda v: f"{v:.0f}"),
    Metric("disruptions", "disruptions", _disruption_total, lambda v: f"{v:.0f}"),
    Metric("nodes at the end", "nodes", lambda s: float(s.nodes), lambda v: f"{v:.0f}"),
    Metric("hourly cost at the end", "hourlyCost", lambda s: s.hourly_cost,
           lambda v: f"${v:.4f}"),
    Metric("violations", "violations", lambda s: float(s.violations), lambda v: f"{v:.0f}"),
)


@dataclass(frozen=True)
class Comparison:
    base: RunResult
    variant: RunResult
    manifests: tuple[str, ...]
    notes: tuple[str, ...]  # e.g. objects the what-if adds rather than replaces

    def rows(self) -> list[tuple[str, str, str, str]]:
        """(metric, as written, what-if, change) for each metric, then disruptions by
        reason."""
        rows = []
        for metric in METRICS:
            before = metric.value(self.base.summary)
            after = metric.value(self.variant.summary)
            rows.append((metric.label, metric.text(before), metric.text(after),
                         _change(before, after)))
        reasons = sorted(set(self.base.summary.disruptions) | set(
            self.variant.summary.disruptions))
        for reason in reasons:
            before = float(self.base.summary.disruptions.get(reason, 0))
            after = float(self.variant.summary.disruptions.get(reason, 0))
            rows.append((f"  {reason}", f"{before:.0f}", f"{after:.0f}", _change(before, after)))
        return rows

    def lines(self) -> list[str]:
        header = ("", self.base.label, self.variant.label, "change")
        table = [header, *self.rows()]
        widths = [max(len(row[i]) for row in table) for i in range(4)]
        out = [f"What-if: {', '.join(self.manifests)}"]
        out.extend(f"  note: {note}" for note in self.notes)
        for row in table:
            cells = [row[0].ljust(widths[0])] + [
                cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
            out.append("  " + "  ".join(cells).rstrip())
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "manifests": list(self.manifests),
            "notes": list(self.notes),
            "metrics": {
                metric.key: {
                    "asWritten": round(metric.value(self.base.summary), 6),
                    "whatIf": round(metric.value(self.variant.summary), 6),
                }
                for metric in METRICS
            },
            "whatIf": self.variant.to_dict(),
        }


def _change(before: float, after: float) -> str:
    if before == after:
        return "="
    if before == 0:
        return f"+{after:g}" if after > 0 else f"{after:g}"
    percent = (after - before) / abs(before) * 100
    return f"{percent:+.0f}%"

