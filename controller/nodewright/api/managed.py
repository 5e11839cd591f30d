"""Which Karpenter objects are this provider's (Karpenter's nodeclaimutils.IsManaged and
nodepoolutils.IsManaged): those whose nodeClassRef names a node class group and kind the
cloud provider supports, here the one EC2NodeClass of karpenter.k8s.aws. Every controller
and the cluster state leave the others alone: another Karpenter, of another provider, runs
them in the same cluster."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

NODE_CLASS_GROUP: Final = "karpenter.k8s.aws"
NODE_CLASS_KIND: Final = "EC2NodeClass"
# The provider's GetSupportedNodeClasses, as (group, kind).
SUPPORTED_NODE_CLASSES: Final = frozenset({(NODE_CLASS_GROUP, NODE_CLASS_KIND)})


def supports_node_class(group: object, kind: object) -> bool:
    return (group, kind) in SUPPORTED_NODE_CLASSES


def nodeclaim_is_managed(claim: Mapping[str, Any]) -> bool:
    """A NodeClaim whose spec.nodeClassRef names a supported node class. One without a
    nodeClassRef (the CRD requires it; only hand-made objects lack it) counts as ours."""
    reference = (claim.get("spec") or {}).get("nodeClassRef")
    if not reference:
        return True
    return supports_node_class(reference.get("group"), reference.get("kind"))


def nodepool_is_managed(pool: Mapping[str, Any]) -> bool:
    """A NodePool whose spec.template.spec.nodeClassRef names a supported node class."""
    spec = ((pool.get("spec") or {}).get("template") or {}).get("spec") or {}
    reference = spec.get("nodeClassRef") or {}
    return supports_node_class(reference.get("group"), reference.get("kind"))


def nodeclaim_uses_node_class(claim: Mapping[str, Any], name: str) -> bool:
    """Whether the NodeClaim's spec.nodeClassRef names this supported node class
    (Karpenter's nodeclaimutils.ForNodeClass: by the reference, not the node class label,
    which hydration only adds later)."""
    reference = (claim.get("spec") or {}).get("nodeClassRef") or {}
    return (supports_node_class(reference.get("group"), reference.get("kind"))
            and reference.get("name") == name)
