"""Karpenter's node hydration suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/node/hydration/suite_test.go, DescribeTable("Hydration"). A Node missing
the node class label gets it from its NodeClaim, unless the NodeClaim is on another
provider's node class. Without it node termination, which recognizes Nodewright's Nodes by
that label, would never finalize such a Node."""

from __future__ import annotations

import pytest

from nodewright.cluster import objects
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.node.hydration import NodeHydration
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState
from tests.controllers.test_karpenter_termination import finalized, launched
from tests.harness import World

LABEL = "karpenter.k8s.aws/ec2nodeclass"
PROVIDER_ID = "aws:///us-east-1a/i-0123456789abcdef0"


@pytest.mark.parametrize(("group", "kind", "labelled"), [
    pytest.param("karpenter.k8s.aws", "EC2NodeClass", True,
                 id="should hydrate missing metadata onto the Node"),
    pytest.param("karpenter.test.sh", "UnmanagedNodeClass", False,
                 id="should ignore Nodes which aren't managed by this Karpenter instance"),
])
def test_a_node_gets_the_node_class_label_of_its_nodeclaim(group: str, kind: str,
                                                           labelled: bool) -> None:
    """Entry("should hydrate missing metadata onto the Node", true) and Entry("should
    ignore Nodes which aren't managed by this Karpenter instance", false)."""
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    state = ClusterState(clock)
    claim = cluster.create({
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "claim"},
        "spec": {"nodeClassRef": {"group": group, "kind": kind, "name": "default"},
                 "requirements": []}})
    claim = cluster.patch("NodeClaim", "claim", {"status": {"providerID": PROVIDER_ID}},
                          subresource="status")
    node = cluster.create({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "node", "labels": {"karpenter.sh/nodepool": "default",
                                   "node.kubernetes.io/instance-type": "m5.large"}},
        "spec": {"providerID": PROVIDER_ID}})
    for obj in (claim, node):
        state.observe(WatchEvent("ADDED", obj))
    NodeHydration(cluster, state).reconcile("node")
    labels = objects.labels(cluster.get("Node", "node"))
    assert (LABEL in labels) is labelled
    if labelled:
        assert labels[LABEL] == "default"


def test_a_launched_node_that_lost_the_label_gets_it_back_and_is_finalized() -> None:
    """The same Entry in the running cluster: a Node without the label (as one of an older
    Karpenter) is labelled again, so deleting it drains and finalizes it."""
    world = World()
    ((_claim, node),) = launched(world)
    body = world.cluster.get("Node", node)
    body["metadata"]["labels"].pop(LABEL)
    world.cluster.update(body)
    world.advance(5)
    assert objects.labels(world.cluster.get("Node", node)).get(LABEL) == "default"
    world.delete("Node", node)
    assert finalized(world, node)
