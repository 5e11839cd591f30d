"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_test.go, Context("Budgets") and
the budget half of Context("Metrics"), told as stories: ten nodes (or three NodePools of
three) whose pods leave, or fit on fewer nodes; the budget says how many go at once, the
`karpenter_nodepools_allowed_disruptions` gauge says the same, and a method held back by a
budget is not marked consolidated: it finds its nodes again once the budget opens, with
nothing else in the cluster changed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.controller import DisruptionOptions
from nodewright.controllers.disruption.methods.disruption_pass import MethodOptions
from nodewright.controllers.options import ControllerOptions
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors, expect_running
from tests.controllers.metric_samples import sample_value
from tests.disruption.helpers import BIG, nodepool_with, started
from tests.harness import World

FILLER = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: filler, namespace: default}
spec:
  replicas: %d
  selector: {matchLabels: {app: filler}}
  template:
    metadata: {labels: {app: filler}}
    spec:
      nodeSelector: {type: karpenter}
      terminationGracePeriodSeconds: %d
      containers: [{name: app, resources: {requests: {cpu: 800m}}}]
"""


def allowed_disruptions(pool: str, reason: str) -> float | None:
    return sample_value("karpenter_nodepools_allowed_disruptions",
                                     {"nodepool": pool, "reason": reason})


def fleet(world: World, nodes: int, disruption: dict[str, Any]) -> set[str]:
    """`nodes` c5.large, one `big` pod each (anti-affinity spreads them); their NodeClaims."""
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "0s", **disruption}),
                BIG % nodes)
    assert world.settle()
    assert len(world.nodes()) == nodes
    return {objects.name(c) for c in world.nodeclaims()}


def spread_then_shrink(world: World, nodes: int, disruption: dict[str, Any],
                       grace: int = 0) -> set[str]:
    """`nodes` c5.large, each running one 800m `filler` pod (kube-scheduler spreads them
    while `big` holds the nodes), then `big` goes: two filler pods fit on a node. The filler
    pods take `grace` seconds to stop."""
    originals = fleet(world, nodes, disruption)
    world.apply(FILLER % (nodes, grace))
    world.advance(5)
    hosts = [p["spec"].get("nodeName") for p in world.pods(labels={"app": "filler"})]
    assert len(set(hosts)) == nodes, hosts
    world.scale("big", 0)
    return originals


def commands_by_time(world: World, method: str) -> list[int]:
    """How many nodes each started command of `method` took, in order."""
    times = [d.time for d in started(world) if d.method == method]
    return [times.count(t) for t in sorted(set(times))]


def watch_disrupting(world: World, originals: set[str], seconds: int) -> int:
    """Advance `seconds`; the most original NodeClaims disrupted and not yet terminated at
    once (what a budget counts)."""
    most = 0
    for _ in range(seconds):
        world.advance(1)
        disrupting = sum(
            1 for c in world.nodeclaims() if objects.name(c) in originals
            and not objects.condition_is_true(c, "InstanceTerminating")
            and (objects.is_deleting(c) or objects.condition_is_true(c, "DisruptionReason")))
        most = max(most, disrupting)
    return most


@pytest.mark.parametrize(("budget", "allowed", "first_command"), [
    ("30%", 3, 3),
    ("100%", 10, 10),
    ("0%", 0, 0),
])
def test_empty_nodes_go_as_many_at_once_as_the_budget_allows(
        world: World, budget: str, allowed: int, first_command: int) -> None:
    """consolidation_test.go Budgets: It("should only allow 3 empty nodes to be disrupted"),
    It("should allow all empty nodes to be disrupted"), It("should allow no empty nodes to be
    disrupted")."""
    originals = fleet(world, 10, {"budgets": [{"nodes": budget}]})
    world.scale("big", 0)
    # The gauge as the first command starts (each wave of deletions shrinks the pool).
    world.run_until(lambda: bool(started(world)), timeout=60, step=1)
    assert allowed_disruptions("default", "Empty") == allowed
    emptied = commands_by_time(world, ex.EMPTINESS)
    assert (emptied[0] if emptied else 0) == first_command
    if not allowed:
        assert {objects.name(c) for c in world.nodeclaims()} == originals
        return
    assert world.run_until(lambda: not world.nodes(), timeout=1800)
    assert max(commands_by_time(world, ex.EMPTINESS)) == first_command
    expect_no_controller_errors(world)


def test_multi_node_consolidation_deletes_three_at_a_time(world: World) -> None:
    """consolidation_test.go Budgets: It("should only allow 3 nodes to be deleted in multi node
    consolidation delete"). Karpenter's one pass deletes 3 of 10; here the freed budget takes
    the rest a few at a time until the pods sit two to a node."""
    originals = spread_then_shrink(world, 10, {"budgets": [{"nodes": "30%"}]})
    assert watch_disrupting(world, originals, 900) == 3
    assert len(world.nodes()) == 5
    multi = commands_by_time(world, ex.MULTI_NODE)
    assert multi[0] == 3 and max(multi) <= 3
    expect_running(world, 10, {"app": "filler"})
    expect_no_controller_errors(world)


def test_single_node_consolidation_deletes_three_at_a_time(
        make_world: Callable[..., World]) -> None:
    """consolidation_test.go Budgets: It("should only allow 3 nodes to be deleted in single node
    consolidation delete"). Multi-node consolidation is given no candidates, so single-node
    consolidation is what deletes: one node per command, three commands in flight at most (the
    pods take two minutes to stop, so commands overlap)."""
    world = make_world(options=ControllerOptions(disruption=DisruptionOptions(
        methods=MethodOptions(multi_node_max_candidates=0))))
    originals = spread_then_shrink(world, 10, {"budgets": [{"nodes": "30%"}]}, grace=120)
    assert watch_disrupting(world, originals, 900) == 3
    assert len(world.nodes()) == 5
    assert set(commands_by_time(world, ex.SINGLE_NODE)) == {1}
    assert commands_by_time(world, ex.MULTI_NODE) == []
    expect_running(world, 10, {"app": "filler"})


POOLS = ("default", "second", "third")


def three_pools_of_three(world: World, budget: str) -> None:
    manifests: list[Any] = [WORKSHOP]
    for pool in POOLS:
        body = nodepool_with(disruption={"consolidateAfter": "0s",
                                         "budgets": [{"nodes": budget}]},
                             labels={"type": f"karpenter-{pool}"})
        body["metadata"]["name"] = pool
        manifests.append(body)
        manifests.append((BIG % 3).replace("big", f"big-{pool}").replace(
            "type: karpenter}", f"type: karpenter-{pool}}}"))
    world.apply(*manifests)
    assert world.settle()
    assert len(world.nodes()) == 9
    for pool in POOLS:
        world.scale(f"big-{pool}", 0)


@pytest.mark.parametrize(("budget", "allowed"), [("50%", 2), ("100%", 3)])
def test_each_nodepools_budget_holds_for_its_own_nodes(
        world: World, budget: str, allowed: int) -> None:
    """consolidation_test.go Budgets: It("should allow 2 nodes from each nodePool to be
    deleted") (half of 3 rounds up to 2) and It("should allow all nodes from each nodePool to
    be deleted")."""
    three_pools_of_three(world, budget)
    assert world.run_until(lambda: bool(started(world)), timeout=60, step=1)
    emptied = [d for d in started(world) if d.method == ex.EMPTINESS]
    first = min(d.time for d in emptied)
    for pool in POOLS:
        assert allowed_disruptions(pool, "Empty") == allowed
        assert sum(1 for d in emptied if d.nodepool == pool and d.time == first) == allowed
    assert world.run_until(lambda: not world.nodes(), timeout=1800)


def window_closing_in_an_hour() -> dict[str, Any]:
    """A zero budget for the hour starting at the World's midnight start."""
    return {"budgets": [{"nodes": "0", "schedule": "0 0 * * *", "duration": "1h"}]}


def reopens(world: World, done: Callable[[], bool]) -> float:
    """Run past the zero-budget window; the seconds after it closed until `done()`."""
    assert world.run_until(lambda: world.clock.now().hour >= 1, timeout=7200)
    assert not done()
    closed = world.clock.now()
    assert world.run_until(done, timeout=600)
    return (world.clock.now() - closed).total_seconds()


@pytest.mark.parametrize("pools", [1, 3])
def test_emptiness_held_by_a_budget_is_not_marked_consolidated(world: World, pools: int) -> None:
    """consolidation_test.go Budgets: It("should not mark empty node consolidated if the
    candidates can't be disrupted due to budgets with one nodepool") and It("... if all
    candidates can't be disrupted due to budgets with many nodepools"). Nothing changes in the
    cluster when the window closes: a method marked consolidated would not look again."""
    if pools == 1:
        fleet(world, 3, window_closing_in_an_hour())
        world.scale("big", 0)
    else:
        three_pools_of_three(world, "0")
        for pool in POOLS:
            body = nodepool_with(disruption={"consolidateAfter": "0s",
                                             **window_closing_in_an_hour()},
                                 labels={"type": f"karpenter-{pool}"})
            body["metadata"]["name"] = pool
            world.apply(body)
    world.advance(120)
    assert started(world) == []
    assert reopens(world, lambda: bool(started(world))) <= 60
    assert {d.method for d in started(world)} == {ex.EMPTINESS}


def test_multi_node_consolidation_held_by_a_budget_is_not_marked_consolidated(
        world: World) -> None:
    """consolidation_test.go Budgets: It("should not mark multi node consolidated if the
    candidates can't be disrupted due to budgets with one nodepool")."""
    spread_then_shrink(world, 4, window_closing_in_an_hour())
    world.advance(120)
    assert started(world) == []
    assert reopens(world, lambda: bool(started(world))) <= 60
    assert started(world)[0].method == ex.MULTI_NODE


def test_single_node_consolidation_held_by_a_budget_is_not_marked_consolidated(
        make_world: Callable[..., World]) -> None:
    """consolidation_test.go Budgets: It("should not mark single node consolidated if the
    candidates can't be disrupted due to budgets with one nodepool")."""
    world = make_world(options=ControllerOptions(disruption=DisruptionOptions(
        methods=MethodOptions(multi_node_max_candidates=0))))
    spread_then_shrink(world, 4, window_closing_in_an_hour())
    world.advance(120)
    assert started(world) == []
    assert reopens(world, lambda: bool(started(world))) <= 60
    assert started(world)[0].method == ex.SINGLE_NODE


def three_pools_spread_then_shrink(world: World) -> None:
    """Three NodePools of two c5.large each, all with a zero budget until 01:00; six 800m
    `filler` pods (any pool) one to a node, then every `big` pod goes."""
    manifests: list[Any] = [WORKSHOP]
    for pool in POOLS:
        body = nodepool_with(disruption={"consolidateAfter": "0s",
                                         **window_closing_in_an_hour()},
                             labels={"type": f"karpenter-{pool}"})
        body["metadata"]["name"] = pool
        manifests.append(body)
        manifests.append((BIG % 2).replace("big", f"big-{pool}").replace(
            "type: karpenter}", f"type: karpenter-{pool}}}"))
    world.apply(*manifests)
    assert world.settle()
    assert len(world.nodes()) == 6
    world.apply((FILLER % (6, 0)).replace("      nodeSelector: {type: karpenter}\n", ""))
    world.advance(5)
    hosts = [p["spec"].get("nodeName") for p in world.pods(labels={"app": "filler"})]
    assert len(set(hosts)) == 6, hosts
    for pool in POOLS:
        world.scale(f"big-{pool}", 0)


def test_multi_node_consolidation_held_by_every_pools_budget_is_not_marked_consolidated(
        world: World) -> None:
    """consolidation_test.go Budgets: It("should not mark multi node consolidated if all
    candidates can't be disrupted due to budgets with many nodepools")."""
    three_pools_spread_then_shrink(world)
    world.advance(120)
    assert started(world) == []
    assert reopens(world, lambda: bool(started(world))) <= 60
    assert started(world)[0].method == ex.MULTI_NODE


def test_single_node_consolidation_held_by_every_pools_budget_is_not_marked_consolidated(
        make_world: Callable[..., World]) -> None:
    """consolidation_test.go Budgets: It("should not mark single node consolidated if all
    candidates can't be disrupted due to budgets with many nodepools")."""
    world = make_world(options=ControllerOptions(disruption=DisruptionOptions(
        methods=MethodOptions(multi_node_max_candidates=0))))
    three_pools_spread_then_shrink(world)
    world.advance(120)
    assert started(world) == []
    assert reopens(world, lambda: bool(started(world))) <= 60
    assert started(world)[0].method == ex.SINGLE_NODE
