"""The requirements algebra: what values each node label key may take.

A `Requirement` describes the set of values one label key may have. It is either a
finite set (`In`, and `DoesNotExist` as the empty set) or the complement of a finite
set (`NotIn`, and `Exists` as the complement of nothing), optionally narrowed by
integer bounds (`Gt`, `Lt`, `Gte`, `Lte`). `Requirements` maps keys to requirements
and intersects them key by key, which is how a NodePool's template, a pod's node
selector and affinity, and an instance type's labels combine into one NodeClaim.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from nodewright.scheduling import labels

LABEL_INSTANCE_TYPE = labels.INSTANCE_TYPE
LABEL_ZONE = labels.ZONE
LABEL_REGION = labels.REGION
LABEL_ZONE_ID = labels.ZONE_ID
LABEL_PARTITION = labels.PLACEMENT_GROUP_PARTITION
LABEL_ARCH = labels.ARCH
LABEL_OS = labels.OS
LABEL_HOSTNAME = labels.HOSTNAME
LABEL_CAPACITY_TYPE = labels.CAPACITY_TYPE
LABEL_NODEPOOL = labels.NODEPOOL
# A `reserved` offering's capacity reservation (an offering's label, like the zone).
LABEL_RESERVATION_ID = labels.RESERVATION_ID
LABEL_RESERVATION_TYPE = labels.RESERVATION_TYPE
LABEL_RESERVATION_INTERRUPTIBLE = labels.RESERVATION_INTERRUPTIBLE
AWS_LABEL_PREFIX = "karpenter.k8s.aws/instance-"

# Keys whose value the cloud provider decides (from the instance type and offering).
# A pod may constrain them even when the NodePool says nothing about them; any other
# key must be defined by the NodePool for a pod to require it.
WELL_KNOWN_LABELS: frozenset[str] = frozenset(
    {
        LABEL_INSTANCE_TYPE,
        LABEL_ZONE,
        LABEL_REGION,
        LABEL_ZONE_ID,
        LABEL_ARCH,
        LABEL_OS,
        LABEL_HOSTNAME,
        LABEL_CAPACITY_TYPE,
        LABEL_NODEPOOL,
        LABEL_RESERVATION_ID,
        LABEL_RESERVATION_TYPE,
        LABEL_RESERVATION_INTERRUPTIBLE,
        "node.kubernetes.io/windows-build",
    }
)

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")


class RequirementError(ValueError):
    """A node selector requirement that cannot be understood (bad operator or values)."""


def is_well_known(key: str) -> bool:
    return key in WELL_KNOWN_LABELS or key.startswith(AWS_LABEL_PREFIX)


INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


def _as_int(value: str) -> int | None:
    """`value` as Kubernetes (and Go's strconv.Atoi) reads an integer label: ASCII digits
    with an optional sign, within int64; None for anything else ("1_0", " 5", "9" * 20)."""
    digits = value[1:] if value[:1] in ("+", "-") else value
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    number = int(value)
    return number if INT64_MIN <= number <= INT64_MAX else None


@dataclass(frozen=True, slots=True)
class Requirement:
    """The values one label key may take.

    `complement=False`: exactly `values` (empty means the label must be absent).
    `complement=True`: anything but `values`. `greater_than` / `less_than` are
    exclusive integer bounds; when set, only integer values satisfy them.
    """

    key: str
    complement: bool
    values: frozenset[str]
    greater_than: int | None = None
    less_than: int | None = None
    min_values: int | None = None

    @staticmethod
    def build(
        key: str, operator: str, values: Sequence[str] = (), min_values: int | None = None
    ) -> Requirement:
        """A requirement from a Kubernetes node selector requirement (a deprecated key is
        read as its current name)."""
        key = labels.normalized(key)
        values = [str(v) for v in values]
        if operator == "In":
            return Requirement(key, False, frozenset(values), min_values=min_values)
        if operator == "NotIn":
            return Requirement(key, True, frozenset(values), min_values=min_values)
        if operator == "Exists":
            return Requirement(key, True, frozenset(), min_values=min_values)
        if operator == "DoesNotExist":
            return Requirement(key, False, frozenset(), min_values=min_values)
        if operator in ("Gt", "Lt", "Gte", "Lte"):
            if len(values) != 1 or _as_int(values[0]) is None:
                raise RequirementError(
                    f"{key}: operator {operator} needs exactly one integer value, got {values}"
                )
            bound = int(values[0])
            lower = {"Gt": bound, "Gte": bound - 1}.get(operator)
            upper = {"Lt": bound, "Lte": bound + 1}.get(operator)
            if (lower is not None and lower >= INT64_MAX) or (
                upper is not None and upper <= INT64_MIN
            ):
                # No int64 is above the largest (or below the smallest): nothing matches.
                return Requirement(key, False, frozenset(), min_values=min_values)
            return Requirement(key, True, frozenset(), lower, upper, min_values)
        raise RequirementError(
            f"{key}: unknown operator {operator!r} (expected one of {', '.join(OPERATORS)})"
        )

    @staticmethod
    def single(key: str, value: str) -> Requirement:
        return Requirement(labels.normalized(key), False, frozenset((value,)))

    @property
    def operator(self) -> str:
        if self.complement:
            if self.values:
                return "NotIn"
            if self.greater_than is not None:
                return "Gt"
            if self.less_than is not None:
                return "Lt"
            return "Exists"
        return "In" if self.values else "DoesNotExist"

    def _within_bounds(self, value: str) -> bool:
        if self.greater_than is None and self.less_than is None:
            return True
        number = _as_int(value)
        if number is None:
            return False
        if self.greater_than is not None and number <= self.greater_than:
            return False
        return not (self.less_than is not None and number >= self.less_than)

    def has(self, value: str) -> bool:
        """Whether a node labelled `key=value` satisfies this requirement."""
        if self.complement:
            return value not in self.values and self._within_bounds(value)
        return value in self.values and self._within_bounds(value)

    def allows_absent(self) -> bool:
        """Whether a node without this label satisfies it (NotIn and DoesNotExist)."""
        if self.greater_than is not None or self.less_than is not None:
            return False
        # NotIn (a complement with values) and DoesNotExist (the empty finite set).
        return self.complement == bool(self.values)

    def is_empty(self) -> bool:
        """No value satisfies it (it may still be satisfied by the label being absent)."""
        if not self.complement:
            return not self.values
        if self.greater_than is not None and self.less_than is not None:
            return self.less_than - self.greater_than <= 1
        return False

    def matches_label(self, value: str | None) -> bool:
        """Kubernetes semantics against one node: `value` is None when the label is absent."""
        if value is None:
            return self.allows_absent()
        return self.has(value)

    def intersection(self, other: Requirement) -> Requirement:
        greater_than = _max_optional(self.greater_than, other.greater_than)
        less_than = _min_optional(self.less_than, other.less_than)
        min_values = _max_optional(self.min_values, other.min_values)
        bounded = Requirement(self.key, True, frozenset(), greater_than, less_than)
        if self.complement and other.complement:
            if bounded.is_empty():
                return Requirement(self.key, False, frozenset(), min_values=min_values)
            # An excluded value the bounds already rule out is dropped, as Karpenter's
            # Intersection does: one set, one spelling (NotIn [A] and > 1 is just > 1).
            excluded = self.values | other.values
            if greater_than is not None or less_than is not None:
                excluded = frozenset(v for v in excluded if bounded._within_bounds(v))
            return Requirement(self.key, True, excluded, greater_than, less_than, min_values)
        if self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        values = frozenset(v for v in values if bounded._within_bounds(v))
        return Requirement(self.key, False, values, min_values=min_values)

    def intersects(self, other: Requirement) -> bool:
        """Whether some node can satisfy both (a shared value, or both allow absence)."""
        if self.allows_absent() and other.allows_absent():
            return True
        return not self.intersection(other).is_empty()

    def describe(self) -> str:
        operator = self.operator
        parts = []
        if operator in ("In", "NotIn"):
            parts.append(f"{operator} [{', '.join(sorted(self.values))}]")
        elif operator not in ("Gt", "Lt"):
            parts.append(operator)
        if self.greater_than is not None:
            parts.append(f"> {self.greater_than}")
        if self.less_than is not None:
            parts.append(f"< {self.less_than}")
        text = f"{self.key} {' and '.join(parts)}"
        if self.min_values is not None:
            text += f" (minValues {self.min_values})"
        return text


def _name(key: str) -> str:
    """A label key without its prefix (`topology.kubernetes.io/zone` -> `zone`)."""
    prefix, slash, name = key.partition("/")
    return name if slash else prefix


def _typo_hint(key: str, defined: Iterable[str]) -> str:
    """Karpenter's labelHint for a key nothing defines: the well-known label, else the
    key the NodePool defines, that `key` may be a misspelling of; "" when none looks like
    it. A label named the same after its prefix is the best guess, then one containing
    `key`, then one ending in its name (Karpenter takes the first of a set in no order;
    we take them in this order and alphabetically)."""
    name = _name(key)
    for candidates in (sorted(WELL_KNOWN_LABELS), sorted(defined)):
        for looks_like in (
            lambda label: _name(label) == name,
            lambda label: key in label,
            lambda label: label.endswith(name),
        ):
            for label in candidates:
                if label != key and looks_like(label):
                    return f' (typo of "{label}"?)'
    return ""


def _max_optional(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _min_optional(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


class Requirements(Mapping[str, Requirement]):
    """Requirements per key; adding a requirement for a key intersects it with the old one."""

    __slots__ = ("_by_key",)

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        self._by_key: dict[str, Requirement] = {}
        for requirement in requirements:
            self.add(requirement)

    @staticmethod
    def from_labels(labels: Mapping[str, str]) -> Requirements:
        return Requirements(Requirement.single(k, v) for k, v in labels.items())

    @staticmethod
    def from_node_selector(
        terms: Iterable[Mapping[str, object]],
    ) -> Requirements:
        """From dicts shaped like Kubernetes NodeSelectorRequirement (key, operator, values)."""
        result = Requirements()
        for term in terms:
            key = term.get("key")
            operator = term.get("operator")
            values = term.get("values") or []
            min_values = term.get("minValues", term.get("min_values"))
            if not isinstance(key, str) or not key:
                raise RequirementError(f"requirement without a key: {dict(term)}")
            if not isinstance(operator, str):
                raise RequirementError(f"{key}: requirement without an operator")
            if not isinstance(values, list):
                raise RequirementError(f"{key}: values must be a list, got {values!r}")
            if min_values is not None and not isinstance(min_values, int):
                raise RequirementError(f"{key}: minValues must be an integer")
            result.add(Requirement.build(key, operator, [str(v) for v in values], min_values))
        return result

    def copy(self) -> Requirements:
        clone = Requirements()
        clone._by_key = dict(self._by_key)
        return clone

    def add(self, requirement: Requirement) -> None:
        existing = self._by_key.get(requirement.key)
        self._by_key[requirement.key] = (
            requirement if existing is None else existing.intersection(requirement)
        )

    def merged(self, other: Requirements) -> Requirements:
        result = self.copy()
        for requirement in other.values():
            result.add(requirement)
        return result

    def __getitem__(self, key: str) -> Requirement:
        return self._by_key[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirements) and self._by_key == other._by_key

    def __hash__(self) -> int:
        return hash(frozenset(self._by_key.items()))

    def __repr__(self) -> str:
        return f"Requirements({self.describe()})"

    def conflict(self, incoming: Requirements) -> str | None:
        """Why `incoming` (a pod's requirements) cannot join these (a node's); None if it can.

        A key the node side defines must intersect. A key it does not define is fine
        when the provider decides it (well-known labels) or when the pod accepts the
        label being absent; otherwise the node would never carry the label.
        """
        for key in sorted(incoming):
            wanted = incoming[key]
            have = self._by_key.get(key)
            if have is None:
                if is_well_known(key) or wanted.allows_absent():
                    continue
                return (f"label {key} is not set by the NodePool (pod requires "
                        f"{wanted.describe()}){_typo_hint(key, self._by_key)}")
            if not have.intersects(wanted):
                return f"{wanted.describe()} conflicts with {have.describe()}"
        return None

    def compatible(self, incoming: Requirements) -> bool:
        return self.conflict(incoming) is None

    def satisfied_by_labels(self, labels: Mapping[str, str]) -> bool:
        """Kubernetes node-affinity semantics against a concrete node's labels."""
        return all(req.matches_label(labels.get(key)) for key, req in self._by_key.items())

    def describe(self) -> str:
        return ", ".join(self._by_key[k].describe() for k in sorted(self._by_key))
