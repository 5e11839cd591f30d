"""Karpenter pkg/scheduling/requirements_test.go: requirements over several keys.

Compatibility is `Requirements.conflict` (None: compatible): a node side (a NodePool's
requirements) against a pod's. Karpenter's AllowUndefinedWellKnownLabels is how we always
read a well-known key (the provider decides it, so a NodePool may leave it out); its strict
reading is how we read a custom key. So the first table runs on the zone and the strict
one on a custom label. The tables were copied from Karpenter's Expect lines.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodewright.controllers.provisioning.nodeclaims import render_requirements
from nodewright.scheduling.requirements import Requirement, Requirements
from tests.scheduling.test_requirement_karpenter import (
    does_not_exist,
    exists,
    greater_than_1,
    greater_than_9,
    in_1,
    in_9,
    in_19,
    in_a,
    in_ab,
    in_b,
    less_than_1,
    less_than_9,
    name,
    not_in_12,
    not_in_a,
)

ZONE = "topology.kubernetes.io/zone"
CUSTOM = "example.com/team"

# No requirement on the key at all.
unconstrained = None


def on(key: str, operand: Requirement | None) -> Requirements:
    """The operand (Karpenter's, on "key") as requirements on `key`."""
    return Requirements() if operand is None else Requirements([replace(operand, key=key)])


def ids(value: object) -> str | None:
    return "unconstrained" if value is None else name(value)


def test_a_deprecated_key_is_stored_under_its_current_name() -> None:
    """Karpenter pkg/scheduling/requirements_test.go It("should normalize aliased labels")."""
    requirements = Requirements(
        [Requirement.build("failure-domain.beta.kubernetes.io/zone", "In", ["test"])]
    )
    assert "failure-domain.beta.kubernetes.io/zone" not in requirements
    assert requirements[ZONE].has("test")


# It("should be compatible with well-known v1 labels undefined"): node side, pod side, and
# whether they are compatible.
WELL_KNOWN_COMPATIBILITY = [
    (unconstrained, unconstrained, True),
    (unconstrained, exists, True),
    (unconstrained, does_not_exist, True),
    (unconstrained, in_a, True),
    (unconstrained, in_b, True),
    (unconstrained, in_ab, True),
    (unconstrained, not_in_a, True),
    (unconstrained, in_1, True),
    (unconstrained, in_9, True),
    (unconstrained, in_19, True),
    (unconstrained, not_in_12, True),
    (unconstrained, greater_than_1, True),
    (unconstrained, greater_than_9, True),
    (unconstrained, less_than_1, True),
    (unconstrained, less_than_9, True),
    (exists, unconstrained, True),
    (exists, exists, True),
    (exists, does_not_exist, False),
    (exists, in_a, True),
    (exists, in_b, True),
    (exists, in_ab, True),
    (exists, not_in_a, True),
    (exists, in_1, True),
    (exists, in_9, True),
    (exists, in_19, True),
    (exists, not_in_12, True),
    (exists, greater_than_1, True),
    (exists, greater_than_9, True),
    (exists, less_than_1, True),
    (exists, less_than_9, True),
    (does_not_exist, unconstrained, True),
    (does_not_exist, exists, False),
    (does_not_exist, does_not_exist, True),
    (does_not_exist, in_a, False),
    (does_not_exist, in_b, False),
    (does_not_exist, in_ab, False),
    (does_not_exist, not_in_a, True),
    (does_not_exist, in_1, False),
    (does_not_exist, in_9, False),
    (does_not_exist, in_19, False),
    (does_not_exist, not_in_12, True),
    (does_not_exist, greater_than_1, False),
    (does_not_exist, greater_than_9, False),
    (does_not_exist, less_than_1, False),
    (does_not_exist, less_than_9, False),
    (in_a, unconstrained, True),
    (in_a, exists, True),
    (in_a, does_not_exist, False),
    (in_a, in_a, True),
    (in_a, in_b, False),
    (in_a, in_ab, True),
    (in_a, not_in_a, False),
    (in_a, in_1, False),
    (in_a, in_9, False),
    (in_a, in_19, False),
    (in_a, not_in_12, True),
    (in_a, greater_than_1, False),
    (in_a, greater_than_9, False),
    (in_a, less_than_1, False),
    (in_a, less_than_9, False),
    (in_b, unconstrained, True),
    (in_b, exists, True),
    (in_b, does_not_exist, False),
    (in_b, in_a, False),
    (in_b, in_b, True),
    (in_b, in_ab, True),
    (in_b, not_in_a, True),
    (in_b, in_1, False),
    (in_b, in_9, False),
    (in_b, in_19, False),
    (in_b, not_in_12, True),
    (in_b, greater_than_1, False),
    (in_b, greater_than_9, False),
    (in_b, less_than_1, False),
    (in_b, less_than_9, False),
    (in_ab, unconstrained, True),
    (in_ab, exists, True),
    (in_ab, does_not_exist, False),
    (in_ab, in_a, True),
    (in_ab, in_b, True),
    (in_ab, in_ab, True),
    (in_ab, not_in_a, True),
    (in_ab, in_1, False),
    (in_ab, in_9, False),
    (in_ab, in_19, False),
    (in_ab, not_in_12, True),
    (in_ab, greater_than_1, False),
    (in_ab, greater_than_9, False),
    (in_ab, less_than_1, False),
    (in_ab, less_than_9, False),
    (not_in_a, unconstrained, True),
    (not_in_a, exists, True),
    (not_in_a, does_not_exist, True),
    (not_in_a, in_a, False),
    (not_in_a, in_b, True),
    (not_in_a, in_ab, True),
    (not_in_a, not_in_a, True),
    (not_in_a, in_1, True),
    (not_in_a, in_9, True),
    (not_in_a, in_19, True),
    (not_in_a, not_in_12, True),
    (not_in_a, greater_than_1, True),
    (not_in_a, greater_than_9, True),
    (not_in_a, less_than_1, True),
    (not_in_a, less_than_9, True),
    (in_1, unconstrained, True),
    (in_1, exists, True),
    (in_1, does_not_exist, False),
    (in_1, in_a, False),
    (in_1, in_b, False),
    (in_1, in_ab, False),
    (in_1, not_in_a, True),
    (in_1, in_1, True),
    (in_1, in_9, False),
    (in_1, in_19, True),
    (in_1, not_in_12, False),
    (in_1, greater_than_1, False),
    (in_1, greater_than_9, False),
    (in_1, less_than_1, False),
    (in_1, less_than_9, True),
    (in_9, unconstrained, True),
    (in_9, exists, True),
    (in_9, does_not_exist, False),
    (in_9, in_a, False),
    (in_9, in_b, False),
    (in_9, in_ab, False),
    (in_9, not_in_a, True),
    (in_9, in_1, False),
    (in_9, in_9, True),
    (in_9, in_19, True),
    (in_9, not_in_12, True),
    (in_9, greater_than_1, True),
    (in_9, greater_than_9, False),
    (in_9, less_than_1, False),
    (in_9, less_than_9, False),
    (in_19, unconstrained, True),
    (in_19, exists, True),
    (in_19, does_not_exist, False),
    (in_19, in_a, False),
    (in_19, in_b, False),
    (in_19, in_ab, False),
    (in_19, not_in_a, True),
    (in_19, in_1, True),
    (in_19, in_9, True),
    (in_19, in_19, True),
    (in_19, not_in_12, True),
    (in_19, greater_than_1, True),
    (in_19, greater_than_9, False),
    (in_19, less_than_1, False),
    (in_19, less_than_9, True),
    (not_in_12, unconstrained, True),
    (not_in_12, exists, True),
    (not_in_12, does_not_exist, True),
    (not_in_12, in_a, True),
    (not_in_12, in_b, True),
    (not_in_12, in_ab, True),
    (not_in_12, not_in_a, True),
    (not_in_12, in_1, False),
    (not_in_12, in_9, True),
    (not_in_12, in_19, True),
    (not_in_12, not_in_12, True),
    (not_in_12, greater_than_1, True),
    (not_in_12, greater_than_9, True),
    (not_in_12, less_than_1, True),
    (not_in_12, less_than_9, True),
    (greater_than_1, unconstrained, True),
    (greater_than_1, exists, True),
    (greater_than_1, does_not_exist, False),
    (greater_than_1, in_a, False),
    (greater_than_1, in_b, False),
    (greater_than_1, in_ab, False),
    (greater_than_1, not_in_a, True),
    (greater_than_1, in_1, False),
    (greater_than_1, in_9, True),
    (greater_than_1, in_19, True),
    (greater_than_1, not_in_12, True),
    (greater_than_1, greater_than_1, True),
    (greater_than_1, greater_than_9, True),
    (greater_than_1, less_than_1, False),
    (greater_than_1, less_than_9, True),
    (greater_than_9, unconstrained, True),
    (greater_than_9, exists, True),
    (greater_than_9, does_not_exist, False),
    (greater_than_9, in_a, False),
    (greater_than_9, in_b, False),
    (greater_than_9, in_ab, False),
    (greater_than_9, not_in_a, True),
    (greater_than_9, in_1, False),
    (greater_than_9, in_9, False),
    (greater_than_9, in_19, False),
    (greater_than_9, not_in_12, True),
    (greater_than_9, greater_than_1, True),
    (greater_than_9, greater_than_9, True),
    (greater_than_9, less_than_1, False),
    (greater_than_9, less_than_9, False),
    (less_than_1, unconstrained, True),
    (less_than_1, exists, True),
    (less_than_1, does_not_exist, False),
    (less_than_1, in_a, False),
    (less_than_1, in_b, False),
    (less_than_1, in_ab, False),
    (less_than_1, not_in_a, True),
    (less_than_1, in_1, False),
    (less_than_1, in_9, False),
    (less_than_1, in_19, False),
    (less_than_1, not_in_12, True),
    (less_than_1, greater_than_1, False),
    (less_than_1, greater_than_9, False),
    (less_than_1, less_than_1, True),
    (less_than_1, less_than_9, True),
    (less_than_9, unconstrained, True),
    (less_than_9, exists, True),
    (less_than_9, does_not_exist, False),
    (less_than_9, in_a, False),
    (less_than_9, in_b, False),
    (less_than_9, in_ab, False),
    (less_than_9, not_in_a, True),
    (less_than_9, in_1, True),
    (less_than_9, in_9, False),
    (less_than_9, in_19, True),
    (less_than_9, not_in_12, True),
    (less_than_9, greater_than_1, True),
    (less_than_9, greater_than_9, False),
    (less_than_9, less_than_1, True),
    (less_than_9, less_than_9, True),
]

# It("should be strictly compatible"): the same 225 expectations but for the 15 with nothing
# on the node side, where a custom label left undefined fits only a pod that allows its
# absence.
STRICT_COMPATIBILITY = [
    (unconstrained, exists, False),
    (unconstrained, in_a, False),
    (unconstrained, in_b, False),
    (unconstrained, in_ab, False),
    (unconstrained, in_1, False),
    (unconstrained, in_9, False),
    (unconstrained, in_19, False),
    (unconstrained, greater_than_1, False),
    (unconstrained, greater_than_9, False),
    (unconstrained, less_than_1, False),
    (unconstrained, less_than_9, False),
    (unconstrained, unconstrained, True),
    (unconstrained, does_not_exist, True),
    (unconstrained, not_in_a, True),
    (unconstrained, not_in_12, True),
    *((node, pod, compatible) for node, pod, compatible in WELL_KNOWN_COMPATIBILITY
      if node is not unconstrained),
]


@pytest.mark.parametrize(("node", "pod", "compatible"), WELL_KNOWN_COMPATIBILITY, ids=ids)
def test_a_well_known_label_may_be_left_undefined(
    node: Requirement | None, pod: Requirement | None, compatible: bool
) -> None:
    """Karpenter pkg/scheduling/requirements_test.go It("should be compatible with
    well-known v1 labels undefined") (225 expectations, on the zone)."""
    assert on(ZONE, node).compatible(on(ZONE, pod)) is compatible


@pytest.mark.parametrize(("node", "pod", "compatible"), STRICT_COMPATIBILITY, ids=ids)
def test_a_custom_label_must_be_defined_unless_the_pod_allows_its_absence(
    node: Requirement | None, pod: Requirement | None, compatible: bool
) -> None:
    """Karpenter pkg/scheduling/requirements_test.go It("should be strictly compatible")
    (225 expectations): unlike the zone, a label the node side leaves undefined fits only
    a pod that allows its absence (NotIn, DoesNotExist)."""
    assert on(CUSTOM, node).compatible(on(CUSTOM, pod)) is compatible


def undefined(key: str) -> str | None:
    """Why a pod requiring `key` to exist does not fit a NodePool that says nothing."""
    return Requirements().conflict(Requirements([Requirement.build(key, "Exists")]))


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        pytest.param("zone", ZONE, id="Zone Label"),
        pytest.param("region", "topology.kubernetes.io/region", id="Region Label"),
        pytest.param("nodepool", "karpenter.sh/nodepool", id="NodePool Name Label"),
        pytest.param("instance-type", "node.kubernetes.io/instance-type",
                     id="Instance Type Label"),
        pytest.param("arch", "kubernetes.io/arch", id="Architecture Label"),
        pytest.param("capacity-type", "karpenter.sh/capacity-type", id="Capacity Type Label"),
    ],
)
def test_a_truncated_well_known_label_is_pointed_out(key: str, meant: str) -> None:
    """Karpenter pkg/scheduling/requirements_test.go DescribeTable("should detect well
    known label truncations") (6 Entries)."""
    assert undefined(key) == (
        f'label {key} is not set by the NodePool (pod requires {key} Exists)'
        f' (typo of "{meant}"?)'
    )


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        pytest.param("topology.kubernetesio/zone", ZONE, id="Zone Label #1"),
        pytest.param("node.io/zone", ZONE, id="Zone Label #1 (node.io/zone)"),
        pytest.param("topology.kubernetes.io/regio", "topology.kubernetes.io/region",
                     id="Region Label #1"),
        pytest.param("node.kubernetes.io/region", "topology.kubernetes.io/region",
                     id="Region Label #2"),
        pytest.param("karpenter/nodepool", "karpenter.sh/nodepool", id="NodePool Label #2"),
    ],
)
def test_a_misspelled_well_known_label_is_pointed_out(key: str, meant: str) -> None:
    """Karpenter pkg/scheduling/requirements_test.go DescribeTable("should detect well
    known label typos") (5 Entries)."""
    assert undefined(key) == (
        f'label {key} is not set by the NodePool (pod requires {key} Exists)'
        f' (typo of "{meant}"?)'
    )


