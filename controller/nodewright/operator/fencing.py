"""The operator's fence: its writes wait on leader election's certainty (`cluster.fencing`).

`fenced(cluster, elector)` gives the client the controllers and the Event writer write
through: every create, update, patch, delete and eviction is refused with `FencedError`
while the elector is not sure it leads. A `KubeCluster` is also fenced at its transport,
so what does not pass the wrapper (the simulated EC2's writes, a request resent after a
Retry-After, a create resent after an unknown outcome) is refused at the moment it would
be sent. Without leader election nothing is fenced.
"""

from __future__ import annotations

from nodewright.cluster.api import ClusterAPI
from nodewright.cluster.fencing import Fence, FencedCluster
from nodewright.cluster.kube.transport import LimitedTransport
from nodewright.operator.leader import LeaderElector


def fenced(cluster: ClusterAPI, elector: LeaderElector | None) -> FencedCluster:
    fence = Fence(elector.unsure if elector is not None else lambda: None)
    transport = getattr(cluster, "transport", None)
    if isinstance(transport, LimitedTransport) and elector is not None:
        transport.fence = fence
    return FencedCluster(cluster, fence)
