"""Karpenter test/suites/integration/repair_policy_test.go (v1.14.1), cloud-agnostic: on
the in-memory World of tests/harness.py (simulated EC2, whose repair policies are the AWS
provider's) with the NodeRepair gate on. One replica that does not want to be disrupted
(karpenter.sh/do-not-disrupt, no termination grace), its node launched; the node reports an
unhealthy condition that began long enough ago (31 minutes, 11 for accelerated hardware);
the node and the pod go and the replica runs again on a new node."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from nodewright.cloud.aws.provider import REPAIR_POLICIES
from nodewright.cloud.sim.provider import SimulatedEC2
from nodewright.cluster import objects
from nodewright.controllers.options import ControllerOptions
from nodewright.runtime.clock import format_time
from tests.harness import NODE_CLASS, World, node_pool

APP = {"app": "my-app"}


def deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "my-app", "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": APP}, "template": {
                "metadata": {"labels": APP,
                             "annotations": {"karpenter.sh/do-not-disrupt": "true"}},
                "spec": {"terminationGracePeriodSeconds": 0, "containers": [{
                    "name": "app", "image": "pause",
                    "resources": {"requests": {"cpu": "100m"}}}]}}}}


def running(world: World) -> list[Any]:
    return [p for p in world.running_pods() if objects.labels(p).get("app") == "my-app"
            and not objects.is_deleting(p)]


def launched(pool: dict[str, Any] | None = None) -> tuple[World, str, str]:
    """The world with the replica running; its pod's and node's names."""
    world = World(options=ControllerOptions(node_repair=True))
    world.apply(NODE_CLASS, pool or node_pool(families=["m5"]), deployment())
    assert world.run_until(lambda: len(running(world)) == 1
                           and len(world.nodes()) == 1, timeout=600)
    (pod,) = running(world)
    (node,) = world.nodes()
    assert world.run_until(lambda: objects.labels(world.cluster.get(
        "Node", objects.name(node))).get("karpenter.sh/initialized") == "true", timeout=120)
    return world, objects.name(pod), objects.name(node)


def turn_unhealthy(world: World, node_name: str, kind: str, status: str, minutes: int
                   ) -> None:
    """`common.ReplaceNodeConditions` and a status update: the condition began `minutes`
    ago."""
    node = world.cluster.get("Node", node_name)
    since = format_time(world.clock.now() - timedelta(minutes=minutes))
    conditions = [c for c in node["status"]["conditions"] if c["type"] != kind]
    conditions.append({"type": kind, "status": status, "reason": "Test", "message": "",
                       "lastHeartbeatTime": since, "lastTransitionTime": since})
    world.cluster.patch("Node", node_name, {"status": {"conditions": conditions}},
                        subresource="status")
    world.deliver()


def replaced(world: World, pod: str, node: str) -> None:
    """`EventuallyExpectNotFound(pod, node)`, then the replica healthy again."""
    def gone() -> bool:
        names = {objects.name(p) for p in world.pods()}
        return pod not in names and node not in {objects.name(n) for n in world.nodes()}

    assert world.run_until(gone, timeout=900)
    assert world.run_until(lambda: len(running(world)) == 1, timeout=900)
    assert world.errors == []


@pytest.mark.parametrize(("kind", "status", "minutes"), [
    pytest.param("Ready", "False", 31, id="Node Ready False"),
    pytest.param("Ready", "Unknown", 31, id="Node Ready Unknown"),
    pytest.param("AcceleratedHardwareReady", "False", 11,
                 id="Node AcceleratedHardwareReady False"),
    pytest.param("StorageReady", "False", 31, id="Node StorageReady False"),
    pytest.param("NetworkingReady", "False", 31, id="Node NetworkingReady False"),
    pytest.param("KernelReady", "False", 31, id="Node KernelReady False"),
    pytest.param("ContainerRuntimeReady", "False", 31, id="Node ContainerRuntimeReady False"),
])
def test_a_node_unhealthy_past_its_toleration_is_replaced(kind: str, status: str,
                                                          minutes: int) -> None:
    """Karpenter test/suites/integration/repair_policy_test.go DescribeTable("Conditions"):
    the Entry named by the case id."""
    world, pod, node = launched()

    turn_unhealthy(world, node, kind, status, minutes)

    replaced(world, pod, node)


def test_the_simulated_cloud_repairs_as_the_aws_provider_does() -> None:
    """The policies the stories above run under are the AWS provider's."""
    world = World(options=ControllerOptions(node_repair=True))
    assert isinstance(world.cloud, SimulatedEC2)
    assert tuple(world.cloud.repair_policies()) == REPAIR_POLICIES


def test_repair_ignores_disruption_budgets() -> None:
    """Karpenter test/suites/integration/repair_policy_test.go It("should ignore disruption
    budgets")."""
    world, pod, node = launched(node_pool(families=["m5"], disruption={
        "consolidateAfter": "Never", "budgets": [{"nodes": "0"}]}))

    turn_unhealthy(world, node, "Ready", "False", 31)

    replaced(world, pod, node)


def test_repair_ignores_do_not_disrupt_on_the_node() -> None:
    """Karpenter test/suites/integration/repair_policy_test.go It("should ignore
    do-not-disrupt annotation on node")."""
    world, pod, node = launched()
    world.cluster.patch("Node", node, {"metadata": {"annotations": {
        "karpenter.sh/do-not-disrupt": "true"}}})

    turn_unhealthy(world, node, "Ready", "False", 31)

    replaced(world, pod, node)


def test_repair_ignores_the_termination_grace_period() -> None:
    """Karpenter test/suites/integration/repair_policy_test.go It("should ignore
    terminationGracePeriod on the nodepool")."""
    world, pod, node = launched(node_pool(families=["m5"], terminationGracePeriod="1h"))

    turn_unhealthy(world, node, "Ready", "False", 31)

    replaced(world, pod, node)
