"""The NodeClaim's Consolidatable condition (consolidateAfter since its last pod event, or
since it initialized), and the disruption conditions together.

Ported from Karpenter v1.14.1 pkg/controllers/nodeclaim/disruption/consolidation_test.go
(Describe "Consolidation") and suite_test.go (Describe "Disruption")."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from nodewright.controllers.nodeclaim.disruption_conditions import NodeClaimConditions
from nodewright.controllers.options import ControllerOptions
from nodewright.runtime.clock import format_time
from tests.controllers.nodeclaim_bench import (
    bench,
    create,
    get,
    linked_node,
    nodeclaim,
    set_condition,
    set_status,
    status_of,
)
from tests.controllers.test_nodeclaim_drift_karpenter import CloudDrift
from tests.harness import World, node_pool

ALLOCATABLE = {"cpu": "8", "memory": "80Mi", "pods": "110"}
# No budget: the empty nodes of these stories are judged, never disrupted.
NO_BUDGET = [{"nodes": "0"}]
POOL = node_pool(capacity_types=(), disruption={"consolidateAfter": "30s", "budgets": NO_BUDGET,
                                                "consolidationPolicy": "WhenEmpty"})
NEVER = node_pool(capacity_types=(), disruption={"consolidateAfter": "Never",
                                                 "budgets": NO_BUDGET})


def controller_of(world: World, drifted: str | None = None) -> NodeClaimConditions:
    controller = world.controllers.get("nodeclaim.disruption", NodeClaimConditions)
    assert controller is not None
    controller.provider = CloudDrift(controller.provider, drifted)  # type: ignore[assignment]
    return controller


def initialized(world: World, **options: Any) -> str:
    (claim,) = create(world, nodeclaim(**options))
    name = str(claim["metadata"]["name"])
    world.advance(5)
    linked_node(world, get(world, name) or {}, allocatable=ALLOCATABLE)
    world.advance(5)
    assert status_of(get(world, name), "Initialized") == "True"
    return name


def last_pod_event(world: World, name: str, seconds_ago: float | None) -> None:
    when = (None if seconds_ago is None
            else format_time(world.clock.now() - timedelta(seconds=seconds_ago)))
    set_status(world, "NodeClaim", name, {"lastPodEventTime": when})


def consolidatable(world: World, name: str) -> str | None:
    return status_of(get(world, name), "Consolidatable")


def test_a_nodeclaim_of_another_provider_never_becomes_consolidatable() -> None:
    """It "should ignore NodeClaims not managed by this instance of Karpenter"."""
    world = bench(pool=POOL)
    controller = controller_of(world)
    (claim,) = create(world, nodeclaim(managed=False))
    name = claim["metadata"]["name"]
    set_condition(world, "NodeClaim", name, "Initialized", "True")
    last_pod_event(world, name, 0)
    controller.reconcile(name)
    assert consolidatable(world, name) is None
    world.advance(60)
    controller.reconcile(name)
    assert consolidatable(world, name) is None


def test_a_nodeclaim_becomes_consolidatable_after_its_last_pod_event() -> None:
    """It "should mark NodeClaims as consolidatable"."""
    world = bench(pool=POOL)
    controller = controller_of(world)
    name = initialized(world)
    last_pod_event(world, name, 0)
    controller.reconcile(name)
    assert consolidatable(world, name) is None
    world.advance(60)
    controller.reconcile(name)
    assert consolidatable(world, name) == "True"


def test_without_pod_events_it_counts_from_initialization() -> None:
    """It "should mark NodeClaims as consolidatable based on the nodeclaim initialized
    time"."""
    world = bench(pool=POOL)
    controller = controller_of(world)
    (claim,) = create(world, nodeclaim())
    name = claim["metadata"]["name"]
    world.advance(5)
    linked_node(world, get(world, name) or {}, allocatable=ALLOCATABLE)
    world.advance(1)
    assert status_of(get(world, name), "Initialized") == "True"
    controller.reconcile(name)
    assert consolidatable(world, name) is None
    world.advance(60)
    controller.reconcile(name)
    assert consolidatable(world, name) == "True"


