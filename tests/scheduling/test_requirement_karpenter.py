"""Karpenter pkg/scheduling/requirement_test.go: what one label key's requirement allows.

Karpenter's fourteen operands (Exists, DoesNotExist, In A, In B, In A B, NotIn A, In 1,
In 9, In 1 9, NotIn 1 2, Gt 1, Gt 9, Lt 1, Lt 9), each also "with flexibility" (a
minValues), against our `Requirement`: intersections, the values each allows, its
operator, how it prints and how it is written into a NodeClaim. The tables were copied
from Karpenter's Entry rows; each row names its operands.

Where the two models spell a fact differently the row says ours: Karpenter turns Gt N
into an inclusive >= N+1, we keep the exclusive bound (`greater_than`), and both write
`Gte N+1` into a NodeClaim; Karpenter's Operator() calls a bounded requirement `Exists`,
ours says `Gt`/`Lt`.
"""

from __future__ import annotations

import pytest

from nodewright.controllers.provisioning.nodeclaims import custom_labels, requirement_entries
from nodewright.scheduling.pods import parse_pod_spec
from nodewright.scheduling.requirements import Requirement, Requirements

KEY = "key"
MAX_INT64 = 2**63 - 1


def operand(operator: str, *values: str, min_values: int | None = None) -> Requirement:
    return Requirement.build(KEY, operator, list(values), min_values)


def finite(*values: str, min_values: int | None = None) -> Requirement:
    """Exactly these values (none: the label must be absent, DoesNotExist)."""
    return Requirement(KEY, False, frozenset(values), min_values=min_values)


def anything_but(
    *values: str,
    greater_than: int | None = None,
    less_than: int | None = None,
    min_values: int | None = None,
) -> Requirement:
    """Any value but these, within the (exclusive) integer bounds."""
    return Requirement(KEY, True, frozenset(values), greater_than, less_than, min_values)


exists = operand("Exists")
does_not_exist = operand("DoesNotExist")
in_a = operand("In", "A")
in_b = operand("In", "B")
in_ab = operand("In", "A", "B")
not_in_a = operand("NotIn", "A")
in_1 = operand("In", "1")
in_9 = operand("In", "9")
in_19 = operand("In", "1", "9")
not_in_12 = operand("NotIn", "1", "2")
greater_than_1 = operand("Gt", "1")
greater_than_9 = operand("Gt", "9")
less_than_1 = operand("Lt", "1")
less_than_9 = operand("Lt", "9")

# "With flexibility": the same operands carrying a minValues.
exists_flexible = operand("Exists", min_values=1)
does_not_exist_flexible = operand("DoesNotExist", min_values=1)
in_a_flexible = operand("In", "A", min_values=1)
in_b_flexible = operand("In", "B", min_values=1)
in_ab_flexible = operand("In", "A", "B", min_values=2)
not_in_a_flexible = operand("NotIn", "A", min_values=1)
in_1_flexible = operand("In", "1", min_values=1)
in_9_flexible = operand("In", "9", min_values=1)
in_19_flexible = operand("In", "1", "9", min_values=2)
not_in_12_flexible = operand("NotIn", "1", "2", min_values=2)
greater_than_1_flexible = operand("Gt", "1", min_values=1)
greater_than_9_flexible = operand("Gt", "9", min_values=1)
less_than_1_flexible = operand("Lt", "1", min_values=1)
less_than_9_flexible = operand("Lt", "9", min_values=1)

NAMES: dict[Requirement, str] = {
    requirement: name
    for name, requirement in reversed(list(globals().items()))
    if isinstance(requirement, Requirement)
}


def name(value: object) -> str | None:
    """A test id: an operand's name, any other requirement described."""
    if isinstance(value, Requirement):
        return NAMES.get(value, value.describe())
    return None


