"""Charts over virtual time as inline SVG (matplotlib, no pyplot state, no display).

Each chart is a step function of the fleet samples: managed nodes stacked by instance
type, the fleet's hourly price, the pods waiting for a node. Disruptions are vertical
lines on the time axis, coloured by reason. SVG ids are salted with a fixed string and
the file carries no date, so the same run draws the same picture.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator, MultipleLocator

from nodewright.sim.result import RunResult
from nodewright.sim.timeline import DecisionRecord, Sample

PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
)
REASON_COLORS = {
    "Empty": "#7f7f7f",
    "Underutilized": "#1f77b4",
    "Drifted": "#9467bd",
    "Expired": "#8c564b",
    "Interrupted": "#d62728",
}
VARIANT_COLORS = ("#4e79a7", "#e15759")
_WIDTH, _HEIGHT = 9.0, 3.0
_LEFT = 0.085  # of the width: room for the widest y tick labels ("0.0850")
# Tick spacings on the time axis, in seconds: whole minutes and hours.
_TICK_STEPS = (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
_XML_PROLOGUE = re.compile(r"^.*?(?=<svg)", re.DOTALL)


def nodes_chart(result: RunResult) -> str:
    samples = _extended(result)
    types = _instance_types(samples)
    with _figure("Nodes by instance type") as (figure, axes):
        times = [sample.at for sample in samples]
        layers = [[sample.nodes.get(name, 0) for sample in samples] for name in types]
        if types:
            axes.stackplot(times, *layers, labels=types, step="post",
                           colors=[color_of(name, types) for name in types], alpha=0.9)
            axes.legend(loc="upper left", fontsize=8, frameon=False,
                        ncols=min(len(types), 5))
        axes.set_ylabel("nodes")
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        top = max((sample.node_count for sample in samples), default=0)
        axes.set_ylim(0, max(1, top) * 1.3)
        _mark_disruptions(axes, result.decisions)
        _time_axis(axes, samples)
        return _svg(figure)


def cost_chart(result: RunResult) -> str:
    return _line_chart(
        "Hourly cost of the fleet", "$ per hour", [(result.label, _extended(result))],
        lambda sample: sample.hourly_cost, result.decisions,
    )


def pending_chart(result: RunResult) -> str:
    return _line_chart(
        "Pods waiting for a node", "pending pods", [(result.label, _extended(result))],
        lambda sample: float(sample.pending_pods), result.decisions, integer=True,
    )


def comparison_charts(base: RunResult, variant: RunResult) -> list[str]:
    runs = [(base.label, _extended(base)), (variant.label, _extended(variant))]
    return [
        _line_chart("Nodes: as written and what-if", "nodes", runs,
                    lambda sample: float(sample.node_count), (), integer=True),
        _line_chart("Hourly cost: as written and what-if", "$ per hour", runs,
                    lambda sample: sample.hourly_cost, ()),
    ]


def color_of(name: str, names: Sequence[str]) -> str:
    return PALETTE[list(names).index(name) % len(PALETTE)]


def _line_chart(
    title: str,
    ylabel: str,
    runs: Sequence[tuple[str, Sequence[Sample]]],
    value: Callable[[Sample], float],
    decisions: Sequence[DecisionRecord],
    *,
    integer: bool = False,
) -> str:
    with _figure(title) as (figure, axes):
        top = 0.0
        for index, (label, samples) in enumerate(runs):
            values = [value(sample) for sample in samples]
            axes.step([sample.at for sample in samples], values, where="post",
                      label=label if len(runs) > 1 else None,
                      color=VARIANT_COLORS[index % len(VARIANT_COLORS)], linewidth=1.8)
            top = max([top, *values])
        if len(runs) > 1:
            axes.legend(loc="upper left", fontsize=8, frameon=False)
        axes.set_ylabel(ylabel)
        if integer:
            axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_ylim(0, (top or 1.0) * 1.25)
        _mark_disruptions(axes, decisions)
        _time_axis(axes, [sample for _, samples in runs for sample in samples])
        return _svg(figure)


def _mark_disruptions(axes: Axes, decisions: Sequence[DecisionRecord]) -> None:
    shown: set[str] = set()
    for decision in decisions:
        if decision.outcome != "disrupted":
            continue
        label = decision.reason if decision.reason not in shown else None
        shown.add(decision.reason)
        axes.axvline(decision.at, color=REASON_COLORS.get(decision.reason, "#333333"),
                     linestyle="--", linewidth=1.0, alpha=0.8,
                     label=f"disruption: {label}" if label else None)
    if shown:
        handles, labels = axes.get_legend_handles_labels()
        axes.legend(handles, labels, loc="upper left", fontsize=8, frameon=False,
                    ncols=min(len(labels), 4))


def _time_axis(axes: Axes, samples: Sequence[Sample]) -> None:
    end = max((sample.at for sample in samples), default=0.0)
    axes.set_xlim(0, max(end, 60.0))
    axes.xaxis.set_major_formatter(FuncFormatter(_clock_label))
    span = max(end, 60.0)
    interval = next((step for step in _TICK_STEPS if span / step <= 10), _TICK_STEPS[-1])
    axes.xaxis.set_major_locator(MultipleLocator(interval))
    axes.set_xlabel("virtual time (h:mm)")
    axes.grid(True, alpha=0.25)


def _clock_label(seconds: float, _position: object) -> str:
    minutes = round(seconds / 60.0)
    return f"{minutes // 60}:{minutes % 60:02d}"


def _extended(result: RunResult) -> list[Sample]:
    """The samples with one more at the end of the run, so each step reaches the end."""
    samples = list(result.samples) or [Sample(0.0, {}, 0.0, 0)]
    last = samples[-1]
    if result.summary.duration > last.at:
        samples.append(Sample(result.summary.duration, last.nodes, last.hourly_cost,
                              last.pending_pods))
    return samples


def _instance_types(samples: Sequence[Sample]) -> list[str]:
    return sorted({name for sample in samples for name, count in sample.nodes.items()
                   if count})


@contextmanager
def _figure(title: str) -> Iterator[tuple[Figure, Axes]]:
    with matplotlib.rc_context({"svg.hashsalt": "nodewright", "svg.fonttype": "none",
                                "font.size": 9}):
        figure = Figure(figsize=(_WIDTH, _HEIGHT))
        axes = figure.add_subplot()
        axes.set_title(title, loc="left", fontsize=10, fontweight="bold")
        axes.spines[["top", "right"]].set_visible(False)
        yield figure, axes


def _svg(figure: Figure) -> str:
    # The same margins for every chart (not tight_layout, which fits each chart's own tick
    # labels), so the plot areas line up and a moment is at the same x on each chart.
    figure.subplots_adjust(left=_LEFT, right=0.985, top=0.88, bottom=0.2)
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return _XML_PROLOGUE.sub("", buffer.getvalue(), count=1)
