"""Karpenter's scheduling suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/suite_test.go, the Its that need the controllers
(NodePool readiness, a NodeClaim being deleted): stories in the in-memory cluster, each
naming its It."""

from __future__ import annotations

from typing import Any

from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import claim_names
from tests.harness import World, node_pool


def a_pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "c",
                                     "resources": {"limits": {"cpu": "10m"}}}]}}


def test_a_nodepool_that_is_not_ready_launches_nothing() -> None:
    # Describe("Custom Constraints") Context("Scheduling Logic") It("should not schedule
    # pods with nodePool which is not ready "): the NodePool's EC2NodeClass does not exist,
    # so it is not Ready.
    world = World()
    pool = node_pool("orphan", families=["m5"])
    pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "missing"
    world.apply(pool, a_pod("app"))
    world.advance(60)
    assert claim_names(world) == []
    assert [p["metadata"]["name"] for p in world.pending_pods()] == ["app"]


def test_a_terminating_in_flight_node_does_not_take_the_next_pod() -> None:
    # Describe("In-Flight Nodes") It("should launch a second node if an in-flight node is
    # terminating")
    world = World()
    world.apply(WORKSHOP, a_pod("first"))
    assert world.settle()
    (first,) = claim_names(world)
    world.cluster.patch("NodeClaim", first, {"metadata": {"finalizers": [
        "karpenter.sh/termination", "test.karpenter.sh/hold"]}})
    world.delete("NodeClaim", first)
    world.apply(a_pod("second"))
    world.advance(30)
    assert len(claim_names(world)) == 2
    second = world.cluster.get("Pod", "second", "default")
    (deleting,) = [c for c in world.nodeclaims() if c["metadata"]["name"] == first]
    assert second["spec"].get("nodeName") != deleting["status"].get("nodeName")
