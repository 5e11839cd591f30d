"""The provisioner counts capacity reservations as Karpenter's (DisableReservedCapacityFallback,
pkg/controllers/provisioning/provisioner.go): a NodeClaim holds the reservation it could
launch into, and the pods that would need the same, used-up reservation wait for the next
solve (no FailedScheduling event, not counted unschedulable) instead of falling back. Once
the reservation is used up they launch outside it."""

from __future__ import annotations

from nodewright.cloud.sim import SimulatedEC2
from nodewright.cloud.sim.reservations import SimReservation
from tests.harness import CAPACITY_TYPE, RESERVING_CLASS, World, node_pool
from tests.static.helpers import workload

RESERVATION = SimReservation("cr-ml", "m5.large", "us-east-1a", 1, tags={"team": "ml"})


def test_pods_beyond_a_reservation_wait_a_round_then_launch_outside_it() -> None:
    world = World()
    world.cloud = SimulatedEC2(world.clock, cluster=world.cluster, reservations=[RESERVATION])
    world.restart_controllers()
    world.apply(RESERVING_CLASS, node_pool(types=["m5.large"],
                                           capacity_types=["reserved", "on-demand"]))
    world.apply(workload("train", 3, "1500m"))  # one m5.large each

    provisioner = world.controllers.provisioner
    assert world.run_until(lambda: bool(provisioner.outcomes))
    first = provisioner.outcomes[0]
    assert len(first.created) == 1
    assert len(first.deferred) == 2 and not first.unschedulable
    assert all("could not be reserved" in why for why in first.deferred.values())

    assert world.settle()
    capacity_types = sorted(c["metadata"]["labels"][CAPACITY_TYPE] for c in world.nodeclaims())
    assert capacity_types == ["on-demand", "on-demand", "reserved"]
    assert all(p["status"].get("phase") == "Running" for p in world.pods())
    ours = [e for e in world.events(reason="FailedScheduling", kind="Pod")
            if e.get("reportingController") != "default-scheduler"]
    assert ours == []