# DescribeTable("should intersect two requirements without minValues"): existing, incoming,
# their intersection.
WITHOUT_MIN_VALUES = [
    (exists, exists, exists),
    (exists, does_not_exist, does_not_exist),
    (exists, in_a, in_a),
    (exists, in_b, in_b),
    (exists, in_ab, in_ab),
    (exists, not_in_a, not_in_a),
    (exists, in_1, in_1),
    (exists, in_9, in_9),
    (exists, in_19, in_19),
    (exists, not_in_12, not_in_12),
    (exists, greater_than_1, greater_than_1),
    (exists, greater_than_9, greater_than_9),
    (exists, less_than_1, less_than_1),
    (exists, less_than_9, less_than_9),
    (does_not_exist, exists, does_not_exist),
    (does_not_exist, does_not_exist, does_not_exist),
    (does_not_exist, in_a, does_not_exist),
    (does_not_exist, in_b, does_not_exist),
    (does_not_exist, in_ab, does_not_exist),
    (does_not_exist, not_in_a, does_not_exist),
    (does_not_exist, in_1, does_not_exist),
    (does_not_exist, in_9, does_not_exist),
    (does_not_exist, in_19, does_not_exist),
    (does_not_exist, not_in_12, does_not_exist),
    (does_not_exist, greater_than_1, does_not_exist),
    (does_not_exist, greater_than_9, does_not_exist),
    (does_not_exist, less_than_1, does_not_exist),
    (does_not_exist, less_than_9, does_not_exist),
    (in_a, exists, in_a),
    (in_a, does_not_exist, does_not_exist),
    (in_a, in_a, in_a),
    (in_a, in_b, does_not_exist),
    (in_a, in_ab, in_a),
    (in_a, not_in_a, does_not_exist),
    (in_a, in_1, does_not_exist),
    (in_a, in_9, does_not_exist),
    (in_a, in_19, does_not_exist),
    (in_a, not_in_12, in_a),
    (in_a, greater_than_1, does_not_exist),
    (in_a, greater_than_9, does_not_exist),
    (in_a, less_than_1, does_not_exist),
    (in_a, less_than_9, does_not_exist),
    (in_b, exists, in_b),
    (in_b, does_not_exist, does_not_exist),
    (in_b, in_a, does_not_exist),
    (in_b, in_b, in_b),
    (in_b, in_ab, in_b),
    (in_b, not_in_a, in_b),
    (in_b, in_1, does_not_exist),
    (in_b, in_9, does_not_exist),
    (in_b, in_19, does_not_exist),
    (in_b, not_in_12, in_b),
    (in_b, greater_than_1, does_not_exist),
    (in_b, greater_than_9, does_not_exist),
    (in_b, less_than_1, does_not_exist),
    (in_b, less_than_9, does_not_exist),
    (in_ab, exists, in_ab),
    (in_ab, does_not_exist, does_not_exist),
    (in_ab, in_a, in_a),
    (in_ab, in_b, in_b),
    (in_ab, in_ab, in_ab),
    (in_ab, not_in_a, in_b),
    (in_ab, in_1, does_not_exist),
    (in_ab, in_9, does_not_exist),
    (in_ab, in_19, does_not_exist),
    (in_ab, not_in_12, in_ab),
    (in_ab, greater_than_1, does_not_exist),
    (in_ab, greater_than_9, does_not_exist),
    (in_ab, less_than_1, does_not_exist),
    (in_ab, less_than_9, does_not_exist),
    (not_in_a, exists, not_in_a),
    (not_in_a, does_not_exist, does_not_exist),
    (not_in_a, in_a, does_not_exist),
    (not_in_a, in_b, in_b),
    (not_in_a, in_ab, in_b),
    (not_in_a, not_in_a, not_in_a),
    (not_in_a, in_1, in_1),
    (not_in_a, in_9, in_9),
    (not_in_a, in_19, in_19),
    (not_in_a, not_in_12, anything_but("A", "1", "2")),
    (not_in_a, greater_than_1, greater_than_1),
    (not_in_a, greater_than_9, greater_than_9),
    (not_in_a, less_than_1, less_than_1),
    (not_in_a, less_than_9, less_than_9),
    (in_1, exists, in_1),
    (in_1, does_not_exist, does_not_exist),
    (in_1, in_a, does_not_exist),
    (in_1, in_b, does_not_exist),
    (in_1, in_ab, does_not_exist),
    (in_1, not_in_a, in_1),
    (in_1, in_1, in_1),
    (in_1, in_9, does_not_exist),
    (in_1, in_19, in_1),
    (in_1, not_in_12, does_not_exist),
    (in_1, greater_than_1, does_not_exist),
    (in_1, greater_than_9, does_not_exist),
    (in_1, less_than_1, does_not_exist),
    (in_1, less_than_9, in_1),
    (in_9, exists, in_9),
    (in_9, does_not_exist, does_not_exist),
    (in_9, in_a, does_not_exist),
    (in_9, in_b, does_not_exist),
    (in_9, in_ab, does_not_exist),
    (in_9, not_in_a, in_9),
    (in_9, in_1, does_not_exist),
    (in_9, in_9, in_9),
    (in_9, in_19, in_9),
    (in_9, not_in_12, in_9),
    (in_9, greater_than_1, in_9),
    (in_9, greater_than_9, does_not_exist),
    (in_9, less_than_1, does_not_exist),
    (in_9, less_than_9, does_not_exist),
    (in_19, exists, in_19),
    (in_19, does_not_exist, does_not_exist),
    (in_19, in_a, does_not_exist),
    (in_19, in_b, does_not_exist),
    (in_19, in_ab, does_not_exist),
    (in_19, not_in_a, in_19),
    (in_19, in_1, in_1),
    (in_19, in_9, in_9),
    (in_19, in_19, in_19),
    (in_19, not_in_12, in_9),
    (in_19, greater_than_1, in_9),
    (in_19, greater_than_9, does_not_exist),
    (in_19, less_than_1, does_not_exist),
    (in_19, less_than_9, in_1),
    (not_in_12, exists, not_in_12),
    (not_in_12, does_not_exist, does_not_exist),
    (not_in_12, in_a, in_a),
    (not_in_12, in_b, in_b),
    (not_in_12, in_ab, in_ab),
    (not_in_12, not_in_a, anything_but("A", "1", "2")),
    (not_in_12, in_1, does_not_exist),
    (not_in_12, in_9, in_9),
    (not_in_12, in_19, in_9),
    (not_in_12, not_in_12, not_in_12),
    (not_in_12, greater_than_1, anything_but("2", greater_than=1)),
    (not_in_12, greater_than_9, anything_but(greater_than=9)),
    (not_in_12, less_than_1, anything_but(less_than=1)),
    (not_in_12, less_than_9, anything_but("1", "2", less_than=9)),
    (greater_than_1, exists, greater_than_1),
    (greater_than_1, does_not_exist, does_not_exist),
    (greater_than_1, in_a, does_not_exist),
    (greater_than_1, in_b, does_not_exist),
    (greater_than_1, in_ab, does_not_exist),
    (greater_than_1, not_in_a, greater_than_1),
    (greater_than_1, in_1, does_not_exist),
    (greater_than_1, in_9, in_9),
    (greater_than_1, in_19, in_9),
    (greater_than_1, not_in_12, anything_but("2", greater_than=1)),
    (greater_than_1, greater_than_1, greater_than_1),
    (greater_than_1, greater_than_9, greater_than_9),
    (greater_than_1, less_than_1, does_not_exist),
    (greater_than_1, less_than_9, anything_but(greater_than=1, less_than=9)),
    (greater_than_9, exists, greater_than_9),
    (greater_than_9, does_not_exist, does_not_exist),
    (greater_than_9, in_a, does_not_exist),
    (greater_than_9, in_b, does_not_exist),
    (greater_than_9, in_ab, does_not_exist),
    (greater_than_9, not_in_a, greater_than_9),
    (greater_than_9, in_1, does_not_exist),
    (greater_than_9, in_9, does_not_exist),
    (greater_than_9, in_19, does_not_exist),
    (greater_than_9, not_in_12, greater_than_9),
    (greater_than_9, greater_than_1, greater_than_9),
    (greater_than_9, greater_than_9, greater_than_9),
    (greater_than_9, less_than_1, does_not_exist),
    (greater_than_9, less_than_9, does_not_exist),
    (less_than_1, exists, less_than_1),
    (less_than_1, does_not_exist, does_not_exist),
    (less_than_1, in_a, does_not_exist),
    (less_than_1, in_b, does_not_exist),
    (less_than_1, in_ab, does_not_exist),
    (less_than_1, not_in_a, less_than_1),
    (less_than_1, in_1, does_not_exist),
    (less_than_1, in_9, does_not_exist),
    (less_than_1, in_19, does_not_exist),
    (less_than_1, not_in_12, less_than_1),
    (less_than_1, greater_than_1, does_not_exist),
    (less_than_1, greater_than_9, does_not_exist),
    (less_than_1, less_than_1, less_than_1),
    (less_than_1, less_than_9, less_than_1),
    (less_than_9, exists, less_than_9),
    (less_than_9, does_not_exist, does_not_exist),
    (less_than_9, in_a, does_not_exist),
    (less_than_9, in_b, does_not_exist),
    (less_than_9, in_ab, does_not_exist),
    (less_than_9, not_in_a, less_than_9),
    (less_than_9, in_1, in_1),
    (less_than_9, in_9, does_not_exist),
    (less_than_9, in_19, in_1),
    (less_than_9, not_in_12, anything_but("1", "2", less_than=9)),
    (less_than_9, greater_than_1, anything_but(greater_than=1, less_than=9)),
    (less_than_9, greater_than_9, does_not_exist),
    (less_than_9, less_than_1, less_than_1),
    (less_than_9, less_than_9, less_than_9),
]

