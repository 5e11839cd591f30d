"""Karpenter v1.14.1 pkg/controllers/disruption/consolidation_test.go, Context("Reserved
Capacity"), told as stories with the simulated EC2's capacity reservations: once a
reservation has room, a node of the same type moves into it (from on-demand or from spot),
and a reserved node moves into a reservation of a cheaper type."""

from __future__ import annotations

import pytest

from nodewright.cloud.sim.reservations import ReservationBook, SimReservation
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import expect_no_controller_errors, expect_running
from tests.disruption.helpers import nodepool_with, started
from tests.disruption.test_reserved_consolidation_story import (
    CAPACITY_TYPE,
    RESERVATION_ID,
    reserving_node_class,
)
from tests.harness import World


def labels_of_nodes(world: World) -> list[tuple[str, str, str | None]]:
    return sorted((n["metadata"]["labels"]["node.kubernetes.io/instance-type"],
                   n["metadata"]["labels"][CAPACITY_TYPE],
                   n["metadata"]["labels"].get(RESERVATION_ID)) for n in world.nodes())


@pytest.mark.parametrize("capacity", ["on-demand", "spot"])
def test_a_node_moves_into_a_reservation_of_its_type(world: World, capacity: str) -> None:
    """consolidation_test.go Reserved Capacity: DescribeTable("can consolidate into reserved
    capacity for the same instance pool"), Entry("from on-demand"), Entry("from spot")."""
    book = ReservationBook([SimReservation("cr-1", "m5.large", "us-east-1a", 1,
                                           tags={"team": "ml"})])
    world.cloud.reservations = book
    assert book.take("cr-1")
    world.apply(reserving_node_class(),
                nodepool_with(requirements={CAPACITY_TYPE: ["reserved", capacity]},
                              disruption={"consolidateAfter": "0s"}),
                WORKSHOP / "daemonsets.yaml", WORKSHOP / "inflate.yaml")
    world.scale("inflate", 5)
    assert world.settle()
    assert labels_of_nodes(world) == [("m5.large", capacity, None)]
    book.release("cr-1")
    world.advance(900)
    assert world.settle()
    assert labels_of_nodes(world) == [("m5.large", "reserved", "cr-1")]
    assert [d.decision for d in started(world)] == ["replace"]
    expect_running(world, 5)
    expect_no_controller_errors(world)


def test_a_reserved_node_moves_into_a_cheaper_reservation(world: World) -> None:
    """consolidation_test.go Reserved Capacity: It("can consolidate from one reserved offering
    to another")."""
    book = ReservationBook([
        SimReservation("cr-big", "m5.xlarge", "us-east-1a", 1, tags={"team": "ml"}),
        SimReservation("cr-small", "m5.large", "us-east-1a", 1, tags={"team": "ml"})])
    world.cloud.reservations = book
    assert book.take("cr-small")
    world.apply(reserving_node_class(),
                nodepool_with(requirements={CAPACITY_TYPE: ["reserved"]},
                              disruption={"consolidateAfter": "0s"}),
                WORKSHOP / "daemonsets.yaml", WORKSHOP / "inflate.yaml")
    world.scale("inflate", 1)
    assert world.settle()
    assert labels_of_nodes(world) == [("m5.xlarge", "reserved", "cr-big")]
    book.release("cr-small")
    world.advance(900)
    assert world.settle()
    assert labels_of_nodes(world) == [("m5.large", "reserved", "cr-small")]
    expect_running(world, 1)
