"""NodeOverlay (karpenter.sh/v1alpha1): price and extended-resource capacity overrides for
the instance types its requirements select, applied during scheduling simulations."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from nodewright.api.base import CelRule, KubeModel, cel_extra
from nodewright.api.core import CONDITIONS_BY_TYPE, Condition, ObjectMeta, RequirementValue
from nodewright.api.formats import LabelKey, Quantity
from nodewright.api.labels import label_key_cel_rules

GROUP = "karpenter.sh"
VERSION = "v1alpha1"
# Karpenter's patterns: a signed amount or a percentage (+N% up, down to -100%).
PRICE_ADJUSTMENT_PATTERN = (
    r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$"
)
PRICE_PATTERN = r"^\d+(\.\d+)?$"
# Resources an overlay may not set: it only adds extended resources.
RESTRICTED_CAPACITY = ("cpu", "memory", "ephemeral-storage", "pods")
PRICE_OVERLAY_APPLIED = "karpenter.sh/price-overlay-applied"
CAPACITY_OVERLAY_APPLIED = "karpenter.sh/capacity-overlay-applied"

OverlayOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]


class OverlayRequirement(KubeModel):
    key: LabelKey
    operator: OverlayOperator
    values: list[RequirementValue] | None = None

    # Karpenter's NodeOverlay CRD restricts the key as a NodeClaim's (karpenter.sh/nodepool
    # allowed).
    cel_rules = tuple(CelRule(rule["rule"], rule["message"])
                      for rule in label_key_cel_rules("self.key", allow_nodepool=True))


class NodeOverlaySpec(KubeModel):
    requirements: list[OverlayRequirement] = Field(
        default_factory=list,
        max_length=100,
        json_schema_extra=cel_extra([
            {"message": "requirements with operator 'NotIn' must have a value defined",
             "rule": "self.all(x, x.operator == 'NotIn' ? has(x.values) && "
                     "x.values.size() != 0 : true)"},
            {"message": "requirements with operator 'In' must have a value defined",
             "rule": "self.all(x, x.operator == 'In' ? has(x.values) && "
                     "x.values.size() != 0 : true)"},
            {"message": "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
                        "positive integer value",
             "rule": "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || "
                     "x.operator == 'Gte' || x.operator == 'Lte') ? (has(x.values) && "
                     "x.values.size() == 1 && int(x.values[0]) >= 0) : true)"},
        ]),
    )
    price_adjustment: Annotated[str, StringConstraints(pattern=PRICE_ADJUSTMENT_PATTERN)] | None = (
        None)
    price: Annotated[str, StringConstraints(pattern=PRICE_PATTERN)] | None = None
    # Bounded so that the rule reading it stays within the CEL cost budget.
    capacity: dict[str, Quantity] | None = Field(
        default=None,
        max_length=100,
        json_schema_extra=cel_extra([
            {"message": "invalid resource restricted",
             "rule": "self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))"},
        ]),
    )
    weight: int | None = Field(default=None, ge=1, le=10000)

    cel_rules = (
        CelRule("!has(self.price) || !has(self.priceAdjustment)",
                "cannot set both 'price' and 'priceAdjustment'"),
    )


class NodeOverlayStatus(KubeModel):
    conditions: list[Condition] | None = Field(
        default=None, json_schema_extra=CONDITIONS_BY_TYPE)


class NodeOverlay(KubeModel):
    api_version: Literal["karpenter.sh/v1alpha1"] = "karpenter.sh/v1alpha1"
    kind: Literal["NodeOverlay"] = "NodeOverlay"
    metadata: ObjectMeta
    spec: NodeOverlaySpec
    status: NodeOverlayStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""