# DescribeTable("should intersect requirement with minValues with a requirement without").
MIN_VALUES_WITH_NONE = [
    (exists_flexible, exists, exists_flexible),
    (exists_flexible, does_not_exist, does_not_exist_flexible),
    (exists_flexible, in_a, in_a_flexible),
    (exists_flexible, in_b, in_b_flexible),
    (exists_flexible, in_ab, finite("A", "B", min_values=1)),
    (exists_flexible, not_in_a, not_in_a_flexible),
    (exists_flexible, in_1, in_1_flexible),
    (exists_flexible, in_9, in_9_flexible),
    (exists_flexible, in_19, finite("1", "9", min_values=1)),
    (exists_flexible, not_in_12, anything_but("1", "2", min_values=1)),
    (exists_flexible, greater_than_1, greater_than_1_flexible),
    (exists_flexible, greater_than_9, greater_than_9_flexible),
    (exists_flexible, less_than_1, less_than_1_flexible),
    (exists_flexible, less_than_9, less_than_9_flexible),
    (exists_flexible, exists, exists_flexible),  # Karpenter lists this Entry twice
    (does_not_exist_flexible, exists, does_not_exist_flexible),
    (does_not_exist_flexible, does_not_exist, does_not_exist_flexible),
    (does_not_exist_flexible, in_a, does_not_exist_flexible),
    (does_not_exist_flexible, in_b, does_not_exist_flexible),
    (does_not_exist_flexible, in_ab, does_not_exist_flexible),
    (does_not_exist_flexible, not_in_a, does_not_exist_flexible),
    (does_not_exist_flexible, in_1, does_not_exist_flexible),
    (does_not_exist_flexible, in_9, does_not_exist_flexible),
    (does_not_exist_flexible, in_19, does_not_exist_flexible),
    (does_not_exist_flexible, not_in_12, does_not_exist_flexible),
    (does_not_exist_flexible, greater_than_1, does_not_exist_flexible),
    (does_not_exist_flexible, greater_than_9, does_not_exist_flexible),
    (does_not_exist_flexible, less_than_1, does_not_exist_flexible),
    (does_not_exist_flexible, less_than_9, does_not_exist_flexible),
    (in_a_flexible, exists, in_a_flexible),
    (in_a_flexible, does_not_exist, does_not_exist_flexible),
    (in_a_flexible, in_a, in_a_flexible),
    (in_a_flexible, in_b, does_not_exist_flexible),
    (in_a_flexible, in_ab, in_a_flexible),
    (in_a_flexible, not_in_a, does_not_exist_flexible),
    (in_a_flexible, in_1, does_not_exist_flexible),
    (in_a_flexible, in_9, does_not_exist_flexible),
    (in_a_flexible, in_19, does_not_exist_flexible),
    (in_a_flexible, not_in_12, in_a_flexible),
    (in_a_flexible, greater_than_1, does_not_exist_flexible),
    (in_a_flexible, greater_than_9, does_not_exist_flexible),
    (in_a_flexible, less_than_1, does_not_exist_flexible),
    (in_a_flexible, less_than_9, does_not_exist_flexible),
    (in_b_flexible, exists, in_b_flexible),
    (in_b_flexible, does_not_exist, does_not_exist_flexible),
    (in_b_flexible, in_a, does_not_exist_flexible),
    (in_b_flexible, in_b, in_b_flexible),
    (in_b_flexible, in_ab, in_b_flexible),
    (in_b_flexible, not_in_a, in_b_flexible),
    (in_b_flexible, in_1, does_not_exist_flexible),
    (in_b_flexible, in_9, does_not_exist_flexible),
    (in_b_flexible, in_19, does_not_exist_flexible),
    (in_b_flexible, not_in_12, in_b_flexible),
    (in_b_flexible, greater_than_1, does_not_exist_flexible),
    (in_b_flexible, greater_than_9, does_not_exist_flexible),
    (in_b_flexible, less_than_1, does_not_exist_flexible),
    (in_b_flexible, less_than_9, does_not_exist_flexible),
    (in_ab_flexible, exists, in_ab_flexible),
    (in_ab_flexible, does_not_exist, finite(min_values=2)),
    (in_ab_flexible, in_a, finite("A", min_values=2)),
    (in_ab_flexible, in_b, finite("B", min_values=2)),
    (in_ab_flexible, in_ab, in_ab_flexible),
    (in_ab_flexible, not_in_a, finite("B", min_values=2)),
    (in_ab_flexible, in_1, finite(min_values=2)),
    (in_ab_flexible, in_9, finite(min_values=2)),
    (in_ab_flexible, in_19, finite(min_values=2)),
    (in_ab_flexible, not_in_12, finite("A", "B", min_values=2)),
    (in_ab_flexible, greater_than_1, finite(min_values=2)),
    (in_ab_flexible, greater_than_9, finite(min_values=2)),
    (in_ab_flexible, less_than_1, finite(min_values=2)),
    (in_ab_flexible, less_than_9, finite(min_values=2)),
    (not_in_a_flexible, exists, not_in_a_flexible),
    (not_in_a_flexible, does_not_exist, does_not_exist_flexible),
    (not_in_a_flexible, in_a, does_not_exist_flexible),
    (not_in_a_flexible, in_b, in_b_flexible),
    (not_in_a_flexible, in_ab, in_b_flexible),
    (not_in_a_flexible, not_in_a, not_in_a_flexible),
    (not_in_a_flexible, in_1, in_1_flexible),
    (not_in_a_flexible, in_9, in_9_flexible),
    (not_in_a_flexible, in_19, finite("1", "9", min_values=1)),
    (not_in_a_flexible, not_in_12, anything_but("A", "1", "2", min_values=1)),
    (not_in_a_flexible, greater_than_1, greater_than_1_flexible),
    (not_in_a_flexible, greater_than_9, greater_than_9_flexible),
    (not_in_a_flexible, less_than_1, less_than_1_flexible),
    (not_in_a_flexible, less_than_9, less_than_9_flexible),
    (in_1_flexible, exists, in_1_flexible),
    (in_1_flexible, does_not_exist, does_not_exist_flexible),
    (in_1_flexible, in_a, does_not_exist_flexible),
    (in_1_flexible, in_b, does_not_exist_flexible),
    (in_1_flexible, in_ab, does_not_exist_flexible),
    (in_1_flexible, not_in_a, in_1_flexible),
    (in_1_flexible, in_1, in_1_flexible),
    (in_1_flexible, in_9, does_not_exist_flexible),
    (in_1_flexible, in_19, in_1_flexible),
    (in_1_flexible, not_in_12, does_not_exist_flexible),
    (in_1_flexible, greater_than_1, does_not_exist_flexible),
    (in_1_flexible, greater_than_9, does_not_exist_flexible),
    (in_1_flexible, less_than_1, does_not_exist_flexible),
    (in_1_flexible, less_than_9, in_1_flexible),
    (in_9_flexible, exists, in_9_flexible),
    (in_9_flexible, does_not_exist, does_not_exist_flexible),
    (in_9_flexible, in_a, does_not_exist_flexible),
    (in_9_flexible, in_b, does_not_exist_flexible),
    (in_9_flexible, in_ab, does_not_exist_flexible),
    (in_9_flexible, not_in_a, in_9_flexible),
    (in_9_flexible, in_1, does_not_exist_flexible),
    (in_9_flexible, in_9, in_9_flexible),
    (in_9_flexible, in_19, in_9_flexible),
    (in_9_flexible, not_in_12, in_9_flexible),
    (in_9_flexible, greater_than_1, in_9_flexible),
    (in_9_flexible, greater_than_9, does_not_exist_flexible),
    (in_9_flexible, less_than_1, does_not_exist_flexible),
    (in_9_flexible, less_than_9, does_not_exist_flexible),
    (in_19_flexible, exists, in_19_flexible),
    (in_19_flexible, does_not_exist, finite(min_values=2)),
    (in_19_flexible, in_a, finite(min_values=2)),
    (in_19_flexible, in_b, finite(min_values=2)),
    (in_19_flexible, in_ab, finite(min_values=2)),
    (in_19_flexible, not_in_a, finite("1", "9", min_values=2)),
    (in_19_flexible, in_1, finite("1", min_values=2)),
    (in_19_flexible, in_9, finite("9", min_values=2)),
    (in_19_flexible, in_19, in_19_flexible),
    (in_19_flexible, not_in_12, finite("9", min_values=2)),
    (in_19_flexible, greater_than_1, finite("9", min_values=2)),
    (in_19_flexible, greater_than_9, finite(min_values=2)),
    (in_19_flexible, less_than_1, finite(min_values=2)),
    (in_19_flexible, less_than_9, finite("1", min_values=2)),
    (not_in_12_flexible, exists, not_in_12_flexible),
    (not_in_12_flexible, does_not_exist, finite(min_values=2)),
    (not_in_12_flexible, in_a, finite("A", min_values=2)),
    (not_in_12_flexible, in_b, finite("B", min_values=2)),
    (not_in_12_flexible, in_ab, in_ab_flexible),
    (not_in_12_flexible, not_in_a, anything_but("A", "1", "2", min_values=2)),
    (not_in_12_flexible, in_1, finite(min_values=2)),
    (not_in_12_flexible, in_9, finite("9", min_values=2)),
    (not_in_12_flexible, in_19, finite("9", min_values=2)),
    (not_in_12_flexible, not_in_12, not_in_12_flexible),
    (not_in_12_flexible, greater_than_1, anything_but("2", greater_than=1, min_values=2)),
    (not_in_12_flexible, greater_than_9, anything_but(greater_than=9, min_values=2)),
    (not_in_12_flexible, less_than_1, anything_but(less_than=1, min_values=2)),
    (not_in_12_flexible, less_than_9, anything_but("1", "2", less_than=9, min_values=2)),
    (greater_than_1_flexible, exists, greater_than_1_flexible),
    (greater_than_1_flexible, does_not_exist, does_not_exist_flexible),
    (greater_than_1_flexible, in_a, does_not_exist_flexible),
    (greater_than_1_flexible, in_b, does_not_exist_flexible),
    (greater_than_1_flexible, in_ab, does_not_exist_flexible),
    (greater_than_1_flexible, not_in_a, greater_than_1_flexible),
    (greater_than_1_flexible, in_1, does_not_exist_flexible),
    (greater_than_1_flexible, in_9, in_9_flexible),
    (greater_than_1_flexible, in_19, in_9_flexible),
    (greater_than_1_flexible, not_in_12, anything_but("2", greater_than=1, min_values=1)),
    (greater_than_1_flexible, greater_than_1, greater_than_1_flexible),
    (greater_than_1_flexible, greater_than_9, greater_than_9_flexible),
    (greater_than_1_flexible, less_than_1, does_not_exist_flexible),
    (greater_than_1_flexible, less_than_9, anything_but(greater_than=1, less_than=9, min_values=1)),
    (greater_than_9_flexible, exists, greater_than_9_flexible),
    (greater_than_9_flexible, does_not_exist, does_not_exist_flexible),
    (greater_than_9_flexible, in_a, does_not_exist_flexible),
    (greater_than_9_flexible, in_b, does_not_exist_flexible),
    (greater_than_9_flexible, in_ab, does_not_exist_flexible),
    (greater_than_9_flexible, not_in_a, greater_than_9_flexible),
    (greater_than_9_flexible, in_1, does_not_exist_flexible),
    (greater_than_9_flexible, in_9, does_not_exist_flexible),
    (greater_than_9_flexible, in_19, does_not_exist_flexible),
    (greater_than_9_flexible, not_in_12, greater_than_9_flexible),
    (greater_than_9_flexible, greater_than_1, greater_than_9_flexible),
    (greater_than_9_flexible, greater_than_9, greater_than_9_flexible),
    (greater_than_9_flexible, less_than_1, does_not_exist_flexible),
    (greater_than_9_flexible, less_than_9, does_not_exist_flexible),
    (less_than_1_flexible, exists, less_than_1_flexible),
    (less_than_1_flexible, does_not_exist, does_not_exist_flexible),
    (less_than_1_flexible, in_a, does_not_exist_flexible),
    (less_than_1_flexible, in_b, does_not_exist_flexible),
    (less_than_1_flexible, in_ab, does_not_exist_flexible),
    (less_than_1_flexible, not_in_a, less_than_1_flexible),
    (less_than_1_flexible, in_1, does_not_exist_flexible),
    (less_than_1_flexible, in_9, does_not_exist_flexible),
    (less_than_1_flexible, in_19, does_not_exist_flexible),
    (less_than_1_flexible, not_in_12, less_than_1_flexible),
    (less_than_1_flexible, greater_than_1, does_not_exist_flexible),
    (less_than_1_flexible, greater_than_9, does_not_exist_flexible),
    (less_than_1_flexible, less_than_1, less_than_1_flexible),
    (less_than_1_flexible, less_than_9, less_than_1_flexible),
    (less_than_9_flexible, exists, less_than_9_flexible),
    (less_than_9_flexible, does_not_exist, does_not_exist_flexible),
    (less_than_9_flexible, in_a, does_not_exist_flexible),
    (less_than_9_flexible, in_b, does_not_exist_flexible),
    (less_than_9_flexible, in_ab, does_not_exist_flexible),
    (less_than_9_flexible, not_in_a, less_than_9_flexible),
    (less_than_9_flexible, in_1, in_1_flexible),
    (less_than_9_flexible, in_9, does_not_exist_flexible),
    (less_than_9_flexible, in_19, in_1_flexible),
    (less_than_9_flexible, not_in_12, anything_but("1", "2", less_than=9, min_values=1)),
    (less_than_9_flexible, greater_than_1, anything_but(greater_than=1, less_than=9, min_values=1)),
    (less_than_9_flexible, greater_than_9, does_not_exist_flexible),
    (less_than_9_flexible, less_than_1, less_than_1_flexible),
    (less_than_9_flexible, less_than_9, less_than_9_flexible),
]

