"""Karpenter's two Summaries (karpenter_nodes_termination_duration_seconds,
karpenter_pods_startup_duration_seconds) carry quantiles 0, 0.5, 0.9, 0.99 and 1 over the
last ten minutes (pkg/metrics/constants.go SummaryObjectives; client_golang's MaxAge), which
Karpenter's performance dashboard plots. `QuantileSummary` exports them so."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest

from nodewright import metrics
from nodewright.metrics import QuantileSummary


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def summary(clock: Clock) -> tuple[QuantileSummary, CollectorRegistry]:
    registry = CollectorRegistry()
    return QuantileSummary("demo_seconds", "demo", ["nodepool"], registry=registry,
                           now=clock), registry


def test_quantiles_of_a_hundred_observations() -> None:
    clock = Clock()
    demo, registry = summary(clock)
    for value in range(1, 101):
        demo.labels(nodepool="default").observe(float(value))

    def at(quantile: str) -> float | None:
        return registry.get_sample_value("demo_seconds",
                                         {"nodepool": "default", "quantile": quantile})

    assert [at(q) for q in ("0.0", "0.5", "0.9", "0.99", "1.0")] == [1, 50, 90, 99, 100]
    assert registry.get_sample_value("demo_seconds_count", {"nodepool": "default"}) == 100
    assert registry.get_sample_value("demo_seconds_sum", {"nodepool": "default"}) == 5050


def test_observations_leave_the_quantiles_after_ten_minutes_but_stay_counted() -> None:
    clock = Clock()
    demo, registry = summary(clock)
    demo.labels("default").observe(500.0)
    clock.now = 300.0
    demo.labels("default").observe(20.0)
    clock.now = 601.0  # the first observation is older than the window
    assert registry.get_sample_value(
        "demo_seconds", {"nodepool": "default", "quantile": "1.0"}) == 20.0
    clock.now = 1000.0
    value = registry.get_sample_value("demo_seconds",
                                      {"nodepool": "default", "quantile": "0.5"})
    assert value is not None and math.isnan(value)
    assert registry.get_sample_value("demo_seconds_count", {"nodepool": "default"}) == 2


def test_the_text_exposition_reads_as_a_go_summary() -> None:
    clock = Clock()
    demo, registry = summary(clock)
    demo.labels("default").observe(3.0)
    text = generate_latest(registry).decode()
    assert "# TYPE demo_seconds summary" in text
    assert 'demo_seconds{nodepool="default",quantile="0.99"} 3.0' in text
    assert 'demo_seconds_count{nodepool="default"} 1.0' in text


def test_karpenters_summaries_export_quantiles() -> None:
    for summary_metric in (metrics.NODES_TERMINATION_DURATION, metrics.PODS_STARTUP_DURATION):
        assert isinstance(summary_metric, QuantileSummary)
    metrics.PODS_STARTUP_DURATION.observe(12.0)
    assert metrics.REGISTRY.get_sample_value(
        "karpenter_pods_startup_duration_seconds", {"quantile": "1.0"}) is not None
