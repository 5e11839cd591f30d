"""Kubernetes building blocks shared by the Karpenter kinds."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import Field, JsonValue, StringConstraints

from nodewright.api.base import CelRule, KubeModel
from nodewright.api.formats import TAINT_VALUE_PATTERN, LabelKey
from nodewright.api.labels import label_key_cel_rules

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
Operator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
ConditionStatus = Literal["True", "False", "Unknown"]


class OwnerReference(KubeModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(KubeModel):
    """The metadata every object carries (the fields a manifest may hold)."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None
    finalizers: list[str] | None = None
    owner_references: list[OwnerReference] | None = None
    managed_fields: list[dict[str, Any]] | None = None


class Taint(KubeModel):
    key: LabelKey = Field(min_length=1)
    value: str | None = Field(default=None, pattern=TAINT_VALUE_PATTERN)
    effect: TaintEffect
    time_added: str | None = None


# A requirement's values are label values: at most 63 characters (the bound also keeps
# the CEL rules that read them within the API server's cost budget).
RequirementValue = Annotated[str, StringConstraints(max_length=63)]


class NodeSelectorRequirement(KubeModel):
    """A plain node selector requirement, as EC2NodeClass status reports an AMI's.

    Status is written by the controller, so it carries no CEL rules (as in Karpenter's
    CRDs): a rule there runs once per element of unbounded lists and would exceed the API
    server's cost budget.
    """

    key: str
    operator: str
    values: list[str] | None = None


class NodeSelectorRequirementWithMinValues(KubeModel):
    """A node selector requirement with Karpenter's minValues flexibility floor."""

    key: LabelKey
    operator: Operator
    values: list[RequirementValue] | None = None
    min_values: int | None = Field(default=None, ge=1, le=50)

    cel_rules = (
        *(CelRule(rule["rule"], rule["message"])
          for rule in label_key_cel_rules("self.key", allow_nodepool=True)),
        CelRule(
            "self.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt', 'Gte', 'Lte']",
            "operator must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte",
        ),
        CelRule(
            "self.operator == 'In' ? has(self.values) && self.values.size() != 0 : true",
            "requirements with operator 'In' must have a value defined",
        ),
        CelRule(
            "self.operator in ['Gt', 'Lt', 'Gte', 'Lte'] ? (has(self.values) && "
            "self.values.size() == 1 && int(self.values[0]) >= 0) : true",
            "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
            "non-negative integer value",
        ),
        CelRule(
            "(self.operator == 'In' && has(self.minValues)) ? "
            "self.values.size() >= self.minValues : true",
            "requirements with 'minValues' must have at least that many values specified "
            "in the 'values' field",
        ),
    )


class NodeClassReference(KubeModel):
    group: str = Field(min_length=1, pattern=r"^[^/]*$")
    kind: str = Field(min_length=1, pattern=r"^[^/]*$")
    name: str = Field(min_length=1)


# status.conditions as Karpenter's NodePool, NodeClaim, NodeOverlay and CapacityBuffer CRDs
# have it: one condition per type (the API server refuses a second; server-side apply merges
# into it). Karpenter's EC2NodeClass CRD leaves its conditions a plain list.
CONDITIONS_BY_TYPE: Final[dict[str, JsonValue]] = {
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
}


class Condition(KubeModel):
    type: str
    status: ConditionStatus
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None
    observed_generation: int | None = None
