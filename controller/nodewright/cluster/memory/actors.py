"""The actors that play a cluster around the in-memory API server, built together.

`cluster_actors(cluster, settings)` returns them in a fixed order (kube-scheduler,
kubelet, the workload controllers, the disruption controller, the volume controller) for
a driver to `add`. The kubelet is the simulated kubelet (`kubelet`) of every node, as
this cluster's kubelet and pod garbage collector.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.cluster.memory.disruption import DisruptionController
from nodewright.cluster.memory.kube_scheduler import KubeScheduler
from nodewright.cluster.memory.kubelet import Kubelet, KubeletSettings
from nodewright.cluster.memory.store import InMemoryCluster
from nodewright.cluster.memory.volumes import DETACH_DELAY, VolumeController
from nodewright.cluster.memory.workloads import (
    DaemonSetController,
    DeploymentController,
    JobController,
    ReplicaSetController,
    StatefulSetController,
)
from nodewright.runtime.reconciler import Reconciler


@dataclass(frozen=True)
class ActorSettings:
    """Timings of the simulated cluster. `pod_start_delay`: seconds from binding to a pod
    Running and Ready (image pull and start); `volume_detach_delay`: seconds from the
    last pod using a volume on a node being gone to its VolumeAttachment being deleted."""

    pod_start_delay: float = 2.0
    volume_detach_delay: float = DETACH_DELAY

    def __post_init__(self) -> None:
        if self.pod_start_delay < 0:
            raise ValueError(f"pod_start_delay must be >= 0, got {self.pod_start_delay}")
        if self.volume_detach_delay < 0:
            raise ValueError(
                f"volume_detach_delay must be >= 0, got {self.volume_detach_delay}")


def cluster_actors(
    cluster: InMemoryCluster, settings: ActorSettings | None = None
) -> list[Reconciler]:
    settings = settings or ActorSettings()
    return [
        KubeScheduler(cluster),
        Kubelet(cluster, cluster.clock, KubeletSettings(start_delay=settings.pod_start_delay)),
        DeploymentController(cluster),
        ReplicaSetController(cluster),
        StatefulSetController(cluster),
        JobController(cluster),
        DaemonSetController(cluster),
        DisruptionController(cluster),
        VolumeController(cluster, detach_delay=settings.volume_detach_delay),
    ]
