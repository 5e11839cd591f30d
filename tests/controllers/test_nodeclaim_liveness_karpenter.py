"""Liveness: a NodeClaim that does not launch within 5 minutes, or whose Node does not
register within 15, is deleted, and its NodePool's NodeRegistrationHealthy follows.

Ported from Karpenter v1.14.1 pkg/controllers/nodeclaim/lifecycle/liveness_test.go
(Describe "Liveness"); its first Entry is tests/controllers/test_lifecycle_story.py
test_a_nodeclaim_that_never_registers_is_deleted_after_fifteen_minutes."""

from __future__ import annotations

from datetime import timedelta

from nodewright.runtime.clock import format_time
from tests.controllers.nodeclaim_bench import (
    bench,
    create,
    exists,
    get,
    linked_node,
    nodeclaim,
    refuse_launches,
    set_condition,
    set_status,
    status_of,
)
from tests.harness import World

REQUESTS = {"cpu": "2", "memory": "50Mi", "pods": "5"}


def test_a_nodeclaim_of_another_provider_is_never_timed_out() -> None:
    """Entry "should ignore NodeClaims not managed by this Karpenter instance"."""
    world = bench()
    (claim,) = create(world, nodeclaim(managed=False, requests=REQUESTS))
    name = claim["metadata"]["name"]
    set_condition(world, "NodeClaim", name, "Launched", "True")
    world.advance(20 * 60)
    after = get(world, name)
    assert after is not None
    assert after["metadata"].get("finalizers") in (None, []), "another provider's NodeClaim"
    assert world.live_instances() == [], "nothing launched for another provider's NodeClaim"


def test_a_nodeclaim_whose_node_registered_outlives_the_registration_timeout() -> None:
    """It "shouldn't delete the nodeClaim when the node has registered past the
    registration timeout"."""
    world = bench()
    (claim,) = create(world, nodeclaim(requests=REQUESTS))
    name = claim["metadata"]["name"]
    world.advance(30)
    node = linked_node(world, claim)
    world.advance(20 * 60)
    assert exists(world, name)
    assert exists(world, node["metadata"]["name"], "Node")
    assert status_of(get(world, name), "Registered") == "True"


def _unlaunchable(world: World) -> str:
    refuse_launches(world)
    (claim,) = create(world, nodeclaim(requests=REQUESTS))
    world.advance(5)
    name: str = claim["metadata"]["name"]
    assert status_of(get(world, name), "Launched") == "Unknown"
    return name


def test_a_nodeclaim_that_never_launches_is_deleted_after_the_launch_timeout() -> None:
    """It "should delete the NodeClaim when the NodeClaim hasn't launched past the launch
    timeout"."""
    world = bench()
    name = _unlaunchable(world)
    world.advance(6 * 60)
    assert not exists(world, name)


def test_a_nodeclaim_still_launching_before_the_launch_timeout_is_kept() -> None:
    """It "should not delete the NodeClaim when the NodeClaim hasn't launched before the
    launch timeout"."""
    world = bench()
    name = _unlaunchable(world)
    world.advance(60)
    assert exists(world, name)


def test_a_custom_launch_timeout_is_respected() -> None:
    """It "should respect a custom launch timeout configured via the LaunchTimeout var"
    (Karpenter's package variable is the lifecycle's `launch_timeout`)."""
    world = bench()
    world.controllers.lifecycle.liveness.launch_timeout = 45.0
    name = _unlaunchable(world)
    world.advance(30)
    assert exists(world, name), "deleted before the custom 45 s timeout"
    world.advance(30)
    assert not exists(world, name), "kept past the custom 45 s timeout"


def _conditions_moved_ahead(world: World, name: str, minutes: float) -> None:
    claim = get(world, name)
    assert claim is not None
    later = format_time(world.clock.now() + timedelta(minutes=minutes))
    conditions = [{**c, "lastTransitionTime": later}
                  for c in claim["status"]["conditions"]]
    set_status(world, "NodeClaim", name, {"conditions": conditions})


def test_the_launch_timeout_counts_from_the_condition_not_the_creation() -> None:
    """It "should use the status condition transition time for launch timeout, not the
    creation timestamp"."""
    world = bench()
    name = _unlaunchable(world)
    _conditions_moved_ahead(world, name, 10)
    world.advance(12 * 60)
    assert exists(world, name)


def test_the_registration_timeout_counts_from_the_condition_not_the_creation() -> None:
    """It "should use the status condition transition time for registration timeout, not
    the creation timestamp"."""
    world = bench()
    (claim,) = create(world, nodeclaim(requests=REQUESTS))
    name = claim["metadata"]["name"]
    world.advance(5)
    assert status_of(get(world, name), "Launched") == "True"
    _conditions_moved_ahead(world, name, 10)
    world.advance(16 * 60)
    assert exists(world, name)
    result = world.controllers.lifecycle.reconcile(name)
    assert result.requeue_after is not None and 0 < result.requeue_after < 15 * 60


def _two_failures(world: World) -> list[str]:
    pool = world.cluster.get("NodePool", "default")
    refuse_launches(world)
    claims = create(world, nodeclaim(requests=REQUESTS, owner=pool),
                    nodeclaim(requests=REQUESTS, owner=pool))
    world.advance(6 * 60)
    return [c["metadata"]["name"] for c in claims]


def test_two_launch_timeouts_turn_a_healthy_nodepool_unhealthy() -> None:
    """It "should update NodeRegistrationHealthy status condition to False if it was
    previously set to True and there are >=2 registration failures"."""
    world = bench()
    world.advance(5)
    set_condition(world, "NodePool", "default", "NodeRegistrationHealthy", "True")
    names = _two_failures(world)
    assert status_of(world.cluster.get("NodePool", "default"),
                     "NodeRegistrationHealthy") == "False"
    assert not any(exists(world, name) for name in names)


def test_two_launch_timeouts_turn_an_unknown_nodepool_unhealthy() -> None:
    """It "should update NodeRegistrationHealthy status condition to False if it was
    previously set to Unknown and there are >=2 registration failures"."""
    world = bench()
    world.advance(5)
    assert status_of(world.cluster.get("NodePool", "default"),
                     "NodeRegistrationHealthy") == "Unknown"
    names = _two_failures(world)
    assert status_of(world.cluster.get("NodePool", "default"),
                     "NodeRegistrationHealthy") == "False"
    assert not any(exists(world, name) for name in names)


def test_a_timeout_is_not_held_against_a_recreated_nodepool() -> None:
    """It "should not update NodeRegistrationHealthy status condition if nodePool owning the
    nodeClaim is deleted". The NodeClaims are owned by the uid of a NodePool of the same
    name that is gone (deleting ours would take its NodeClaims with it at once); two of
    them, so that counted against the NodePool they would turn it unhealthy."""
    world = bench()
    world.advance(5)
    refuse_launches(world)
    gone = {"metadata": {"name": "default", "uid": "uid-of-the-deleted-nodepool"}}
    claims = create(world, nodeclaim(requests=REQUESTS, owner=gone),
                    nodeclaim(requests=REQUESTS, owner=gone))
    names = [c["metadata"]["name"] for c in claims]
    world.advance(60)
    assert all(exists(world, name) for name in names)
    assert status_of(world.cluster.get("NodePool", "default"),
                     "NodeRegistrationHealthy") == "Unknown"
    world.advance(20 * 60)
    assert status_of(world.cluster.get("NodePool", "default"),
                     "NodeRegistrationHealthy") == "Unknown"
    assert not any(exists(world, name) for name in names)
