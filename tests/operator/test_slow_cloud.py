"""No request under a lock another controller needs (issue 28): with a cloud whose calls
take seconds (the catalog refresh, the EC2NodeClass resolution, a TerminateInstances, a
CreateFleet) or an API server whose answer to a write takes seconds, a spot interruption
is still acted on, and a Node registered, while those calls are in flight.

The operator runs as `nodewright controller` runs it (every controller on its own worker
threads, the real OperatorDriver, real time) against the in-memory API server and a
`SlowCloud` whose slow calls wait at a gate until the story opens it. No world lock: the
controllers take turns only where they share the state cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from nodewright.cloud.sim import SimulatedEC2
from nodewright.cloud.sim.node import node_object
from nodewright.cluster.api import NotFoundError
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.nodeclass.status import CatalogRefresh, NodeClassStatus
from nodewright.operator.process import Operator, OperatorSettings
from nodewright.runtime.clock import SystemClock
from nodewright.state.wellknown import TERMINATION_FINALIZER
from tests.kube.waiting import eventually
from tests.operator.slow_cloud import Gate, LongPollQueue, SlowCloud, SlowWrites
from tests.operator.world import LockedCluster
from tests.support.operator import crash

REGION = "us-east-1"
ZONE = "us-east-1a"
TYPE = "m5.xlarge"
DISRUPTED_TAINT = "karpenter.sh/disrupted"

NODECLASS = {
    "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {"role": "slow", "amiSelectorTerms": [{"alias": "al2023@latest"}],
             "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "slow"}}],
             "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "slow"}}]},
}
NODEPOOL = {
    "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {"template": {"spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                         "name": "default"},
        "expireAfter": "Never",
        "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In",
                          "values": ["on-demand"]}]}},
        # Nothing here is for consolidation: only the interruption may disrupt a node.
        "disruption": {"consolidateAfter": "Never"}},
}


def nodeclaim(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {"karpenter.sh/nodepool": "default"},
                     "finalizers": [TERMINATION_FINALIZER]},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                  "name": "default"},
                 "requirements": [
                     {"key": "node.kubernetes.io/instance-type", "operator": "In",
                      "values": [TYPE]},
                     {"key": "topology.kubernetes.io/zone", "operator": "In",
                      "values": [ZONE]},
                     {"key": "karpenter.sh/capacity-type", "operator": "In",
                      "values": ["on-demand"]},
                     {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]}],
                 "resources": {"requests": {"cpu": "100m"}}},
    }


@dataclass
class SlowWorld:
    memory: InMemoryCluster
    # The story's own client; the operator's is `api`.
    cluster: LockedCluster
    api: SlowWrites
    sim: SimulatedEC2
    cloud: SlowCloud
    operator: Operator
    resolution: NodeClassStatus
    catalog_refresh: CatalogRefresh

    def launched(self, name: str) -> str:
        """The provider id of the NodeClaim's instance, once the lifecycle launched it."""
        def provider_id() -> str | None:
            claim = self.memory.get("NodeClaim", name)
            return (claim.get("status") or {}).get("providerID")
        return eventually(provider_id, f"NodeClaim {name} to launch")

    def node_registers(self, name: str) -> None:
        """Its kubelet registers the Node of NodeClaim `name`."""
        instance_id = self.sim._by_nodeclaim[name]
        instance = self.sim._instances[instance_id]
        hostname = f"ip-{instance.private_ip.replace('.', '-')}.ec2.internal"
        self.cluster.create(node_object(instance, hostname, self.operator.clock.now(),
                                        self.sim.settings.kubernetes_version))

    def registered(self, name: str) -> bool:
        claim = self.memory.get("NodeClaim", name)
        return any(c.get("type") == "Registered" and c.get("status") == "True"
                   for c in (claim.get("status") or {}).get("conditions") or [])

    def draining(self, name: str) -> bool:
        """NodeClaim `name` is deleting and its Node carries the disrupted taint."""
        try:
            claim = self.memory.get("NodeClaim", name)
        except NotFoundError:
            return True
        if not claim["metadata"].get("deletionTimestamp"):
            return False
        node_name = (claim.get("status") or {}).get("nodeName")
        try:
            node = self.memory.get("Node", str(node_name))
        except NotFoundError:
            return True
        return any(t.get("key") == DISRUPTED_TAINT
                   for t in (node.get("spec") or {}).get("taints") or [])


