"""Crash safety through the operator: the controller process is frozen at an exact point
of its work (the watch event that shows it got there: nothing is written after it), torn
down (kill -9: its queues and state are gone), and a fresh one takes over the same cluster
and simulated cloud. It must converge with no duplicate instance, no orphaned instance and
no lost pod, as in the core issue's crash stories."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

from nodewright.operator.process import Operator
from nodewright.runtime.reconciler import WatchEvent
from tests.controllers.expectations import (
    condition,
    expect_consistent,
    expect_no_controller_errors,
    expect_running,
)
from tests.controllers.test_crash_safety import PDB
from tests.kube.waiting import eventually
from tests.operator.conftest import WORKSHOP
from tests.operator.world import FAST_CLOUD, RealTimeWorld

World = Callable[..., RealTimeWorld]
Moment = Callable[[WatchEvent], bool]


class DoomedProcess:
    """A controller process that dies at `moment`; `take_over` waits for that, kills it
    and starts a fresh one."""

    def __init__(self, world: RealTimeWorld, moment: Moment) -> None:
        self.world = world
        self.process: Operator = world.operator("nodewright-first", leader_elect=False)
        self.frozen: threading.Event = world.freeze_when(self.process, moment)

    def take_over(self, what: str) -> Operator:
        eventually(self.frozen.is_set, what)
        self.world.crash(self.process)
        return self.world.operator("nodewright-second", leader_elect=False)


def expect_recovered(world: RealTimeWorld, pods: int, nodes: int) -> None:
    world.wait_until_running(pods=pods, nodes=nodes)
    world.settle()
    with world.lock:
        expect_running(world, pods)
        expect_consistent(world)
        expect_no_controller_errors(world)


def unlaunched_nodeclaim(event: WatchEvent) -> bool:
    return event.kind == "NodeClaim" and not (event.object.get("status") or {}).get("providerID")


def launched_not_registered(event: WatchEvent) -> bool:
    return (event.kind == "NodeClaim"
            and bool((event.object.get("status") or {}).get("providerID"))
            and condition(event.object, "Registered") != "True")


def test_a_crash_between_nodeclaim_creation_and_launch(world: RealTimeWorld) -> None:
    doomed = DoomedProcess(world, unlaunched_nodeclaim)
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    doomed.take_over("a NodeClaim created and not launched")
    assert world.cloud.instance_ids() == ()

    expect_recovered(world, pods=5, nodes=1)
    assert len(world.cloud.instance_ids()) == 1, "the instance was launched twice"


def test_a_crash_between_launch_and_registration(make_world: World) -> None:
    # Nodes take half a second to join, so the new process finds an instance running
    # whose node has not registered yet.
    world = make_world(cloud=dataclasses.replace(FAST_CLOUD, registration_delay=0.5))
    doomed = DoomedProcess(world, launched_not_registered)
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    doomed.take_over("a NodeClaim launched and not registered")
    assert len(world.cloud.instance_ids()) == 1

    expect_recovered(world, pods=5, nodes=1)
    assert len(world.cloud.instance_ids()) == 1, "the instance was launched twice"


def test_a_crash_in_the_middle_of_a_drain(world: RealTimeWorld) -> None:
    victim: dict[str, str] = {}

    def evicted_from_the_victim(event: WatchEvent) -> bool:
        # The first pod of the deleted NodeClaim's node to go (the PDB holds the others).
        return (event.kind == "Pod" and bool(victim)
                and event.object["spec"].get("nodeName") == victim["node"]
                and (event.type == "DELETED"
                     or bool(event.object["metadata"].get("deletionTimestamp"))))

    doomed = DoomedProcess(world, evicted_from_the_victim)
    world.apply(WORKSHOP, PDB)
    world.scale("inflate", 5)
    world.wait_until_running(pods=5, nodes=1)
    world.scale("inflate", 12)
    world.wait_until_running(pods=12, nodes=2)
    claim = max(world.registered_nodeclaims(2), key=lambda c: sum(
        1 for pod in world.running_pods() if pod["spec"]["nodeName"] == c["status"]["nodeName"]))
    with world.lock:
        victim.update(name=claim["metadata"]["name"], node=claim["status"]["nodeName"])
        world.cluster.delete("NodeClaim", victim["name"])
    doomed.take_over("the first eviction of the drain")
    assert world.cluster.get("Node", victim["node"]), "the drain was over already"

    expect_recovered(world, pods=12, nodes=2)
    assert victim["name"] not in {c["metadata"]["name"] for c in world.nodeclaims()}