# DescribeTable("should intersect two requirements with minValues").
BOTH_WITH_MIN_VALUES = [
    (exists_flexible, exists_flexible, exists_flexible),
    (exists_flexible, does_not_exist_flexible, does_not_exist_flexible),
    (exists_flexible, in_a_flexible, in_a_flexible),
    (exists_flexible, in_b_flexible, in_b_flexible),
    (exists_flexible, in_ab_flexible, finite("A", "B", min_values=2)),
    (exists_flexible, not_in_a_flexible, not_in_a_flexible),
    (exists_flexible, in_1_flexible, in_1_flexible),
    (exists_flexible, in_9_flexible, in_9_flexible),
    (exists_flexible, in_19_flexible, finite("1", "9", min_values=2)),
    (exists_flexible, not_in_12_flexible, anything_but("1", "2", min_values=2)),
    (exists_flexible, greater_than_1_flexible, greater_than_1_flexible),
    (exists_flexible, greater_than_9_flexible, greater_than_9_flexible),
    (exists_flexible, less_than_1_flexible, less_than_1_flexible),
    (exists_flexible, less_than_9_flexible, less_than_9_flexible),
    (exists_flexible, exists_flexible, exists_flexible),  # Karpenter lists this Entry twice
    (does_not_exist_flexible, exists_flexible, does_not_exist_flexible),
    (does_not_exist_flexible, does_not_exist_flexible, does_not_exist_flexible),
    (does_not_exist_flexible, in_a_flexible, does_not_exist_flexible),
    (does_not_exist_flexible, in_b_flexible, does_not_exist_flexible),
    (does_not_exist_flexible, in_ab_flexible, finite(min_values=2)),
    (does_not_exist_flexible, not_in_a_flexible, does_not_exist_flexible),
    (does_not_exist_flexible, in_1_flexible, does_not_exist_flexible),
    (does_not_exist_flexible, in_9_flexible, does_not_exist_flexible),
    (does_not_exist_flexible, in_19_flexible, finite(min_values=2)),
    (does_not_exist_flexible, not_in_12_flexible, finite(min_values=2)),
    (does_not_exist_flexible, greater_than_1_flexible, does_not_exist_flexible),
    (does_not_exist_flexible, greater_than_9_flexible, does_not_exist_flexible),
    (does_not_exist_flexible, less_than_1_flexible, does_not_exist_flexible),
    (does_not_exist_flexible, less_than_9_flexible, does_not_exist_flexible),
    (in_a_flexible, exists_flexible, in_a_flexible),
    (in_a_flexible, does_not_exist_flexible, does_not_exist_flexible),
    (in_a_flexible, in_a_flexible, in_a_flexible),
    (in_a_flexible, in_b_flexible, does_not_exist_flexible),
    (in_a_flexible, in_ab_flexible, finite("A", min_values=2)),
    (in_a_flexible, not_in_a_flexible, does_not_exist_flexible),
    (in_a_flexible, in_1_flexible, does_not_exist_flexible),
    (in_a_flexible, in_9_flexible, does_not_exist_flexible),
    (in_a_flexible, in_19_flexible, finite(min_values=2)),
    (in_a_flexible, not_in_12_flexible, finite("A", min_values=2)),
    (in_a_flexible, greater_than_1_flexible, does_not_exist_flexible),
    (in_a_flexible, greater_than_9_flexible, does_not_exist_flexible),
    (in_a_flexible, less_than_1_flexible, does_not_exist_flexible),
    (in_a_flexible, less_than_9_flexible, does_not_exist_flexible),
    (in_b_flexible, exists_flexible, in_b_flexible),
    (in_b_flexible, does_not_exist_flexible, does_not_exist_flexible),
    (in_b_flexible, in_a_flexible, does_not_exist_flexible),
    (in_b_flexible, in_b_flexible, in_b_flexible),
    (in_b_flexible, in_ab_flexible, finite("B", min_values=2)),
    (in_b_flexible, not_in_a_flexible, in_b_flexible),
    (in_b_flexible, in_1_flexible, does_not_exist_flexible),
    (in_b_flexible, in_9_flexible, does_not_exist_flexible),
    (in_b_flexible, in_19_flexible, finite(min_values=2)),
    (in_b_flexible, not_in_12_flexible, finite("B", min_values=2)),
    (in_b_flexible, greater_than_1_flexible, does_not_exist_flexible),
    (in_b_flexible, greater_than_9_flexible, does_not_exist_flexible),
    (in_b_flexible, less_than_1_flexible, does_not_exist_flexible),
    (in_b_flexible, less_than_9_flexible, does_not_exist_flexible),
    (in_ab_flexible, exists_flexible, in_ab_flexible),
    (in_ab_flexible, does_not_exist_flexible, finite(min_values=2)),
    (in_ab_flexible, in_a_flexible, finite("A", min_values=2)),
    (in_ab_flexible, in_b_flexible, finite("B", min_values=2)),
    (in_ab_flexible, in_ab_flexible, in_ab_flexible),
    (in_ab_flexible, not_in_a_flexible, finite("B", min_values=2)),
    (in_ab_flexible, in_1_flexible, finite(min_values=2)),
    (in_ab_flexible, in_9_flexible, finite(min_values=2)),
    (in_ab_flexible, in_19_flexible, finite(min_values=2)),
    (in_ab_flexible, not_in_12_flexible, finite("A", "B", min_values=2)),
    (in_ab_flexible, greater_than_1_flexible, finite(min_values=2)),
    (in_ab_flexible, greater_than_9_flexible, finite(min_values=2)),
    (in_ab_flexible, less_than_1_flexible, finite(min_values=2)),
    (in_ab_flexible, less_than_9_flexible, finite(min_values=2)),
    (not_in_a_flexible, exists_flexible, not_in_a_flexible),
    (not_in_a_flexible, does_not_exist_flexible, does_not_exist_flexible),
    (not_in_a_flexible, in_a_flexible, does_not_exist_flexible),
    (not_in_a_flexible, in_b_flexible, in_b_flexible),
    (not_in_a_flexible, in_ab_flexible, finite("B", min_values=2)),
    (not_in_a_flexible, not_in_a_flexible, not_in_a_flexible),
    (not_in_a_flexible, in_1_flexible, in_1_flexible),
    (not_in_a_flexible, in_9_flexible, in_9_flexible),
    (not_in_a_flexible, in_19_flexible, finite("1", "9", min_values=2)),
    (not_in_a_flexible, not_in_12_flexible, anything_but("A", "1", "2", min_values=2)),
    (not_in_a_flexible, greater_than_1_flexible, greater_than_1_flexible),
    (not_in_a_flexible, greater_than_9_flexible, greater_than_9_flexible),
    (not_in_a_flexible, less_than_1_flexible, less_than_1_flexible),
    (not_in_a_flexible, less_than_9_flexible, less_than_9_flexible),
    (in_1_flexible, exists_flexible, in_1_flexible),
    (in_1_flexible, does_not_exist_flexible, does_not_exist_flexible),
    (in_1_flexible, in_a_flexible, does_not_exist_flexible),
    (in_1_flexible, in_b_flexible, does_not_exist_flexible),
    (in_1_flexible, in_ab_flexible, finite(min_values=2)),
    (in_1_flexible, not_in_a_flexible, in_1_flexible),
    (in_1_flexible, in_1_flexible, in_1_flexible),
    (in_1_flexible, in_9_flexible, does_not_exist_flexible),
    (in_1_flexible, in_19_flexible, finite("1", min_values=2)),
    (in_1_flexible, not_in_12_flexible, finite(min_values=2)),
    (in_1_flexible, greater_than_1_flexible, does_not_exist_flexible),
    (in_1_flexible, greater_than_9_flexible, does_not_exist_flexible),
    (in_1_flexible, less_than_1_flexible, does_not_exist_flexible),
    (in_1_flexible, less_than_9_flexible, in_1_flexible),
    (in_9_flexible, exists_flexible, in_9_flexible),
    (in_9_flexible, does_not_exist_flexible, does_not_exist_flexible),
    (in_9_flexible, in_a_flexible, does_not_exist_flexible),
    (in_9_flexible, in_b_flexible, does_not_exist_flexible),
    (in_9_flexible, in_ab_flexible, finite(min_values=2)),
    (in_9_flexible, not_in_a_flexible, in_9_flexible),
    (in_9_flexible, in_1_flexible, does_not_exist_flexible),
    (in_9_flexible, in_9_flexible, in_9_flexible),
    (in_9_flexible, in_19_flexible, finite("9", min_values=2)),
    (in_9_flexible, not_in_12_flexible, finite("9", min_values=2)),
    (in_9_flexible, greater_than_1_flexible, in_9_flexible),
    (in_9_flexible, greater_than_9_flexible, does_not_exist_flexible),
    (in_9_flexible, less_than_1_flexible, does_not_exist_flexible),
    (in_9_flexible, less_than_9_flexible, does_not_exist_flexible),
    (in_19_flexible, exists_flexible, in_19_flexible),
    (in_19_flexible, does_not_exist_flexible, finite(min_values=2)),
    (in_19_flexible, in_a_flexible, finite(min_values=2)),
    (in_19_flexible, in_b_flexible, finite(min_values=2)),
    (in_19_flexible, in_ab_flexible, finite(min_values=2)),
    (in_19_flexible, not_in_a_flexible, finite("1", "9", min_values=2)),
    (in_19_flexible, in_1_flexible, finite("1", min_values=2)),
    (in_19_flexible, in_9_flexible, finite("9", min_values=2)),
    (in_19_flexible, in_19_flexible, in_19_flexible),
    (in_19_flexible, not_in_12_flexible, finite("9", min_values=2)),
    (in_19_flexible, greater_than_1_flexible, finite("9", min_values=2)),
    (in_19_flexible, greater_than_9_flexible, finite(min_values=2)),
    (in_19_flexible, less_than_1_flexible, finite(min_values=2)),
    (in_19_flexible, less_than_9_flexible, finite("1", min_values=2)),
    (not_in_12_flexible, exists_flexible, not_in_12_flexible),
    (not_in_12_flexible, does_not_exist_flexible, finite(min_values=2)),
    (not_in_12_flexible, in_a_flexible, finite("A", min_values=2)),
    (not_in_12_flexible, in_b_flexible, finite("B", min_values=2)),
    (not_in_12_flexible, in_ab_flexible, in_ab_flexible),
    (not_in_12_flexible, not_in_a_flexible, anything_but("A", "1", "2", min_values=2)),
    (not_in_12_flexible, in_1_flexible, finite(min_values=2)),
    (not_in_12_flexible, in_9_flexible, finite("9", min_values=2)),
    (not_in_12_flexible, in_19_flexible, finite("9", min_values=2)),
    (not_in_12_flexible, not_in_12_flexible, not_in_12_flexible),
    (not_in_12_flexible, greater_than_1_flexible, anything_but("2", greater_than=1, min_values=2)),
    (not_in_12_flexible, greater_than_9_flexible, anything_but(greater_than=9, min_values=2)),
    (not_in_12_flexible, less_than_1_flexible, anything_but(less_than=1, min_values=2)),
    (not_in_12_flexible, less_than_9_flexible, anything_but("1", "2", less_than=9, min_values=2)),
    (greater_than_1_flexible, exists_flexible, greater_than_1_flexible),
    (greater_than_1_flexible, does_not_exist_flexible, does_not_exist_flexible),
    (greater_than_1_flexible, in_a_flexible, does_not_exist_flexible),
    (greater_than_1_flexible, in_b_flexible, does_not_exist_flexible),
    (greater_than_1_flexible, in_ab_flexible, finite(min_values=2)),
    (greater_than_1_flexible, not_in_a_flexible, greater_than_1_flexible),
    (greater_than_1_flexible, in_1_flexible, does_not_exist_flexible),
    (greater_than_1_flexible, in_9_flexible, in_9_flexible),
    (greater_than_1_flexible, in_19_flexible, finite("9", min_values=2)),
    (greater_than_1_flexible, not_in_12_flexible, anything_but("2", greater_than=1, min_values=2)),
    (greater_than_1_flexible, greater_than_1_flexible, greater_than_1_flexible),
    (greater_than_1_flexible, greater_than_9_flexible, greater_than_9_flexible),
    (greater_than_1_flexible, less_than_1_flexible, does_not_exist_flexible),
    (greater_than_1_flexible, less_than_9_flexible,
     anything_but(greater_than=1, less_than=9, min_values=1)),
    (greater_than_9_flexible, exists_flexible, greater_than_9_flexible),
    (greater_than_9_flexible, does_not_exist_flexible, does_not_exist_flexible),
    (greater_than_9_flexible, in_a_flexible, does_not_exist_flexible),
    (greater_than_9_flexible, in_b_flexible, does_not_exist_flexible),
    (greater_than_9_flexible, in_ab_flexible, finite(min_values=2)),
    (greater_than_9_flexible, not_in_a_flexible, greater_than_9_flexible),
    (greater_than_9_flexible, in_1_flexible, does_not_exist_flexible),
    (greater_than_9_flexible, in_9_flexible, does_not_exist_flexible),
    (greater_than_9_flexible, in_19_flexible, finite(min_values=2)),
    (greater_than_9_flexible, not_in_12_flexible, anything_but(greater_than=9, min_values=2)),
    (greater_than_9_flexible, greater_than_1_flexible, greater_than_9_flexible),
    (greater_than_9_flexible, greater_than_9_flexible, greater_than_9_flexible),
    (greater_than_9_flexible, less_than_1_flexible, does_not_exist_flexible),
    (greater_than_9_flexible, less_than_9_flexible, does_not_exist_flexible),
    (less_than_1_flexible, exists_flexible, less_than_1_flexible),
    (less_than_1_flexible, does_not_exist_flexible, does_not_exist_flexible),
    (less_than_1_flexible, in_a_flexible, does_not_exist_flexible),
    (less_than_1_flexible, in_b_flexible, does_not_exist_flexible),
    (less_than_1_flexible, in_ab_flexible, finite(min_values=2)),
    (less_than_1_flexible, not_in_a_flexible, less_than_1_flexible),
    (less_than_1_flexible, in_1_flexible, does_not_exist_flexible),
    (less_than_1_flexible, in_9_flexible, does_not_exist_flexible),
    (less_than_1_flexible, in_19_flexible, finite(min_values=2)),
    (less_than_1_flexible, not_in_12_flexible, anything_but(less_than=1, min_values=2)),
    (less_than_1_flexible, greater_than_1_flexible, does_not_exist_flexible),
    (less_than_1_flexible, greater_than_9_flexible, does_not_exist_flexible),
    (less_than_1_flexible, less_than_1_flexible, less_than_1_flexible),
    (less_than_1_flexible, less_than_9_flexible, less_than_1_flexible),
    (less_than_9_flexible, exists_flexible, less_than_9_flexible),
    (less_than_9_flexible, does_not_exist_flexible, does_not_exist_flexible),
    (less_than_9_flexible, in_a_flexible, does_not_exist_flexible),
    (less_than_9_flexible, in_b_flexible, does_not_exist_flexible),
    (less_than_9_flexible, in_ab_flexible, finite(min_values=2)),
    (less_than_9_flexible, not_in_a_flexible, less_than_9_flexible),
    (less_than_9_flexible, in_1_flexible, in_1_flexible),
    (less_than_9_flexible, in_9_flexible, does_not_exist_flexible),
    (less_than_9_flexible, in_19_flexible, finite("1", min_values=2)),
    (less_than_9_flexible, not_in_12_flexible, anything_but("1", "2", less_than=9, min_values=2)),
    (less_than_9_flexible, greater_than_1_flexible,
     anything_but(greater_than=1, less_than=9, min_values=1)),
    (less_than_9_flexible, greater_than_9_flexible, does_not_exist_flexible),
    (less_than_9_flexible, less_than_1_flexible, less_than_1_flexible),
    (less_than_9_flexible, less_than_9_flexible, less_than_9_flexible),
]

