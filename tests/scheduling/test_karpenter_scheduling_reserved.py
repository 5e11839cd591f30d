"""Karpenter's scheduling suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/suite_test.go, Describe("Reserved Instance
Types"). Each test names its It.

Karpenter launches one NodeClaim per loop while a pod could use several reservations (it
holds them all until launch) and schedules the rest in the next loops; Nodewright plans
the reservations' instances left in one pass and the overflow at normal offerings
(docs/karpenter-differences.md, "Reserved capacity in scheduling"). So each story runs
rounds until nothing is left pending and checks the nodes Karpenter's loops end with."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.nodepools import NodePoolTemplate
from nodewright.scheduling.pods import ExistingNode, Pod
from tests.scheduling.karpenter_fake import Cluster
from tests.scheduling.karpenter_scheduling import (
    CAPACITY_TYPE,
    HOSTNAME,
    INSTANCE_TYPE,
    ZONE,
    expression,
    fake_it,
    nodepool,
    pod,
)

RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"
NODEPOOL = "karpenter.sh/nodepool"
APP = {"app": "test"}


def with_reservation(it: InstanceType, reservation: str, capacity: int = 1) -> InstanceType:
    """A reserved offering in test-zone-1 at a hundred-thousandth of the price."""
    price = it.offerings[0].price / 100_000
    offering = Offering("test-zone-1", None, "reserved", price, reservation_id=reservation,
                        reservation_type="default", reservation_capacity=capacity)
    return replace(it, offerings=(*it.offerings, offering))


def catalog() -> list[InstanceType]:
    """The Describe's BeforeEach: large (6 cpu), medium (3) and small (2) types, the
    medium and small ones with a reservation of one instance each."""
    return [fake_it("large-instance-type", cpu=6, memory_gi=6),
            with_reservation(fake_it("medium-instance-type", cpu=3, memory_gi=3),
                             "r-medium-instance-type"),
            with_reservation(fake_it("small-instance-type", cpu=2, memory_gi=2),
                             "r-small-instance-type")]


def spread_apart(requirements: Sequence[dict[str, Any]] = (),
                 preferences: Sequence[dict[str, Any]] = ()) -> Pod:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": APP}, "topologyKey": HOSTNAME}]}}
    return pod(labels=APP, requirements=requirements, preferences=preferences, affinity=anti)


def rounds(pools: Sequence[NodePoolTemplate], pods: Sequence[Pod]) -> Cluster:
    """ExpectProvisioned again with the pods still pending, until none is left."""
    cluster = Cluster()
    pending = list(pods)
    for _ in range(len(pods)):
        cluster.provision(pools, *pending)
        bound = {p.key for p in cluster.bound}
        pending = [p for p in pending if p.key not in bound]
        if not pending:
            break
    assert not pending, [p.key for p in pending]
    return cluster


def reserved(node: ExistingNode) -> str | None:
    if node.labels.get(CAPACITY_TYPE) == "reserved":
        return node.labels[RESERVATION_ID]
    assert RESERVATION_ID not in node.labels
    return None


def test_compatible_reservations_are_used_before_on_demand_or_spot() -> None:
    # It("shouldn't fallback to on-demand or spot when compatible reserved offerings are
    # available"): the small reservation, the medium one, then a small on-demand/spot node.
    pods = [pod(requests={"cpu": "1800m"}) for _ in range(3)]
    cluster = rounds([nodepool(catalog=catalog())], pods)
    nodes = sorted((reserved(n) or "", n.labels[INSTANCE_TYPE]) for n in cluster.nodes)
    assert nodes == [("", "small-instance-type"),
                     ("r-medium-instance-type", "medium-instance-type"),
                     ("r-small-instance-type", "small-instance-type")]


def test_a_reservation_shared_by_two_nodepools_is_counted_once() -> None:
    # It("should correctly track reservations shared across nodepools")
    types = catalog()
    pools = [nodepool("np-1", catalog=types), nodepool("np-2", catalog=types)]
    pods = [spread_apart([expression(INSTANCE_TYPE, "In", "small-instance-type"),
                          expression(NODEPOOL, "In", f"np-{i + 1}")]) for i in range(2)]
    cluster = rounds(pools, pods)
    assert sorted(str(reserved(n)) for n in cluster.nodes) == ["None", "r-small-instance-type"]
    assert {n.labels[INSTANCE_TYPE] for n in cluster.nodes} == {"small-instance-type"}


def test_distinct_reservations_of_one_type_in_two_nodepools_are_both_used() -> None:
    # It("should correctly track reservations for multiple nodepools with distinct
    # reservations for the same instance pool")
    distinct = with_reservation(fake_it("small-instance-type", cpu=2, memory_gi=2), "r-distinct")
    pools = [nodepool("np-1", catalog=catalog()), nodepool("np-2", catalog=[distinct])]
    pods = [spread_apart([expression(INSTANCE_TYPE, "In", "small-instance-type"),
                          expression(NODEPOOL, "In", f"np-{i + 1}")]) for i in range(2)]
    cluster = Cluster()
    cluster.provision(pools, *pods)
    assert len(cluster.bound) == 2
    ids = sorted(str(reserved(n)) for n in cluster.nodes)
    assert ids == ["r-distinct", "r-small-instance-type"]


def test_two_reservations_of_one_type_take_three_nodes_then_it_falls_back() -> None:
    # It("should correctly track multiple reservations for the same instance pool"): one
    # reservation of 1 and one of 2 take three of four nodes.
    types = catalog()
    types[2] = with_reservation(types[2], "r-small-instance-type-2", capacity=2)
    pods = [spread_apart([expression(INSTANCE_TYPE, "In", "small-instance-type")])
            for _ in range(4)]
    cluster = rounds([nodepool(catalog=types)], pods)
    ids = sorted(str(reserved(n)) for n in cluster.nodes)
    assert ids == ["None", "r-small-instance-type", "r-small-instance-type-2",
                   "r-small-instance-type-2"]


def test_a_heavier_nodepools_reservation_is_not_left_for_a_lighter_one() -> None:
    # It("shouldn't fallback to a lower weight NodePool if a reserved offering is
    # available"): both nodes launch from the primary pool.
    target = with_reservation(fake_it("small-instance-type", cpu=2, memory_gi=2), "r-fallback")
    pools = [nodepool("np-primary", catalog=catalog(), weight=100),
             nodepool("np-fallback", catalog=[target], weight=50)]
    pods = [spread_apart([expression(INSTANCE_TYPE, "In", "small-instance-type")])
            for _ in range(2)]
    cluster = rounds(pools, pods)
    assert {n.labels[NODEPOOL] for n in cluster.nodes} == {"np-primary"}
    assert sorted(str(reserved(n)) for n in cluster.nodes) == ["None", "r-small-instance-type"]


def test_a_used_up_reservation_does_not_relax_the_nodepool_preference() -> None:
    # It("shouldn't relax preferences when a pod fails to schedule due to a reserved
    # offering error"): np-2 has a reservation left, yet both nodes come from the
    # preferred np-1.
    distinct = with_reservation(fake_it("small-instance-type", cpu=2, memory_gi=2), "r-distinct")
    pools = [nodepool("np-1", catalog=[distinct]), nodepool("np-2", catalog=[distinct])]
    pods = [spread_apart([expression(INSTANCE_TYPE, "In", "small-instance-type")],
                         [expression(NODEPOOL, "In", "np-1")]) for _ in range(2)]
    cluster = rounds(pools, pods)
    assert {n.labels[NODEPOOL] for n in cluster.nodes} == {"np-1"}
    assert sorted(str(reserved(n)) for n in cluster.nodes) == ["None", "r-distinct"]


def test_pods_share_one_reserved_node() -> None:
    # It("should handle multiple pods on reserved nodes")
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": APP}, "topologyKey": ZONE}]}}
    pods = [pod(labels=APP, affinity=affinity, requirements=[
        expression(INSTANCE_TYPE, "In", "small-instance-type"),
        expression(NODEPOOL, "In", "np-1"), expression(CAPACITY_TYPE, "In", "reserved"),
        expression(ZONE, "In", "test-zone-1")]) for _ in range(2)]
    cluster = Cluster()
    cluster.provision([nodepool("np-1", catalog=catalog())], *pods)
    (node,) = cluster.nodes
    assert len(cluster.bound) == 2
    assert reserved(node) == "r-small-instance-type"
    assert node.labels[INSTANCE_TYPE] == "small-instance-type"
