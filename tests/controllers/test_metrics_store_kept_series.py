"""The status-condition metrics keep the series a condition's change removed, so a
condition flipping back (Disruptable, Consolidatable: thousands of times in a simulated
hour at scale) sets its old series again instead of building it anew through
prometheus_client's `labels()`; what is exported is what a fresh series would export."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Gauge

from nodewright import metrics


@pytest.fixture
def gauge() -> Iterator[Gauge]:
    yield Gauge("example_condition_count", "an example", ["name", "status"],
                registry=CollectorRegistry())


def exported(gauge: Gauge) -> dict[tuple[str, str], float]:
    (family,) = gauge.collect()
    return {(s.labels["name"], s.labels["status"]): s.value for s in family.samples}


def counting_labels(gauge: Gauge, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    built: list[Any] = []
    build = gauge.labels

    def counting(*values: Any) -> Any:
        built.append(values)
        return build(*values)

    monkeypatch.setattr(gauge, "labels", counting)
    return built


def test_a_condition_flipping_back_sets_its_kept_series_again(
        gauge: Gauge, monkeypatch: pytest.MonkeyPatch) -> None:
    store = metrics.Store(keep_removed=True)
    built = counting_labels(gauge, monkeypatch)
    store.update("a", [(gauge, {"name": "a", "status": "True"}, 1.0)])
    store.update("a", [(gauge, {"name": "a", "status": "False"}, 1.0)])
    assert exported(gauge) == {("a", "False"): 1.0}

    store.update("a", [(gauge, {"name": "a", "status": "True"}, 3.0)])
    store.update("a", [(gauge, {"name": "a", "status": "False"}, 4.0)])
    store.update("a", [(gauge, {"name": "a", "status": "True"}, 5.0)])

    assert exported(gauge) == {("a", "True"): 5.0}
    assert built == [("a", "True"), ("a", "False")]


def test_an_object_gone_takes_its_kept_series_with_it(
        gauge: Gauge, monkeypatch: pytest.MonkeyPatch) -> None:
    store = metrics.Store(keep_removed=True)
    built = counting_labels(gauge, monkeypatch)
    store.update("a", [(gauge, {"name": "a", "status": "True"}, 1.0)])
    store.update("a", [(gauge, {"name": "a", "status": "False"}, 1.0)])
    store.delete("a")
    assert exported(gauge) == {}

    store.update("a", [(gauge, {"name": "a", "status": "True"}, 2.0)])

    assert exported(gauge) == {("a", "True"): 2.0}
    assert built == [("a", "True"), ("a", "False"), ("a", "True")]


def test_without_keeping_a_removed_series_is_built_again(
        gauge: Gauge, monkeypatch: pytest.MonkeyPatch) -> None:
    store = metrics.Store()
    built = counting_labels(gauge, monkeypatch)
    store.update("a", [(gauge, {"name": "a", "status": "True"}, 1.0)])
    store.update("a", [(gauge, {"name": "a", "status": "False"}, 1.0)])
    store.update("a", [(gauge, {"name": "a", "status": "True"}, 1.0)])
    assert len(built) == 3


def test_a_series_counting_up_reads_what_setting_it_at_each_look_would_have_left(
        gauge: Gauge) -> None:
    """`count_up`: the series reads the seconds from its start to the last look, as set
    with `total_seconds()` at that look (to the bit, microseconds included); moving the
    look on moves every series counting up to it, and a write makes it a plain value."""
    since = datetime(2026, 1, 5, 0, 0, 0, 123_457, tzinfo=UTC)
    looked = metrics.Moment(since)
    metrics.set_series(gauge, ("a", "True"), 0.0)
    metrics.set_series(gauge, ("b", "True"), 0.0)
    for name in ("a", "b"):
        metrics.count_up(gauge._metrics[(name, "True")], looked, since)
    reference = Gauge("reference_age", "set at each look", ["name"], registry=CollectorRegistry())
    for step in (0, 1, 7, 10_000_003, 3_600_000_001):
        looked.at = since + timedelta(microseconds=step)
        reference.labels("a").set((looked.at - since).total_seconds())
        assert exported(gauge) == {("a", "True"): reference.labels("a")._value.get(),
                                   ("b", "True"): reference.labels("a")._value.get()}

    metrics.set_series(gauge, ("a", "True"), 2.5)
    looked.at += timedelta(seconds=10)
    assert exported(gauge)[("a", "True")] == 2.5
    assert exported(gauge)[("b", "True")] == (looked.at - since).total_seconds()


def test_series_set_and_removed_without_labels_read_as_through_labels(gauge: Gauge) -> None:
    reference = Gauge("reference", "the same through labels()", ["name", "status"],
                      registry=CollectorRegistry())
    for target, set_, remove in (
            (gauge, metrics.set_series, metrics.remove_series),
            (reference, lambda g, ids, v: g.labels(*ids).set(v),
             lambda g, ids: g.remove(*ids) if ids in g._metrics else None)):
        set_(target, ("a", "True"), 1.0)
        set_(target, ("b", "False"), 2.0)
        set_(target, ("a", "True"), 3.0)
        remove(target, ("b", "False"))
        remove(target, ("c", "Unknown"))
    assert exported(gauge) == exported(reference) == {("a", "True"): 3.0}