# DescribeTable("should have the right values"): requirement, value, whether it allows it.
ALLOWED_VALUES = [
    (exists, "A", True),
    (does_not_exist, "A", False),
    (in_a, "A", True),
    (in_b, "A", False),
    (in_ab, "A", True),
    (not_in_a, "A", False),
    (in_1, "A", False),
    (in_9, "A", False),
    (in_19, "A", False),
    (not_in_12, "A", True),
    (greater_than_1, "A", False),
    (greater_than_9, "A", False),
    (less_than_1, "A", False),
    (less_than_9, "A", False),
    (exists, "B", True),
    (does_not_exist, "B", False),
    (in_a, "B", False),
    (in_b, "B", True),
    (in_ab, "B", True),
    (not_in_a, "B", True),
    (in_1, "B", False),
    (in_9, "B", False),
    (in_19, "B", False),
    (not_in_12, "B", True),
    (greater_than_1, "B", False),
    (greater_than_9, "B", False),
    (less_than_1, "B", False),
    (less_than_9, "B", False),
    (exists, "1", True),
    (does_not_exist, "1", False),
    (in_a, "1", False),
    (in_b, "1", False),
    (in_ab, "1", False),
    (not_in_a, "1", True),
    (in_1, "1", True),
    (in_9, "1", False),
    (in_19, "1", True),
    (not_in_12, "1", False),
    (greater_than_1, "1", False),
    (greater_than_9, "1", False),
    (less_than_1, "1", False),
    (less_than_9, "1", True),
    (exists, "2", True),
    (does_not_exist, "2", False),
    (in_a, "2", False),
    (in_b, "2", False),
    (in_ab, "2", False),
    (not_in_a, "2", True),
    (in_1, "2", False),
    (in_9, "2", False),
    (in_19, "2", False),
    (not_in_12, "2", False),
    (greater_than_1, "2", True),
    (greater_than_9, "2", False),
    (less_than_1, "2", False),
    (less_than_9, "2", True),
    (exists, "9", True),
    (does_not_exist, "9", False),
    (in_a, "9", False),
    (in_b, "9", False),
    (in_ab, "9", False),
    (not_in_a, "9", True),
    (in_1, "9", False),
    (in_9, "9", True),
    (in_19, "9", True),
    (not_in_12, "9", True),
    (greater_than_1, "9", True),
    (greater_than_9, "9", False),
    (less_than_1, "9", False),
    (less_than_9, "9", False),
]


