"""Reserved capacity that lapsed is relabelled on-demand, as Karpenter v1.14.1's
capacityreservation.capacitytype controller does. Ported from
pkg/controllers/capacityreservation/capacitytype/suite_test.go (It names in each test); the
instance is real to moto, DescribeInstances says whether it still runs in its reservation."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from nodewright.cloud.aws.clients import AwsClients
from nodewright.cloud.aws.provider import AwsCloudProvider
from nodewright.cloud.provider import Instance
from nodewright.cluster.memory import InMemoryCluster
from nodewright.controllers.capacityreservation.capacitytype import ReservedCapacityDemotion
from nodewright.runtime.clock import VirtualClock

from .reservations import FakeCapacityReservations, FakeReservation
from .reserving import TERMS, ZONE, fake, provider
from .test_reservation_drift import InstanceReservation, reserved_claim
from .world import World

__all__ = ["fake", "provider"]  # the fixtures of tests/aws/reserving.py

RESERVED_LABELS = {
    "karpenter.sh/capacity-type": "reserved",
    "karpenter.k8s.aws/capacity-reservation-id": "cr-foo",
    "karpenter.k8s.aws/capacity-reservation-type": "default",
}


def cluster_with(provider_id: str, node: bool = True) -> InMemoryCluster:
    cluster = InMemoryCluster(VirtualClock())
    cluster.create(nodeclaim_body())
    # The status is a subresource: written apart, as the launch controller writes it.
    cluster.patch("NodeClaim", "reserved-abcde", {"status": {"providerID": provider_id}},
                  subresource="status")
    if node:
        cluster.create(node_body(provider_id))
    return cluster


def nodeclaim_body() -> dict[str, Any]:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
            "metadata": {"name": "reserved-abcde",
                         "labels": {**RESERVED_LABELS, "karpenter.sh/nodepool": "default",
                                    "karpenter.sh/registered": "true"}},
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                      "name": "default"}, "requirements": []}}


def node_body(provider_id: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "ip-10-0-0-1.ec2.internal",
                         "labels": {**RESERVED_LABELS, "karpenter.sh/registered": "true"}},
            "spec": {"providerID": provider_id}}


def labels(cluster: InMemoryCluster, kind: str, name: str) -> dict[str, str]:
    return dict(cluster.get(kind, name)["metadata"].get("labels") or {})


def assert_on_demand(found: dict[str, str]) -> None:
    assert found["karpenter.sh/capacity-type"] == "on-demand"
    assert "karpenter.k8s.aws/capacity-reservation-id" not in found
    assert "karpenter.k8s.aws/capacity-reservation-type" not in found


def test_reserved_nodeclaims_and_nodes_are_demoted_once_the_reservation_lapses(
    provider: AwsCloudProvider, fake: FakeCapacityReservations, clients: AwsClients,
    world: World,
) -> None:
    """capacitytype/suite_test.go: It("should demote nodeclaims and nodes from reserved to
    on-demand")."""
    fake.add(FakeReservation("cr-foo", "m5.large", ZONE, available=1, tags={"team": "ml"}))
    described = InstanceReservation(clients, world.security_group)
    provider_id = reserved_claim(provider).status.provider_id
    cluster = cluster_with(provider_id)
    demotion = ReservedCapacityDemotion(cluster, provider)

    described.reservation = "cr-foo"
    demotion.reconcile("")
    # Still in its reservation: nothing changes.
    assert labels(cluster, "NodeClaim", "reserved-abcde").items() >= RESERVED_LABELS.items()
    assert labels(cluster, "Node", "ip-10-0-0-1.ec2.internal").items() >= RESERVED_LABELS.items()

    described.reservation = None  # the reservation ended: EC2 runs it on-demand
    demotion.reconcile("")

    assert_on_demand(labels(cluster, "NodeClaim", "reserved-abcde"))
    assert_on_demand(labels(cluster, "Node", "ip-10-0-0-1.ec2.internal"))


def test_a_node_is_demoted_even_when_its_nodeclaim_was_demoted_before(
    provider: AwsCloudProvider, fake: FakeCapacityReservations, clients: AwsClients,
    world: World,
) -> None:
    """capacitytype/suite_test.go: It("should demote nodes from reserved to on-demand even if
    their nodeclaim was demoted previously")."""
    fake.add(FakeReservation("cr-foo", "m5.large", ZONE, available=1, tags={"team": "ml"}))
    described = InstanceReservation(clients, world.security_group)
    provider_id = reserved_claim(provider).status.provider_id
    described.reservation = None
    cluster = cluster_with(provider_id, node=False)
    demotion = ReservedCapacityDemotion(cluster, provider)

    demotion.reconcile("")
    assert_on_demand(labels(cluster, "NodeClaim", "reserved-abcde"))

    cluster.create(node_body(provider_id))
    demotion.reconcile("")
    assert_on_demand(labels(cluster, "Node", "ip-10-0-0-1.ec2.internal"))


def test_an_unregistered_node_waits_for_its_labels_to_be_synced(
    provider: AwsCloudProvider, fake: FakeCapacityReservations, clients: AwsClients,
    world: World,
) -> None:
    fake.add(FakeReservation("cr-foo", "m5.large", ZONE, available=1, tags={"team": "ml"}))
    described = InstanceReservation(clients, world.security_group)
    provider_id = reserved_claim(provider).status.provider_id
    described.reservation = None
    cluster = cluster_with(provider_id, node=False)
    unregistered = node_body(provider_id)
    del unregistered["metadata"]["labels"]["karpenter.sh/registered"]
    cluster.create(unregistered)

    ReservedCapacityDemotion(cluster, provider).reconcile("")

    assert labels(cluster, "Node", "ip-10-0-0-1.ec2.internal")[
        "karpenter.sh/capacity-type"] == "reserved"
    assert TERMS  # the node class the instance was launched from selected cr-foo


class ListedInstances:
    """The cloud's list: each provider ID with the capacity type EC2 runs it as now."""

    def __init__(self, capacity_types: dict[str, str]) -> None:
        self.capacity_types = capacity_types

    def list(self) -> list[Instance]:
        return [Instance(provider_id=provider_id, instance_id=provider_id.rsplit("/", 1)[-1],
                         instance_type="m5.large", zone=ZONE, capacity_type=capacity_type,
                         image_id="ami-1", state="running",
                         launch_time=datetime(2026, 1, 1, tzinfo=UTC))
                for provider_id, capacity_type in self.capacity_types.items()]


def _claim_and_node(cluster: InMemoryCluster, name: str, capacity_type: str,
                    node_capacity_type: str) -> str:
    provider_id = f"aws:///{ZONE}/i-{name}"
    claim = nodeclaim_body()
    claim["metadata"]["name"] = name
    claim["metadata"]["labels"]["karpenter.sh/capacity-type"] = capacity_type
    cluster.create(claim)
    cluster.patch("NodeClaim", name, {"status": {"providerID": provider_id}},
                  subresource="status")
    node = node_body(provider_id)
    node["metadata"]["name"] = f"node-{name}"
    node["metadata"]["labels"]["karpenter.sh/capacity-type"] = node_capacity_type
    cluster.create(node)
    return provider_id


def test_in_a_mixed_fleet_only_what_still_says_reserved_is_patched() -> None:
    """Only objects labelled reserved are listed in full; the rest of the fleet is left
    as it is (not even written), whether or not some Node still says reserved."""
    cluster = InMemoryCluster(VirtualClock())
    lapsed = _claim_and_node(cluster, "lapsed", "reserved", "reserved")
    plain = _claim_and_node(cluster, "plain", "on-demand", "on-demand")
    cloud = ListedInstances({lapsed: "on-demand", plain: "on-demand"})
    untouched = {kind: cluster.get(kind, name)["metadata"]["resourceVersion"]
                 for kind, name in (("NodeClaim", "plain"), ("Node", "node-plain"))}

    ReservedCapacityDemotion(cluster, cloud).reconcile("")

    assert_on_demand(labels(cluster, "NodeClaim", "lapsed"))
    assert_on_demand(labels(cluster, "Node", "node-lapsed"))
    assert {kind: cluster.get(kind, name)["metadata"]["resourceVersion"]
            for kind, name in (("NodeClaim", "plain"), ("Node", "node-plain"))} == untouched

    # A Node left reserved under an already demoted NodeClaim (its patch failed) is found
    # through the NodeClaims listed in full.
    stale = _claim_and_node(cluster, "stale", "on-demand", "reserved")
    cloud.capacity_types[stale] = "on-demand"
    ReservedCapacityDemotion(cluster, cloud).reconcile("")

    assert_on_demand(labels(cluster, "Node", "node-stale"))
    assert {kind: cluster.get(kind, name)["metadata"]["resourceVersion"]
            for kind, name in (("NodeClaim", "plain"), ("Node", "node-plain"))} == untouched
