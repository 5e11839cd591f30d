"""Karpenter's scheduling suite, ported: kubernetes-sigs/karpenter v1.14.1
pkg/controllers/provisioning/scheduling/suite_test.go, Describe("Reserved Instance
Types"). Each test names its It.

As Karpenter's provisioner, each round solves in strict mode (DisableReservedCapacityFallback):
a NodeClaim holds an instance of every reservation it could launch into, and a pod whose
NodeClaim would need a used-up reservation waits for the next round (`deferred`) instead of
falling back. Each launch takes its instance out of the catalog, as Karpenter's fake cloud
provider does (a reservation with no instance left is unavailable)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.nodepools import NodePoolTemplate, allowed_offerings
from nodewright.scheduling.pods import ExistingNode, Pod
from nodewright.scheduling.solver import SchedulingProblem, SchedulingResult, solve
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
from tests.support.scheduling import single_values

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


def _taken(it: InstanceType, reservation: str) -> InstanceType:
    offerings = tuple(
        replace(o, reservation_capacity=o.reservation_capacity - 1,
                available=o.reservation_capacity > 1)
        if o.reservation_id == reservation else o
        for o in it.offerings)
    return replace(it, offerings=offerings)


@dataclass
class Cluster:
    """ExpectProvisioned rounds: the provisioner's strict solve, each planned NodeClaim
    launched as a node (its cheapest type, in its cheapest allowed offering), a reserved
    launch taking one instance out of every catalog that offers the reservation."""

    pools: list[NodePoolTemplate]
    nodes: list[ExistingNode] = field(default_factory=list)
    bound: list[Pod] = field(default_factory=list)

    def provision(self, *pending: Pod) -> list[ExistingNode]:
        """The nodes this round launched with pods bound; the pods it placed are bound."""
        result: SchedulingResult = solve(SchedulingProblem(
            pods=list(pending), nodepools=self.pools, nodes=self.nodes,
            bound_pods=self.bound, reserved_capacity_fallback=False))
        assert result.unschedulable == (), result.unschedulable
        by_key = {p.key: p for p in pending}
        launched = []
        for claim in result.nodeclaims:
            template = next(t for t in self.pools if t.name == claim.nodepool)
            it = next(t for t in template.instance_types if t.name == claim.instance_type)
            offering = min(allowed_offerings(it, claim.requirements),
                           key=lambda o: (o.price, o.reservation_id or ""))
            name = f"node-{len(self.nodes) + 1}"
            labels = {**single_values(claim.requirements), **it.labels, ZONE: offering.zone,
                      CAPACITY_TYPE: offering.capacity_type, HOSTNAME: name}
            labels.pop(RESERVATION_ID, None)
            if offering.reservation_id:
                labels[RESERVATION_ID] = offering.reservation_id
                self.pools = [replace(t, instance_types=[_taken(i, offering.reservation_id)
                                                         for i in t.instance_types])
                              for t in self.pools]
            node = ExistingNode(name, labels, template.taints, dict(it.allocatable))
            self.nodes.append(node)
            launched.append(node)
            self.bound.extend(replace(by_key[key], node_name=name) for key in claim.pods)
        return launched

    def pending(self, pods: Sequence[Pod]) -> list[Pod]:
        bound = {p.key for p in self.bound}
        return [p for p in pods if p.key not in bound]


def reserved(node: ExistingNode) -> str | None:
    if node.labels.get(CAPACITY_TYPE) == "reserved":
        return node.labels[RESERVATION_ID]
    assert RESERVATION_ID not in node.labels
    return None


def describe(nodes: Sequence[ExistingNode]) -> list[tuple[str | None, str]]:
    return sorted(((reserved(n), n.labels[INSTANCE_TYPE]) for n in nodes),
                  key=lambda e: (e[0] or "", e[1]))


def test_compatible_reservations_are_used_before_on_demand_or_spot() -> None:
    # It("shouldn't fallback to on-demand or spot when compatible reserved offerings are
    # available"): the first NodeClaim may become small or medium, so it holds both
    # reservations and one pod launches per round: small, medium, then a non-reserved small.
    cluster = Cluster([nodepool(catalog=catalog())])
    pods = [pod(requests={"cpu": "1800m"}) for _ in range(3)]
    assert describe(cluster.provision(*pods)) == [
        ("r-small-instance-type", "small-instance-type")]
    assert describe(cluster.provision(*cluster.pending(pods))) == [
        ("r-medium-instance-type", "medium-instance-type")]
    assert describe(cluster.provision(*cluster.pending(pods))) == [
        (None, "small-instance-type")]
    assert cluster.pending(pods) == []


def test_a_reservation_shared_by_two_nodepools_is_counted_once() -> None:
    # It("should correctly track reservations shared across nodepools")
    types = catalog()
    cluster = Cluster([nodepool("np-1", catalog=types), nodepool("np-2", catalog=types)])
    pods = [spread_apart([expression(INSTANCE_TYPE, "In", "small-instance-type"),
                          expression(NODEPOOL, "In", f"np-{i + 1}")]) for i in range(2)]
    assert describe(cluster.provision(*pods)) == [
        ("r-small-instance-type", "small-instance-type")]
    assert describe(cluster.provision(*cluster.pending(pods))) == [
        (None, "small-instance-type")]


def test_distinct_reservations_of_one_type_in_two_nodepools_are_both_used() -> None:
    # It("should correctly track reservations for multiple nodepools with distinct
    # reservations for the same instance pool"): both pods in the first round.
    distinct = with_reservation(fake_it("small-instance-type", cpu=2, memory_gi=2), "r-distinct")
    cluster = Cluster([nodepool("np-1", catalog=catalog()), nodepool("np-2", catalog=[distinct])])
    pods = [spread_apart([expression(INSTANCE_TYPE, "In", "small-instance-type"),
                          expression(NODEPOOL, "In", f"np-{i + 1}")]) for i in range(2)]
    assert describe(cluster.provision(*pods)) == [
        ("r-distinct", "small-instance-type"), ("r-small-instance-type", "small-instance-type")]


def test_two_reservations_of_one_type_take_three_nodes_then_it_falls_back() -> None:
    # It("should correctly track multiple reservations for the same instance pool"): one
    # reservation of 1 and one of 2. The first NodeClaim holds both, so two pods launch in
    # the first round, one in the second, and the last outside the reservations.
    types = catalog()
    types[2] = with_reservation(types[2], "r-small-instance-type-2", capacity=2)
    cluster = Cluster([nodepool(catalog=types)])
    pods = [spread_apart([expression(INSTANCE_TYPE, "In", "small-instance-type")])
            for _ in range(4)]
    first = cluster.provision(*pods)
    assert len(first) == 2 and all(reserved(n) for n in first)
    second = cluster.provision(*cluster.pending(pods))
    assert len(second) == 1 and reserved(second[0]) is not None
    assert describe(cluster.provision(*cluster.pending(pods))) == [
        (None, "small-instance-type")]
    assert sorted(str(reserved(n)) for n in cluster.nodes) == [
        "None", "r-small-instance-type", "r-small-instance-type-2", "r-small-instance-type-2"]


def test_a_heavier_nodepools_reservation_is_not_left_for_a_lighter_one() -> None:
    # It("shouldn't fallback to a lower weight NodePool if a reserved offering is
    # available"): the second pod waits for the primary pool rather than taking the
    # fallback pool's reservation, then launches in the primary pool outside it.
    target = with_reservation(fake_it("small-instance-type", cpu=2, memory_gi=2), "r-fallback")
    cluster = Cluster([nodepool("np-primary", catalog=catalog(), weight=100),
                       nodepool("np-fallback", catalog=[target], weight=50)])
    pods = [spread_apart([expression(INSTANCE_TYPE, "In", "small-instance-type")])
            for _ in range(2)]
    (first,) = cluster.provision(*pods)
    assert (first.labels[NODEPOOL], reserved(first)) == ("np-primary", "r-small-instance-type")
    (second,) = cluster.provision(*cluster.pending(pods))
    assert (second.labels[NODEPOOL], reserved(second)) == ("np-primary", None)


def test_a_used_up_reservation_does_not_relax_the_nodepool_preference() -> None:
    # It("shouldn't relax preferences when a pod fails to schedule due to a reserved
    # offering error"): np-2 has a reservation left, yet the second pod keeps its
    # preference for np-1, waits, and launches there outside the reservation. (Karpenter's
    # test builds np-2's distinct type but never hands it to np-2; here np-2 has it, as the
    # test's comments intend.)
    distinct = with_reservation(fake_it("small-instance-type", cpu=2, memory_gi=2), "r-distinct")
    cluster = Cluster([nodepool("np-1", catalog=catalog()), nodepool("np-2", catalog=[distinct])])
    pods = [spread_apart([expression(INSTANCE_TYPE, "In", "small-instance-type")],
                         [expression(NODEPOOL, "In", "np-1")]) for _ in range(2)]
    (first,) = cluster.provision(*pods)
    assert (first.labels[NODEPOOL], reserved(first)) == ("np-1", "r-small-instance-type")
    (second,) = cluster.provision(*cluster.pending(pods))
    assert (second.labels[NODEPOOL], reserved(second)) == ("np-1", None)


def test_pods_share_one_reserved_node() -> None:
    # It("should handle multiple pods on reserved nodes")
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": APP}, "topologyKey": ZONE}]}}
    pods = [pod(labels=APP, affinity=affinity, requirements=[
        expression(INSTANCE_TYPE, "In", "small-instance-type"),
        expression(NODEPOOL, "In", "np-1"), expression(CAPACITY_TYPE, "In", "reserved"),
        expression(ZONE, "In", "test-zone-1")]) for _ in range(2)]
    cluster = Cluster([nodepool("np-1", catalog=catalog())])
    (node,) = cluster.provision(*pods)
    assert cluster.pending(pods) == []
    assert reserved(node) == "r-small-instance-type"
    assert node.labels[INSTANCE_TYPE] == "small-instance-type"
