"""Kubernetes quantities: exact parsing into milli-units and formatting back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.api.quantity import (
    add,
    exceeded,
    fits,
    format_quantity,
    format_resources,
    maximum,
    parse_quantity,
    parse_resources,
    subtract,
)


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        ("1", 1_000),
        ("0", 0),
        ("1930m", 1_930),
        ("0.5", 500),
        (".25", 250),
        ("1.", 1_000),
        ("+2", 2_000),
        ("-3", -3_000),
        ("1k", 1_000_000),
        ("2M", 2 * 10**9),
        ("1G", 10**12),
        ("1T", 10**15),
        ("1P", 10**18),
        ("1E", 10**21),
        ("1Ki", 1_024_000),
        ("6903Mi", 6903 * 2**20 * 1000),
        ("17Gi", 17 * 2**30 * 1000),
        ("1Ti", 2**40 * 1000),
        ("1Pi", 2**50 * 1000),
        ("1Ei", 2**60 * 1000),
        ("0.5Gi", 2**29 * 1000),
        ("1e3", 1_000_000),
        ("1E3", 1_000_000),
        ("1e-3", 1),
        ("2.5e2", 250_000),
        ("100u", 1),  # finer than a milli rounds up, as Kubernetes does
        ("1n", 1),
    ],
)
def test_kubernetes_quantities_parse_exactly(text: str, millis: int) -> None:
    assert parse_quantity(text) == millis


def test_numbers_parse_as_whole_units() -> None:
    assert parse_quantity(3) == 3_000
    assert parse_quantity(0.1) == 100
    assert parse_quantity(1.5) == 1_500


@pytest.mark.parametrize("garbage", ["", "abc", "1.2.3", "1Gb", "Gi", "1 Gi x", "1e", "--1", "1KI"])
def test_garbage_is_rejected_with_the_accepted_syntax(garbage: str) -> None:
    with pytest.raises(ValueError, match="is not a quantity") as error:
        parse_quantity(garbage)
    assert "suffix" in str(error.value)


def test_non_numbers_are_rejected() -> None:
    with pytest.raises(ValueError, match="is not a quantity"):
        parse_quantity(True)
    with pytest.raises(ValueError, match="finite"):
        parse_quantity(float("inf"))


def test_a_resource_list_names_the_resource_that_is_wrong() -> None:
    assert parse_resources({"cpu": "500m", "memory": "1Gi"}) == {
        "cpu": 500,
        "memory": 2**30 * 1000,
    }
    with pytest.raises(ValueError, match=r"^memory: '1Q' is not a quantity"):
        parse_resources({"cpu": "1", "memory": "1Q"})


@pytest.mark.parametrize(
    ("millis", "resource", "text"),
    [
        (1_930, "cpu", "1930m"),
        (2_000, "cpu", "2"),
        (6903 * 2**20 * 1000, "memory", "6903Mi"),
        (17 * 2**30 * 1000, "ephemeral-storage", "17Gi"),
        (512 * 1024 * 1000, "memory", "512Ki"),
        (1_000_000, "memory", "1000"),
        (29_000, "pods", "29"),
        (1_500, "nvidia.com/gpu", "1500m"),
        (0, "memory", "0"),
        (2**30 * 1000, "hugepages-2Mi", "1Gi"),
    ],
)
def test_quantities_format_back_in_kubernetes_style(millis: int, resource: str, text: str) -> None:
    assert format_quantity(millis, resource) == text


@given(st.integers(min_value=0, max_value=2**62))
def test_formatting_then_parsing_gives_back_the_same_amount(millis: int) -> None:
    for resource in ("cpu", "memory", "pods"):
        assert parse_quantity(format_quantity(millis, resource)) == millis


def test_resource_list_arithmetic() -> None:
    node = parse_resources({"cpu": "2", "memory": "4Gi", "pods": "29"})
    pod = parse_resources({"cpu": "1500m", "memory": "1Gi"})
    assert add(pod, pod) == {"cpu": 3_000, "memory": 2 * 2**30 * 1000}
    assert subtract(node, pod) == {"cpu": 500, "memory": 3 * 2**30 * 1000, "pods": 29_000}
    assert fits(pod, node)
    assert not fits(add(pod, pod), node)
    assert exceeded(add(pod, pod), node) == ["cpu"]
    assert exceeded({"nvidia.com/gpu": 1_000}, node) == ["nvidia.com/gpu"]
    assert fits({"nvidia.com/gpu": 0}, node)
    assert maximum([{"cpu": 100}, {"cpu": 50, "memory": 7}]) == {"cpu": 100, "memory": 7}
    assert format_resources(pod) == {"cpu": "1500m", "memory": "1Gi"}
