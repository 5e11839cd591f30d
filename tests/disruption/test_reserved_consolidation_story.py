"""Consolidation into a capacity reservation: when a reservation frees an instance, an
on-demand node is replaced by a node in it (reserved capacity is paid for already), the
replacement restricted to the reservation as the scheduler counted it; a second node
finds the reservation full and stays."""

from __future__ import annotations

from typing import Any

import yaml

from nodewright.cloud.sim.reservations import ReservationBook, SimReservation
from nodewright.controllers.common import decision_log as ex
from tests.controllers.conftest import WORKSHOP
from tests.controllers.expectations import (
    expect_consistent,
    expect_no_controller_errors,
    expect_running,
)
from tests.disruption.helpers import nodepool_with, started
from tests.harness import World

CAPACITY_TYPE = "karpenter.sh/capacity-type"
RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"


def reserving_node_class() -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load((WORKSHOP / "ec2nodeclass.yaml").read_text())
    body["spec"]["capacityReservationSelectorTerms"] = [{"tags": {"team": "ml"}}]
    return body


def test_an_on_demand_node_moves_into_a_reservation_once_it_has_room(world: World) -> None:
    book = ReservationBook([SimReservation("cr-1", "m5.large", "us-east-1a", 1,
                                           tags={"team": "ml"})])
    world.cloud.reservations = book
    assert book.take("cr-1")  # another team's instance holds it for now
    world.apply(reserving_node_class(),
                nodepool_with(requirements={CAPACITY_TYPE: ["reserved", "on-demand"]}),
                WORKSHOP / "daemonsets.yaml", WORKSHOP / "inflate.yaml")
    world.scale("inflate", 12)
    assert world.settle()
    before = world.nodes()
    assert len(before) == 2
    assert {n["metadata"]["labels"][CAPACITY_TYPE] for n in before} == {"on-demand"}

    book.release("cr-1")
    # Nothing in the cluster changed: consolidation looks at it again after a while.
    world.advance(900)
    assert world.settle()

    labels = sorted((n["metadata"]["labels"][CAPACITY_TYPE],
                     n["metadata"]["labels"].get(RESERVATION_ID)) for n in world.nodes())
    assert labels == [("on-demand", None), ("reserved", "cr-1")]
    replaced = [d for d in started(world) if d.decision == "replace"]
    assert len(replaced) == 1 and replaced[0].method == ex.SINGLE_NODE
    (claim,) = [c for c in world.nodeclaims()
                if c["metadata"]["labels"].get(CAPACITY_TYPE) == "reserved"]
    requirements = {r["key"]: (r["operator"], r.get("values")) for r in
                    claim["spec"]["requirements"]}
    assert requirements[CAPACITY_TYPE] == ("In", ["reserved"])
    assert requirements[RESERVATION_ID] == ("In", ["cr-1"])
    assert book.left("cr-1") == 0
    expect_running(world, 12)
    expect_consistent(world)
    expect_no_controller_errors(world)
