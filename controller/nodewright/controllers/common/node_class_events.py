"""Karpenter's 'Failed resolving NodeClass' warnings (aws pkg/cloudprovider/events/events.go
NodeClaimFailedToResolveNodeClass and NodePoolFailedToResolveNodeClass): a NodeClaim or a
NodePool whose EC2NodeClass is gone, or being deleted, says so. Deduplicated per object
(its UID) within the recorder's two-minute window, as Karpenter's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from nodewright.cluster import objects
from nodewright.cluster.events import Event

# Karpenter's event has no reason (core/v1 Events allow that; events.k8s.io/v1 needs one).
FAILED_RESOLVING_NODE_CLASS: Final = "FailedResolvingNodeClass"
FAILED_RESOLVING_NOTE: Final = "Failed resolving NodeClass"


def failed_resolving_node_class(regarding: Mapping[str, Any], action: str = "") -> Event:
    uid = str(objects.meta(regarding).get("uid") or objects.name(regarding))
    return Event(regarding=regarding, type="Warning", reason=FAILED_RESOLVING_NODE_CLASS,
                 note=FAILED_RESOLVING_NOTE, action=action, dedupe_values=(uid,))
