"""NodeClaim (karpenter.sh/v1): a request for one node, and what was launched."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from nodewright.api.base import CelRule, KubeModel
from nodewright.api.core import (
    CONDITIONS_BY_TYPE,
    Condition,
    NodeClassReference,
    NodeSelectorRequirementWithMinValues,
    ObjectMeta,
    Taint,
)
from nodewright.api.formats import Duration, DurationOrNever, Quantity
from nodewright.api.nodepool import DEFAULT_EXPIRE_AFTER


class ResourceRequirements(KubeModel):
    requests: dict[str, Quantity] | None = None


class NodeClaimSpec(KubeModel):
    # Karpenter's NodeClaim: a launched machine's spec never changes in place.
    cel_rules = (CelRule("self == oldSelf", "spec is immutable"),)

    node_class_ref: NodeClassReference
    requirements: list[NodeSelectorRequirementWithMinValues] = Field(
        default_factory=list, max_length=100
    )
    resources: ResourceRequirements | None = None
    taints: list[Taint] | None = None
    startup_taints: list[Taint] | None = None
    expire_after: DurationOrNever = DEFAULT_EXPIRE_AFTER
    termination_grace_period: Duration | None = None


class NodeClaimStatus(KubeModel):
    provider_id: str | None = Field(default=None, alias="providerID")
    image_id: str | None = Field(default=None, alias="imageID")
    node_name: str | None = None
    capacity: dict[str, Quantity] | None = None
    allocatable: dict[str, Quantity] | None = None
    last_pod_event_time: str | None = None
    conditions: list[Condition] | None = Field(
        default=None, json_schema_extra=CONDITIONS_BY_TYPE)


class NodeClaim(KubeModel):
    api_version: Literal["karpenter.sh/v1"] = "karpenter.sh/v1"
    kind: Literal["NodeClaim"] = "NodeClaim"
    metadata: ObjectMeta
    spec: NodeClaimSpec
    status: NodeClaimStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""
