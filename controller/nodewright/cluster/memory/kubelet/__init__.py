"""The simulated kubelet: one for every place a node has no machine behind it.

- `pods.Kubelet`, its pod half: starts the pods bound to the nodes it plays, completes
  those with a run duration, confirms their deletion and, where no pod garbage collector
  runs, removes the pods of Nodes gone;
- `node.NodeHeartbeat`, its node half on a real cluster: the node Lease and the Ready
  heartbeat;
- `status`: what it writes for its pods.

Two processes run it, parameterised by `KubeletSettings` and by which nodes it plays:
`nodewright simulate`, on the in-memory cluster, for every node (`actors.cluster_actors`:
pods start after `pod_start_delay`, a deleted pod takes its grace period, orphans are
collected), and the `--cloud sim` controller process, on a real cluster, for the nodes
whose instance is a running simulated one (`cloud.sim.kubelet_actors.sim_kubelet`: pods
start at once with addresses, a deletion is confirmed at once, the cluster's own PodGC
collects orphans), with the node half beside it.
"""

from nodewright.cluster.memory.kubelet.node import NodeHeartbeat
from nodewright.cluster.memory.kubelet.pods import Kubelet, KubeletSettings

__all__ = ["Kubelet", "KubeletSettings", "NodeHeartbeat"]
