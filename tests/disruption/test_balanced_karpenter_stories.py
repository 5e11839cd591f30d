"""Karpenter v1.14.1 pkg/controllers/disruption/balanced_integration_test.go (and the two
ShouldDisrupt Its of balanced_scoring_test.go), told as stories on the workshop with
consolidationPolicy Balanced: m5.2xlarge nodes kept by 6-cpu hogs each end up running one
1Gi pod, and Balanced consolidation replaces, merges or deletes them as Karpenter's
scoring approves, telling ConsolidationApproved with the score; a budget of 0 % or a node
that cannot be made cheaper is left alone."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.candidates import consolidation_order
from nodewright.controllers.disruption.methods.consolidation import consolidation_candidates
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors
from tests.disruption.balanced_fixtures import candidate, nodepool, pods, priced
from tests.disruption.helpers import HOGS, nodepool_with, started
from tests.disruption.test_consolidation_karpenter_budgets import spread_then_shrink
from tests.harness import NODE_CLASS, World, node_pool
from tests.static.helpers import workload

C5_LARGE = 0.085  # on-demand, us-east-1
M5_2XLARGE = 0.384
BALANCED = {"consolidationPolicy": "Balanced", "consolidateAfter": "0s",
            "budgets": [{"nodes": "100%"}]}


def oversized_nodes(world: World, nodes: int, disruption: dict[str, Any] | None = None,
                    inflated: int | None = None) -> list[str]:
    """`nodes` m5.2xlarge of a Balanced NodePool, `inflated` (default: all) of them left
    running one 1Gi inflate pod once the hogs go; the nodes' names."""
    world.apply(WORKSHOP, nodepool_with(disruption=disruption or BALANCED), HOGS % nodes)
    assert world.settle()
    assert len(world.nodes()) == nodes
    world.scale("inflate", nodes if inflated is None else inflated)
    world.advance(5)
    hosts = {p["spec"].get("nodeName") for p in world.pods(labels={"app": "inflate"})}
    assert len(hosts) == (nodes if inflated is None else inflated)
    world.scale("hog", 0)
    return sorted(objects.name(n) for n in world.nodes())


def approvals(world: World) -> list[str]:
    return [e.get("note", "") for e in world.events(reason=ex.CONSOLIDATION_APPROVED)]


def consolidated(world: World) -> list[ex.Decision]:
    return [d for d in started(world) if d.method in (ex.SINGLE_NODE, ex.MULTI_NODE)]


def test_an_oversized_node_is_replaced_with_the_score_told(world: World) -> None:
    """balanced_integration_test.go Single-Node: It("should approve replacing an oversized
    node")."""
    [original] = oversized_nodes(world, 1)
    assert world.settle()
    [node] = world.nodes()
    assert objects.name(node) != original
    assert objects.labels(node)["node.kubernetes.io/instance-type"] != "m5.2xlarge"
    assert any("k: 2" in note and ">= threshold 0.50" in note for note in approvals(world))
    expect_no_controller_errors(world)


def test_a_well_packed_node_is_left_alone(world: World) -> None:
    """balanced_integration_test.go Single-Node: It("should reject replacing a well-packed
    node"): the cheapest type, full."""
    world.apply(NODE_CLASS, node_pool(types=["m5.large"], disruption=BALANCED),
                workload("packed", 2, "800m"))
    assert world.settle()
    names = sorted(objects.name(n) for n in world.nodes())
    world.advance(600)
    assert sorted(objects.name(n) for n in world.nodes()) == names
    assert consolidated(world) == [] and approvals(world) == []


def test_underutilized_nodes_are_merged(world: World) -> None:
    """balanced_integration_test.go Multi-Node: It("should approve consolidating multiple
    underutilized nodes")."""
    originals = oversized_nodes(world, 3)
    assert world.settle()
    merged = [d for d in started(world) if d.method == ex.MULTI_NODE]
    assert len({d.node for d in merged}) >= 2
    assert len(set(originals) & {objects.name(n) for n in world.nodes()}) < 3


def test_a_zero_budget_blocks_an_approvable_move(world: World) -> None:
    """balanced_integration_test.go Budgets: It("should block disruption when budget is
    0%")."""
    [original] = oversized_nodes(world, 1, {**BALANCED, "budgets": [{"nodes": "0%"}]})
    world.advance(600)
    assert [objects.name(n) for n in world.nodes()] == [original]
    assert consolidated(world) == [] and approvals(world) == []


