"""Karpenter v1.14.1 pkg/controllers/disruption/queue_test.go, told as stories: a started
command keeps its candidates tainted while its replacements come up, finishes (with
Karpenter's events) once they are initialized, and gives its nodes back, untainted, when
they do not come up within the command timeout."""

from __future__ import annotations

import dataclasses

from nodewright.cluster import objects
from nodewright.controllers.common import decision_log as ex
from tests.controllers.expectations import expect_no_controller_errors, expect_running
from tests.disruption.test_drift_karpenter import drift, drifted, fleet, gone, node_of
from tests.harness import World

DISRUPTED = "karpenter.sh/disrupted"


def tainted(world: World, node: str) -> bool:
    [body] = [n for n in world.nodes() if objects.name(n) == node]
    return DISRUPTED in {t["key"] for t in body["spec"].get("taints") or []}


def commands(world: World) -> int:
    disruption = world.controllers.disruption.disruption
    assert disruption is not None
    return len(disruption.orchestrator.commands)


def initialized_replacements(world: World, originals: set[str]) -> int:
    return sum(1 for c in world.nodeclaims() if objects.name(c) not in originals
               and objects.condition_is_true(c, "Initialized"))


def test_a_node_stays_tainted_until_its_replacement_is_initialized(world: World) -> None:
    """queue_test.go Reconcile: It("should keep nodes tainted when replacements haven't finished
    initialization") and It("should not return an error when handling commands before the
    timeout")."""
    originals = fleet(world, 1)
    node = node_of(world, next(iter(originals)))
    drift(world)
    assert world.run_until(lambda: len(world.nodeclaims()) == 2, timeout=600)
    while initialized_replacements(world, originals) == 0:
        assert tainted(world, node)
        assert commands(world) == 1
        assert originals <= {objects.name(c) for c in world.nodeclaims()}
        world.advance(1)
    assert world.run_until(lambda: gone(world, originals), timeout=600)
    expect_no_controller_errors(world)


def test_a_command_whose_replacement_never_comes_up_times_out_and_untaints(
        world: World) -> None:
    """queue_test.go Reconcile: It("should untaint nodes when a command times out")."""
    originals = fleet(world, 1)
    node = node_of(world, next(iter(originals)))
    world.cloud.settings = dataclasses.replace(world.cloud.settings, registration_delay=3600)
    drift(world)
    assert world.run_until(lambda: tainted(world, node), timeout=600)
    began = world.clock.now()
    assert world.run_until(lambda: not tainted(world, node), timeout=1800)
    assert (world.clock.now() - began).total_seconds() >= 10 * 60
    assert originals <= {objects.name(c) for c in world.nodeclaims()}
    assert commands(world) == 0
    expect_running(world, 1, {"app": "big"})


def test_a_command_finishes_with_karpenters_events_once_its_replacement_is_ready(
        world: World) -> None:
    """queue_test.go Reconcile: It("should fully handle a command when replacements are
    initialized")."""
    originals = fleet(world, 1)
    [original] = originals
    drift(world)
    assert world.run_until(lambda: gone(world, originals), timeout=1800)
    [decision] = drifted(world)
    [replacement] = decision.replacements
    launching = world.events(ex.DISRUPTION_LAUNCHING, kind="NodeClaim")
    assert [e["regarding"]["name"] for e in launching] == [replacement]
    waiting = world.events(ex.DISRUPTION_WAITING_READINESS, kind="NodeClaim")
    assert replacement in {e["regarding"]["name"] for e in waiting}
    terminating = world.events(ex.DISRUPTION_TERMINATING)
    assert {e["regarding"]["kind"] for e in terminating} == {"Node", "NodeClaim"}
    assert original in {e["regarding"]["name"] for e in terminating}
    assert commands(world) == 0


def test_a_command_with_no_replacement_does_not_wait(world: World) -> None:
    """queue_test.go Reconcile: It("should not wait for replacements when none are needed")."""
    never = {"consolidateAfter": "Never"}
    originals = fleet(world, 1, never)
    world.scale("big", 0)
    world.advance(60)
    drift(world, never)
    assert world.run_until(lambda: gone(world, originals), timeout=600)
    [decision] = drifted(world)
    assert (decision.decision, decision.replacements) == ("delete", ())
    assert world.events(ex.DISRUPTION_LAUNCHING) == []


def test_two_commands_finish_as_their_replacements_are_initialized(world: World) -> None:
    """queue_test.go Reconcile: It("should finish two commands in order as replacements are
    initialized")."""
    budget = {"budgets": [{"nodes": "2"}]}
    originals = fleet(world, 2, budget)
    drift(world, budget)
    assert world.run_until(lambda: commands(world) == 2, timeout=600)
    assert world.run_until(lambda: gone(world, originals), timeout=1800)
    assert commands(world) == 0
    assert {d.nodeclaim for d in drifted(world)} == originals
    expect_running(world, 2, {"app": "big"})
    expect_no_controller_errors(world)
