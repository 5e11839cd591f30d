"""A plan counts capacity reservations (Karpenter v1.14's reservation manager; cases after
its "Reserved Instance Types" scheduling suite): no more NodeClaims go into a reservation
than it has instances left, the rest are planned at their normal offerings."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

import pytest

from nodewright.scheduling.catalog import InstanceType, Offering
from nodewright.scheduling.requirements import Requirement
from nodewright.scheduling.solver import SchedulingResult

from .test_solver import instance_type, nodepool, pod, replicas, run

CAPACITY_TYPE = "karpenter.sh/capacity-type"
RESERVATION_ID = "karpenter.k8s.aws/capacity-reservation-id"
ZONE = "topology.kubernetes.io/zone"

PLAIN = instance_type("m.1", 4, 16, 0.20, capacity_types=("on-demand", "spot"))


def reserved(it: InstanceType, *reservations: tuple[str, int], zone: str = "zone-a"
             ) -> InstanceType:
    """The type with one `reserved` offering per (id, instances left), as the cloud
    provider adds them (near-free; unavailable once empty)."""
    on_demand = next(o.price for o in it.offerings if o.capacity_type == "on-demand")
    added = tuple(
        Offering(zone, None, "reserved", on_demand / 10_000_000, available=left > 0,
                 reservation_id=rid, reservation_type="default", reservation_capacity=left)
        for rid, left in reservations
    )
    return replace(it, offerings=(*it.offerings, *added))


def whole_nodes(count: int, prefix: str = "job") -> list:
    """Pods that each need a node of their own on a 4-cpu type."""
    return replicas(count, prefix, cpu="3", memory="1Gi")


def by_reservation(result: SchedulingResult) -> Counter[str | None]:
    counted: Counter[str | None] = Counter()
    for claim in result.nodeclaims:
        requirement = claim.requirements.get(RESERVATION_ID)
        if requirement is not None and not requirement.complement:
            (rid,) = requirement.values
            counted[rid] += 1
        else:
            counted[None] += 1
    return counted


def test_a_reservation_of_two_takes_two_of_five_nodes_and_the_rest_fall_back() -> None:
    catalog = [reserved(PLAIN, ("cr-1", 2))]

    result = run(whole_nodes(5), [nodepool(catalog=catalog)])

    assert result.unschedulable == ()
    assert Counter(c.capacity_type for c in result.nodeclaims) == {"reserved": 2, "spot": 3}
    assert by_reservation(result) == {"cr-1": 2, None: 3}
    for claim in result.nodeclaims:
        if claim.capacity_type == "reserved":
            # Restricted to the reservation, so the launch goes into it.
            assert claim.requirements[CAPACITY_TYPE].values == {"reserved"}
            assert claim.requirements[RESERVATION_ID].values == {"cr-1"}
            assert claim.price == pytest.approx(0.20 / 10_000_000)
            assert claim.instance_types == (("m.1", pytest.approx(0.20 / 10_000_000)),)
        else:
            # Kept out of the used-up reservation, priced at its normal offering.
            assert claim.requirements[RESERVATION_ID] == Requirement(
                RESERVATION_ID, True, frozenset({"cr-1"}))
            assert claim.price == pytest.approx(0.08)
            assert claim.instance_types == (("m.1", pytest.approx(0.08)),)
    assert result.hourly_cost == pytest.approx(3 * 0.08, rel=1e-4)


def test_an_exhausted_reservation_takes_nothing() -> None:
    # Another NodePool read the reservation after it filled up: the least count wins.
    full = [reserved(PLAIN, ("cr-1", 0))]
    fresh = [reserved(PLAIN, ("cr-1", 3))]
    pools = [nodepool("a", catalog=fresh, weight=10), nodepool("b", catalog=full)]

    result = run(whole_nodes(3), pools)

    assert by_reservation(result) == {None: 3}
    assert {c.capacity_type for c in result.nodeclaims} == {"spot"}
    assert result.hourly_cost == pytest.approx(3 * 0.08)


def test_two_reservations_are_held_pessimistically_then_used_up() -> None:
    # As Karpenter's offeringsToReserve: the first NodeClaim may become either type, so it
    # holds an instance of both reservations (its launch may pick either); the second
    # holds cr-b's last instance; the rest fall back.
    other = instance_type("n.1", 4, 16, 0.30, capacity_types=("on-demand", "spot"))
    catalog = [reserved(PLAIN, ("cr-a", 1)), reserved(other, ("cr-b", 2), zone="zone-b")]

    result = run(whole_nodes(5), [nodepool(catalog=catalog)])

    held = [c.requirements[RESERVATION_ID].values for c in result.nodeclaims
            if c.capacity_type == "reserved"]
    assert sorted(map(sorted, held)) == [["cr-a", "cr-b"], ["cr-b"]]
    (into_b,) = [c for c in result.nodeclaims if c.capacity_type == "reserved"
                 and c.requirements[RESERVATION_ID].values == {"cr-b"}]
    assert into_b.instance_types == (("n.1", pytest.approx(0.30 / 10_000_000)),)
    fallback = [c for c in result.nodeclaims if c.capacity_type != "reserved"]
    assert len(fallback) == 3
    assert {(c.instance_type, c.capacity_type) for c in fallback} == {("m.1", "spot")}
    assert all(c.requirements[RESERVATION_ID] == Requirement(
        RESERVATION_ID, True, frozenset({"cr-a", "cr-b"})) for c in fallback)


def test_a_reservation_shared_by_two_nodepools_is_counted_once() -> None:
    catalog = [reserved(PLAIN, ("cr-1", 1))]
    pools = [nodepool("np-1", catalog=catalog), nodepool("np-2", catalog=catalog)]
    pods = [pod(f"job-{n}", cpu="3", memory="1Gi",
                nodeSelector={"karpenter.sh/nodepool": f"np-{n + 1}"}) for n in range(2)]

    result = run(pods, pools)

    assert by_reservation(result) == {"cr-1": 1, None: 1}


def test_pods_that_must_run_in_a_reservation_wait_when_it_is_full() -> None:
    catalog = [reserved(PLAIN, ("cr-1", 1))]
    pods = replicas(3, "job", cpu="3", memory="1Gi", nodeSelector={CAPACITY_TYPE: "reserved"})

    result = run(pods, [nodepool(catalog=catalog)])

    assert by_reservation(result) == {"cr-1": 1}
    assert len(result.unschedulable) == 2
    assert all("cr-1" in why and "no instances left" in why for _, why in result.unschedulable)


def test_a_nodeclaim_that_fits_reserved_and_other_types_prefers_the_reservation() -> None:
    # Small pods share nodes: the first NodeClaims fill the reservation's instances, what
    # is left goes to the cheapest normal offering, whatever type that is.
    small = instance_type("s.1", 2, 8, 0.10, capacity_types=("on-demand", "spot"))
    catalog = [reserved(PLAIN, ("cr-1", 1)), small]

    result = run(replicas(6, "web", cpu="1", memory="1Gi"), [nodepool(catalog=catalog)])

    assert result.unschedulable == ()
    counted = by_reservation(result)
    assert counted["cr-1"] == 1
    reserved_claims = [c for c in result.nodeclaims if c.capacity_type == "reserved"]
    assert [len(c.pods) for c in reserved_claims] == [4]
    assert all(c.capacity_type == "spot" for c in result.nodeclaims
               if c.capacity_type != "reserved")


def test_a_plan_without_reservations_is_left_as_it_is() -> None:
    result = run(whole_nodes(3), [nodepool(catalog=[PLAIN])])

    assert result.unschedulable == () and result.deferred == ()
    assert all(RESERVATION_ID not in c.requirements for c in result.nodeclaims)
    assert all("reservation" not in c.why for c in result.nodeclaims)


def _zones(result: SchedulingResult) -> Sequence[str | None]:
    return [c.zone for c in result.nodeclaims]


def test_a_nodeclaim_pinned_to_another_zone_does_not_count_against_the_reservation() -> None:
    catalog = [reserved(PLAIN, ("cr-1", 1))]
    pinned = replicas(2, "b-job", cpu="3", memory="1Gi", nodeSelector={ZONE: "zone-b"})
    free = whole_nodes(1, "a-job")

    result = run([*pinned, *free], [nodepool(catalog=catalog)])

    assert by_reservation(result) == {"cr-1": 1, None: 2}
    assert sorted(z or "" for z in _zones(result)).count("zone-b") == 2


def test_a_pod_that_selects_a_reservation_by_id_is_planned_into_it() -> None:
    catalog = [reserved(PLAIN, ("cr-1", 1), ("cr-2", 1))]
    chosen = pod("job-0", cpu="3", memory="1Gi", nodeSelector={RESERVATION_ID: "cr-2"})

    result = run([chosen, *whole_nodes(1, "other")], [nodepool(catalog=catalog)])

    assert result.unschedulable == ()
    assert by_reservation(result) == {"cr-1": 1, "cr-2": 1}
    (claim,) = [c for c in result.nodeclaims if "default/job-0" in c.pods]
    assert claim.requirements[RESERVATION_ID].values == {"cr-2"}


def test_the_plan_says_which_nodeclaims_use_a_reservation_and_which_find_it_taken() -> None:
    result = run(whole_nodes(2), [nodepool(catalog=[reserved(PLAIN, ("cr-1", 1))])])

    notes = sorted(c.why.rsplit("; ", 1)[-1] for c in result.nodeclaims)
    assert notes == ["capacity reservation(s) cr-1 taken by earlier NodeClaims",
                     "launches into capacity reservation cr-1"]


def test_a_nodeclaim_whose_min_values_a_reservation_cannot_meet_launches_outside_it() -> None:
    other = instance_type("n.1", 4, 16, 0.30, capacity_types=("on-demand", "spot"))
    two_types = Requirement("node.kubernetes.io/instance-type", True, frozenset(),
                            min_values=2)
    pool = nodepool(catalog=[reserved(PLAIN, ("cr-1", 1)), other], requirements=[two_types])

    result = run(whole_nodes(1), [pool])

    (claim,) = result.nodeclaims
    assert claim.capacity_type == "spot"
    assert [name for name, _ in claim.instance_types] == ["m.1", "n.1"]
    assert claim.requirements[RESERVATION_ID] == Requirement(
        RESERVATION_ID, True, frozenset({"cr-1"}))
    assert claim.why.endswith("its minValues cannot be met inside a capacity reservation")
