"""NodeClaim garbage collection of an instance that is shutting down.

Karpenter v1.14.1 pkg/controllers/nodeclaim/garbagecollection/controller.go lines 71-87:
the cloud provider's NodeClaims with a deletionTimestamp are dropped before the provider
IDs still alive are collected, and the AWS provider (aws v1.14.1
pkg/cloudprovider/cloudprovider.go lines 496-499, instanceToNodeClaim) sets one on every
instance that is `shutting-down` or `terminated`. An instance terminated behind
Karpenter's back (the console, a spot reclaim without an interruption queue) therefore
counts as gone from its first minute of shutting down, and its registered NodeClaim is
collected once the Node is no longer Ready, not only after EC2 reports it `terminated`.
"""

from __future__ import annotations

from tests.controllers.nodeclaim_bench import bench, exists, get
from tests.controllers.test_nodeclaim_garbagecollection_karpenter import collect, deployed


def test_a_nodeclaim_whose_instance_is_shutting_down_is_collected() -> None:
    world = bench()
    (name,) = deployed(world, ready=False)
    provider_id = str(get(world, name)["status"]["providerID"])  # type: ignore[index]

    # The instance is terminated outside Karpenter: EC2 lists it shutting down for a while.
    world.cloud.delete(provider_id)
    states = {i.provider_id: i.state for i in world.cloud.list()}
    assert states[provider_id] == "shutting-down"

    # The collector's pass while it is still shutting down deletes the NodeClaim.
    collect(world)
    claim = get(world, name)
    assert claim is None or claim["metadata"].get("deletionTimestamp")
    assert world.run_until(lambda: not exists(world, name), timeout=120)


def test_a_shutting_down_instance_whose_node_is_ready_is_kept() -> None:
    """The Ready guard still holds: the kubelet answering means the node is not gone."""
    world = bench()
    (name,) = deployed(world, ready=True)
    provider_id = str(get(world, name)["status"]["providerID"])  # type: ignore[index]
    world.cloud.delete(provider_id)
    assert {i.provider_id: i.state for i in world.cloud.list()}[provider_id] == "shutting-down"

    collect(world)
    assert get(world, name)["metadata"].get("deletionTimestamp") is None  # type: ignore[index]
