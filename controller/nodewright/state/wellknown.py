"""Karpenter's label, annotation, taint and finalizer names (karpenter.sh/v1) that the
controllers write and read, in one place."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nodewright.scheduling.pods import Taint

NODEPOOL_LABEL = "karpenter.sh/nodepool"
REGISTERED_LABEL = "karpenter.sh/registered"
INITIALIZED_LABEL = "karpenter.sh/initialized"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
DO_NOT_SYNC_TAINTS_LABEL = "karpenter.sh/do-not-sync-taints"
NODECLASS_LABEL = "karpenter.k8s.aws/ec2nodeclass"
HOSTNAME_LABEL = "kubernetes.io/hostname"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
ZONE_LABEL = "topology.kubernetes.io/zone"
EXCLUDE_LOAD_BALANCERS_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"

DO_NOT_DISRUPT_ANNOTATION = "karpenter.sh/do-not-disrupt"
TERMINATION_TIMESTAMP_ANNOTATION = "karpenter.sh/nodeclaim-termination-timestamp"

TERMINATION_FINALIZER = "karpenter.sh/termination"

# The node class this provider supports (Karpenter's CloudProvider.GetSupportedNodeClasses).

UNREGISTERED_TAINT = Taint("karpenter.sh/unregistered", "", "NoExecute")
DISRUPTED_TAINT = Taint("karpenter.sh/disrupted", "", "NoSchedule")

# Taints that come and go on their own while a node starts (Karpenter's list).
KNOWN_EPHEMERAL_TAINTS = (
    Taint("node.kubernetes.io/not-ready", "", "NoSchedule"),
    Taint("node.kubernetes.io/not-ready", "", "NoExecute"),
    Taint("node.kubernetes.io/unreachable", "", "NoSchedule"),
    Taint("node.cloudprovider.kubernetes.io/uninitialized", "true", "NoSchedule"),
    UNREGISTERED_TAINT,
)
# Taint families whose keys end in a controller's own suffix (the Node Readiness
# Controller's readiness.k8s.io/<rule>), ephemeral whatever the suffix.
KNOWN_EPHEMERAL_TAINT_KEY_PREFIXES = ("readiness.k8s.io/",)


def is_known_ephemeral(taint: Taint) -> bool:
    """Karpenter's IsKnownEphemeralTaint: expected to go while a node initializes."""
    return any(matches(taint, known) for known in KNOWN_EPHEMERAL_TAINTS) or (
        taint.key.startswith(KNOWN_EPHEMERAL_TAINT_KEY_PREFIXES))

CRITICAL_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def matches(taint: Taint, other: Taint) -> bool:
    """Kubernetes' MatchTaint: the same key and effect (values may differ)."""
    return taint.key == other.key and taint.effect == other.effect


def taint_of(raw: Mapping[str, Any]) -> Taint:
    return Taint(str(raw.get("key", "")), str(raw.get("value") or ""), str(raw.get("effect", "")))


def taint_dict(taint: Taint) -> dict[str, str]:
    body = {"key": taint.key, "effect": taint.effect}
    if taint.value:
        body["value"] = taint.value
    return body


def has_taint(taints: Iterable[Mapping[str, Any]], wanted: Taint) -> bool:
    return any(matches(taint_of(raw), wanted) for raw in taints)
