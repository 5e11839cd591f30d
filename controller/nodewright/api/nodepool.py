"""NodePool (karpenter.sh/v1): the template and policies for a set of nodes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from nodewright.api.base import CelRule, KubeModel, cel_extra
from nodewright.api.core import (
    CONDITIONS_BY_TYPE,
    Condition,
    NodeClassReference,
    NodeSelectorRequirementWithMinValues,
    ObjectMeta,
    Taint,
)
from nodewright.api.formats import (
    BudgetDuration,
    BudgetNodes,
    CronSchedule,
    Duration,
    DurationOrNever,
    LabelKey,
    LabelValue,
    Quantity,
)
from nodewright.api.labels import map_key_cel_rules

GROUP = "karpenter.sh"
VERSION = "v1"
DEFAULT_EXPIRE_AFTER = "720h"
DEFAULT_CONSOLIDATE_AFTER = "0s"
DEFAULT_BUDGET_NODES = "10%"

DisruptionReason = Literal["Underutilized", "Empty", "Drifted"]
ConsolidationPolicy = Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]


class TemplateMetadata(KubeModel):
    labels: dict[LabelKey, LabelValue] | None = Field(
        default=None,
        max_length=100,
        json_schema_extra=cel_extra(map_key_cel_rules()),
    )
    annotations: dict[str, str] | None = None


class NodePoolNodeClassReference(NodeClassReference):
    """A NodePool's nodeClassRef: its group and kind never change in place (Karpenter's
    CRD), only the name may."""

    # Bounded (an API group name is a DNS subdomain, a kind a DNS label) so that the rules
    # comparing them are cheap for the API server's cost estimate.
    group: str = Field(min_length=1, max_length=253, pattern=r"^[^/]*$")
    kind: str = Field(min_length=1, max_length=63, pattern=r"^[^/]*$")

    cel_rules = (
        CelRule("self.group == oldSelf.group", "nodeClassRef.group is immutable"),
        CelRule("self.kind == oldSelf.kind", "nodeClassRef.kind is immutable"),
    )


class NodeClaimTemplateSpec(KubeModel):
    node_class_ref: NodePoolNodeClassReference
    taints: list[Taint] | None = None
    startup_taints: list[Taint] | None = None
    requirements: list[NodeSelectorRequirementWithMinValues] = Field(
        default_factory=list,
        max_length=100,
        json_schema_extra=cel_extra(
            [
                {
                    "message": 'label "karpenter.sh/nodepool" is restricted',
                    "rule": "self.all(x, x.key != 'karpenter.sh/nodepool')",
                }
            ]
        ),
    )
    expire_after: DurationOrNever = DEFAULT_EXPIRE_AFTER
    termination_grace_period: Duration | None = None


class NodeClaimTemplate(KubeModel):
    metadata: TemplateMetadata | None = None
    spec: NodeClaimTemplateSpec


class Budget(KubeModel):
    """How many nodes may be disrupted at once, optionally only in a window."""

    nodes: BudgetNodes = DEFAULT_BUDGET_NODES
    schedule: CronSchedule | None = None
    duration: BudgetDuration | None = None
    reasons: list[DisruptionReason] | None = Field(
        default=None, max_length=50, json_schema_extra={"x-kubernetes-list-type": "set"})

    cel_rules = (
        CelRule(
            "has(self.schedule) == has(self.duration)",
            "'schedule' must be set with 'duration'",
        ),
    )


def _default_budgets() -> list[Budget]:
    return [Budget(nodes=DEFAULT_BUDGET_NODES)]


class Disruption(KubeModel):
    consolidation_policy: ConsolidationPolicy = "WhenEmptyOrUnderutilized"
    consolidate_after: DurationOrNever = DEFAULT_CONSOLIDATE_AFTER
    budgets: list[Budget] = Field(default_factory=_default_budgets, max_length=50)


class NodePoolSpec(KubeModel):
    template: NodeClaimTemplate
    disruption: Disruption = Field(default_factory=Disruption)
    # Bounded so that the static-NodePool rule reading it stays within the CEL cost budget.
    limits: dict[str, Quantity] | None = Field(default=None, max_length=100)
    weight: int | None = Field(default=None, ge=1, le=100)
    replicas: int | None = Field(
        default=None,
        ge=0,
        description=(
            "The number of nodes a static NodePool keeps, whatever its pods ask. When set, "
            "disruption.consolidationPolicy and consolidateAfter are ignored, only "
            "limits.nodes may be set and weight may not."
        ),
    )

    cel_rules = (
        CelRule(
            "has(self.replicas) == has(oldSelf.replicas)",
            "Cannot transition NodePool between static (replicas set) and dynamic "
            "(replicas unset) provisioning modes",
        ),
        CelRule(
            "!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || "
            "(size(self.limits) == 1 && 'nodes' in self.limits))",
            "only 'limits.nodes' is supported on static NodePools",
        ),
        CelRule(
            "!has(self.replicas) || !has(self.weight)",
            "'weight' is not supported on static NodePools",
        ),
    )


class NodePoolStatus(KubeModel):
    resources: dict[str, Quantity] | None = None
    nodes: int | None = None
    node_class_observed_generation: int | None = None
    conditions: list[Condition] | None = Field(
        default=None, json_schema_extra=CONDITIONS_BY_TYPE)


class NodePool(KubeModel):
    api_version: Literal["karpenter.sh/v1"] = "karpenter.sh/v1"
    kind: Literal["NodePool"] = "NodePool"
    metadata: ObjectMeta
    spec: NodePoolSpec
    status: NodePoolStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def is_static(self) -> bool:
        """Karpenter's nodepoolutils.IsStatic: replicas set."""
        return self.spec.replicas is not None
