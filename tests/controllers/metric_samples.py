"""Reading the process-wide metrics registry in tests: one metric's samples, the label sets
that carry some labels, and their sum."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nodewright import metrics


def samples(metric: str) -> Iterator[Any]:
    """The samples named `metric`, collected from its own family only: collecting the whole
    process-wide registry, grown by every earlier test of the process, takes long."""
    for family in metrics.REGISTRY.restricted_registry([metric]).collect():
        yield from (sample for sample in family.samples if sample.name == metric)


def series(metric: str, /, **match: str) -> list[dict[str, str]]:
    """The label sets of a metric's samples that carry these labels."""
    return [dict(s.labels) for s in samples(metric)
            if all(s.labels.get(k) == v for k, v in match.items())]


def total(metric: str, /, **match: str) -> float:
    """The sum of a metric's samples that carry these labels."""
    return sum(s.value for s in samples(metric)
               if all(s.labels.get(k) == v for k, v in match.items()))


def sample_value(metric: str, labels: dict[str, str] | None = None) -> float | None:
    """The value of the sample named `metric` with exactly these labels, or None (the
    registry's `get_sample_value`, collecting only the metric's own family)."""
    wanted = labels or {}
    for sample in samples(metric):
        if sample.labels == wanted:
            return float(sample.value)
    return None
