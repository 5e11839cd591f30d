"""Karpenter's metrics controllers: gauges that describe the cluster (nodes, pods,
NodePools, status conditions, instance-type offerings), computed from the state cache on
their own schedule, with the series of objects that went away removed. They only write
`nodewright.metrics`; nothing decides on what they compute.
"""

from nodewright.controllers.metrics.nodepools import NodePoolMetrics
from nodewright.controllers.metrics.nodes import NodeMetrics
from nodewright.controllers.metrics.offerings import OfferingMetrics
from nodewright.controllers.metrics.pods import PodMetrics
from nodewright.controllers.metrics.status import StatusConditionMetrics

__all__ = [
    "NodeMetrics",
    "NodePoolMetrics",
    "OfferingMetrics",
    "PodMetrics",
    "StatusConditionMetrics",
]
