"""The fields Karpenter's log lines carry about a NodeClaim or a Node.

Log records take them as `extra` (`log.info("launched nodeclaim", extra={...})`); the
operator's JSON logs write the object fields as Karpenter does, `"NodeClaim": {"name": ...}`.
Fields with no value yet (a NodeClaim not launched has no provider-id) are left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodewright.state.wellknown import NODEPOOL_LABEL

MAX_LISTED = 5


def nodeclaim_fields(claim: Mapping[str, Any]) -> dict[str, str]:
    """NodeClaim, NodePool, Node and provider-id of a NodeClaim (wire shape)."""
    metadata = claim.get("metadata") or {}
    status = claim.get("status") or {}
    return _present({
        "NodeClaim": metadata.get("name"),
        "NodePool": (metadata.get("labels") or {}).get(NODEPOOL_LABEL),
        "Node": status.get("nodeName"),
        "provider-id": status.get("providerID"),
    })


def node_fields(node: Mapping[str, Any]) -> dict[str, str]:
    """Node, NodeClaim (its owner once registered), NodePool and provider-id of a Node."""
    metadata = node.get("metadata") or {}
    owner = next((ref.get("name") for ref in metadata.get("ownerReferences") or []
                  if ref.get("kind") == "NodeClaim"), None)
    return _present({
        "Node": metadata.get("name"),
        "NodeClaim": owner,
        "NodePool": (metadata.get("labels") or {}).get(NODEPOOL_LABEL),
        "provider-id": (node.get("spec") or {}).get("providerID"),
    })


def listed(values: Sequence[str], most: int = MAX_LISTED) -> str:
    """`a, b, c, d, e and 3 other(s)`: how Karpenter lists pods and instance types."""
    text = ", ".join(values[:most])
    return f"{text} and {len(values) - most} other(s)" if len(values) > most else text


def duration(seconds: float) -> str:
    """A duration as Go prints one in logs (`12.5ms`, `1.2s`)."""
    if seconds < 1:
        return f"{seconds * 1000:.3f}ms".replace(".000ms", "ms")
    return f"{seconds:.3f}s".replace(".000s", "s")


def _present(fields: Mapping[str, Any]) -> dict[str, str]:
    return {key: str(value) for key, value in fields.items() if value}
