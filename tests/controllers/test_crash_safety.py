"""Crash safety: the controller process dies at any point and a new one (fresh state, no
queued work) takes over the same cluster and cloud. It must converge with no duplicate
instance, no orphaned instance and no lost pod."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import (
    claim_names,
    expect_consistent,
    expect_no_controller_errors,
    expect_running,
)
from tests.harness import World

PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: inflate, namespace: default}
spec:
  maxUnavailable: 1
  selector: {matchLabels: {app: inflate}}
"""


class Crashes:
    """Runs the clock one callback at a time, killing the controllers after chosen ones."""

    def __init__(self, world: World, at: set[int]) -> None:
        self.world = world
        self.at = at
        self.steps = 0

    def advance(self, seconds: float) -> None:
        world = self.world
        end = world.clock.now() + timedelta(seconds=seconds)
        world.deliver()
        while (due := world.clock.next_due()) is not None and due <= end:
            world.clock.step()
            self.steps += 1
            if self.steps in self.at:
                world.restart_controllers()
        world.clock.run_until(end)


def step_until(world: World, done: Callable[[], bool], limit: int = 5000) -> None:
    world.deliver()
    for _ in range(limit):
        if done():
            return
        assert world.clock.step(), "nothing left to run"
    raise AssertionError("the moment never came")


def unlaunched(world: World) -> bool:
    return any(not c.get("status", {}).get("providerID") for c in world.nodeclaims())


def launched_not_registered(world: World) -> bool:
    return any(c.get("status", {}).get("providerID") and not world.nodes()
               for c in world.nodeclaims())


def expect_recovered(world: World, replicas: int) -> None:
    assert world.settle()
    expect_running(world, replicas)
    expect_consistent(world)
    expect_no_controller_errors(world)


def test_a_crash_between_nodeclaim_creation_and_launch() -> None:
    world = World()
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    step_until(world, lambda: unlaunched(world))
    world.restart_controllers()
    expect_recovered(world, 5)
    assert len(world.cloud.instance_ids()) == 1


def test_a_crash_between_launch_and_registration() -> None:
    world = World()
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    step_until(world, lambda: launched_not_registered(world))
    world.restart_controllers()
    expect_recovered(world, 5)
    assert len(world.cloud.instance_ids()) == 1


def test_a_crash_after_the_cloud_launched_but_before_the_nodeclaim_said_so() -> None:
    world = World()
    launch = world.cloud.create

    def dies_after_launching(nodeclaim: Any, node_class: Any) -> Any:
        launch(nodeclaim, node_class)
        raise SystemError("the controller process died")

    world.cloud.create = dies_after_launching  # type: ignore[method-assign]
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    step_until(world, lambda: bool(world.cloud.instance_ids()))
    # The dying process keeps retrying for a minute, longer than the grace period the
    # instance garbage collector gives a new instance.
    world.advance(60)
    assert world.controllers.lifecycle.name in {name for name, _, _ in world.errors}
    world.cloud.create = launch  # type: ignore[method-assign]
    world.restart_controllers()
    expect_recovered(world, 5)
    assert len(world.cloud.instance_ids()) == 1, "the instance was launched twice"


def test_a_crash_in_the_middle_of_a_drain() -> None:
    world = World()
    world.apply(WORKSHOP, PDB)
    world.scale("inflate", 5)
    assert world.settle()
    world.scale("inflate", 12)
    assert world.settle()
    victim = world.nodeclaims()[0]
    node_name = victim["status"]["nodeName"]
    before = {p["metadata"]["name"] for p in world.pods() if p["spec"].get("nodeName") == node_name}
    world.delete("NodeClaim", victim["metadata"]["name"])
    step_until(world, lambda: any(
        p["metadata"]["name"] not in before for p in world.running_pods()))
    assert world.cluster.get("Node", node_name)  # the drain is under way
    world.restart_controllers()
    expect_recovered(world, 12)
    assert victim["metadata"]["name"] not in claim_names(world)


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.sets(st.integers(min_value=1, max_value=1100), min_size=1, max_size=2))
def test_a_crash_anywhere_converges(crash_after: set[int]) -> None:
    world = World()
    crashes = Crashes(world, crash_after)
    world.apply(WORKSHOP)
    world.scale("inflate", 8)
    crashes.advance(200)
    world.apply(PDB)
    world.delete("NodeClaim", world.nodeclaims()[0]["metadata"]["name"])
    crashes.advance(400)
    expect_recovered(world, 8)
