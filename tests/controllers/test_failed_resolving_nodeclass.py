"""A NodeClaim whose EC2NodeClass does not exist says so before it goes, as Karpenter's AWS
cloud provider does (pkg/cloudprovider/cloudprovider.go Create publishes
NodeClaimFailedToResolveNodeClass, events.go: Warning 'Failed resolving NodeClass')."""

from __future__ import annotations

from nodewright.controllers.nodeclaim.launch import FAILED_RESOLVING_NODE_CLASS
from tests.controllers.conftest import WORKSHOP
from tests.harness import World

GHOST_CLAIM = {
    "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
    "metadata": {"name": "orphan", "labels": {"karpenter.sh/nodepool": "default"}},
    "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                              "name": "ghost"},
             "requirements": [{"key": "kubernetes.io/arch", "operator": "In",
                               "values": ["amd64"]}]},
}


def test_a_nodeclaim_without_its_node_class_warns_failed_resolving_nodeclass() -> None:
    world = World()
    world.apply(WORKSHOP)
    world.cluster.create(GHOST_CLAIM)
    world.advance(5)

    (event,) = world.events(reason=FAILED_RESOLVING_NODE_CLASS, kind="NodeClaim")
    assert event["type"] == "Warning"
    assert event["note"] == "Failed resolving NodeClass"
    assert event["regarding"]["name"] == "orphan"
    assert "orphan" not in [c["metadata"]["name"] for c in world.nodeclaims()]


def test_a_nodeclaim_whose_node_class_exists_gets_no_such_event() -> None:
    world = World()
    world.apply(WORKSHOP)
    world.scale("inflate", 1)
    assert world.settle()

    assert world.events(reason=FAILED_RESOLVING_NODE_CLASS) == []
