"""Capacity-block expiration: NodeClaims in a capacity block are deleted 40 minutes before
the block ends (Karpenter's capacityreservation.expiration controller), on the virtual
driver, with the block's end read from the cloud (`describe_reservations`, what EC2's
DescribeCapacityReservations says), as Karpenter reads it. And what it costs: nothing while
no NodeClaim is in a capacity block."""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta
from typing import Any

from nodewright.cloud.aws.capacity_reservations import Reservation
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.capacityreservation.expiration import CapacityBlockExpiration
from nodewright.controllers.driver import VirtualDriver
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import Result

OWNER = "123456789012"


def claim(name: str, reservation: str | None = None,
          reservation_type: str = "default") -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": "default"}
    if reservation:
        labels["karpenter.k8s.aws/capacity-reservation-id"] = reservation
        labels["karpenter.k8s.aws/capacity-reservation-type"] = reservation_type
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": labels},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"}, "requirements": []}}


class DescribedReservations:
    """What EC2 describes, and every look-up the controller made."""

    def __init__(self, *reservations: Reservation) -> None:
        self.reservations = {r.id: r for r in reservations}
        self.asked: list[list[str]] = []

    def describe_reservations(self, reservation_ids: Collection[str]) -> list[Reservation]:
        self.asked.append(sorted(reservation_ids))
        return [self.reservations[i] for i in sorted(reservation_ids) if i in self.reservations]


class CountedExpiration(CapacityBlockExpiration):
    runs = 0

    def reconcile(self, key: str) -> Result:
        self.runs += 1
        return super().reconcile(key)


def test_nodes_of_a_capacity_block_are_drained_40_minutes_before_it_ends() -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    ends = clock.now() + timedelta(hours=1)
    ec2 = DescribedReservations(
        Reservation("cr-block", "p5.48xlarge", "us-west-2a", OWNER, "targeted",
                    "capacity-block", 2, end_time=ends),
        Reservation("cr-odcr", "m5.large", "us-west-2a", OWNER, "targeted", "default", 2))
    cluster.create(claim("in-block", "cr-block", "capacity-block"))
    cluster.create(claim("in-odcr", "cr-odcr"))
    cluster.create(claim("plain"))
    driver = VirtualDriver(clock, cluster, raise_errors=True)
    driver.add(CapacityBlockExpiration(cluster, clock, ec2))
    driver.start()

    clock.advance(60)
    assert {c["metadata"]["name"] for c in cluster.list("NodeClaim")} == {
        "in-block", "in-odcr", "plain"}
    assert ec2.asked and set(map(tuple, ec2.asked)) == {("cr-block",)}  # only the block

    clock.advance(19 * 60 - 1)  # a second short of 20 minutes: just over 40 minutes left
    assert len(cluster.list("NodeClaim")) == 3
    clock.advance(2)
    assert {c["metadata"]["name"] for c in cluster.list("NodeClaim")} == {"in-odcr", "plain"}


def test_without_a_nodeclaim_in_a_capacity_block_it_does_nothing() -> None:
    """The cost fix: NodeClaim events of NodeClaims outside capacity blocks never start it,
    so a cluster without capacity blocks pays no list and no EC2 call for it."""
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    ec2 = DescribedReservations(
        Reservation("cr-odcr", "m5.large", "us-west-2a", OWNER, "targeted", "default", 9))
    expiration = CountedExpiration(cluster, clock, ec2)
    driver = VirtualDriver(clock, cluster, raise_errors=True)
    driver.add(expiration)
    driver.start()

    for index in range(20):
        cluster.create(claim(f"plain-{index}"))
        cluster.create(claim(f"odcr-{index}", "cr-odcr"))
    driver.deliver()
    clock.advance(3600)

    assert expiration.runs == 0
    assert ec2.asked == []


def test_it_stops_polling_when_the_last_capacity_block_nodeclaim_is_gone() -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    ec2 = DescribedReservations(
        Reservation("cr-block", "p5.48xlarge", "us-west-2a", OWNER, "targeted",
                    "capacity-block", 2, end_time=clock.now() + timedelta(days=1)))
    expiration = CountedExpiration(cluster, clock, ec2)
    driver = VirtualDriver(clock, cluster, raise_errors=True)
    driver.add(expiration)
    driver.start()
    cluster.create(claim("in-block", "cr-block", "capacity-block"))
    driver.deliver()
    clock.advance(10 * 60)
    assert 5 <= len(ec2.asked) <= 12  # about once a minute while the block's node runs

    cluster.delete("NodeClaim", "in-block")
    driver.deliver()
    clock.advance(120)
    asked = len(ec2.asked)
    clock.advance(6 * 3600)
    assert len(ec2.asked) == asked
