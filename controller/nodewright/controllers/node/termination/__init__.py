"""Node termination: taint, drain through the Eviction API, terminate the instance,
release the node (Karpenter's node/termination and its terminator)."""

from nodewright.controllers.termination.controller import NodeTermination
from nodewright.controllers.termination.eviction import Evictor, needs_force_delete
from nodewright.controllers.termination.terminator import Terminator, drain_groups

__all__ = ["Evictor", "NodeTermination", "Terminator", "drain_groups", "needs_force_delete"]