def test_an_unknown_label_gets_no_hint() -> None:
    """Karpenter pkg/scheduling/requirements_test.go It("should display an error message
    for unknown labels")."""
    assert undefined("deployment") == (
        "label deployment is not set by the NodePool (pod requires deployment Exists)"
    )


def test_a_label_like_one_the_nodepool_sets_is_pointed_out() -> None:
    """Not a Karpenter test: its hint also names the NodePool's own keys."""
    nodepool = Requirements([Requirement.build("example.com/team-name", "In", ["web"])])
    wanted = Requirements([Requirement.build("team", "In", ["web"])])
    assert nodepool.conflict(wanted) == (
        'label team is not set by the NodePool (pod requires team In [web])'
        ' (typo of "example.com/team-name"?)'
    )


def fourteen(min_values: dict[str, int] | None = None) -> Requirements:
    """Karpenter's operands, each on a key of its own name."""
    min_values = min_values or {}
    operands = {
        "exists": ("Exists",), "doesNotExist": ("DoesNotExist",), "inA": ("In", "A"),
        "inB": ("In", "B"), "inAB": ("In", "A", "B"), "notInA": ("NotIn", "A"),
        "in1": ("In", "1"), "in9": ("In", "9"), "in19": ("In", "1", "9"),
        "notIn12": ("NotIn", "1", "2"), "greaterThan1": ("Gt", "1"),
        "greaterThan9": ("Gt", "9"), "lessThan1": ("Lt", "1"), "lessThan9": ("Lt", "9"),
    }
    return Requirements(
        Requirement.build(key, operator, list(values), min_values.get(key))
        for key, (operator, *values) in operands.items()
    )


