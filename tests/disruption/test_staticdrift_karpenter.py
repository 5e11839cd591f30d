"""Karpenter v1.14.1 pkg/controllers/disruption/staticdrift_test.go, told as stories: static
NodePools of m5.large whose template changes (so every node drifts), replaced one command
per node within the Drifted budget and limits.nodes, never while the pool is scaling down.

Karpenter's tests run the disruption controller alone over hand-made nodes (a pool may
hold fewer nodes than its replicas); here the static provisioner runs too, so every pool
holds its replicas, and where a test relies on fewer nodes the story says how it differs.
"One reconcile's commands" is read as the most replacements in flight at once; the
commands themselves are counted by karpenter_voluntary_disruption_decisions."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from nodewright.controllers.options import ControllerOptions
from tests.controllers.expectations import expect_no_controller_errors
from tests.controllers.metric_samples import sample_value
from tests.disruption.helpers import decisions, started
from tests.harness import NODE_CLASS, World, node_pool


@pytest.fixture
def world() -> Iterator[World]:
    """With the StaticCapacity feature gate on (Karpenter's default is off)."""
    yield World(options=ControllerOptions(static_capacity=True))


def static(name: str, replicas: int, *, budget: str = "100%", node_limit: int | None = None,
           rev: str = "1") -> dict[str, Any]:
    body = node_pool(name, types=["m5.large"], labels={"pool": name, "rev": rev},
                     limits=None if node_limit is None else {"nodes": str(node_limit)},
                     disruption={"budgets": [{"nodes": budget, "reasons": ["Drifted"]}]})
    body["spec"]["replicas"] = replicas
    return body


def claims(world: World, pool: str, *, live: bool = True) -> list[dict[str, Any]]:
    return [c for c in world.nodeclaims() if objects.labels(c).get("karpenter.sh/nodepool")
            == pool and not (live and objects.is_deleting(c))]


def drift_commands() -> float:
    return sample_value("karpenter_voluntary_disruption_decisions_total", {
        "decision": "replace", "reason": "drifted", "consolidation_type": ""}) or 0.0


def allowed(pool: str) -> float | None:
    return sample_value("karpenter_nodepools_allowed_disruptions", {
        "nodepool": pool, "reason": "Drifted"})


@dataclass
class RollOut:
    """What a roll-out did: commands started, and per pool the most NodeClaims it held at
    once beyond its replicas (its replacements in flight)."""

    commands: float = 0.0
    most_in_flight: dict[str, int] = field(default_factory=dict)
    most_claims: dict[str, int] = field(default_factory=dict)
    # karpenter_nodepools_allowed_disruptions once the first command started.
    first_allowed: dict[str, float | None] = field(default_factory=dict)


def roll_out(world: World, pools: Mapping[str, int], *, until_replaced: bool = True,
             seconds: float = 3600.0) -> RollOut:
    """Apply each pool again at rev 2 (`pools`: name -> replicas, with the same options as
    set up) and run until every NodeClaim of the pools is rev 2, or for `seconds`."""
    before = drift_commands()
    seen = RollOut()

    def step() -> bool:
        done = True
        if not seen.first_allowed and drift_commands() > before:
            seen.first_allowed = {pool: allowed(pool) for pool in pools}
        for pool, replicas in pools.items():
            held = claims(world, pool)
            seen.most_claims[pool] = max(seen.most_claims.get(pool, 0), len(held))
            seen.most_in_flight[pool] = max(seen.most_in_flight.get(pool, 0),
                                            len(held) - replicas)
            done = done and len(held) == replicas and all(
                objects.labels(c).get("rev") == "2"
                and objects.condition_is_true(c, "Initialized") for c in held)
        return until_replaced and done

    if until_replaced:
        assert world.run_until(step, timeout=seconds)
    else:
        world.run_until(step, timeout=seconds)
    seen.commands = drift_commands() - before
    return seen


def setup(world: World, *pools: dict[str, Any]) -> None:
    world.apply(NODE_CLASS, *pools)
    assert world.settle()


def drifted(body: dict[str, Any]) -> dict[str, Any]:
    body["spec"]["template"]["metadata"]["labels"]["rev"] = "2"
    return body


# -- Budgets -----------------------------------------------------------------------------

def test_a_node_count_budget_bounds_the_replacements_in_flight(world: World) -> None:
    """staticdrift_test.go Budgets: It("should respect disruption budgets (Nodes Count) for
    static drift")."""
    setup(world, static("static", 5, budget="2"))
    world.apply(drifted(static("static", 5, budget="2")))
    seen = roll_out(world, {"static": 5})
    assert seen.most_in_flight["static"] == 2
    assert seen.commands == 5  # one command per node
    assert seen.first_allowed == {"static": 2}
    expect_no_controller_errors(world)


def test_a_percentage_budget_bounds_the_replacements_in_flight(world: World) -> None:
    """staticdrift_test.go Budgets: It("should respect disruption budgets (Nodes Percentage)
    for static drift"): 20 % of five is one."""
    setup(world, static("static", 5, budget="20%"))
    world.apply(drifted(static("static", 5, budget="20%")))
    seen = roll_out(world, {"static": 5})
    assert seen.most_in_flight["static"] == 1
    assert seen.commands == 5
    assert seen.first_allowed == {"static": 1}


def test_each_static_pool_keeps_its_own_budget(world: World) -> None:
    """staticdrift_test.go Budgets: It("should respect budgets for multiple static
    nodepools"): budgets 1, 2 and 100 %."""
    pools = {"static-1": ("1", 4), "static-2": ("2", 3), "static-3": ("100%", 2)}
    setup(world, *(static(p, n, budget=b) for p, (b, n) in pools.items()))
    world.apply(*(drifted(static(p, n, budget=b)) for p, (b, n) in pools.items()))
    seen = roll_out(world, {p: n for p, (_, n) in pools.items()})
    assert seen.most_in_flight == {"static-1": 1, "static-2": 2, "static-3": 2}
    assert seen.commands == 9
    assert seen.first_allowed == {"static-1": 1, "static-2": 2, "static-3": 2}


# -- Limits and Scaling --------------------------------------------------------------------

def test_no_drift_without_room_under_the_node_limit(world: World) -> None:
    """staticdrift_test.go Limits and Scaling: It("should not drift nodes when we cannot
    acquire limits")."""
    setup(world, static("static", 5, node_limit=5))
    names = {objects.name(c) for c in claims(world, "static")}
    world.apply(drifted(static("static", 5, node_limit=5)))
    seen = roll_out(world, {"static": 5}, until_replaced=False, seconds=120)
    assert seen.commands == 0
    assert {objects.name(c) for c in claims(world, "static")} == names
    assert any(d.cause == ex.CAUSE_NODE_LIMIT for d in decisions(world))


def test_drift_within_room_under_the_node_limit(world: World) -> None:
    """staticdrift_test.go Limits and Scaling: It("should drift nodes when we can acquire
    limits"). Karpenter's pool holds 2 of its 5 replicas under a limit of 5, room for both
    replacements; here it holds its 2 replicas under a limit of 4."""
    setup(world, static("static", 2, node_limit=4))
    world.apply(drifted(static("static", 2, node_limit=4)))
    seen = roll_out(world, {"static": 2})
    assert seen.most_in_flight["static"] == 2
    assert seen.commands == 2


def test_drift_as_far_as_the_node_limit_allows(world: World) -> None:
    """staticdrift_test.go Limits and Scaling: It("should drift partially when we can
    acquire some limits"): five nodes, a limit of seven, two replacements at once."""
    setup(world, static("static", 5, node_limit=7))
    world.apply(drifted(static("static", 5, node_limit=7)))
    seen = roll_out(world, {"static": 5})
    assert seen.most_in_flight["static"] == 2
    assert seen.most_claims["static"] <= 7
    assert seen.commands == 5


def test_one_replacement_at_a_time_under_a_tight_limit(world: World) -> None:
    """staticdrift_test.go Limits and Scaling: It("should keep drifting partially when we
    can acquire some limits for each reconcile"): limit six, never more than six NodeClaims."""
    setup(world, static("static", 5, node_limit=6))
    world.apply(drifted(static("static", 5, node_limit=6)))
    seen = roll_out(world, {"static": 5})
    assert seen.most_claims["static"] == 6
    assert seen.commands == 5


def test_an_overscaled_pool_scales_down_before_it_drifts(world: World) -> None:
    """staticdrift_test.go Limits and Scaling: It("should wait until nodes are deprovisioned
    when we are overscaled"): replicas 2 -> 1 with a drifted template; the surplus node goes
    first, then the one left is replaced (one command)."""
    setup(world, static("static", 2))
    old = {objects.name(c) for c in claims(world, "static")}
    world.apply(drifted(static("static", 1)))
    alongside_old: list[int] = []

    def step() -> bool:
        held = claims(world, "static")
        if any(objects.labels(c).get("rev") == "2" for c in held):
            alongside_old.append(sum(objects.name(c) in old for c in held))
        return len(held) == 1 and objects.labels(held[0]).get("rev") == "2"

    before = drift_commands()
    assert world.run_until(step, timeout=3600)
    assert max(alongside_old) == 1  # the replacement never joined both old nodes
    assert drift_commands() - before == 1


# -- Multiple NodePools ------------------------------------------------------------------

def test_static_pools_drift_independently(world: World) -> None:
    """staticdrift_test.go Multiple NodePools: It("should handle drift for multiple static
    NodePools independently"): the pool whose limit leaves no room keeps its nodes, the
    others are replaced, all their nodes at once."""
    bodies = {"static-1": static("static-1", 3), "static-2": static("static-2", 2,
              node_limit=2), "static-3": static("static-3", 2)}
    setup(world, *bodies.values())
    kept = {objects.name(c) for c in claims(world, "static-2")}
    world.apply(*(drifted(b) for b in bodies.values()))
    seen = roll_out(world, {"static-1": 3, "static-3": 2})
    assert seen.most_in_flight == {"static-1": 3, "static-3": 2}
    assert seen.commands == 5
    assert {objects.name(c) for c in claims(world, "static-2")} == kept


# -- Edge Cases ----------------------------------------------------------------------------

def test_a_pool_scaled_to_zero_is_not_drifted(world: World) -> None:
    """staticdrift_test.go Edge Cases: It("should handle zero replicas"): its drifted node
    is removed by the scale-down, never replaced."""
    setup(world, static("static", 1))
    before = drift_commands()
    world.apply(drifted(static("static", 0)))
    assert world.settle()
    assert claims(world, "static", live=False) == []
    assert drift_commands() == before


def test_no_node_limit_replaces_every_drifted_node_at_once(world: World) -> None:
    """staticdrift_test.go Edge Cases: It("should handle missing node limits gracefully")."""
    setup(world, static("static", 5))
    world.apply(drifted(static("static", 5)))
    seen = roll_out(world, {"static": 5})
    assert seen.most_in_flight["static"] == 5
    assert seen.commands == 5


def test_nodes_that_have_not_drifted_are_left_alone(world: World) -> None:
    """staticdrift_test.go Edge Cases: It("should ignore nodes without the drifted status
    condition") and It("should ignore nodes with the drifted status condition set to
    false"): an unchanged template, so no NodeClaim is Drifted=True."""
    setup(world, static("static", 1))
    names = {objects.name(c) for c in claims(world, "static")}
    before = drift_commands()
    world.advance(600)
    assert not any(objects.condition_is_true(c, "Drifted") for c in claims(world, "static"))
    assert {objects.name(c) for c in claims(world, "static")} == names
    assert drift_commands() == before and started(world) == []


def test_a_do_not_disrupt_node_is_not_drifted(world: World) -> None:
    """staticdrift_test.go Edge Cases: It("should ignore nodes with the
    karpenter.sh/do-not-disrupt annotation")."""
    setup(world, static("static", 1))
    [node] = world.nodes()
    world.cluster.patch("Node", objects.name(node), {"metadata": {"annotations": {
        "karpenter.sh/do-not-disrupt": "true"}}})
    names = {objects.name(c) for c in claims(world, "static")}
    before = drift_commands()
    world.apply(drifted(static("static", 1)))
    world.advance(600)
    assert any(objects.condition_is_true(c, "Drifted") for c in claims(world, "static"))
    assert {objects.name(c) for c in claims(world, "static")} == names
    assert drift_commands() == before