def test_a_recent_pod_event_takes_the_condition_away() -> None:
    """It "should remove the status condition from the nodeClaim when lastPodEvent is too
    recent"."""
    world = bench(pool=POOL)
    controller = controller_of(world)
    name = initialized(world)
    world.advance(60)
    controller.reconcile(name)
    assert consolidatable(world, name) == "True"
    last_pod_event(world, name, 0)
    controller.reconcile(name)
    assert consolidatable(world, name) is None


def test_consolidate_after_never_takes_the_condition_away() -> None:
    """It "should remove the status condition from the nodeClaim when consolidateAfter is
    never"."""
    world = bench(pool=POOL)
    controller = controller_of(world)
    name = initialized(world)
    world.advance(60)
    controller.reconcile(name)
    assert consolidatable(world, name) == "True"
    world.apply(NEVER)
    controller.reconcile(name)
    assert consolidatable(world, name) is None


@pytest.mark.parametrize("initialization", [("Unknown", "NodeNotReady"),
                                            ("False", "NotInitialized")],
                         ids=["unknown", "false"])
def test_an_uninitialized_nodeclaim_loses_the_condition(initialization: tuple[str, str]
                                                       ) -> None:
    """Its "should remove the status condition from the nodeClaim when the nodeClaim
    initialization condition is unknown" and "... when the nodeClaim is not initialized"."""
    world = bench(pool=POOL)
    controller = controller_of(world)
    name = initialized(world)
    world.advance(60)
    controller.reconcile(name)
    assert consolidatable(world, name) == "True"
    set_condition(world, "NodeClaim", name, "Initialized", *initialization)
    controller.reconcile(name)
    assert consolidatable(world, name) is None


# -- suite_test.go, Describe "Disruption" --------------------------------------------------


def test_drifted_and_consolidatable_are_set_together() -> None:
    """It "should set multiple disruption conditions simultaneously"."""
    world = bench(pool=POOL)
    controller = controller_of(world, drifted="drifted")
    name = initialized(world)
    world.advance(60)
    controller.reconcile(name)
    claim = get(world, name)
    assert (status_of(claim, "Drifted"), status_of(claim, "Consolidatable")) == ("True", "True")


def test_a_static_nodepools_nodeclaim_is_never_consolidatable() -> None:
    """It "should not set consolidatable condition for Static Nodepool"."""
    static = copy.deepcopy(POOL)
    static["spec"]["replicas"] = 1
    world = bench(pool=static, options=ControllerOptions(static_capacity=True))
    controller = controller_of(world, drifted="drifted")
    assert world.run_until(lambda: len(world.nodeclaims()) == 1, timeout=120)
    (claim,) = world.nodeclaims()
    name = claim["metadata"]["name"]
    assert world.run_until(lambda: status_of(get(world, name), "Launched") == "True",
                           timeout=120)
    linked_node(world, get(world, name) or {}, allocatable=ALLOCATABLE)
    world.advance(60)
    controller.reconcile(name)
    claim = get(world, name)
    assert status_of(claim, "Drifted") == "True"
    assert status_of(claim, "Consolidatable") is None


def test_drifted_and_consolidatable_are_taken_away_together() -> None:
    """It "should remove multiple disruption conditions simultaneously"."""
    world = bench(pool=POOL)
    controller = controller_of(world, drifted="drifted")
    name = initialized(world)
    world.advance(60)
    controller.reconcile(name)
    assert status_of(get(world, name), "Drifted") == "True"
    controller.provider.reason = None  # type: ignore[attr-defined]
    world.apply(NEVER)
    controller.reconcile(name)
    claim = get(world, name)
    assert (status_of(claim, "Drifted"), status_of(claim, "Consolidatable")) == (None, None)
