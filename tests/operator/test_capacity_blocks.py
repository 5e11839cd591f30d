"""Capacity-block expiration: NodeClaims in a capacity block are deleted 40 minutes before
the block ends (Karpenter's capacityreservation.expiration controller), on the virtual
driver, with the block's end read from the EC2NodeClass status as the status controller
writes it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from nodewright.api.ec2nodeclass import EC2NodeClass
from nodewright.cloud.aws.capacity_reservations import Reservation
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.capacityreservation.expiration import CapacityBlockExpiration
from nodewright.controllers.driver import VirtualDriver
from nodewright.controllers.nodeclass.status import NodeClassStatus
from nodewright.runtime.clock import VirtualClock
from tests.operator.test_nodeclass_and_sim_kubelet import NODE_CLASS, RESOLVED, Resolver


def claim(name: str, reservation: str | None) -> dict[str, Any]:
    labels = {"karpenter.sh/nodepool": "default"}
    if reservation:
        labels["karpenter.k8s.aws/capacity-reservation-id"] = reservation
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": name, "labels": labels},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"}, "requirements": []}}


def test_nodes_of_a_capacity_block_are_drained_40_minutes_before_it_ends() -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    cluster.create(NODE_CLASS)
    ends = clock.now() + timedelta(hours=1)
    block = Reservation("cr-block", "p5.48xlarge", "us-west-2a", "123456789012", "targeted",
                        "capacity-block", 2, end_time=ends)
    odcr = Reservation("cr-odcr", "m5.large", "us-west-2a", "123456789012", "targeted",
                       "default", 2)
    resolution = RESOLVED.__class__(**{**RESOLVED.__dict__,
                                       "capacity_reservations": (block, odcr)})
    for name, reservation in (("in-block", "cr-block"), ("in-odcr", "cr-odcr"),
                              ("plain", None)):
        cluster.create(claim(name, reservation))
    driver = VirtualDriver(clock, cluster, raise_errors=True)
    driver.add(NodeClassStatus(cluster, Resolver(resolution), clock))
    driver.add(CapacityBlockExpiration(cluster, clock))
    driver.start()

    clock.advance(60)
    status = EC2NodeClass.model_validate(cluster.get("EC2NodeClass", "default")).status
    assert status is not None and status.capacity_reservations is not None
    assert [(r.id, r.state) for r in status.capacity_reservations] == [
        ("cr-block", "active"), ("cr-odcr", "active")]
    assert {c["metadata"]["name"] for c in cluster.list("NodeClaim")} == {
        "in-block", "in-odcr", "plain"}

    clock.advance(19 * 60 - 1)  # a second short of 20 minutes: just over 40 minutes left
    assert len(cluster.list("NodeClaim")) == 3
    clock.advance(2)
    assert {c["metadata"]["name"] for c in cluster.list("NodeClaim")} == {"in-odcr", "plain"}
    clock.advance(60)
    status = EC2NodeClass.model_validate(cluster.get("EC2NodeClass", "default")).status
    assert status is not None and status.capacity_reservations is not None
    assert status.capacity_reservations[0].state == "expiring"