def written(key: str, operator: str, *values: str, min_values: int | None = None
            ) -> dict[str, object]:
    entry: dict[str, object] = {"key": key, "operator": operator}
    if values:
        entry["values"] = list(values)
    if min_values is not None:
        entry["minValues"] = min_values
    return entry


def test_requirements_are_written_as_node_selector_requirements() -> None:
    """Karpenter pkg/scheduling/requirements_test.go It("should convert combinations of
    labels to expected NodeSelectorRequirements"): one entry per key, bounds inclusive
    (Gt 1 is Gte 2, Lt 1 is Lte 0)."""
    assert render_requirements(fourteen()) == [
        written("doesNotExist", "DoesNotExist"),
        written("exists", "Exists"),
        written("greaterThan1", "Gte", "2"),
        written("greaterThan9", "Gte", "10"),
        written("in1", "In", "1"),
        written("in19", "In", "1", "9"),
        written("in9", "In", "9"),
        written("inA", "In", "A"),
        written("inAB", "In", "A", "B"),
        written("inB", "In", "B"),
        written("lessThan1", "Lte", "0"),
        written("lessThan9", "Lte", "8"),
        written("notIn12", "NotIn", "1", "2"),
        written("notInA", "NotIn", "A"),
    ]


def test_requirements_with_min_values_are_written_with_them() -> None:
    """Karpenter pkg/scheduling/requirements_test.go It("should convert combinations of
    labels with flexiblity to expected NodeSelectorRequirements")."""
    min_values = {"exists": 3, "doesNotExist": 2, "inA": 1, "inB": 1, "inAB": 2,
                  "notInA": 1, "in1": 1, "in9": 1, "in19": 2, "notIn12": 2,
                  "greaterThan1": 1, "greaterThan9": 1, "lessThan1": 1, "lessThan9": 1}
    assert render_requirements(fourteen(min_values)) == [
        written("doesNotExist", "DoesNotExist", min_values=2),
        written("exists", "Exists", min_values=3),
        written("greaterThan1", "Gte", "2", min_values=1),
        written("greaterThan9", "Gte", "10", min_values=1),
        written("in1", "In", "1", min_values=1),
        written("in19", "In", "1", "9", min_values=2),
        written("in9", "In", "9", min_values=1),
        written("inA", "In", "A", min_values=1),
        written("inAB", "In", "A", "B", min_values=2),
        written("inB", "In", "B", min_values=1),
        written("lessThan1", "Lte", "0", min_values=1),
        written("lessThan9", "Lte", "8", min_values=1),
        written("notIn12", "NotIn", "1", "2", min_values=2),
        written("notInA", "NotIn", "A", min_values=1),
    ]


def test_a_range_is_written_as_its_two_bounds() -> None:
    """Karpenter pkg/scheduling/requirements_test.go It("should return both Gte and Lte
    requirements when both bounds exist"): Gte 8 and Lte 8, two entries."""
    cpu = Requirements([Requirement.build("cpu", "Gte", ["8"]),
                        Requirement.build("cpu", "Lte", ["8"])])
    assert render_requirements(cpu) == [written("cpu", "Gte", "8"), written("cpu", "Lte", "8")]
    assert cpu["cpu"].has("8") and not cpu["cpu"].has("7") and not cpu["cpu"].has("9")


def test_requirements_print_sorted_by_key() -> None:
    """Karpenter pkg/scheduling/requirements_test.go It("should print Requirements in the
    same order")."""
    assert fourteen().describe() == (
        "doesNotExist DoesNotExist, exists Exists, greaterThan1 > 1, greaterThan9 > 9, "
        "in1 In [1], in19 In [1, 9], in9 In [9], inA In [A], inAB In [A, B], inB In [B], "
        "lessThan1 < 1, lessThan9 < 9, notIn12 NotIn [1, 2], notInA NotIn [A]"
    )
