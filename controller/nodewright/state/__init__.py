"""The cluster state cache the controllers decide from (Karpenter's pkg/controllers/state).

`ClusterState` is fed every watch event (the driver's `listen` hook; the operator feeds it
the same way) and answers: which machines exist (`StateNode`: a NodeClaim and its Node
joined by provider ID), what is bound to each, which pods wait for capacity, how much of
each NodePool is in use, and whether it has seen enough to decide (`synced`).
"""

from nodewright.state.cluster import DEFAULT_NOMINATION_SECONDS, ClusterState
from nodewright.state.statenode import NODES_RESOURCE, NodePods, StateNode

__all__ = [
    "DEFAULT_NOMINATION_SECONDS",
    "NODES_RESOURCE",
    "ClusterState",
    "NodePods",
    "StateNode",
]
