"""NodeClaim termination: a deleted NodeClaim deletes its Nodes (only once registered),
terminates its instance, waits until the cloud no longer has it, then lets go; with a
terminationGracePeriod it first records its termination deadline.

Ported from Karpenter v1.14.1 pkg/controllers/nodeclaim/lifecycle/termination_test.go
(Describe "Termination")."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cloud.provider import CloudProviderError
from tests.controllers.metric_samples import sample_value
from tests.controllers.nodeclaim_bench import (
    bench,
    create,
    exists,
    get,
    linked_node,
    nodeclaim,
    set_condition,
    status_of,
)
from tests.harness import World

REQUESTS = {"cpu": "2", "memory": "50Mi", "pods": "5"}
TERMINATION_TIMESTAMP = "karpenter.sh/nodeclaim-termination-timestamp"


def count(metric: str, pool: str = "default") -> float:
    return sample_value(f"{metric}_count", {"nodepool": pool}) or 0.0


def registered(world: World, claim: dict[str, Any] | None = None, **node: Any
               ) -> tuple[str, str]:
    (created,) = create(world, claim or nodeclaim(requests=REQUESTS))
    world.advance(5)
    name = str(created["metadata"]["name"])
    current = get(world, name)
    assert current is not None
    joined = linked_node(world, current, **node)
    world.advance(5)
    assert status_of(get(world, name), "Registered") == "True"
    return name, str(joined["metadata"]["name"])


def deleted_and_gone(world: World, name: str) -> bool:
    world.cluster.delete("NodeClaim", name)
    return world.run_until(lambda: not exists(world, name), timeout=300)


@pytest.mark.parametrize("managed", [True, False], ids=["managed", "unmanaged"])
def test_deleting_a_nodeclaim_deletes_its_node_and_instance(managed: bool) -> None:
    """Entries "should delete the node and the CloudProvider NodeClaim when NodeClaim
    deletion is triggered" and "should ignore NodeClaims which aren't managed by this
    Karpenter instance"."""
    world = bench()
    if not managed:
        (claim,) = create(world, nodeclaim(managed=False, requests=REQUESTS))
        name = claim["metadata"]["name"]
        world.advance(5)
        set_condition(world, "NodeClaim", name, "Registered", "True")
        node = linked_node(world, claim, provider_id="aws:///us-east-1a/i-unmanaged")
        world.cluster.delete("NodeClaim", name)
        world.advance(60)
        # Nothing put Karpenter's finalizer on it: it went at once, its Node stays.
        assert exists(world, node["metadata"]["name"], "Node")
        return
    instances_before = count("karpenter_nodeclaims_instance_termination_duration_seconds")
    total_before = count("karpenter_nodeclaims_termination_duration_seconds")
    name, node = registered(world)
    provider_id = get(world, name)["status"]["providerID"]  # type: ignore[index]
    assert deleted_and_gone(world, name)
    assert not exists(world, node, "Node")
    assert provider_id not in {i.provider_id for i in world.live_instances()}
    assert count("karpenter_nodeclaims_instance_termination_duration_seconds") == (
        instances_before + 1)
    assert count("karpenter_nodeclaims_termination_duration_seconds") == total_before + 1


def test_setting_instance_terminating_leaves_the_nodeclaim_ready() -> None:
    """It "shouldn't mark the root condition of the NodeClaim as unknown when setting the
    Termination condition"."""
    world = bench()
    name, _ = registered(world, allocatable={"cpu": "8", "memory": "80Mi", "pods": "110"})
    assert status_of(get(world, name), "Initialized") == "True"
    assert status_of(get(world, name), "Ready") == "True"
    world.cluster.delete("NodeClaim", name)
    assert world.run_until(
        lambda: status_of(get(world, name), "InstanceTerminating") == "True", timeout=300)
    assert status_of(get(world, name), "Ready") == "True"


def test_a_nodeclaim_whose_quantities_change_on_reading_is_deleted() -> None:
    """It "should delete the NodeClaim when the spec resource.Quantity values will change
    during deserialization" (memory "50000" reads back as 50k)."""
    world = bench()
    (claim,) = create(world, nodeclaim(requests={**REQUESTS, "memory": "50000"}))
    world.advance(5)
    assert status_of(get(world, claim["metadata"]["name"]), "Launched") == "True"
    assert deleted_and_gone(world, claim["metadata"]["name"])


def test_a_failed_instance_termination_is_retried() -> None:
    """It "should requeue reconciliation if cloudProvider Delete returns an error other
    than NodeClaimNotFoundError"."""
    world = bench()
    (claim,) = create(world, nodeclaim(requests=REQUESTS))
    world.advance(5)
    delete = world.cloud.delete
    failures: list[str] = []

    def fails_once(provider_id: str) -> Any:
        if not failures:
            failures.append(provider_id)
            raise CloudProviderError("ec2:TerminateInstances: fake error")
        return delete(provider_id)

    world.cloud.delete = fails_once  # type: ignore[method-assign]
    assert deleted_and_gone(world, claim["metadata"]["name"])
    assert failures


def test_the_finalizer_stays_while_the_instance_is_still_there() -> None:
    """It "should not remove the finalizer and terminate the NodeClaim if the cloudProvider
    instance is still around"."""
    world = bench()
    (claim,) = create(world, nodeclaim(requests=REQUESTS))
    name = claim["metadata"]["name"]
    world.advance(5)
    world.cloud.delete = lambda provider_id: None  # type: ignore[method-assign,assignment]
    world.cluster.delete("NodeClaim", name)
    world.advance(60)
    assert exists(world, name)
    assert status_of(get(world, name), "InstanceTerminating") == "True"


