"""Which NodePools are this controller's (Karpenter's nodepoolutils.IsManaged): those
whose nodeClassRef names this provider's node class, group and kind."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NODE_CLASS_GROUP = "karpenter.k8s.aws"
NODE_CLASS_KIND = "EC2NodeClass"


def nodepool_is_managed(pool: Mapping[str, Any]) -> bool:
    spec = ((pool.get("spec") or {}).get("template") or {}).get("spec") or {}
    reference = spec.get("nodeClassRef") or {}
    return (reference.get("group"), reference.get("kind")) == (NODE_CLASS_GROUP, NODE_CLASS_KIND)
