"""The simulated EC2 beside a controller on the virtual driver: what Karpenter's lifecycle
controller would see of a node joining and leaving."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from nodewright.cloud.sim import SimulatedEC2
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.driver import VirtualDriver
from nodewright.runtime import Result, VirtualClock, Watch, WatchEvent

from .conftest import node_class, nodeclaim

UNREGISTERED = "karpenter.sh/unregistered"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
CNI_NOT_READY = {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}


class RegistrationStandIn:
    """Karpenter's part of registration, reduced to removing the unregistered taint."""

    name = "registration"

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.cluster = cluster

    @property
    def watches(self) -> Sequence[Watch]:
        return (Watch("Node"),)

    def reconcile(self, key: str) -> Result:
        node = self.cluster.peek("Node", key)
        if node is None:
            return Result()
        taints = node["spec"].get("taints") or []
        kept = [t for t in taints if t["key"] != UNREGISTERED]
        if kept != taints:
            self.cluster.patch("Node", key, {"spec": {"taints": kept}})
        return Result()


def test_a_node_joins_loses_its_startup_taints_and_leaves_with_its_instance() -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    ec2 = SimulatedEC2(clock, cluster=cluster, seed=11)
    driver = VirtualDriver(clock, cluster, raise_errors=True)
    driver.add(RegistrationStandIn(cluster))
    seen: list[tuple[datetime, str]] = []
    driver.listen(lambda event: seen.append((clock.now(), event.type)) if _is_node(event) else None)
    driver.start()
    start = clock.now()

    instance = ec2.create(
        nodeclaim(types=("m5.large",), taints=[GPU_TAINT], startup_taints=[CNI_NOT_READY]),
        node_class(),
    )
    clock.advance(120)
    [node] = cluster.list("Node")
    taints_when_initialized = node["spec"]["taints"]
    ec2.delete(instance.provider_id)
    clock.advance(60)

    assert taints_when_initialized == [GPU_TAINT]
    assert [(int((t - start).total_seconds()), kind) for t, kind in seen] == [
        (50, "ADDED"),  # launched 20 s, registered 30 s later
        (50, "MODIFIED"),  # the unregistered taint removed
        (55, "MODIFIED"),  # the CNI agent is up
        (150, "DELETED"),  # terminated 30 s after the delete
    ]
    assert cluster.list("Node") == []


def _is_node(event: WatchEvent) -> bool:
    return event.kind == "Node"