@pytest.mark.parametrize(("existing", "incoming", "expected"), WITHOUT_MIN_VALUES, ids=name)
def test_intersecting_two_requirements_without_min_values(
    existing: Requirement, incoming: Requirement, expected: Requirement
) -> None:
    """Karpenter pkg/scheduling/requirement_test.go DescribeTable("should intersect two
    requirements without minValues") (196 Entries)."""
    assert existing.intersection(incoming) == expected


@pytest.mark.parametrize(("existing", "incoming", "expected"), MIN_VALUES_WITH_NONE, ids=name)
def test_intersecting_a_requirement_with_min_values_and_one_without(
    existing: Requirement, incoming: Requirement, expected: Requirement
) -> None:
    """Karpenter pkg/scheduling/requirement_test.go DescribeTable("should intersect
    requirement with minValues with a requirement without") (197 Entries): the
    intersection keeps the minValues."""
    assert existing.intersection(incoming) == expected


@pytest.mark.parametrize(("existing", "incoming", "expected"), BOTH_WITH_MIN_VALUES, ids=name)
def test_intersecting_two_requirements_with_min_values(
    existing: Requirement, incoming: Requirement, expected: Requirement
) -> None:
    """Karpenter pkg/scheduling/requirement_test.go DescribeTable("should intersect two
    requirements with minValues") (197 Entries): the larger minValues wins."""
    assert existing.intersection(incoming) == expected


