"""A NodePool's taints on the nodes it launches, as Karpenter's topology suite checks them
(kubernetes-sigs/karpenter v1.14.1 pkg/controllers/provisioning/scheduling/topology_test.go,
Describe("Taints")), on the in-memory cluster."""

from __future__ import annotations

from typing import Any

from tests.controllers.expectations import expect_no_controller_errors
from tests.harness import NODE_CLASS, World, node_pool


def web(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "web",
                                 "resources": {"requests": {"cpu": "100m"}}}], **spec},
    }


def node_of(world: World) -> dict[str, Any]:
    (pod,) = world.pods()
    name = pod["spec"].get("nodeName")
    assert name, "the pod is not bound"
    (node,) = [n for n in world.nodes() if n["metadata"]["name"] == name]
    return node


def test_nodes_carry_the_nodepools_taints() -> None:
    # It("should taint nodes with NodePool taints")
    world = World()
    taint = {"key": "test", "value": "bar", "effect": "NoSchedule"}
    world.apply(NODE_CLASS, node_pool(families=["c5"], taints=[taint]),
                web(tolerations=[{"effect": "NoSchedule", "operator": "Exists"}]))
    assert world.settle()
    assert taint in node_of(world)["spec"].get("taints", [])
    expect_no_controller_errors(world)


def test_a_startup_taint_alone_does_not_keep_the_pod_off() -> None:
    # It("should provision nodes with taints and schedule pods if the taint is only a
    # startup taint")
    world = World()
    startup = {"key": "ignore-me", "value": "nothing-to-see-here", "effect": "NoSchedule"}
    world.apply(NODE_CLASS, node_pool(families=["c5"], startupTaints=[startup]), web())
    assert world.settle()
    node_of(world)


def test_a_toleration_with_exists_generates_no_taint() -> None:
    # It("should not generate taints for OpExists")
    world = World()
    world.apply(NODE_CLASS, node_pool(families=["c5"]), web(tolerations=[
        {"key": "test-key", "operator": "Exists", "effect": "NoExecute"}]))
    assert world.settle()
    taints = node_of(world)["spec"].get("taints", [])
    assert [t for t in taints if t["key"] == "test-key"] == []
