"""The core stories again, through the operator's driver in real time: watch events feed
work queues, reconciles run on the loop thread, timers fire for requeues."""

from __future__ import annotations

from nodewright import metrics
from nodewright.cluster.api import ConflictError
from nodewright.cluster.kube.access import allows, permissions
from tests.kube.waiting import eventually
from tests.operator.conftest import WORKSHOP
from tests.operator.world import RealTimeWorld


def total(sample_name: str) -> float:
    """The sum of a metric's samples over every label set (metrics are process-wide)."""
    return sum(sample.value for family in metrics.REGISTRY.collect()
               for sample in family.samples if sample.name == sample_name)


def test_the_workshop_scales_from_zero_to_five_to_twelve(world: RealTimeWorld) -> None:
    created_before = total("karpenter_nodeclaims_created_total")
    operator = world.operator("nodewright-a", leader_elect=False)
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    world.wait_until_running(pods=5, nodes=1)
    assert world.instance_types() == ["m5.large"]

    world.scale("inflate", 12)
    world.wait_until_running(pods=12, nodes=2)
    assert world.instance_types() == ["m5.large", "m5.large"]
    # Conflicts are part of optimistic concurrency; anything else is a bug.
    assert [error for _, _, error in operator.driver.errors
            if not isinstance(error, ConflictError)] == []
    assert total("karpenter_nodeclaims_created_total") - created_before == 2


def test_the_installed_rbac_covers_every_call_the_controllers_make(
        world: RealTimeWorld) -> None:
    world.operator("nodewright-a")  # with leader election
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    world.wait_until_running(pods=5, nodes=1)
    world.scale("inflate", 0)
    world.cluster.delete("NodePool", "default")  # the nodes are drained and terminated
    eventually(lambda: not world.instance_types(), "the instance to be terminated")
    verbs = {(r.verb, r.resource) for r in world.controller_requests}
    assert {("create", "nodeclaims"), ("patch", "nodes"), ("create", "leases"),
            ("update", "leases"), ("create", "events")} <= verbs
    refused = {r for r in world.controller_requests
               if not allows(permissions("aws"), r, own_namespace="kube-system")}
    assert refused == set()
    # With --cloud sim the controller also registers the simulated nodes itself.
    refused = {r for r in world.cloud_requests
               if not allows(permissions("sim"), r, own_namespace="kube-system")}
    assert refused == set()

