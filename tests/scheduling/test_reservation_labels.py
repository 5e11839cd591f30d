"""Offerings that are not reservations have no capacity reservation labels (Karpenter AWS
v1.14.1 pkg/providers/instancetype/offering/base_resolver.go gives on-demand and spot
offerings a DoesNotExist requirement on capacity-reservation-id, -type and -interruptible;
reserved_capacity_resolver.go gives reserved ones the reservation's values). A NodePool that
asks for interruptible reservations and also allows on-demand and spot is therefore planned
and launched only into an interruptible reservation: once that is full its pods wait."""

from __future__ import annotations

from dataclasses import replace

from nodewright.cloud.aws.offerings import launchable
from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.requirements import Requirement, Requirements

from .test_solver import instance_type, nodepool, replicas, run

INTERRUPTIBLE = "karpenter.k8s.aws/capacity-reservation-interruptible"
RESERVATION_TYPE = "karpenter.k8s.aws/capacity-reservation-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ANY_CAPACITY = Requirement.build(CAPACITY_TYPE, "In", ["reserved", "on-demand", "spot"])

PLAIN = instance_type("m.1", 4, 16, 0.20, capacity_types=("on-demand", "spot"))


def with_reservation(it: InstanceType, reservation: str, left: int, *,
                     interruptible: bool) -> InstanceType:
    """The type with one reserved offering in zone-a (near-free while it has room)."""
    offering = Offering("zone-a", None, "reserved", 0.0000001, available=left > 0,
                        reservation_id=reservation, reservation_type="default",
                        reservation_interruptible=interruptible, reservation_capacity=left)
    return replace(it, offerings=(*it.offerings, offering))


def whole_nodes(count: int) -> list:
    return replicas(count, "job", cpu="3", memory="1Gi")


def test_only_interruptible_reservations_take_pods_that_ask_for_them() -> None:
    """A NodePool requiring capacity-reservation-interruptible=true that also allows
    on-demand and spot: the one interruptible reservation takes one pod, the ordinary one
    none, and on-demand and spot offerings none; the other pods wait."""
    catalog = [with_reservation(PLAIN, "cr-interruptible", 1, interruptible=True),
               with_reservation(instance_type("n.1", 4, 16, 0.30,
                                              capacity_types=("on-demand", "spot")),
                                "cr-ordinary", 5, interruptible=False)]
    pool = nodepool(catalog=catalog, requirements=[
        ANY_CAPACITY, Requirement.build(INTERRUPTIBLE, "In", ["true"])])

    result = run(whole_nodes(3), [pool])

    (claim,) = result.nodeclaims
    assert claim.capacity_type == "reserved"
    assert claim.instance_type == "m.1"
    assert len(result.unschedulable) == 2


def test_a_pod_that_asks_for_an_interruptible_reservation_does_not_land_on_demand() -> None:
    """The same asked by the pod (a well-known label, as Karpenter registers it), with no
    interruptible reservation at all: nothing is planned."""
    pool = nodepool(catalog=[with_reservation(PLAIN, "cr-ordinary", 5, interruptible=False)],
                    requirements=[ANY_CAPACITY])
    pods = replicas(2, "job", cpu="3", memory="1Gi", nodeSelector={INTERRUPTIBLE: "true"})

    result = run(pods, [pool])

    assert result.nodeclaims == ()
    assert len(result.unschedulable) == 2


def test_pods_that_refuse_interruptible_reservations_may_run_anywhere_else() -> None:
    """NotIn admits an offering without the label (Karpenter's Intersects lets NotIn meet
    DoesNotExist): the ordinary reservation first, then spot."""
    catalog = [with_reservation(PLAIN, "cr-interruptible", 5, interruptible=True),
               with_reservation(PLAIN, "cr-ordinary", 1, interruptible=False)]
    pool = nodepool(catalog=[catalog[0], catalog[1]], requirements=[
        ANY_CAPACITY, Requirement.build(INTERRUPTIBLE, "NotIn", ["true"])])

    result = run(whole_nodes(2), [pool])

    assert result.unschedulable == ()
    assert sorted(c.capacity_type for c in result.nodeclaims) == ["reserved", "spot"]


def test_the_launch_leaves_on_demand_and_spot_out_of_an_interruptible_nodeclaim() -> None:
    """The AWS provider's launch-time selection agrees: a NodeClaim requiring an
    interruptible reservation (or a reservation type) is offered only reserved capacity."""
    catalog = [with_reservation(PLAIN, "cr-interruptible", 1, interruptible=True)]
    for key, value in ((INTERRUPTIBLE, "true"), (RESERVATION_TYPE, "default")):
        requirements = Requirements([ANY_CAPACITY, Requirement.build(key, "In", [value])])
        choices = launchable(catalog, requirements, ["zone-a", "zone-b"],
                             [PLAIN.labels["kubernetes.io/arch"]])
        assert [(c.offering.capacity_type, c.offering.reservation_id) for c in choices] == [
            ("reserved", "cr-interruptible")]
    anything = launchable(catalog, Requirements([ANY_CAPACITY]), ["zone-a"],
                          [PLAIN.labels["kubernetes.io/arch"]])
    assert {c.offering.capacity_type for c in anything} == {"on-demand", "spot", "reserved"}
