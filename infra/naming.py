"""Names and labels shared by the infra modules, derived from the cluster name."""

from __future__ import annotations

from nodewright.cloud.aws import tags as provider_tags

DISCOVERY_TAG = "karpenter.sh/discovery"
# The tag keys the controller writes on what it creates (its IAM policy is scoped by them).
NODEPOOL_TAG = provider_tags.NODEPOOL
NODECLASS_TAG = provider_tags.NODECLASS
NODECLAIM_TAG = provider_tags.NODECLAIM

# The system node group runs the controller and cluster add-ons, never nodes it manages.
SYSTEM_NODE_LABEL = "nodewright.io/system-node"
SYSTEM_NODE_TAINT_KEY = "CriticalAddonsOnly"

TEAM_LABEL = "team"
DEFAULT_NODE_CLASS = "default"


def cluster_owned_tag(cluster_name: str) -> str:
    return f"kubernetes.io/cluster/{cluster_name}"


def node_role_name(cluster_name: str) -> str:
    return f"NodewrightNode-{cluster_name}"


def system_node_role_name(cluster_name: str) -> str:
    return f"NodewrightSystemNode-{cluster_name}"


def controller_role_name(cluster_name: str) -> str:
    return f"NodewrightController-{cluster_name}"


def controller_policy_name(cluster_name: str, group: str) -> str:
    """One of the controller's managed policies, as Karpenter's
    KarpenterController<Group>Policy-<cluster> (group: NodeLifecycle, IAMIntegration, ...)."""
    return f"NodewrightController{group}Policy-{cluster_name}"


def interruption_queue_name(cluster_name: str) -> str:
    return f"{cluster_name}-interruption"


def team_node_pool_name(team: str) -> str:
    return f"team-{team}"


def team_node_class_name(team: str) -> str:
    return f"team-{team}"