def test_every_node_of_the_nodeclaim_is_deleted() -> None:
    """It "should delete multiple Nodes if multiple Nodes map to the NodeClaim"."""
    world = bench()
    name, first = registered(world)
    claim = get(world, name)
    assert claim is not None
    others = [linked_node(world, claim, name=f"{first}-{i}")["metadata"]["name"]
              for i in (2, 3)]
    assert deleted_and_gone(world, name)
    assert not any(exists(world, node, "Node") for node in [first, *others])


def test_the_nodeclaim_waits_for_its_node_to_go() -> None:
    """It "should not delete the NodeClaim until all the Nodes are removed" (the Node's own
    finalizer holds it until drained)."""
    world = bench()
    name, node = registered(world)
    world.cluster.patch("Node", node, {"metadata": {"finalizers": ["test/hold"]}})
    world.cluster.delete("NodeClaim", name)
    world.advance(60)
    assert exists(world, name) and exists(world, node, "Node")
    world.cluster.patch("Node", node, {"metadata": {"finalizers": None}})
    assert world.run_until(lambda: not exists(world, name), timeout=300)
    assert not exists(world, node, "Node")


def test_an_unlaunched_nodeclaim_does_not_ask_the_cloud_to_terminate() -> None:
    """It "should not call Delete() on the CloudProvider if the NodeClaim hasn't been
    launched yet"."""
    world = bench()
    world.cloud.create = lambda *args: (_ for _ in ()).throw(  # type: ignore[method-assign]
        CloudProviderError("ec2:CreateFleet: not now"))
    deletes: list[str] = []
    world.cloud.delete = deletes.append  # type: ignore[method-assign,assignment]
    (claim,) = create(world, nodeclaim(requests=REQUESTS))
    world.advance(1)
    assert deleted_and_gone(world, claim["metadata"]["name"])
    assert deletes == []


def test_nodes_without_provider_ids_are_left_alone() -> None:
    """It "should not delete nodes without provider ids if the NodeClaim hasn't been
    launched yet"."""
    world = bench()
    for i in range(10):
        world.cluster.create({"apiVersion": "v1", "kind": "Node",
                              "metadata": {"name": f"bare-{i}"}, "spec": {}})
    world.cloud.create = lambda *args: (_ for _ in ()).throw(  # type: ignore[method-assign]
        CloudProviderError("ec2:CreateFleet: not now"))
    (claim,) = create(world, nodeclaim(requests=REQUESTS))
    world.advance(1)
    assert deleted_and_gone(world, claim["metadata"]["name"])
    assert all(exists(world, f"bare-{i}", "Node") for i in range(10))


def test_without_a_termination_grace_period_no_deadline_is_recorded() -> None:
    """It "should not annotate the node if the NodeClaim has no terminationGracePeriod"."""
    world = bench()
    name, node = registered(world)
    world.cluster.patch("Node", node, {"metadata": {"finalizers": ["test/hold"]}})
    world.cluster.delete("NodeClaim", name)
    world.advance(5)
    assert TERMINATION_TIMESTAMP not in (get(world, name)["metadata"].get(  # type: ignore
        "annotations") or {})


def test_a_termination_grace_period_records_the_deadline() -> None:
    """It "should annotate the node if the NodeClaim has a terminationGracePeriod"."""
    world = bench()
    name, node = registered(world, nodeclaim(requests=REQUESTS,
                                             terminationGracePeriod="5m0s"))
    world.cluster.patch("Node", node, {"metadata": {"finalizers": ["test/hold"]}})
    world.cluster.delete("NodeClaim", name)
    world.advance(5)
    assert TERMINATION_TIMESTAMP in get(world, name)["metadata"]["annotations"]  # type: ignore


def test_a_recorded_deadline_is_kept() -> None:
    """It "should not change the annotation if the NodeClaim has a terminationGracePeriod
    and the annotation already exists"."""
    world = bench()
    recorded = "2024-04-01T12:00:00-05:00"
    name, node = registered(world, nodeclaim(
        requests=REQUESTS, terminationGracePeriod="5m0s",
        annotations={TERMINATION_TIMESTAMP: recorded}))
    world.cluster.patch("Node", node, {"metadata": {"finalizers": ["test/hold"]}})
    world.cluster.delete("NodeClaim", name)
    world.advance(5)
    annotations = get(world, name)["metadata"]["annotations"]  # type: ignore[index]
    assert annotations[TERMINATION_TIMESTAMP] == recorded


def test_an_unregistered_nodeclaim_leaves_nodes_alone() -> None:
    """It "should not delete Nodes if the NodeClaim is not registered" (the Node's provider
    ID is not the NodeClaim's, so it never registers)."""
    world = bench()
    (claim,) = create(world, nodeclaim(requests=REQUESTS))
    name = claim["metadata"]["name"]
    world.advance(5)
    node = linked_node(world, claim, provider_id="aws:///us-east-1a/i-0somebodyelse")
    world.advance(5)
    assert status_of(get(world, name), "Registered") == "Unknown"
    assert deleted_and_gone(world, name)
    assert exists(world, node["metadata"]["name"], "Node")
