"""CustomResourceDefinitions for the custom kinds, generated from the models."""

from __future__ import annotations

from typing import Any

import yaml

from nodewright.api.base import KubeModel
from nodewright.api.capacitybuffer import (
    CapacityBuffer,
    CapacityBufferSpec,
    CapacityBufferStatus,
)
from nodewright.api.ec2nodeclass import EC2NodeClass, EC2NodeClassSpec, EC2NodeClassStatus
from nodewright.api.nodeclaim import NodeClaim, NodeClaimSpec, NodeClaimStatus
from nodewright.api.nodeoverlay import NodeOverlay, NodeOverlaySpec, NodeOverlayStatus
from nodewright.api.nodepool import NodePool, NodePoolSpec, NodePoolStatus
from nodewright.api.schema import object_schema

READY = '.status.conditions[?(@.type=="Ready")].status'
AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def _column(name: str, path: str, kind: str = "string", priority: int = 0) -> dict[str, Any]:
    column: dict[str, Any] = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        column["priority"] = priority
    return column


_Entry = tuple[
    type[KubeModel], type[KubeModel], type[KubeModel], str, str, list[str], list[dict[str, Any]]
]
_CRDS: tuple[_Entry, ...] = (
    (
        NodePool,
        NodePoolSpec,
        NodePoolStatus,
        "karpenter.sh",
        "nodepools",
        ["np"],
        [
            _column("NodeClass", ".spec.template.spec.nodeClassRef.name"),
            # status.nodes, as Karpenter's (an integer printed as a string), the field the
            # scale subresource reads too.
            _column("Nodes", ".status.nodes"),
            _column("Ready", READY),
            AGE,
            _column("Weight", ".spec.weight", "integer", priority=1),
            _column("CPU", ".status.resources.cpu", priority=1),
            _column("Memory", ".status.resources.memory", priority=1),
        ],
    ),
    (
        NodeClaim,
        NodeClaimSpec,
        NodeClaimStatus,
        "karpenter.sh",
        "nodeclaims",
        ["nc"],
        [
            _column("Type", ".metadata.labels.node\\.kubernetes\\.io/instance-type"),
            _column("Capacity", ".metadata.labels.karpenter\\.sh/capacity-type"),
            _column("Zone", ".metadata.labels.topology\\.kubernetes\\.io/zone"),
            _column("Node", ".status.nodeName"),
            _column("Ready", READY),
            AGE,
            _column("ImageID", ".status.imageID", priority=1),
            _column("ID", ".status.providerID", priority=1),
            _column("NodePool", ".metadata.labels.karpenter\\.sh/nodepool", priority=1),
            _column("NodeClass", ".spec.nodeClassRef.name", priority=1),
            _column("Drifted", '.status.conditions[?(@.type=="Drifted")].status', priority=1),
        ],
    ),
    (
        EC2NodeClass,
        EC2NodeClassSpec,
        EC2NodeClassStatus,
        "karpenter.k8s.aws",
        "ec2nodeclasses",
        ["ec2nc", "ec2ncs"],
        [_column("Ready", READY), AGE, _column("Role", ".spec.role", priority=1)],
    ),
    (
        NodeOverlay,
        NodeOverlaySpec,
        NodeOverlayStatus,
        "karpenter.sh",
        "nodeoverlays",
        ["overlays"],
        [_column("Ready", READY), AGE, _column("Weight", ".spec.weight", "integer", priority=1)],
    ),
    (
        CapacityBuffer,
        CapacityBufferSpec,
        CapacityBufferStatus,
        "autoscaling.x-k8s.io",
        "capacitybuffers",
        ["cb"],
        [
            _column("Strategy", ".spec.provisioningStrategy"),
            _column("PodTemplate", ".status.podTemplateRef.name"),
            _column("Replicas", ".status.replicas", "integer"),
            _column("ConditionsType", ".status.conditions[*].type"),
            _column("ConditionsStatus", ".status.conditions[*].status"),
            _column("ConditionsReason", ".status.conditions[*].reason"),
            AGE,
        ],
    ),
)
# Served versions other than v1.
_VERSIONS: dict[str, str] = {"nodeoverlays": "v1alpha1", "capacitybuffers": "v1beta1"}
# Namespaced kinds (the others are cluster-scoped), and categories other than Karpenter's.
_NAMESPACED = frozenset({"capacitybuffers"})
_CATEGORIES: dict[str, list[str]] = {"capacitybuffers": ["autoscaling", "nodewright"]}


# The scale subresource (kubectl scale, HorizontalPodAutoscalers) of static NodePools.
_SCALE: dict[str, dict[str, str]] = {
    "nodepools": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.nodes"},
}


def generate_crds() -> list[dict[str, Any]]:
    """The CRDs as dicts, in the order NodePool, NodeClaim, EC2NodeClass, NodeOverlay,
    CapacityBuffer."""
    return [
        _crd(model, spec, status, group, plural, short_names, columns)
        for model, spec, status, group, plural, short_names, columns in _CRDS
    ]


def _crd(
    model: type[KubeModel],
    spec: type[KubeModel],
    status: type[KubeModel],
    group: str,
    plural: str,
    short_names: list[str],
    columns: list[dict[str, Any]],
) -> dict[str, Any]:
    kind = str(model.model_fields["kind"].default)
    version = _VERSIONS.get(plural, "v1")
    schema = {
        "type": "object",
        "description": f"{kind} ({group}/{version}), served by Nodewright.",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": object_schema(spec),
            "status": object_schema(status),
        },
        "required": ["spec"],
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{group}",
            "labels": {"app.kubernetes.io/part-of": "nodewright"},
        },
        "spec": {
            "group": group,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short_names,
                "categories": _CATEGORIES.get(plural, ["karpenter", "nodewright"]),
            },
            "scope": "Namespaced" if plural in _NAMESPACED else "Cluster",
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "subresources": _subresources(plural),
                    "additionalPrinterColumns": columns,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def _subresources(plural: str) -> dict[str, Any]:
    subresources: dict[str, Any] = {"status": {}}
    if plural in _SCALE:
        subresources["scale"] = dict(_SCALE[plural])
    return subresources


def render_crds_yaml() -> str:
    return yaml.safe_dump_all(generate_crds(), sort_keys=False, width=100)
