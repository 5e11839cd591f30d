"""When a NodeClaim gets its EC2NodeClass hash: at launch, as in Karpenter v1.14.1.

The provisioner's NodeClaim carries the NodePool's hash annotations only
(kubernetes-sigs/karpenter v1.14.1 pkg/controllers/provisioning/scheduling/
nodeclaimtemplate.go lines 66-78, NewNodeClaimTemplate); the AWS provider's Create adds
karpenter.k8s.aws/ec2nodeclass-hash and -hash-version for the node class it launched from
(aws/karpenter-provider-aws v1.14.1 pkg/cloudprovider/cloudprovider.go lines 156-160).
Before, Nodewright wrote the node class hash when it created the NodeClaim too, so
`kubectl get nodeclaim -o yaml` showed one on a NodeClaim still launching (or failing to).
"""

from __future__ import annotations

from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.api.hashes import (
    NODECLASS_HASH,
    NODECLASS_HASH_VERSION,
    NODECLASS_HASH_VERSION_VALUE,
    NODEPOOL_HASH,
    NODEPOOL_HASH_VERSION,
    node_class_hash,
)
from nodewright.cloud.provider import CloudProviderError
from nodewright.cluster import objects
from tests.controllers.nodeclaim_bench import fail_next_launch, status_of
from tests.harness import NODE_CLASS, World, node_pool

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "app", "namespace": "default"},
    "spec": {"containers": [{"name": "c", "image": "c", "resources": {"requests": {"cpu": "1"}}}]},
}


def _only_claim(world: World) -> dict[str, Any]:
    (claim,) = world.cluster.list("NodeClaim")
    return claim


def test_a_nodeclaim_still_launching_has_the_nodepool_hash_but_no_node_class_hash() -> None:
    world = World()
    world.apply(NODE_CLASS, node_pool(families=["m5"]))
    assert world.settle()
    calls = fail_next_launch(world, CloudProviderError("ec2:CreateFleet: InternalError"), times=3)
    world.apply(POD)
    world.advance(2)

    launching = _only_claim(world)
    assert calls and status_of(launching, "Launched") != "True"
    annotations = objects.annotations(launching)
    assert NODEPOOL_HASH in annotations and NODEPOOL_HASH_VERSION in annotations
    assert NODECLASS_HASH not in annotations
    assert NODECLASS_HASH_VERSION not in annotations


def test_the_launch_stamps_the_node_class_hash() -> None:
    """Drift still compares against the node class the NodeClaim launched from."""
    world = World()
    world.apply(NODE_CLASS, node_pool(families=["m5"]))
    assert world.settle()
    world.apply(POD)
    world.advance(10)

    launched = _only_claim(world)
    assert status_of(launched, "Launched") == "True"
    node_class = EC2NodeClass.model_validate(world.cluster.get("EC2NodeClass", "default"))
    annotations = objects.annotations(launched)
    assert annotations[NODECLASS_HASH] == node_class_hash(
        node_class, world.controllers.state.ca_bundle
    )
    assert annotations[NODECLASS_HASH_VERSION] == NODECLASS_HASH_VERSION_VALUE
    assert status_of(launched, "Drifted") != "True"
