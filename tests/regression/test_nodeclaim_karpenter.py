"""Karpenter's end-to-end regression suite, test/suites/regression/nodeclaim_test.go
(v1.14.1) Describe("NodeClaim") Describe("StandaloneNodeClaim"), as stories on the
in-memory World: a NodeClaim created by hand, without a NodePool, on the EC2NodeClass
`default`.

Karpenter's BeforeEach takes the suite NodePool's requirements (on kwok narrowed to two of
kwok's types; off kwok as they are): ours are the AWS environment's (`suite_pool`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from nodewright.api.quantity import parse_quantity
from nodewright.cloud.sim import SimSettings
from nodewright.cluster import objects
from tests.controllers.expectations import condition, expect_no_controller_errors
from tests.harness import NODE_CLASS, World
from tests.regression.suite import exists, suite_pool

REQUIREMENTS = suite_pool()["spec"]["template"]["spec"]["requirements"]
NAME = "standalone"
# Nodes that never register (Karpenter's ExpectBlockNodeRegistration).
NEVER_REGISTERS = SimSettings(registration_delay=24 * 3600.0)


def nodeclaim(*, labels: Mapping[str, str] | None = None,
              annotations: Mapping[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": NAME}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": metadata,
            "spec": {"requirements": REQUIREMENTS,
                     "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"},
                     **spec}}


def initialized_node(world: World) -> dict[str, Any]:
    """EventuallyExpectInitializedNodeCount("==", 1)[0]."""
    assert world.run_until(
        lambda: [objects.labels(n).get("karpenter.sh/initialized") for n in world.nodes()]
        == ["true"], timeout=600)
    (node,) = world.nodes()
    return node


def expect_ready(world: World) -> dict[str, Any]:
    """EventuallyExpectCreatedNodeClaimCount("==", 1) and EventuallyExpectNodeClaimsReady."""
    (claim,) = world.nodeclaims()
    assert world.run_until(
        lambda: condition(world.cluster.get("NodeClaim", NAME), "Ready") == "True")
    return claim


def test_a_standard_nodeclaim() -> None:
    """nodeclaim_test.go It("should create a standard NodeClaim")."""
    world = World()
    world.apply(NODE_CLASS, nodeclaim())
    node = initialized_node(world)
    expect_ready(world)
    assert objects.labels(node)["karpenter.sh/capacity-type"] == "on-demand"
    assert objects.labels(node)["karpenter.k8s.aws/instance-category"] in ("c", "m", "r")
    expect_no_controller_errors(world)


def test_a_nodeclaim_sized_by_its_resource_requests() -> None:
    """nodeclaim_test.go It("should create a standard NodeClaim based on resource
    requests")."""
    world = World()
    requests = {"cpu": "3", "memory": "11Gi"}
    world.apply(NODE_CLASS, nodeclaim(resources={"requests": requests}))
    node = initialized_node(world)
    expect_ready(world)
    allocatable = node["status"]["allocatable"]
    for resource, quantity in requests.items():
        assert parse_quantity(quantity) <= parse_quantity(allocatable[resource])


def test_a_nodeclaim_propagates_its_spec_to_the_node() -> None:
    """nodeclaim_test.go It("should create a NodeClaim propagating all the NodeClaim spec
    details")."""
    world = World()
    taints = [{"key": "custom-taint", "effect": "NoSchedule", "value": "custom-value"},
              {"key": "other-custom-taint", "effect": "NoExecute",
               "value": "other-custom-value"}]
    world.apply(NODE_CLASS, nodeclaim(
        annotations={"custom-annotation": "custom-value"},
        labels={"custom-label": "custom-value"},
        taints=taints, resources={"requests": {"cpu": "3", "memory": "16Gi"}}))
    node = initialized_node(world)
    claim = expect_ready(world)
    assert objects.annotations(node)["custom-annotation"] == "custom-value"
    assert objects.labels(node)["custom-label"] == "custom-value"
    for taint in taints:
        assert taint in node["spec"]["taints"]
    owners = node["metadata"]["ownerReferences"]
    assert {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "name": NAME,
            "uid": objects.uid(claim), "blockOwnerDeletion": True} in [
        {k: v for k, v in owner.items() if k != "controller"} for owner in owners]


def test_deleting_the_nodeclaim_removes_the_instance() -> None:
    """nodeclaim_test.go It("should remove the cloudProvider NodeClaim when the cluster
    NodeClaim is deleted")."""
    world = World()
    world.apply(NODE_CLASS, nodeclaim())
    node = initialized_node(world)
    world.delete("NodeClaim", NAME)
    assert world.run_until(lambda: not world.nodeclaims() and not world.nodes(), timeout=600)
    assert not exists(world, "Node", objects.name(node))
    assert world.live_instances() == []
    expect_no_controller_errors(world)


def test_deleting_the_node_deletes_the_nodeclaim() -> None:
    """nodeclaim_test.go It("should delete a NodeClaim from the node termination
    finalizer")."""
    world = World()
    world.apply(NODE_CLASS, nodeclaim())
    node = initialized_node(world)
    world.delete("Node", objects.name(node))
    assert world.run_until(lambda: not world.nodeclaims() and not world.nodes(), timeout=600)
    assert world.live_instances() == []
    expect_no_controller_errors(world)


def test_a_nodeclaim_whose_node_never_registers_is_deleted() -> None:
    """nodeclaim_test.go It("should delete a NodeClaim after the registration timeout when
    the node doesn't register")."""
    world = World(sim=NEVER_REGISTERS)
    created = world.clock.now()
    world.apply(NODE_CLASS, nodeclaim(labels={"registration": "fail"}))
    # Launched, then Registered and Initialized stay Unknown while the node is awaited.
    assert world.run_until(
        lambda: condition(world.cluster.get("NodeClaim", NAME), "Launched") == "True")
    while world.clock.now() - created < timedelta(minutes=14):
        world.advance(30)
        claim = world.cluster.get("NodeClaim", NAME)
        assert condition(claim, "Registered") == "Unknown"
        assert condition(claim, "Initialized") == "Unknown"
    assert world.run_until(lambda: not exists(world, "NodeClaim", NAME), timeout=3 * 60)
    assert world.clock.now() - created < timedelta(minutes=17)
    assert world.run_until(lambda: not world.live_instances(), timeout=300)
    expect_no_controller_errors(world)


def test_a_nodeclaim_of_a_missing_nodeclass_is_deleted() -> None:
    """nodeclaim_test.go It("should delete a NodeClaim if it references a NodeClass that
    doesn't exist")."""
    world = World()
    world.apply(nodeclaim())
    assert world.run_until(lambda: not exists(world, "NodeClaim", NAME), timeout=300)
    assert world.live_instances() == []


def test_a_nodeclaim_of_a_nodeclass_not_ready_is_deleted() -> None:
    """nodeclaim_test.go It("should delete a NodeClaim if it references a NodeClass that isn't
    Ready").

    Karpenter stops its NodeClass status controller and writes Ready False itself; here the
    EC2NodeClass is not ready for a reason of its own (the simulated VPC matches every
    selector): a negative evictionSoftGracePeriod, which the API server lets through, so
    our status controller writes ValidationSucceeded and Ready False."""
    world = World()
    world.apply(NODE_CLASS + "  kubelet:\n    evictionSoft: {memory.available: 5%}\n"
                "    evictionSoftGracePeriod: {memory.available: -1m}\n")
    assert world.run_until(
        lambda: condition(world.cluster.get("EC2NodeClass", "default"), "Ready") == "False",
        timeout=60)
    world.apply(nodeclaim())
    assert world.run_until(lambda: not exists(world, "NodeClaim", NAME), timeout=300)
    assert world.live_instances() == []


def test_an_instance_launched_for_a_nodeclaim_without_its_mapping_is_collected() -> None:
    """nodeclaim_test.go It("should succeed to garbage collect an Instance that was launched
    by a NodeClaim but has no Instance mapping").

    The node never registers; the NodeClaim's status is overwritten to claim an instance
    that does not exist, launched, registered and initialized. The NodeClaim is garbage
    collected, and so is the instance that really was launched for it."""
    world = World(sim=NEVER_REGISTERS)
    world.apply(NODE_CLASS, nodeclaim(labels={"registration": "fail"}))
    assert world.run_until(
        lambda: condition(world.cluster.get("NodeClaim", NAME), "Launched") == "True")
    (launched,) = world.live_instances()
    claim = world.cluster.get("NodeClaim", NAME)
    now = world.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [c for c in objects.conditions(claim)
                  if c["type"] not in ("Launched", "Registered", "Initialized")]
    for kind in ("Launched", "Registered", "Initialized"):
        conditions.append({"type": kind, "status": "True", "reason": kind,
                           "message": "", "lastTransitionTime": now})
    world.cluster.patch("NodeClaim", NAME, {"status": {
        "providerID": "aws:///us-west-2a/i-01234567890123456", "nodeName": "test-node-name",
        "conditions": conditions}}, subresource="status")
    world.deliver()
    assert world.run_until(lambda: not exists(world, "NodeClaim", NAME), timeout=600)
    # Our settings: the stuck instance is a leak the instance garbage collection ends.
    world.cloud.settings = dataclasses.replace(world.cloud.settings, registration_delay=30.0)
    assert world.run_until(
        lambda: launched.instance_id not in {i.instance_id for i in world.live_instances()},
        timeout=1800)
    expect_no_controller_errors(world)
