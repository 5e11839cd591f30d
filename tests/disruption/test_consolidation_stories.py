"""Consolidation stories on the in-memory cluster and the simulated EC2: the workshop
continues (12 -> 5 replicas deletes a node, 5 -> 1 replaces the m5.large by a c5.large),
several nodes merge into one cheaper node, and every decision is explained."""

from __future__ import annotations

from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import (
    expect_consistent,
    expect_instance_types,
    expect_no_controller_errors,
    expect_running,
)
from tests.disruption.helpers import decisions, nodepool_with, started
from tests.harness import World

R5_ALLOWED = {"karpenter.k8s.aws/instance-category": ["c", "m", "r"],
              "karpenter.k8s.aws/instance-family": ["c5", "m5", "r5"]}


def test_the_workshop_consolidates_twelve_to_five_by_delete_and_five_to_one_by_replace(
    world: World,
) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 12)
    assert world.settle()
    expect_instance_types(world, "m5.large", "m5.large")

    world.scale("inflate", 5)
    assert world.settle()
    expect_instance_types(world, "m5.large")
    expect_running(world, 5)
    assert world.pending_pods() == []
    [deleted] = started(world)
    assert deleted.decision == "delete"

    world.scale("inflate", 1)
    assert world.settle()
    expect_instance_types(world, "c5.large")
    expect_running(world, 1)
    assert world.pending_pods() == []
    replaced = started(world)[-1]
    assert (replaced.method, replaced.decision) == (ex.SINGLE_NODE, "replace")
    assert "c5.large" in replaced.message
    expect_consistent(world)
    expect_no_controller_errors(world)


def test_two_m5_large_merge_into_one_r5_large_when_r5_is_allowed(world: World) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 12)
    assert world.settle()
    expect_instance_types(world, "m5.large", "m5.large")

    # Merging two nodes disrupts two at once: the default budget (10% of two nodes,
    # rounded up: one) would not allow it.
    world.apply(nodepool_with(requirements=R5_ALLOWED, disruption={"budgets": [{"nodes": "2"}]}))
    assert world.settle()

    expect_instance_types(world, "r5.large")
    expect_running(world, 12)
    merged = started(world)[-1]
    assert (merged.method, merged.decision) == (ex.MULTI_NODE, "replace")
    assert len({d.node for d in started(world)}) == 2
    expect_consistent(world)
    expect_no_controller_errors(world)


def test_a_node_that_cannot_get_cheaper_is_kept_and_the_prices_are_named(world: World) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    [node] = world.nodes()
    [verdict] = decisions(world, node["metadata"]["name"])[-1:]
    assert verdict.outcome == ex.KEPT
    assert verdict.cause == ex.CAUSE_NO_CHEAPER
    assert "m5.large" in verdict.message and "$0.0960/h" in verdict.message
    notes = [e["note"] for e in world.events(ex.UNCONSOLIDATABLE)
             if e["regarding"]["name"] == node["metadata"]["name"]]
    assert any("cheaper" in note for note in notes), notes


def test_a_node_running_a_pod_that_claims_devices_is_not_consolidated(world: World) -> None:
    """IGNORE_DRA_REQUESTS=true (Karpenter's default): its scheduler places no pod with
    resource claims (scheduler.go add, DRAError), so a simulation that must move one fails
    and the node stays. Without the claim the node is replaced by a c5.large (the story
    above)."""
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    (node,) = world.nodes()
    world.apply({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "trainer", "namespace": "default"},
        "spec": {"nodeName": node["metadata"]["name"],
                 "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
                 "containers": [{"name": "app", "resources": {
                     "requests": {"cpu": "100m"}, "claims": [{"name": "gpu"}]}}]}})
    world.scale("inflate", 1)
    assert world.settle()
    expect_instance_types(world, "m5.large")
    assert not [command for command in started(world) if command.decision == "replace"]
