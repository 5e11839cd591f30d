"""A capacity reservation interruption marks the reservation unavailable, as Karpenter
v1.14.1's interruption handler does (pkg/controllers/interruption/controller/utils.go: on a
CapacityReservationInterruption, capacityReservationProvider.MarkUnavailable): the NodeClaim
is replaced, and its replacement is not launched into the reservation EC2 is reclaiming."""

from __future__ import annotations

from typing import Any

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.interruption_events import EventKind, InterruptionEvent
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.sim import SimulatedEC2
from nodewright.cluster.events import EventRecorder
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.interruption.controller import InterruptionHandler
from nodewright.runtime.clock import VirtualClock
from nodewright.runtime.reconciler import WatchEvent
from nodewright.state import ClusterState
from tests.controllers.test_state import nodeclaim

from .reservations import FakeCapacityReservations, FakeReservation
from .reserving import TERMS, ZONE, fake, provider
from .world import World, node_class

__all__ = ["fake", "provider"]  # the fixtures of tests/aws/reserving.py

PROVIDER_ID = f"aws:///{ZONE}/i-0123456789abcdef0"


def reserved_offering_available(provider: AwsCloudProvider) -> bool:
    catalog = provider.get_instance_types(node_class(capacityReservationSelectorTerms=TERMS))
    m5 = next(it for it in catalog if it.name == "m5.large")
    (reserved,) = [o for o in m5.offerings if o.capacity_type == "reserved"]
    return reserved.available


def handler_with_reserved_claim(provider: AwsCloudProvider) -> tuple[InterruptionHandler, Any]:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    body = nodeclaim("reserved-claim", PROVIDER_ID)
    body["metadata"]["labels"].update({
        "karpenter.sh/capacity-type": "reserved",
        "karpenter.k8s.aws/capacity-reservation-id": "cr-1",
        "node.kubernetes.io/instance-type": "m5.large",
        "topology.kubernetes.io/zone": ZONE})
    created = cluster.create(body)
    claim = cluster.update({**created, "status": body["status"]}, subresource="status")
    state = ClusterState(clock)
    state.observe(WatchEvent("ADDED", claim))
    handler = InterruptionHandler(cluster, clock, state, EventRecorder(cluster, clock),
                                  reservations=provider.capabilities().reservations)
    (node,) = handler.machines_by_instance().values()
    return handler, node


def test_a_reservation_interruption_marks_the_reservation_unavailable(
    provider: AwsCloudProvider, fake: FakeCapacityReservations, clients: AwsClients,
    world: World,
) -> None:
    """interruption/suite_test.go: It("should mark the capacity reservation as unavailable
    when getting an interruption warning")."""
    fake.add(FakeReservation("cr-1", "m5.large", ZONE, available=3, tags={"team": "ml"}))
    assert reserved_offering_available(provider)
    handler, node = handler_with_reserved_claim(provider)

    deleted = handler.act(InterruptionEvent(
        EventKind.CAPACITY_RESERVATION_INTERRUPTION, "i-0123456789abcdef0", "m-1"), node)

    assert deleted
    assert provider.reservations.count("cr-1") == 0
    assert not reserved_offering_available(provider)


def test_other_interruptions_leave_the_reservation_alone(
    provider: AwsCloudProvider, fake: FakeCapacityReservations, clients: AwsClients,
    world: World,
) -> None:
    fake.add(FakeReservation("cr-1", "m5.large", ZONE, available=3, tags={"team": "ml"}))
    assert reserved_offering_available(provider)
    handler, node = handler_with_reserved_claim(provider)

    handler.act(InterruptionEvent(EventKind.SCHEDULED_CHANGE, "i-0123456789abcdef0", "m-2"),
                node)

    assert provider.reservations.count("cr-1") == 3


def test_only_a_cloud_whose_reservations_can_be_marked_says_so(
    provider: AwsCloudProvider,
) -> None:
    assert provider.capabilities().reservations is provider.reservations
    assert SimulatedEC2(VirtualClock()).capabilities().reservations is None