def test_the_empty_node_goes_first_under_a_budget_of_one(world: World) -> None:
    """balanced_integration_test.go Priority Ordering: It("should consolidate empty nodes
    before non-empty nodes when budget is limited")."""
    oversized_nodes(world, 2, {**BALANCED, "budgets": [{"nodes": "1"}]}, inflated=1)
    [busy] = {p["spec"]["nodeName"] for p in world.pods(labels={"app": "inflate"})}
    assert world.run_until(lambda: bool(started(world)), timeout=600)
    first = started(world)[0]
    assert first.method == ex.EMPTINESS and first.node != busy


def test_a_pod_that_fits_elsewhere_makes_a_delete_saving_the_whole_node(world: World) -> None:
    """balanced_integration_test.go Decision and Savings: It("should choose delete when pods
    fit on existing nodes"): two c5.large (the cheapest type) with an 800m pod each, either
    takes the other's; the savings are the deleted node's price."""
    spread_then_shrink(world, 2, BALANCED)
    assert world.run_until(lambda: bool(consolidated(world)), timeout=600)
    first = consolidated(world)[0]
    assert first.decision == "delete"
    assert first.savings == pytest.approx(C5_LARGE, abs=0.0001)


def test_a_pod_that_fits_nowhere_makes_a_replace_saving_the_difference(world: World) -> None:
    """balanced_integration_test.go Decision and Savings: It("should choose replace when pods
    need a new cheaper node")."""
    oversized_nodes(world, 1)
    assert world.run_until(lambda: bool(consolidated(world)), timeout=600)
    first = consolidated(world)[0]
    assert first.decision == "replace"
    assert first.savings is not None and 0 < first.savings < M5_2XLARGE


def test_multi_node_tries_the_best_ratio_first() -> None:
    """balanced_integration_test.go Ratio Sort in Multi-Node: It("should select
    highest-ratio candidates first when nodes have heterogeneous prices and pod counts"):
    multi-node consolidation's windows are prefixes of this order, so the $8 node with one
    pod (ratio 4) is in every window and comes before the $1.2 node with eight (0.13)."""
    pool = nodepool("balanced")
    a = candidate("node-a", pool, priced("expensive", 16.0), pods("a", 10))
    b = candidate("node-b", pool, priced("moderate", 8.0), pods("b", 1))
    c = candidate("node-c", pool, priced("cheap", 1.2), pods("c", 8))
    assert [x.name for x in consolidation_order([a, b, c])] == ["node-b", "node-a", "node-c"]


def test_balanced_and_greedy_pools_consolidate_side_by_side(world: World) -> None:
    """balanced_integration_test.go Mixed-Policy NodePools: It("should apply scoring to
    Balanced pools while non-Balanced pools consolidate normally"): each pool's oversized
    node is replaced; only the Balanced one tells its score."""
    policies = {"balanced": "Balanced", "greedy": "WhenEmptyOrUnderutilized"}
    world.apply(NODE_CLASS, *(node_pool(name, types=["m5.large", "m5.2xlarge"], disruption={
        "consolidationPolicy": policy, "consolidateAfter": "0s"})
        for name, policy in policies.items()))
    for name in policies:
        world.apply(workload(f"hog-{name}", 1, "6", node_selector={"karpenter.sh/nodepool": name}))
    assert world.settle()
    originals = {objects.name(n) for n in world.nodes()}
    for name in policies:
        world.apply(workload(f"app-{name}", 1, "500m",
                             node_selector={"karpenter.sh/nodepool": name}))
    world.advance(5)
    for name in policies:
        world.scale(f"hog-{name}", 0)
    assert world.settle()
    assert not originals & {objects.name(n) for n in world.nodes()}
    assert world.instance_types() == ["m5.large", "m5.large"]
    scored = world.events(reason=ex.CONSOLIDATION_APPROVED)
    assert scored and all("k: 2" in e["note"] for e in scored)
    assert {objects.labels(n)["karpenter.sh/nodepool"] for n in world.nodes()} == set(policies)


@pytest.mark.parametrize("policy", ["Balanced", "WhenEmptyOrUnderutilized"])
def test_consolidation_considers_a_nodes_of_either_policy(world: World, policy: str) -> None:
    """balanced_scoring_test.go ShouldDisrupt: It("should accept Balanced candidates") and
    It("should accept WhenEmptyOrUnderutilized candidates"): a consolidatable node with
    pods, of a known type, zone and capacity type, is a consolidation candidate."""
    world.apply(NODE_CLASS, node_pool(types=["m5.large"], disruption={
        "consolidationPolicy": policy, "consolidateAfter": "0s"}), workload("packed", 2, "800m"))
    assert world.settle()
    assert world.controllers.disruption is not None
    current = world.controllers.disruption.disruption.new_pass(world.clock.now())
    found = consolidation_candidates(current, ex.SINGLE_NODE)
    assert [c.name for c in found] == [objects.name(n) for n in world.nodes()]
