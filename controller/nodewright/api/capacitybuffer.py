"""CapacityBuffer (autoscaling.x-k8s.io/v1beta1): headroom the provisioner keeps free.

A buffer names the shape of one chunk (a PodTemplate, or the pod template of a Deployment,
StatefulSet or ReplicaSet) and how many chunks to keep (replicas, a percentage of the
workload's replicas, or as many as fit resource limits). Karpenter v1.14 copies the type
from Cluster Autoscaler; so does this module, with Karpenter's constants.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from nodewright.api.base import CelRule, KubeModel
from nodewright.api.core import CONDITIONS_BY_TYPE, Condition, ObjectMeta
from nodewright.api.formats import Quantity

GROUP = "autoscaling.x-k8s.io"
VERSION = "v1beta1"
ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"

# Condition types on a buffer's status.
READY_FOR_PROVISIONING = "ReadyForProvisioning"
PROVISIONING = "Provisioning"

# Kinds a scalableRef may name (group apps, or empty for apps).
SCALABLE_KINDS = ("Deployment", "StatefulSet", "ReplicaSet")

# Annotations on the virtual pods built for a buffer.
FAKE_POD_ANNOTATION = "karpenter.sh/capacity-buffer-fake-pod"
BUFFER_NAME_ANNOTATION = "karpenter.sh/capacity-buffer-name"
BUFFER_NAMESPACE_ANNOTATION = "karpenter.sh/capacity-buffer-namespace"

Int32 = Annotated[int, Field(ge=0, le=2**31 - 1)]
Name = Annotated[str, StringConstraints(min_length=1)]


class LocalObjectRef(KubeModel):
    name: Name


class ScalableRef(KubeModel):
    api_group: str | None = None
    kind: Name
    name: Name


class CapacityBufferSpec(KubeModel):
    provisioning_strategy: str | None = ACTIVE_CAPACITY
    pod_template_ref: LocalObjectRef | None = None
    scalable_ref: ScalableRef | None = None
    replicas: Int32 | None = None
    percentage: Int32 | None = None
    limits: dict[str, Quantity] | None = None

    cel_rules = (
        CelRule("!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",
                "If podTemplateRef is set, replicas or limits must also be set"),
        CelRule("!(has(self.podTemplateRef) && has(self.scalableRef))",
                "You must define either PodTemplateRef or ScalableRef, but not both"),
    )


class CapacityBufferStatus(KubeModel):
    pod_template_ref: LocalObjectRef | None = None
    replicas: int | None = None
    pod_template_generation: int | None = None
    conditions: list[Condition] | None = Field(
        default=None, json_schema_extra=CONDITIONS_BY_TYPE)
    provisioning_strategy: str | None = None


class CapacityBuffer(KubeModel):
    api_version: Literal["autoscaling.x-k8s.io/v1beta1"] = "autoscaling.x-k8s.io/v1beta1"
    kind: Literal["CapacityBuffer"] = "CapacityBuffer"
    metadata: ObjectMeta
    spec: CapacityBufferSpec
    status: CapacityBufferStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""
