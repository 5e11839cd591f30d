"""Disruption in parallel, as Karpenter's orchestration queue: a started command waits for
its replacements on its own while the loop decides the next, so a drift roll-out moves a
budget's worth of nodes at once; commands in flight count against the budget, and no node
is in two commands.

Karpenter v1.14.1 (pkg/controllers/disruption/controller.go, queue.go): after
`queue.StartCommand` the loop requeues at once; drift proposes one command a pass
(drift.go ComputeCommands returns the oldest drifted candidate the budget allows); the
budget counts marked-for-deletion nodes until their instance is terminating
(helpers.go BuildDisruptionBudgetMapping); a loop that finds nothing polls again after
10 s (pollingPeriod). So a roll-out of N drifted nodes with room for B at a time takes
about ceil(N / B) waves, each one replacement's launch, registration and initialization,
the candidate's drain, and up to one 10 s poll before the freed budget is used again.
"""

from __future__ import annotations

from nodewright.cloud.sim.settings import SimSettings
from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.controllers.expectations import expect_consistent, expect_no_controller_errors
from tests.disruption.helpers import started
from tests.disruption.rollout import drifted_fleet, karpenter_roll_out_seconds
from tests.disruption.test_budget_and_drift_stories import originals_disrupting
from tests.harness import World


def replacements_initialized(world: World, originals: set[str]) -> int:
    return sum(1 for claim in world.nodeclaims() if objects.name(claim) not in originals
               and objects.condition_is_true(claim, "Initialized"))


def test_drifted_nodes_are_disrupted_a_budget_at_a_time_before_any_replacement_is_ready(
        world: World) -> None:
    originals = drifted_fleet(world, 10, "50%")
    most = 0
    while replacements_initialized(world, originals) == 0:
        world.advance(1)
        most = max(most, originals_disrupting(world, originals))
    # One command at a time would have one node disrupting until its replacement is ready.
    assert most == 5, f"{most} nodes were disrupting at once; the budget allows 5"
    disruption = world.controllers.disruption.disruption
    assert disruption is not None
    assert len(disruption.orchestrator.commands) >= 2

    assert world.run_until(lambda: not originals & {objects.name(c)
                                                    for c in world.nodeclaims()})
    assert world.settle()
    drifted = [d.nodeclaim for d in started(world) if d.method == ex.DRIFT]
    assert sorted(drifted) == sorted(originals), "a node was disrupted twice, or not at all"
    expect_consistent(world)
    expect_no_controller_errors(world)


def test_a_node_in_a_command_in_flight_is_never_taken_by_another() -> None:
    world = World()
    originals = drifted_fleet(world, 6, "100%")
    disruption = world.controllers.disruption.disruption
    assert disruption is not None
    seen_twice: list[str] = []
    for _ in range(600):
        world.advance(1)
        held = [c.provider_id for cmd in disruption.orchestrator.commands
                for c in cmd.candidates]
        seen_twice += [pid for pid in set(held) if held.count(pid) > 1]
        if not originals & {objects.name(c) for c in world.nodeclaims()}:
            break
    assert not seen_twice
    assert len([d for d in started(world) if d.method == ex.DRIFT]) == 6


def test_a_drift_roll_out_takes_as_long_as_karpenters_waves() -> None:
    """A 12-node pool with a 10 % budget: 2 nodes at a time, six waves (bench/disruption.py
    rolls out 300 nodes the same way)."""
    settings = SimSettings()
    world = World(sim=settings)
    nodes, share = 12, 0.10
    originals = drifted_fleet(world, nodes, f"{share:.0%}")
    began = world.clock.now()
    assert world.run_until(
        lambda: not originals & {objects.name(c) for c in world.nodeclaims()}, timeout=6 * 3600)
    took = (world.clock.now() - began).total_seconds()

    karpenter = karpenter_roll_out_seconds(nodes, share, settings)
    assert took <= 1.2 * karpenter, (
        f"the roll-out took {took:.0f} s of cluster time; Karpenter's waves take about "
        f"{karpenter:.0f} s")
    expect_no_controller_errors(world)
