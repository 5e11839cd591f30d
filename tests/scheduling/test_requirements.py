"""The requirements algebra: operators, intersection, compatibility and label matching."""

from __future__ import annotations

import pytest

from nodewright.scheduling.requirements import (
    Requirement,
    RequirementError,
    Requirements,
)
from tests.support.scheduling import single_values

ZONE = "topology.kubernetes.io/zone"


def req(key: str, operator: str, *values: str, min_values: int | None = None) -> Requirement:
    return Requirement.build(key, operator, list(values), min_values)


@pytest.mark.parametrize(
    ("operator", "values", "label", "expected"),
    [
        ("In", ["a", "b"], "a", True),
        ("In", ["a", "b"], "c", False),
        ("In", ["a"], None, False),
        ("NotIn", ["a"], "a", False),
        ("NotIn", ["a"], "b", True),
        ("NotIn", ["a"], None, True),
        ("Exists", [], "x", True),
        ("Exists", [], None, False),
        ("DoesNotExist", [], "x", False),
        ("DoesNotExist", [], None, True),
        ("Gt", ["4"], "5", True),
        ("Gt", ["4"], "4", False),
        ("Gt", ["4"], "many", False),
        ("Lt", ["4"], "3", True),
        ("Lt", ["4"], "4", False),
        ("Gte", ["4"], "4", True),
        ("Lte", ["4"], "4", True),
        ("Lte", ["4"], "5", False),
        ("Gt", ["4"], None, False),
    ],
)
def test_each_operator_matches_labels_like_kubernetes(
    operator: str, values: list[str], label: str | None, expected: bool
) -> None:
    assert req("k", operator, *values).matches_label(label) is expected


def test_intersection_of_in_and_not_in_keeps_the_difference() -> None:
    both = req(ZONE, "In", "a", "b", "c").intersection(req(ZONE, "NotIn", "b"))

    assert both.operator == "In"
    assert both.values == {"a", "c"}


def test_intersection_of_bounds_filters_finite_values() -> None:
    sizes = req("cpu", "In", "2", "4", "8", "16").intersection(req("cpu", "Gt", "2"))

    assert sizes.values == {"4", "8", "16"}
    assert sizes.intersection(req("cpu", "Lt", "16")).values == {"4", "8"}


def test_disjoint_bounds_leave_nothing() -> None:
    empty = req("cpu", "Gt", "8").intersection(req("cpu", "Lt", "9"))

    assert empty.is_empty()
    assert not req("cpu", "Gt", "8").intersects(req("cpu", "Lt", "9"))


def test_two_complements_merge_their_exclusions_and_keep_min_values() -> None:
    merged = req("k", "NotIn", "a", min_values=2).intersection(req("k", "NotIn", "b"))

    assert (merged.operator, merged.values, merged.min_values) == ("NotIn", {"a", "b"}, 2)


def test_requirements_add_intersects_per_key() -> None:
    requirements = Requirements([req(ZONE, "In", "a", "b"), req(ZONE, "In", "b", "c")])

    assert requirements[ZONE].values == {"b"}
    assert single_values(requirements) == {ZONE: "b"}


def test_a_pod_may_constrain_well_known_keys_the_nodepool_leaves_open() -> None:
    nodepool = Requirements([req("team", "In", "web")])

    assert nodepool.conflict(Requirements([req(ZONE, "In", "a")])) is None
    bigger = Requirements([req("karpenter.k8s.aws/instance-cpu", "Gt", "4")])
    assert nodepool.conflict(bigger) is None


def test_a_pod_may_not_require_a_custom_label_the_nodepool_never_sets() -> None:
    nodepool = Requirements([req("team", "In", "web")])

    assert nodepool.conflict(Requirements([req("gpu", "In", "yes")])) == (
        "label gpu is not set by the NodePool (pod requires gpu In [yes])"
    )
    assert nodepool.conflict(Requirements([req("gpu", "DoesNotExist")])) is None
    assert nodepool.conflict(Requirements([req("gpu", "NotIn", "yes")])) is None


def test_conflicting_values_are_explained() -> None:
    nodepool = Requirements([req("type", "In", "karpenter")])

    assert nodepool.conflict(Requirements([req("type", "In", "gpu")])) == (
        "type In [gpu] conflicts with type In [karpenter]"
    )


def test_requirements_from_node_selector_terms_and_their_errors() -> None:
    parsed = Requirements.from_node_selector(
        [{"key": "k", "operator": "In", "values": ["v"], "minValues": 1}]
    )
    assert parsed["k"] == Requirement("k", False, frozenset({"v"}), min_values=1)

    with pytest.raises(RequirementError, match="unknown operator 'Near'"):
        Requirements.from_node_selector([{"key": "k", "operator": "Near"}])
    with pytest.raises(RequirementError, match="exactly one integer value"):
        Requirements.from_node_selector([{"key": "k", "operator": "Gt", "values": ["x"]}])


def test_labels_satisfy_requirements_only_when_every_key_matches() -> None:
    requirements = Requirements([req(ZONE, "In", "a"), req("spot", "DoesNotExist")])

    assert requirements.satisfied_by_labels({ZONE: "a"})
    assert not requirements.satisfied_by_labels({ZONE: "a", "spot": "yes"})
    assert not requirements.satisfied_by_labels({ZONE: "b"})
