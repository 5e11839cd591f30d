"""The status-condition metrics keep the series a condition's change removed, so a
condition flipping back (Disruptable, Consolidatable: thousands of times in a simulated
hour at scale) sets its old series again instead of building it anew through
prometheus_client's `labels()`; what is exported is what a fresh series would export."""

from __future__ import annotations

from collections.abc import Iterator
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


def test_a_kept_series_is_set_in_place_while_its_gauge_holds_it(
        gauge: Gauge, monkeypatch: pytest.MonkeyPatch) -> None:
    """`set_kept` writes the value into the series the gauge exports, without reading
    its labels; a series the gauge lost meanwhile is built again as a fresh `update`
    would."""
    store = metrics.Store()
    (series,) = store.update("a", [(gauge, {"name": "a", "status": "True"}, 1.0)])
    kept = store.keep(series)
    built = counting_labels(gauge, monkeypatch)

    store.set_kept([(kept, 2.5)])
    assert exported(gauge) == {("a", "True"): 2.5}
    assert built == []

    gauge.remove("a", "True")
    store.set_kept([(kept, 3.5)])
    assert exported(gauge) == {("a", "True"): 3.5}
    store.set_kept([(kept, 4.5)])
    assert exported(gauge) == {("a", "True"): 4.5}
    assert built == [("a", "True")]


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
