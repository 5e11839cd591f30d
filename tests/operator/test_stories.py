"""The core stories again, through the operator's driver in real time: watch events feed
work queues, reconciles run on the loop thread, timers fire for requeues."""

from __future__ import annotations

from nodewright.cluster.kube.access import permissions
from tests.controllers.expectations import (
    claim_names,
    expect_consistent,
    expect_no_controller_errors,
    expect_running,
)
from tests.controllers.metric_samples import samples
from tests.controllers.test_termination_story import PDB
from tests.kube.waiting import eventually
from tests.operator.conftest import WORKSHOP
from tests.operator.world import RealTimeWorld
from tests.support.rbac import allows


def total(sample_name: str) -> float:
    """The sum of a metric's samples over every label set (metrics are process-wide)."""
    return sum(sample.value for sample in samples(sample_name))


def test_the_workshop_scales_from_zero_to_five_to_twelve_and_back_to_five(
        world: RealTimeWorld) -> None:
    created_before = total("karpenter_nodeclaims_created_total")
    world.operator("nodewright-a", leader_elect=False)
    world.apply(WORKSHOP)
    world.apply(PDB)
    world.cluster.patch("NodePool", "default",
                        {"spec": {"disruption": {"consolidateAfter": "1s"}}})
    left_on_terminated = world.pods_at_termination()

    world.scale("inflate", 5)
    world.wait_until_running(pods=5, nodes=1)
    assert world.instance_types() == ["m5.large"]

    world.scale("inflate", 12)
    world.wait_until_running(pods=12, nodes=2)
    assert world.instance_types() == ["m5.large", "m5.large"]
    assert total("karpenter_nodeclaims_created_total") - created_before == 2

    # Deleting a NodeClaim drains its node through the Eviction API within the PDB (one
    # pod unavailable at a time: the other evictions are answered 429 and retried).
    fewest_running = world.fewest_running()
    victim = max(world.registered_nodeclaims(2), key=lambda claim: sum(
        1 for pod in world.running_pods()
        if pod["spec"]["nodeName"] == claim["status"]["nodeName"]))
    world.cluster.delete("NodeClaim", victim["metadata"]["name"])
    eventually(lambda: victim["metadata"]["name"] not in claim_names(world)
               and len(world.running_pods()) == 12 and len(world.ready_nodes()) == 2,
               "the NodeClaim to be drained and replaced")
    assert fewest_running[0] >= 11, "the drain broke the PodDisruptionBudget"
    refused = [e for e in world.events("FailedDraining") if "violates a PDB" in e["note"]]
    assert refused, "no eviction was refused by the PDB (the story did not test retries)"
    assert world.events("Evicted")

    # Five pods fit one m5.large: consolidation removes the other.
    world.scale("inflate", 5)
    eventually(lambda: world.instance_types() == ["m5.large"]
               and len(world.running_pods()) == 5 and len(world.nodeclaims()) == 1,
               f"one m5.large running 5 pods (now {world.instance_types()})")
    assert len(left_on_terminated) == 2
    assert all(left == [] for left in left_on_terminated.values()), (
        f"instances terminated before their drain ended: {left_on_terminated}")
    world.settle()
    with world.lock:
        expect_running(world, 5)
        expect_consistent(world)
        expect_no_controller_errors(world)


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
