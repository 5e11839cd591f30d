"""The knobs of consolidation, as stories: consolidateAfter Never, the WhenEmpty policy,
the SpotToSpotConsolidation gate; and NodeClaims stamped by another hash version, which
drift nothing."""

from __future__ import annotations

from collections.abc import Callable

from nodewright.api import hashes
from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.disruption.controller import DisruptionOptions
from nodewright.controllers.disruption.methods.disruption_pass import MethodOptions
from nodewright.controllers.options import ControllerOptions
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_instance_types, expect_no_controller_errors
from tests.disruption.helpers import decisions, nodepool_with, started
from tests.harness import World

SPOT_M5 = {"karpenter.sh/capacity-type": ["spot"],
           "karpenter.k8s.aws/instance-category": ["c", "m", "r", "t"],
           "karpenter.k8s.aws/instance-family": ["c5", "m5", "r5", "t3", "c5a", "m5a",
                                                  "r5a", "t3a", "c6i", "m6i", "r6i", "c6a",
                                                  "m6a", "r6a", "c5n", "m5n", "r5n", "m5d"]}


def last_verdict(world: World) -> ex.Decision:
    [node] = world.nodes()
    return decisions(world, objects.name(node))[-1]


def test_consolidate_after_never_keeps_even_an_oversized_node(world: World) -> None:
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidateAfter": "Never"}))
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 1)
    assert world.settle()
    expect_instance_types(world, "m5.large")
    verdict = last_verdict(world)
    assert verdict.cause == ex.CAUSE_CONSOLIDATION_DISABLED
    assert "consolidation disabled" in verdict.message
    [claim] = world.nodeclaims()
    assert objects.condition(claim, "Consolidatable") is None


def test_when_empty_only_removes_empty_nodes(world: World) -> None:
    world.apply(WORKSHOP, nodepool_with(disruption={"consolidationPolicy": "WhenEmpty"}))
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 1)
    assert world.settle()
    expect_instance_types(world, "m5.large")
    assert last_verdict(world).cause == ex.CAUSE_POLICY
    world.scale("inflate", 0)
    assert world.settle()
    expect_instance_types(world)
    assert started(world)[-1].method == ex.EMPTINESS
    expect_no_controller_errors(world)


def spot_world(make_world: Callable[..., World], gate: bool) -> World:
    options = ControllerOptions(disruption=DisruptionOptions(
        methods=MethodOptions(spot_to_spot=gate)))
    world = make_world(options=options)
    world.apply(WORKSHOP, nodepool_with(requirements=SPOT_M5))
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 1)
    assert world.settle()
    return world


def test_spot_nodes_are_not_replaced_by_spot_nodes_without_the_feature_gate(
    make_world: Callable[..., World],
) -> None:
    world = spot_world(make_world, gate=False)
    verdict = last_verdict(world)
    assert verdict.cause == ex.CAUSE_SPOT_TO_SPOT
    assert "SpotToSpotConsolidation is disabled" in verdict.message


def test_with_the_gate_spot_to_spot_needs_fifteen_cheaper_types(
    make_world: Callable[..., World],
) -> None:
    world = spot_world(make_world, gate=True)
    replaced = [d for d in started(world) if d.method == ex.SINGLE_NODE]
    if replaced:
        [claim] = world.nodeclaims()
        types = next(r for r in claim["spec"]["requirements"]
                     if r["key"] == "node.kubernetes.io/instance-type")["values"]
        assert len(types) == 15
    else:
        verdict = last_verdict(world)
        assert "requires 15 cheaper instance type options" in verdict.message
    expect_no_controller_errors(world)


def test_nodeclaims_of_another_hash_version_are_restamped_not_drifted(world: World) -> None:
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    assert world.settle()
    [claim] = world.nodeclaims()
    name = objects.name(claim)
    # As Karpenter left them: its own hash value under its own version.
    world.cluster.patch("NodeClaim", name, {"metadata": {"annotations": {
        hashes.NODEPOOL_HASH: "1234567890", hashes.NODEPOOL_HASH_VERSION: "v3"}}})
    world.cluster.patch("NodePool", "default", {"metadata": {"annotations": {
        hashes.NODEPOOL_HASH_VERSION: "v3"}}})
    assert world.settle()
    claim = world.cluster.get("NodeClaim", name)
    annotations = objects.annotations(claim)
    assert annotations[hashes.NODEPOOL_HASH_VERSION] == hashes.NODEPOOL_HASH_VERSION_VALUE
    assert annotations[hashes.NODEPOOL_HASH] != "1234567890"
    assert objects.condition(claim, "Drifted") is None
    assert [objects.name(c) for c in world.nodeclaims()] == [name]


def test_a_malformed_interruption_message_is_deleted(world: World) -> None:
    world.apply(WORKSHOP)
    world.cloud.interruption_queue.send("{not json")
    world.advance(10)
    assert world.cloud.interruption_queue.depth() == 0
