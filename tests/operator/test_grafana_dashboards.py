"""The Grafana dashboards in deploy/grafana query only metrics the controller exports."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nodewright.controllers.registry  # noqa: F401  (registers every controller's metrics)
from nodewright import metrics

DASHBOARDS = sorted((Path(__file__).parents[2] / "deploy" / "grafana").glob("*.json"))
SUFFIXES = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count"),
            "summary": ("", "_sum", "_count")}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
                "unless", "bool", "offset", "le", "inf", "nan"}
_TOKEN = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def exported() -> set[str]:
    return {family.name + suffix for family in metrics.REGISTRY.collect()
            for suffix in SUFFIXES[family.type]}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers that are not functions,
    keywords, label matchers, grouping labels, range durations or Grafana variables."""
    expr = re.sub(r'"[^"]*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\$\w+", "", expr)
    names = set()
    for match in _TOKEN.finditer(expr):
        token = match.group()
        rest = expr[match.end():].lstrip()
        if token.lower() in PROMQL_WORDS or rest.startswith("("):
            continue
        names.add(token)
    return names


def queries(dashboard: dict[str, Any]) -> Iterator[str]:
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield target["expr"]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            yield re.sub(r"label_values\(([^,]+),[^)]*\)", r"\1", query["query"])


def test_the_reader_finds_the_metrics_of_an_expression() -> None:
    assert metric_names(
        'histogram_quantile(0.99, sum by (le, method) '
        '(rate(karpenter_cloudprovider_duration_seconds_bucket{method="Create"}[5m])))'
        ' / on(method) group_left up_total'
    ) == {"karpenter_cloudprovider_duration_seconds_bucket", "up_total"}
    assert "made_up_metric_total" not in exported()


def test_there_are_a_capacity_and_a_performance_dashboard() -> None:
    assert [path.name for path in DASHBOARDS] == [
        "nodewright-capacity.json", "nodewright-performance.json"]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda path: path.name)
def test_every_metric_a_dashboard_queries_is_exported(path: Path) -> None:
    dashboard = json.loads(path.read_text())
    used: set[str] = set()
    for expr in queries(dashboard):
        names = metric_names(expr)
        assert names, f"no metric in {expr!r}"
        used |= names
    assert sorted(used - exported()) == []
    assert len({panel["id"] for panel in dashboard["panels"]}) == len(dashboard["panels"])