@pytest.mark.parametrize(("requirement", "value", "allowed"), ALLOWED_VALUES, ids=name)
def test_a_requirement_allows_the_right_values(
    requirement: Requirement, value: str, allowed: bool
) -> None:
    """Karpenter pkg/scheduling/requirement_test.go DescribeTable("should have the right
    values") (70 Entries)."""
    assert requirement.has(value) is allowed


@pytest.mark.parametrize(
    ("requirement", "operator"),
    [
        (exists, "Exists"),
        (does_not_exist, "DoesNotExist"),
        (in_a, "In"),
        (in_b, "In"),
        (in_ab, "In"),
        (not_in_a, "NotIn"),
        (in_1, "In"),
        (in_9, "In"),
        (in_19, "In"),
        (not_in_12, "NotIn"),
        # Karpenter: Exists (with a bound); ours names the bound.
        (greater_than_1, "Gt"),
        (greater_than_9, "Gt"),
        (less_than_1, "Lt"),
        (less_than_9, "Lt"),
    ],
    ids=name,
)
def test_a_requirement_has_the_right_operator(requirement: Requirement, operator: str) -> None:
    """Karpenter pkg/scheduling/requirement_test.go DescribeTable("should return the right
    operator") (14 Entries). A bounded requirement is an Exists that also needs an integer
    in range: the label must be there (it does not allow absence) and no value is listed."""
    assert requirement.operator == operator
    if operator in ("Gt", "Lt"):
        assert requirement.complement and not requirement.values
        assert not requirement.allows_absent()


