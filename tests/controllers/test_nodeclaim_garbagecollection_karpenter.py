"""NodeClaim garbage collection: a registered NodeClaim whose instance the cloud no longer
has is deleted, unless its Node is still Ready (its kubelet is alive, the cloud's list is
behind); an unregistered one is left to liveness.

Ported from Karpenter v1.14.1 pkg/controllers/nodeclaim/garbagecollection/suite_test.go
(Describe "GarbageCollection")."""

from __future__ import annotations

from nodewright.controllers.nodeclaim.garbagecollection import NodeClaimGarbageCollection
from tests.controllers.nodeclaim_bench import (
    bench,
    create,
    exists,
    get,
    linked_node,
    nodeclaim,
    status_of,
)
from tests.harness import World


def deployed(world: World, count: int = 1, *, node: bool = True, ready: bool = True
             ) -> list[str]:
    """Karpenter's ExpectNodeClaimDeployed (or ...NoNode): launched, and registered with a
    Node that is Ready or not."""
    claims = create(world, *(nodeclaim() for _ in range(count)))
    world.advance(5)
    names = [str(c["metadata"]["name"]) for c in claims]
    if node:
        for name in names:
            linked_node(world, get(world, name) or {}, ready=ready)
        world.advance(5)
        assert all(status_of(get(world, name), "Registered") == "True" for name in names)
    return names


def instances_gone(world: World, names: list[str]) -> None:
    for name in names:
        world.cloud.delete(get(world, name)["status"]["providerID"])  # type: ignore[index]
    live = {i.provider_id for i in world.live_instances()}
    assert world.run_until(lambda: not live & {i.provider_id for i in world.cloud.list()
                                               if i.state != "terminated"}, timeout=120)


def collect(world: World) -> None:
    gc = world.controllers.get("nodeclaim.garbagecollection", NodeClaimGarbageCollection)
    assert gc is not None
    gc.reconcile("")
    world.deliver()


def test_a_nodeclaim_whose_instance_is_gone_and_node_not_ready_is_deleted() -> None:
    """It "should delete the NodeClaim when the Node is there in a NotReady state and the
    instance is gone"."""
    world = bench()
    names = deployed(world, ready=False)
    instances_gone(world, names)
    collect(world)
    assert world.run_until(lambda: not exists(world, names[0]), timeout=120)


def test_a_nodeclaim_whose_node_is_still_ready_is_kept() -> None:
    """It "shouldn't delete the NodeClaim when the Node is there in a Ready state and the
    instance is gone"."""
    world = bench()
    names = deployed(world)
    instances_gone(world, names)
    collect(world)
    assert exists(world, names[0])
    assert get(world, names[0])["metadata"].get("deletionTimestamp") is None  # type: ignore


def test_many_nodeclaims_whose_instances_are_gone_are_deleted() -> None:
    """It "should delete many NodeClaims when the Nodes are there in a NotReady state and
    the instances are gone"."""
    world = bench()
    names = deployed(world, 100, ready=False)
    instances_gone(world, names)
    collect(world)
    assert world.run_until(lambda: not any(exists(world, n) for n in names), timeout=300)


def test_an_unregistered_nodeclaim_whose_instance_is_gone_is_kept() -> None:
    """It "shouldn't delete the NodeClaim when the Node isn't there and the instance is
    gone" (never registered: liveness has it)."""
    world = bench()
    names = deployed(world, node=False)
    instances_gone(world, names)
    collect(world)
    assert get(world, names[0])["metadata"].get("deletionTimestamp") is None  # type: ignore


def test_a_nodeclaim_whose_instance_is_there_is_kept_without_its_node() -> None:
    """It "shouldn't delete the NodeClaim when the Node isn't there but the instance is
    there"."""
    world = bench()
    names = deployed(world)
    node = get(world, names[0])["status"]["nodeName"]  # type: ignore[index]
    world.cluster.patch("Node", node, {"metadata": {"finalizers": None}})
    world.cluster.delete("Node", node)
    world.deliver()
    collect(world)
    assert exists(world, names[0])
