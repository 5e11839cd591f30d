"""`--cloud sim` on a real cluster: the kubelet of nodes no machine backs, as kwok plays it.

The simulated EC2 registers each instance's Node itself (`nodewright.cloud.sim`). A real
cluster then expects a kubelet behind it. The simulated kubelet
(`nodewright.cluster.memory.kubelet`, the one `nodewright simulate` runs for every node
of the in-memory cluster) plays it here for the nodes whose providerID is a running
simulated instance, and leaves every other node alone: its node half renews the node's
Lease and Ready heartbeat, its pod half runs the pods the scheduler binds there (with
addresses, at once), completes those with a run duration and confirms their deletion at
once. The cluster's own pod garbage collector removes the pods of Nodes gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodewright.cloud.provider import CloudProvider, CloudProviderError
from nodewright.cloud.sim.lost import LostInstances
from nodewright.cloud.sim.provider import SimulatedEC2
from nodewright.cluster.api import ClusterAPI
from nodewright.cluster.memory.kubelet import Kubelet, KubeletSettings, NodeHeartbeat
from nodewright.cluster.memory.kubelet.pods import NodePredicate
from nodewright.runtime.clock import Clock
from nodewright.runtime.reconciler import Reconciler

ON_A_REAL_CLUSTER = KubeletSettings(
    start_delay=0.0, stop_at_once=True, addresses=True, collect_orphans=False)


def running_instances(cloud: CloudProvider) -> NodePredicate:
    """The nodes whose providerID is an instance of `cloud` in state running."""

    def plays(node: Mapping[str, Any]) -> bool:
        provider_id = str((node.get("spec") or {}).get("providerID") or "")
        if not provider_id:
            return False
        try:
            return cloud.get(provider_id).state == "running"
        except CloudProviderError:
            return False

    return plays


def instances_kubelet(cluster: ClusterAPI, cloud: CloudProvider, clock: Clock
                      ) -> tuple[NodeHeartbeat, Kubelet]:
    """The simulated kubelet of `cloud`'s running instances: its node and pod halves."""
    plays = running_instances(cloud)
    return (NodeHeartbeat(cluster, clock, plays),
            Kubelet(cluster, clock, ON_A_REAL_CLUSTER, plays=plays))


def sim_kubelet(cluster: ClusterAPI, cloud: SimulatedEC2, clock: Clock) -> list[Reconciler]:
    """What plays the kubelet of the simulated EC2's instances on a real cluster (the
    `--cloud sim` controller process), beside the simulated EC2's own node agent: the
    simulated kubelet, and NodeClaims whose instance died with another process replaced
    (`cloud.sim.lost`)."""
    return [*instances_kubelet(cluster, cloud, clock), LostInstances(cluster, cloud)]