def test_any_value_a_requirement_gives_a_node_is_one_it_allows() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should return any"): our Any is the
    label a NodeClaim's node gets for a custom key (`custom_labels`); an In picks one of
    its values, NotIn/Exists/Gt/Lt an integer in range, DoesNotExist nothing."""

    def any_value(requirement: Requirement, seed: str) -> str | None:
        return custom_labels(Requirements([requirement]), seed).get(KEY)

    for seed in (f"claim-{i}" for i in range(20)):
        assert any_value(exists, seed)
        assert any_value(does_not_exist, seed) is None
        assert any_value(in_a, seed) == "A"
        assert any_value(in_b, seed) == "B"
        assert any_value(in_ab, seed) in ("A", "B")
        assert any_value(not_in_a, seed) not in (None, "", "A")
        assert any_value(in_1, seed) == "1"
        assert any_value(in_9, seed) == "9"
        assert any_value(in_19, seed) in ("1", "9")
        assert any_value(not_in_12, seed) not in (None, "", "1", "2")
        assert int(any_value(greater_than_1, seed) or "") > 1
        assert 9 < int(any_value(greater_than_9, seed) or "") < MAX_INT64
        assert any_value(less_than_1, seed) == "0"
        assert 0 <= int(any_value(less_than_9, seed) or "") < 9


@pytest.mark.parametrize(
    ("requirement", "text"),
    [
        (exists, "key Exists"),
        (does_not_exist, "key DoesNotExist"),
        (in_a, "key In [A]"),
        (in_b, "key In [B]"),
        (in_ab, "key In [A, B]"),
        (not_in_a, "key NotIn [A]"),
        (in_1, "key In [1]"),
        (in_9, "key In [9]"),
        (in_19, "key In [1, 9]"),
        (not_in_12, "key NotIn [1, 2]"),
        (greater_than_1, "key > 1"),
        (greater_than_9, "key > 9"),
        (less_than_1, "key < 1"),
        (less_than_9, "key < 9"),
        (greater_than_1.intersection(less_than_9), "key > 1 and < 9"),
        (greater_than_9.intersection(less_than_1), "key DoesNotExist"),
    ],
    ids=name,
)
def test_a_requirement_prints_the_right_string(requirement: Requirement, text: str) -> None:
    """Karpenter pkg/scheduling/requirement_test.go DescribeTable("should print the right
    string") (16 Entries). Karpenter prints Gt 1 as "key Exists >=2", we as "key > 1"."""
    assert requirement.describe() == text


def entry(operator: str, *values: str, min_values: int | None = None) -> dict[str, object]:
    written: dict[str, object] = {"key": KEY, "operator": operator}
    if values:
        written["values"] = list(values)
    if min_values is not None:
        written["minValues"] = min_values
    return written


@pytest.mark.parametrize(
    ("requirement", "written"),
    [
        (exists, entry("Exists")),
        (does_not_exist, entry("DoesNotExist")),
        (in_a, entry("In", "A")),
        (in_b, entry("In", "B")),
        (in_ab, entry("In", "A", "B")),
        (not_in_a, entry("NotIn", "A")),
        (in_1, entry("In", "1")),
        (in_9, entry("In", "9")),
        (in_19, entry("In", "1", "9")),
        (not_in_12, entry("NotIn", "1", "2")),
        (greater_than_1, entry("Gte", "2")),
        (greater_than_9, entry("Gte", "10")),
        (less_than_1, entry("Lte", "0")),
        (less_than_9, entry("Lte", "8")),
        (exists_flexible, entry("Exists", min_values=1)),
        (does_not_exist_flexible, entry("DoesNotExist", min_values=1)),
        (in_a_flexible, entry("In", "A", min_values=1)),
        (in_b_flexible, entry("In", "B", min_values=1)),
        (in_ab_flexible, entry("In", "A", "B", min_values=2)),
        (not_in_a_flexible, entry("NotIn", "A", min_values=1)),
        (in_1_flexible, entry("In", "1", min_values=1)),
        (in_9_flexible, entry("In", "9", min_values=1)),
        (in_19_flexible, entry("In", "1", "9", min_values=2)),
        (not_in_12_flexible, entry("NotIn", "1", "2", min_values=2)),
        (greater_than_1_flexible, entry("Gte", "2", min_values=1)),
        (greater_than_9_flexible, entry("Gte", "10", min_values=1)),
        (less_than_1_flexible, entry("Lte", "0", min_values=1)),
        (less_than_9_flexible, entry("Lte", "8", min_values=1)),
    ],
    ids=name,
)
def test_a_requirement_is_written_as_the_expected_node_selector_requirement(
    requirement: Requirement, written: dict[str, object]
) -> None:
    """Karpenter pkg/scheduling/requirement_test.go DescribeTable("should return the
    expected NodeSelectorRequirement") (28 Entries): how a NodeClaim's spec.requirements
    carries it, minValues included."""
    assert requirement_entries(requirement) == [written]


def test_deprecated_label_keys_are_read_as_their_current_names() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should normalize labels"): from
    labels, from node selector requirements and from a pod (nodeSelector, required and
    preferred node affinity)."""
    selector = {
        "failure-domain.beta.kubernetes.io/zone": "test",
        "failure-domain.beta.kubernetes.io/region": "test",
        "beta.kubernetes.io/arch": "test",
        "beta.kubernetes.io/os": "test",
        "beta.kubernetes.io/instance-type": "test",
    }
    expressions = [{"key": k, "operator": "In", "values": [v]} for k, v in selector.items()]
    pod = parse_pod_spec("default", "pod", {}, {
        "containers": [{"name": "app"}],
        "nodeSelector": selector,
        "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": expressions}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": expressions}}],
        }},
    }, "spec")
    current = {
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/instance-type",
    }
    for requirements in (
        Requirements.from_labels(selector),
        Requirements.from_node_selector(expressions),
        pod.node_requirements(),
    ):
        assert set(requirements) == current


# Context("Gte and Lte Operators"): Gte 2 is Gt 1, Lte 8 is Lt 9.
gte_2 = operand("Gte", "2")
lte_8 = operand("Lte", "8")


def allowed(requirement: Requirement, *values: str) -> list[bool]:
    return [requirement.has(value) for value in values]


def test_gte_is_an_inclusive_lower_bound() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should treat Gte as inclusive lower
    bound")."""
    assert allowed(gte_2, "2", "3", "100", "1", "0") == [True, True, True, False, False]


def test_lte_is_an_inclusive_upper_bound() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should treat Lte as inclusive upper
    bound")."""
    assert allowed(lte_8, "8", "7", "0", "9", "10") == [True, True, True, False, False]


def test_gte_and_lte_intersect_into_a_closed_range() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should intersect Gte and Lte
    correctly")."""
    both = gte_2.intersection(lte_8)
    assert allowed(both, "2", "5", "8", "1", "9") == [True, True, True, False, False]


def test_gte_and_lte_are_gt_and_lt_moved_by_one() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should be equivalent to adjusted
    Gt/Lt"): ours are even the same requirement."""
    assert allowed(gte_2, "2", "1") == allowed(operand("Gt", "1"), "2", "1")
    assert allowed(lte_8, "8", "9") == allowed(operand("Lt", "9"), "8", "9")
    assert gte_2 == operand("Gt", "1")
    assert lte_8 == operand("Lt", "9")


def test_equal_lower_bounds_collapse_into_one() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should collapse redundant bounds in
    intersection"): Gt 4 and Gte 5 are one bound, written once: Gte 5."""
    both = operand("Gt", "4").intersection(operand("Gte", "5"))
    assert allowed(both, "5", "4") == [True, False]
    assert requirement_entries(both) == [entry("Gte", "5")]


def test_gt_is_kept_when_it_is_the_tighter_lower_bound() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should keep Gt when Gt is more
    restrictive"): Gt 5 and Gte 5 leave > 5, written Gte 6."""
    both = operand("Gt", "5").intersection(operand("Gte", "5"))
    assert allowed(both, "6", "5") == [True, False]
    assert requirement_entries(both) == [entry("Gte", "6")]


def test_gte_is_kept_when_it_is_the_tighter_lower_bound() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should keep more restrictive Gte when
    Gte > Gt+1"): Gt 3 and Gte 6 leave >= 6."""
    both = operand("Gt", "3").intersection(operand("Gte", "6"))
    assert allowed(both, "6", "5") == [True, False]
    assert requirement_entries(both) == [entry("Gte", "6")]


def test_lt_is_kept_when_it_is_the_tighter_upper_bound() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should keep Lt when Lt is more
    restrictive"): Lt 5 and Lte 5 leave < 5, written Lte 4."""
    both = operand("Lt", "5").intersection(operand("Lte", "5"))
    assert allowed(both, "4", "5") == [True, False]
    assert requirement_entries(both) == [entry("Lte", "4")]


def test_lte_is_kept_when_it_is_the_tighter_upper_bound() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should keep more restrictive Lte when
    Lte < Lt-1"): Lt 9 and Lte 5 leave <= 5, written Lte 5."""
    both = operand("Lt", "9").intersection(operand("Lte", "5"))
    assert allowed(both, "5", "6") == [True, False]
    assert requirement_entries(both) == [entry("Lte", "5")]


def test_gte_0_allows_0_and_not_below() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should handle Gte 0 boundary")."""
    assert allowed(operand("Gte", "0"), "0", "-1") == [True, False]


def test_lte_0_allows_0_and_not_above() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should handle Lte 0 boundary")."""
    assert allowed(operand("Lte", "0"), "0", "1") == [True, False]


def test_the_label_picked_for_a_gte_is_at_least_its_bound() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should return valid value from Any()
    for Gte")."""
    for i in range(20):
        assert int(custom_labels(Requirements([operand("Gte", "5")]), f"claim-{i}")[KEY]) >= 5


def test_the_label_picked_for_an_lte_is_at_most_its_bound() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should return valid value from Any()
    for Lte")."""
    for i in range(20):
        value = int(custom_labels(Requirements([operand("Lte", "10")]), f"claim-{i}")[KEY])
        assert 0 <= value <= 10


def test_gt_the_largest_integer_allows_nothing() -> None:
    """Karpenter pkg/scheduling/requirement_test.go It("should return DoesNotExist for Gt
    MaxInt"): no label value is an integer above 2^63-1 (Kubernetes reads them as int64)."""
    nothing = operand("Gt", str(MAX_INT64))
    assert nothing.operator == "DoesNotExist"
    assert nothing.is_empty()
    assert not nothing.has(str(MAX_INT64 + 1))