@pytest.fixture
def slow_world() -> Iterator[SlowWorld]:
    clock = SystemClock()
    memory = InMemoryCluster(clock)
    lock = threading.RLock()
    cluster = LockedCluster(memory, lock)
    api = SlowWrites(memory, lock)
    sim = SimulatedEC2(clock, region=REGION, seed=28)
    queue = LongPollQueue(clock, REGION, 28)
    sim.interruption_queue = queue
    cloud = SlowCloud(sim, slow_launches={"slow-launch"})
    catalog_refresh = CatalogRefresh(api, cloud.refreshing_catalog())
    operator = Operator(api, cloud, OperatorSettings(identity="slow", leader_elect=False),
                        clock=clock, extra=[catalog_refresh])
    # The registry's, resolving through the slow cloud (its `node_classes`).
    resolution = operator.controllers.built["nodeclass.status"]
    cloud.use_lock(operator.controllers.state.lock)
    cluster.create(NODECLASS)
    cluster.create(NODEPOOL)
    operator.start()
    world = SlowWorld(memory, cluster, api, sim, cloud, operator, resolution, catalog_refresh)
    try:
        yield world
    finally:
        for gate in (*cloud.gates, api.gate):
            gate.open()
        queue.close()
        crash(operator)


def slow_calls(world: SlowWorld) -> dict[str, tuple[Gate, Callable[[], None]]]:
    """Each slow call: the gate it waits at, and how the story starts one."""
    def catalog_refresh() -> None:
        world.operator.driver.enqueue(world.catalog_refresh, "")

    def resolution() -> None:
        world.operator.driver.enqueue(world.resolution, "default")

    def termination() -> None:
        world.cloud.slow_terminations.add(world.launched("doomed"))
        world.cluster.delete("NodeClaim", "doomed")

    def launch() -> None:
        world.cluster.create(nodeclaim("slow-launch"))

    def api_write() -> None:
        # The lifecycle's finalizer writes to the NodeClaim it terminates.
        world.api.slow.add(("NodeClaim", "doomed"))
        world.cluster.delete("NodeClaim", "doomed")

    cloud = world.cloud
    return {"catalog refresh": (cloud.catalog, catalog_refresh),
            "resolution": (cloud.resolution, resolution),
            "termination": (cloud.termination, termination),
            "launch": (cloud.launch, launch),
            "API write": (world.api.gate, api_write)}


@pytest.mark.parametrize("slow", [("catalog refresh",), ("resolution",), ("termination",),
                                  ("launch",), ("API write",),
                                  ("catalog refresh", "resolution", "termination", "launch")],
                         ids=lambda slow: "+".join(slow).replace(" ", "-"))
def test_an_interruption_and_a_registration_never_wait_for_a_slow_cloud_call(
        slow_world: SlowWorld, slow: tuple[str, ...]) -> None:
    world = slow_world
    for name in ("interrupted", "registering", "doomed"):
        world.cluster.create(nodeclaim(name))
    interrupted = world.launched("interrupted")
    world.launched("registering")
    world.node_registers("interrupted")
    eventually(lambda: world.registered("interrupted"), "the interrupted node to register")

    calls = slow_calls(world)
    gates = []
    for name in slow:
        gate, start = calls[name]
        gate.arm()
        start()
        gates.append(gate)
    for gate in gates:
        assert gate.entered.wait(30), f"the {gate.name} never reached the cloud"

    world.sim.interruption_queue.spot_interruption(interrupted.rsplit("/", 1)[1])
    world.node_registers("registering")
    eventually(lambda: world.registered("registering"), "the Node's registration")
    eventually(lambda: world.draining("interrupted"), "the interrupted node to drain")

    # The slow calls never returned: neither action waited for them.
    still_blocked = [gate.name for gate in gates if gate.blocked()]
    assert still_blocked == [gate.name for gate in gates]


def test_other_launches_and_a_registration_never_wait_for_a_slow_launch(
        slow_world: SlowWorld) -> None:
    """The lifecycle's workers launch side by side: one CreateFleet that takes seconds
    holds up neither the NodeClaims created after it nor a Node's registration."""
    world = slow_world
    world.cluster.create(nodeclaim("registering"))
    world.launched("registering")
    world.cloud.launch.arm()
    world.cluster.create(nodeclaim("slow-launch"))
    assert world.cloud.launch.entered.wait(30), "the slow launch never reached the cloud"

    burst = [f"burst-{index}" for index in range(4)]
    for name in burst:
        world.cluster.create(nodeclaim(name))
    world.node_registers("registering")
    eventually(lambda: world.registered("registering"), "the Node's registration")
    for name in burst:
        world.launched(name)

    assert world.cloud.launch.blocked()  # all of it happened while the slow launch hung
