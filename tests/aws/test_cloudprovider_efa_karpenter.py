"""Karpenter's cloud provider suite (pkg/cloudprovider/suite_test.go, v1.14.1), Context("EFA"):
a NodeClaim offers vpc.amazonaws.com/efa only when its instance was launched with EFA
interfaces, that is when it asked for EFA devices or its EC2NodeClass lists its interfaces
(and then as many as the EFA-only interfaces listed). Each test names its It.

Karpenter's CloudProvider.Create returns the NodeClaim with its allocatable; here the launch
controller writes it, so each story is a NodeClaim of a c6in.32xlarge (2 EFA devices; Karpenter's
suite uses a dl1.24xlarge, which the simulated region does not offer) in the
in-memory cluster with the controllers. The launch template side of these Its (EFA
interfaces sent) is tests/aws/test_launch_template_interfaces_karpenter.py's.
"""

from __future__ import annotations

from typing import Any

from tests.harness import NODE_CLASS, World, documents

EFA = "vpc.amazonaws.com/efa"


def launched_allocatable(requests: dict[str, str] | None = None,
                         interfaces: list[dict[str, Any]] | None = None) -> dict[str, str]:
    world = World()
    (node_class,) = documents(NODE_CLASS)
    if interfaces is not None:
        node_class["spec"]["networkInterfaces"] = interfaces
    claim: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": "efa", "labels": {"karpenter.sh/nodepool": "default"}},
        "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                  "name": "default"},
                 "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                   "values": ["c6in.32xlarge"]}]},
    }
    if requests:
        claim["spec"]["resources"] = {"requests": requests}
    world.apply(node_class)
    world.cluster.create(claim)
    world.advance(10)
    (launched,) = world.nodeclaims()
    allocatable: dict[str, str] = launched["status"]["allocatable"]
    assert launched["status"]["capacity"].keys() == allocatable.keys()
    return allocatable


def test_a_nodeclaim_asking_for_efa_offers_it() -> None:
    """It("should include vpc.amazonaws.com/efa on a nodeclaim if it requests it")"""
    assert launched_allocatable(requests={EFA: "1"})[EFA] == "2"


def test_a_nodeclaim_not_asking_for_efa_does_not_offer_it() -> None:
    """It("shouldn't include vpc.amazonaws.com/efa on a nodeclaim if it doesn't request it"):
    the c6in.32xlarge has EFA devices, but was launched with a plain interface."""
    assert EFA not in launched_allocatable()


def test_efa_only_interfaces_of_the_node_class_are_offered() -> None:
    """It("should include vpc.amazonaws.com/efa on a nodeclaim if nodeclass configured with
    EFA-only interfaces"): one listed, one offered."""
    allocatable = launched_allocatable(interfaces=[
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"}])
    assert allocatable[EFA] == "1"


def test_plain_interfaces_of_the_node_class_offer_no_efa() -> None:
    """It("should not include vpc.amazonaws.com/efa on a nodeclaim if nodeclass configured with
    only interface (ENA) network interfaces")"""
    allocatable = launched_allocatable(interfaces=[
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 1, "deviceIndex": 1, "interfaceType": "interface"}])
    assert EFA not in allocatable
