"""Node termination: taint, drain through the Eviction API, terminate the instance,
release the node (Karpenter's node/termination and its terminator)."""

from nodewright.controllers.node.termination.controller import NodeTermination
from nodewright.controllers.node.termination.eviction import Evictor, needs_force_delete
from nodewright.controllers.node.termination.terminator import Terminator, drain_groups

__all__ = ["Evictor", "NodeTermination", "Terminator", "drain_groups", "needs_force_delete"]
