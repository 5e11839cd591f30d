"""The core issue's launch stories through the operator's driver in real time: a capacity
error moves the launch to another offering, a node that never registers is replaced after
the (shortened) registration timeout, NodePool limits hold while batches race, and the
heaviest NodePool wins."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from nodewright.cloud.sim import CapacityRule
from nodewright.runtime.reconciler import WatchEvent
from tests.controllers.expectations import (
    claim_names,
    expect_consistent,
    expect_no_controller_errors,
    expect_running,
)
from tests.controllers.test_limits_story import LIMITED_POOL, deployment, pool_cpu, pool_named
from tests.kube.waiting import eventually
from tests.operator.conftest import WORKSHOP
from tests.operator.world import FAST_CLOUD, FAST_CONTROLLERS, RealTimeWorld

World = Callable[..., RealTimeWorld]


def expect_converged(world: RealTimeWorld, pods: int) -> None:
    world.settle()
    with world.lock:
        expect_running(world, pods)
        expect_consistent(world)
        expect_no_controller_errors(world)


def test_capacity_errors_on_the_cheapest_zone_launch_the_next_offering(
        make_world: World) -> None:
    world = make_world(zones=["us-east-1a", "us-east-1b"],
                       capacity=[CapacityRule("m5.large", 0, zone="us-east-1a")])
    world.operator("nodewright-a", leader_elect=False)
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    world.wait_until_running(pods=5, nodes=1)
    (claim,) = world.nodeclaims()
    assert claim["metadata"]["labels"]["topology.kubernetes.io/zone"] == "us-east-1b"
    assert world.instance_types() == ["m5.large"]
    assert world.cloud.counters.ice_errors >= 1
    expect_converged(world, 5)


def test_a_nodeclaim_that_never_registers_is_replaced_after_the_registration_timeout(
        make_world: World) -> None:
    stuck = dataclasses.replace(FAST_CLOUD, registration_delay=3600.0)
    world = make_world(cloud=stuck)
    options = dataclasses.replace(FAST_CONTROLLERS, registration_timeout_seconds=1.0)
    world.operator("nodewright-a", leader_elect=False, options=options)
    world.apply(WORKSHOP)
    world.scale("inflate", 5)
    (first,) = eventually(lambda: [i for i in world.live_instances() if i.state == "running"],
                          "the first instance to run")
    with world.lock:  # nodes register again from now on; the stuck one stays stuck
        world.cloud.settings = FAST_CLOUD
    assert claim_names(world) == [first.nodeclaim_name]

    world.wait_until_running(pods=5, nodes=1)
    assert first.nodeclaim_name not in claim_names(world)
    assert first.provider_id not in {i.provider_id for i in world.live_instances()}
    expect_converged(world, 5)


def test_limits_hold_while_batches_race(make_world: World) -> None:
    # Nodes take a second to register, so the second batch is solved while the first
    # batch's NodeClaims are still in flight.
    world = make_world(cloud=dataclasses.replace(FAST_CLOUD, registration_delay=1.0))
    most = [0]

    def on_nodeclaim(event: WatchEvent) -> None:
        if event.kind == "NodeClaim":
            most[0] = max(most[0], pool_cpu(world, "default"))  # type: ignore[arg-type]

    with world.lock:
        world.cluster_driver.listen(on_nodeclaim)
    world.operator("nodewright-a", leader_elect=False)
    world.apply(WORKSHOP)
    world.apply(LIMITED_POOL, deployment("first", 3, "1500m"))
    eventually(lambda: len(world.nodeclaims()) == 3, "the first batch's NodeClaims")
    world.apply(deployment("second", 3, "1500m"))

    def told_about_the_limit() -> list[Any]:
        return [e for e in world.events("FailedScheduling")
                if e["reportingController"] == "karpenter" and "limit" in e["note"]]

    eventually(told_about_the_limit, "pods left pending to be told about the limit")
    assert len(world.nodes()) < 3, "the first batch's nodes registered before the race"
    eventually(lambda: len(world.running_pods()) == 3, "three pods running")
    world.settle()
    assert most[0] <= 6000, f"the pool reached {most[0]}m cpu with a 6 cpu limit"
    assert len(world.nodeclaims()) == 3
    with world.lock:
        expect_consistent(world)
        expect_no_controller_errors(world)


def test_the_heaviest_compatible_nodepool_is_used(world: RealTimeWorld) -> None:
    world.operator("nodewright-a", leader_elect=False)
    world.apply(WORKSHOP / "ec2nodeclass.yaml", WORKSHOP / "daemonsets.yaml",
                WORKSHOP / "inflate.yaml")
    world.apply(pool_named("light", 10), pool_named("heavy", 50))
    world.scale("inflate", 5)
    world.wait_until_running(pods=5, nodes=1)
    pools = {c["metadata"]["labels"]["karpenter.sh/nodepool"] for c in world.nodeclaims()}
    assert pools == {"heavy"}
    expect_converged(world, 5)
